/* A plugin whose library constructor crashes: loading it kills the process that loads it. Only
 * ever loaded in a sandbox runner; discovery reads its note without running it. */
#include <hookhost/hookhost.h>
#include <stdint.h>

__attribute__((constructor)) static void faulty_constructor_crash(void) {
  volatile uintptr_t address = 16;
  *(volatile int*)address = 1;
}

static hh_status never_created(const hh_host* host, const hh_create_args* args, hh_hook** out,
                               hh_error* err) {
  (void)host;
  (void)args;
  *out = NULL;
  return hh_fail(err, HH_ERROR, "unreachable: the constructor crashed first");
}

HH_PLUGIN_DEFINE("faulty_constructor", "1.0.0", "Test fixture: its constructor crashes",
                 HH_NO_PARAMS, never_created)
