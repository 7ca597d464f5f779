/* A hook that does nothing and fetches one value: the cost left is the host's. */
#include <hookhost/hookhost.h>
#include <stdlib.h>

static hh_status noop_before(hh_hook* h, const hh_run_context* c, hh_run_request* r, hh_error* e) {
  (void)c;
  (void)e;
  if (h->hook_data) return r->add_fetch(r, "loss");
  return HH_OK;
}

static void noop_destroy(hh_hook* h) {
  free(h);
}

static hh_status noop_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                             hh_error* err) {
  const hh_param_value* fetch = hh_find_param(args, "fetch");
  hh_hook* h = (hh_hook*)calloc(1, sizeof *h);
  (void)host;
  if (!h) return hh_fail(err, HH_ERROR, "out of memory");
  hh_hook_init(h, (fetch && fetch->bool_value) ? (void*)h : NULL);
  h->before_run = noop_before;
  h->destroy = noop_destroy;
  *out = h;
  return HH_OK;
}

#define NOOP_PARAMS(P) P(fetch, BOOL, DEFAULT, "false", "fetch 'loss' every step")

HH_PLUGIN_DEFINE("bench_noop", "1.0.0", "Does nothing (benchmark baseline)", NOOP_PARAMS,
                 noop_create)
