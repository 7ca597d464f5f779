/* my_hook: watches one scalar tensor. Every `log_every` steps it logs the value and the best
 * value so far; after the first step whose value falls below `stop_below` it asks the job to stop.
 * The best value is the hook's state: saved with every checkpoint, so a resumed job remembers it.
 *
 * Everything a C author needs is in <hookhost/hookhost.h> (C99): start an hh_hook from the no-op
 * defaults (hh_hook_init), set the callbacks you need and destroy, describe the parameters once
 * with HH_PLUGIN_DEFINE, and report failures by returning a status with hh_fail.
 *
 * Confined (isolation = process), a hook reads only the system's runtime and writes only its run
 * folder unless it declares more, before the first #include (docs/writing-a-plugin.md, "Declaring
 * what your hook needs when confined"). This one needs nothing more; one that writes the file a
 * `path` parameter names and talks to a server would say:
 *   #define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path) HH_NEEDS_NETWORK */
#include <hookhost/hookhost.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct my_hook {
  hh_hook hook; /* first member: the host holds a pointer to it */
  const hh_host* host;
  char tensor[256];
  int64_t log_every;
  int has_stop_below;
  double stop_below;
  int has_best;
  double best;
} my_hook;

static hh_status my_hook_before_run(hh_hook* hook, const hh_run_context* context,
                                    hh_run_request* request, hh_error* err) {
  my_hook* h = (my_hook*)hook->hook_data;
  (void)context;
  if (request->add_fetch(request, h->tensor) != HH_OK)
    return hh_fail(err, HH_ERROR, "the workload refused the fetch of 'tensor'");
  return HH_OK;
}

static hh_status my_hook_after_run(hh_hook* hook, const hh_run_context* context,
                                   const hh_run_values* values, hh_error* err) {
  my_hook* h = (my_hook*)hook->hook_data;
  const hh_tensor* value_tensor = hh_find_value(values, h->tensor);
  const int64_t step = h->host->global_step(h->host);
  char text[512]; /* room for the longest tensor name */
  double value;
  (void)context;

  if (!value_tensor || value_tensor->dtype == HH_DTYPE_STRING ||
      hh_tensor_element_count(value_tensor) == 0)
    return hh_fail(err, HH_ERROR, "the fetched value is not a numeric scalar");
  value = hh_tensor_get_double(value_tensor, 0);

  if (!h->has_best || value < h->best) {
    h->has_best = 1;
    h->best = value;
    snprintf(text, sizeof text, "%.17g", h->best); /* every digit, so it restores exactly */
    if (h->host->state_put(h->host, text, strlen(text)) != HH_OK)
      return hh_fail(err, HH_ERROR, "the host refused the state");
  }
  if (step % h->log_every == 0) {
    snprintf(text, sizeof text, "%s = %g at step %lld (best %g)", h->tensor, value, (long long)step,
             h->best);
    hh_log(h->host, HH_LOG_INFO, text);
  }
  /* A NaN never compares below: a diverging job is another hook's business (nan_tensor). */
  if (h->has_stop_below && value < h->stop_below) {
    snprintf(text, sizeof text, "%s %g fell below stop_below %g", h->tensor, value, h->stop_below);
    h->host->request_stop(h->host, text);
  }
  return HH_OK;
}

static void my_hook_destroy(hh_hook* hook) {
  free(hook->hook_data);
}

/* A resumed job hands back the state saved with its checkpoint before the hook is created. */
static void my_hook_load_state(my_hook* h) {
  char text[64];
  size_t size = 0, copied = 0;
  uint32_t version = 0;
  if (!h->host->state_info(h->host, &size, &version) || size == 0 || size >= sizeof text) return;
  if (h->host->state_get(h->host, text, sizeof text - 1, &copied) != HH_OK) return;
  text[copied] = '\0';
  h->best = strtod(text, NULL);
  h->has_best = 1;
}

static hh_status my_hook_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                                hh_error* err) {
  const hh_param_value* tensor = hh_find_param(args, "tensor");
  const hh_param_value* every = hh_find_param(args, "log_every");
  const hh_param_value* stop_below = hh_find_param(args, "stop_below");
  my_hook* h;

  /* The host has checked types and required parameters; ranges are the hook's to check. An
   * error here is a configuration error: the job does not start. */
  if (tensor->string_value[0] == '\0') return hh_fail(err, HH_ERROR, "'tensor' must name a tensor");
  if (strlen(tensor->string_value) >= sizeof h->tensor)
    return hh_fail(err, HH_ERROR, "'tensor': the name is too long");
  if (every->int_value < 1) return hh_fail(err, HH_ERROR, "'log_every' must be at least 1");

  h = (my_hook*)calloc(1, sizeof *h);
  if (!h) return hh_fail(err, HH_ERROR, "out of memory");
  h->host = host;
  strcpy(h->tensor, tensor->string_value);
  h->log_every = every->int_value;
  h->has_stop_below = stop_below->is_set;
  h->stop_below = stop_below->float_value;
  my_hook_load_state(h);
  hh_hook_init(&h->hook, h); /* no-op defaults for the callbacks this hook does not need */
  h->hook.before_run = my_hook_before_run;
  h->hook.after_run = my_hook_after_run;
  h->hook.destroy = my_hook_destroy;
  *out = &h->hook;
  return HH_OK;
}

/* The parameters, read by `hookhost plugins describe` without loading the plugin:
 * P(name, type, flag, default, help) with type BOOL, INT, FLOAT, STRING or STRING_LIST and flag
 * DEFAULT (the default applies), REQUIRED or OPTIONAL (may be absent: is_set is 0). */
#define MY_HOOK_PARAMS(P)                                                        \
  P(tensor, STRING, DEFAULT, "loss", "the scalar tensor to watch")               \
  P(log_every, INT, DEFAULT, "10", "log the value every this many global steps") \
  P(stop_below, FLOAT, OPTIONAL, "", "stop the job once the value falls below this")

HH_PLUGIN_DEFINE("my_hook", "0.1.0",
                 "Logs a scalar tensor with its best value and stops below a threshold",
                 MY_HOOK_PARAMS, my_hook_create)
