/* A hook whose before_run and after_run do nothing (before_run may fetch one value, which
   after_run does not read): the cost left is the host's. */
#include <hookhost/hookhost.h>
#include <stdlib.h>
#include <string.h>

static hh_status noop_before(hh_hook* h, const hh_run_context* c, hh_run_request* r, hh_error* e) {
  (void)c;
  (void)e;
  if (h->hook_data) return r->add_fetch(r, (const char*)h->hook_data);
  return HH_OK;
}

static hh_status noop_after(hh_hook* h, const hh_run_context* c, const hh_run_values* v,
                            hh_error* e) {
  (void)h;
  (void)c;
  (void)v;
  (void)e;
  return HH_OK;
}

static void noop_destroy(hh_hook* h) {
  free(h->hook_data);
  free(h);
}

static hh_status noop_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                             hh_error* err) {
  const hh_param_value* fetch = hh_find_param(args, "fetch");
  const char* name = fetch ? fetch->string_value : "";
  hh_hook* h = (hh_hook*)calloc(1, sizeof *h);
  char* wanted = name[0] ? (char*)malloc(strlen(name) + 1) : NULL;
  (void)host;
  if (!h || (name[0] && !wanted)) {
    free(h);
    free(wanted);
    return hh_fail(err, HH_ERROR, "out of memory");
  }
  if (wanted) strcpy(wanted, name);
  hh_hook_init(h, wanted);
  h->before_run = noop_before;
  h->after_run = noop_after;
  h->destroy = noop_destroy;
  *out = h;
  return HH_OK;
}

#define NOOP_PARAMS(P) P(fetch, STRING, DEFAULT, "", "a value to fetch every step (none if empty)")

HH_PLUGIN_DEFINE("bench_noop", "1.0.0", "Does nothing (benchmark baseline)", NOOP_PARAMS,
                 noop_create)
