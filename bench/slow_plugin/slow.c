/* A hook whose after_run takes `after_run_us` microseconds (sleeping, as an upload or a disk
   write waits): the observer benchmarks' slow hook. */
#include <hookhost/hookhost.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static hh_status slow_after(hh_hook* h, const hh_run_context* c, const hh_run_values* v,
                            hh_error* e) {
  const int64_t us = *(const int64_t*)h->hook_data;
  struct timespec wait;
  (void)c;
  (void)v;
  (void)e;
  wait.tv_sec = (time_t)(us / 1000000);
  wait.tv_nsec = (long)(us % 1000000) * 1000;
  while (nanosleep(&wait, &wait) != 0) {
  }
  return HH_OK;
}

static void slow_destroy(hh_hook* h) {
  free(h->hook_data);
  free(h);
}

static hh_status slow_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                             hh_error* err) {
  hh_hook* h = (hh_hook*)calloc(1, sizeof *h);
  int64_t* us = (int64_t*)malloc(sizeof *us);
  (void)host;
  if (!h || !us) {
    free(h);
    free(us);
    return hh_fail(err, HH_ERROR, "out of memory");
  }
  *us = hh_find_param(args, "after_run_us")->int_value;
  hh_hook_init(h, us);
  h->after_run = slow_after;
  h->destroy = slow_destroy;
  *out = h;
  return HH_OK;
}

#define SLOW_PARAMS(P) P(after_run_us, INT, DEFAULT, "1000", "how long each after_run takes")

HH_PLUGIN_DEFINE("bench_slow", "1.0.0", "Takes its time in after_run (benchmark)", SLOW_PARAMS,
                 slow_create)
