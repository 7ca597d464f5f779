/* Every C ABI header compiles with only the compiler's freestanding headers (-ffreestanding
 * -nostdinc): no <string.h>, no <math.h>. The inline helpers are used, so they compile too. */
#include <hookhost/hookhost.h>

int freestanding_check(const hh_run_values* values, const hh_create_args* args, hh_error* err);

int freestanding_check(const hh_run_values* values, const hh_create_args* args, hh_error* err) {
  hh_tensor t;
  hh_hook hook;
  hh_tensor_init(&t);
  hh_hook_init(&hook, 0);
  hh_error_init(err);
  return (int)hh_tensor_get_double(&t, 0) + (hh_find_value(values, "loss") != 0) +
         (hh_find_param(args, "trace") != 0) + hh_fail(err, HH_ERROR, "x") + (int)hook.struct_size;
}
