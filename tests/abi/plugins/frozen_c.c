/* A C plugin as an ABI 1.N author wrote it, for every frozen minor N: built once per minor
 * (frozen_v1_N_c) against that minor's own headers alone, so HH_ABI_MINOR is N and each
 * `#if HH_ABI_MINOR >= M` keeps what 1.M added for the plugins of 1.M on:
 *   1.0: traces every call to a file (a stopped end with its stop cause), fetches "loss", keeps a
 *        step count as its state and reads it back on resume;
 *   1.1: checks the services 1.1 added, hh.job/1 and hh.dist/1, against their 1.1 minimum sizes
 *        in begin;
 *   1.2: declares what it needs when confined: every kind of needs.* line but processes;
 *   1.3: declares its hooks observers;
 *   1.4: reads the run context's wall_time_ns: its after_run fails when the host's context lacks
 *        it, and traces whether the call ran behind the step;
 *   1.5: each after_run asks through hh.steps/1 skip_until to be called next `every` steps later,
 *        and fails when the host's hh.steps/1 lacks skip_until;
 *   1.6: knows the outcome 1.6 added: a detached hook's end traces its reason. */
#include <hookhost/version.h> /* HH_ABI_MINOR, for the options hookhost.h reads */
#if HH_ABI_MINOR >= 3
#define HH_PLUGIN_MODE HH_MODE_OBSERVE
#endif
#if HH_ABI_MINOR >= 2
#define HH_PLUGIN_NEEDS            \
  HH_NEEDS_WRITE_PARAM(trace)      \
  HH_NEEDS_READ("vocab/words.txt") \
  HH_NEEDS_READ("/usr/share/dict") \
  HH_NEEDS_WRITE("exports") HH_NEEDS_READ_PARAM(inputs) HH_NEEDS_NETWORK
#endif
#include <hookhost/hookhost.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct frozen {
  hh_hook hook;
  const hh_host* host;
  char trace[1024];
  long long after_runs;
#if HH_ABI_MINOR >= 5
  long long every;
#endif
} frozen;

static void trace(frozen* f, const char* text) {
  FILE* out = fopen(f->trace, "a");
  if (!out) return;
  fprintf(out, "%s\n", text);
  fclose(out);
}

static hh_status fz_begin(hh_hook* hook, hh_error* err) {
  frozen* f = (frozen*)hook->hook_data;
  char text[64], bytes[32] = {0};
  size_t size = 0;
  uint32_t version = 0;
#if HH_ABI_MINOR >= 1
  const hh_job_service* job = (const hh_job_service*)f->host->get_service(f->host, HH_SERVICE_JOB);
  const hh_dist_service* dist =
      (const hh_dist_service*)f->host->get_service(f->host, HH_SERVICE_DIST);
  if (!job || job->struct_size < HH_JOB_SERVICE_SIZE_1_1 || !job->config_dir(f->host)[0])
    return hh_fail(err, HH_ERROR, "hh.job/1 is missing or smaller than in ABI 1.1");
  if (!dist || dist->struct_size < HH_DIST_SERVICE_SIZE_1_1 || dist->world_size(f->host) != 1)
    return hh_fail(err, HH_ERROR, "hh.dist/1 is missing, smaller than in ABI 1.1 or not 1 process");
#else
  (void)err;
#endif
  if (f->host->state_info(f->host, &size, &version) && size < sizeof bytes &&
      f->host->state_get(f->host, bytes, sizeof bytes - 1, &size) == HH_OK)
    f->after_runs = atoll(bytes);
  snprintf(text, sizeof text, "begin restored=%lld", f->after_runs);
  trace(f, text);
  return HH_OK;
}

static hh_status fz_after_create_session(hh_hook* hook, const hh_session_info* s, hh_error* err) {
  char text[64];
  (void)err;
  snprintf(text, sizeof text, "after_create_session creation=%u", (unsigned)s->creation);
  trace((frozen*)hook->hook_data, text);
  return HH_OK;
}

static hh_status fz_before_run(hh_hook* hook, const hh_run_context* ctx, hh_run_request* req,
                               hh_error* err) {
  (void)ctx;
  (void)err;
  trace((frozen*)hook->hook_data, "before_run");
  return req->add_fetch(req, "loss");
}

static hh_status fz_after_run(hh_hook* hook, const hh_run_context* ctx, const hh_run_values* values,
                              hh_error* err) {
  frozen* f = (frozen*)hook->hook_data;
  char text[128], state[32];
  int n;
#if HH_ABI_MINOR >= 5
  const hh_steps_service* steps =
      (const hh_steps_service*)f->host->get_service(f->host, HH_SERVICE_STEPS);
#endif
#if HH_ABI_MINOR >= 4
  if (!HH_HAS_FIELD(ctx, hh_run_context, wall_time_ns))
    return hh_fail(err, HH_ERROR, "the run context has no wall_time_ns (a host before ABI 1.4)");
#else
  (void)err;
#endif
#if HH_ABI_MINOR >= 5
  if (!steps || !HH_HAS_FIELD(steps, hh_steps_service, skip_until))
    return hh_fail(err, HH_ERROR, "hh.steps/1 has no skip_until (a host before ABI 1.5)");
  if (steps->skip_until(f->host, ctx->global_step + f->every) != HH_OK)
    return hh_fail(err, HH_ERROR, "hh.steps/1 skip_until refused a step ahead");
#endif
  ++f->after_runs;
#if HH_ABI_MINOR >= 4
  snprintf(text, sizeof text, "after_run gs=%lld values=%u %s=%g%s", (long long)ctx->global_step,
           values->count, hh_run_value(values, 0)->name,
           hh_tensor_get_double(hh_run_value(values, 0), 0),
           ctx->wall_time_ns != 0 ? " behind" : "");
#else
  snprintf(text, sizeof text, "after_run gs=%lld values=%u %s=%g", (long long)ctx->global_step,
           values->count, hh_run_value(values, 0)->name,
           hh_tensor_get_double(hh_run_value(values, 0), 0));
#endif
  trace(f, text);
  n = snprintf(state, sizeof state, "%lld", f->after_runs);
  return f->host->state_put(f->host, state, (size_t)n);
}

static hh_status fz_end(hh_hook* hook, const hh_end_info* info, hh_error* err) {
  char text[256];
  (void)err;
  if (info->outcome == HH_OUTCOME_STOPPED)
    snprintf(text, sizeof text, "end outcome=stopped cause=%d", (int)info->stop_cause);
  else
    snprintf(text, sizeof text, "end outcome=%s", hh_outcome_name(info->outcome));
#if HH_ABI_MINOR >= 6
  if (info->outcome == HH_OUTCOME_DETACHED)
    snprintf(text, sizeof text, "end outcome=detached reason=%s", info->reason);
#endif
  trace((frozen*)hook->hook_data, text);
  return HH_OK;
}

static void fz_destroy(hh_hook* hook) {
  trace((frozen*)hook->hook_data, "destroy");
  free(hook->hook_data);
}

static hh_status fz_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                           hh_error* err) {
  frozen* f = (frozen*)calloc(1, sizeof *f);
  if (!f) return hh_fail(err, HH_ERROR, "out of memory");
  f->host = host;
  strncpy(f->trace, hh_find_param(args, "trace")->string_value, sizeof f->trace - 1);
#if HH_ABI_MINOR >= 5
  f->every = hh_find_param(args, "every")->int_value;
#endif
  hh_hook_init(&f->hook, f);
  f->hook.begin = fz_begin;
  f->hook.after_create_session = fz_after_create_session;
  f->hook.before_run = fz_before_run;
  f->hook.after_run = fz_after_run;
  f->hook.end = fz_end;
  f->hook.destroy = fz_destroy;
  *out = &f->hook;
  return HH_OK;
}

#if HH_ABI_MINOR >= 2
#define FROZEN_INPUTS(P) \
  P(inputs, STRING_LIST, OPTIONAL, "", "files it would read (declared, unused)")
#else
#define FROZEN_INPUTS(P)
#endif
#if HH_ABI_MINOR >= 5
#define FROZEN_EVERY(P) \
  P(every, INT, DEFAULT, "1", "the steps between its calls (hh.steps/1 skip_until)")
#else
#define FROZEN_EVERY(P)
#endif
#define FROZEN_PARAMS(P)                                                \
  P(trace, STRING, REQUIRED, "", "file to append one line per call to") \
  FROZEN_INPUTS(P) FROZEN_EVERY(P)

/* "frozen_v1_N_c", "1.N.0": N is the minor of the headers it is built against. */
#define FROZEN_STR_(x) #x
#define FROZEN_STR(x) FROZEN_STR_(x)
#define FROZEN_MINOR FROZEN_STR(HH_ABI_MINOR)
HH_PLUGIN_DEFINE("frozen_v1_" FROZEN_MINOR "_c", "1." FROZEN_MINOR ".0",
                 "Built against the frozen ABI 1." FROZEN_MINOR " headers (C)", FROZEN_PARAMS,
                 fz_create)
