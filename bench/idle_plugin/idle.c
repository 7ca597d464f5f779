/* A hook that implements neither before_run nor after_run: it must cost nothing per step. */
#include <hookhost/hookhost.h>
#include <stdlib.h>

static void idle_destroy(hh_hook* h) {
  free(h);
}

static hh_status idle_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                             hh_error* err) {
  hh_hook* h = (hh_hook*)calloc(1, sizeof *h);
  (void)host;
  (void)args;
  if (!h) return hh_fail(err, HH_ERROR, "out of memory");
  hh_hook_init(h, NULL);
  h->destroy = idle_destroy;
  *out = h;
  return HH_OK;
}

#define IDLE_PARAMS(P)

HH_PLUGIN_DEFINE("bench_idle", "1.0.0", "Implements no per-step callback (benchmark baseline)",
                 IDLE_PARAMS, idle_create)
