/* Compiled as strict C99 with -pedantic -Werror: the ABI headers must stay plain C. */
#include <hookhost/hookhost.h>

static hh_status create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                        hh_error* err) {
  (void)host;
  (void)args;
  *out = NULL;
  return hh_fail(err, HH_ERROR, "not creatable");
}

#define CHECK_PARAMS(P) P(limit, INT, DEFAULT, "3", "a limit")

HH_PLUGIN_DEFINE("abi_check", "0.0.1", "compile check", CHECK_PARAMS, create)
