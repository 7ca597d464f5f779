/* The fault corpus for the sandbox tier: one plugin that misbehaves in a chosen way in a chosen
 * callback. `behaviour` names the fault, `callback` where it happens (create, begin,
 * after_create_session, before_run, after_run, end), `at_step` the context's global step for
 * before_run and after_run. `trace` names a file that gets one line per call, so a test can see
 * exactly which calls reached the plugin. With behaviour=ok it uses every host service on every
 * call and writes what they returned, so the same run in process and in a runner can be compared
 * line by line. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
// Confined, it writes (or reads) the files its parameters name.
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(trace)
#include <hookhost/hookhost.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct faulty {
  hh_hook hook;
  const hh_host* host;
  char name[128];
  char behaviour[64];
  char callback[64];
  char trace_path[1024];
  int64_t at_step;
  int64_t after_runs;
  hh_run_request* kept_request; /* for stale_request */
  pthread_t late_thread;
  int late_thread_started;
} faulty;

/* The impostor build (same id, version and parameters) marks its lines, so a test can tell which
 * bytes a runner opened. */
#ifdef FAULTY_IMPOSTOR
#define FAULTY_TRACE_TAG "impostor: "
#else
#define FAULTY_TRACE_TAG ""
#endif

static void trace(const faulty* f, const char* text) {
  char line[4096];
  int n;
  int fd;
  if (!f->trace_path[0]) return;
  n = snprintf(line, sizeof line, "%s %s%s\n", f->name, FAULTY_TRACE_TAG, text);
  fd = open(f->trace_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (n > 0) {
    ssize_t written = write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    (void)written;
  }
  close(fd);
}

static void say(const faulty* f, const char* text) {
  hh_log(f->host, HH_LOG_INFO, text);
}

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A store the compiler cannot prove is through NULL (UBSan would report that one and exit). */
static void crash_with_segv(void) {
  volatile uintptr_t address = 16;
  *(volatile int*)address = 1;
}

static void* crashing_thread(void* arg) {
  (void)arg;
  crash_with_segv();
  return NULL;
}

static void hang_forever(int sig) {
  (void)sig;
  for (;;) pause();
}

/* A plugin thread using the host while the hook thread is inside a call. */
static void* services_thread(void* arg) {
  const faulty* f = (const faulty*)arg;
  char text[128];
  snprintf(text, sizeof text, "plugin thread: global_step=%lld should_stop=%d",
           (long long)f->host->global_step(f->host), (int)f->host->should_stop(f->host));
  say(f, text);
  f->host->state_put(f->host, "from a thread", 13);
  return NULL;
}

/* A plugin thread using the host while no call is in progress. */
static void* late_thread(void* arg) {
  const faulty* f = (const faulty*)arg;
  sleep_ms(20);
  say(f, "late plugin thread: asking to stop");
  f->host->request_stop(f->host, "stopped by a plugin thread");
  return NULL;
}

static hh_status garbage_requests(faulty* f, hh_run_request* req) {
  char text[512];
  static const int64_t shape1[1] = {1};
  static const int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const uint8_t bad_bool = 7;
  const float one = 1.0f;
  char long_name[HH_MAX_NAME_LENGTH + 8];
  hh_tensor t;
  hh_status s[8];
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  s[0] = req->add_fetch(req, "no_such_tensor");
  s[1] = req->add_fetch(req, long_name);
  hh_tensor_init(&t); /* a bool that is 7 */
  t.name = "learning_rate";
  t.dtype = HH_DTYPE_BOOL;
  t.data = &bad_bool;
  t.byte_size = 1;
  s[2] = req->add_feed(req, &t);
  hh_tensor_init(&t); /* byte_size that does not match */
  t.name = "learning_rate";
  t.dtype = HH_DTYPE_F32;
  t.data = &one;
  t.byte_size = 3;
  s[3] = req->add_feed(req, &t);
  hh_tensor_init(&t); /* rank above HH_MAX_RANK */
  t.name = "learning_rate";
  t.dtype = HH_DTYPE_F32;
  t.rank = 9;
  t.shape = shape9;
  t.data = &one;
  t.byte_size = 4;
  s[4] = req->add_feed(req, &t);
  hh_tensor_init(&t); /* rank 1 without a shape */
  t.name = "learning_rate";
  t.dtype = HH_DTYPE_F32;
  t.rank = 1;
  t.data = &one;
  t.byte_size = 4;
  s[5] = req->add_feed(req, &t);
  hh_tensor_init(&t); /* an unknown dtype */
  t.name = "learning_rate";
  t.dtype = 99;
  t.rank = 1;
  t.shape = shape1;
  t.data = &one;
  t.byte_size = 4;
  s[6] = req->add_feed(req, &t);
  s[7] = req->add_feed(req, NULL);
  snprintf(text, sizeof text, "garbage statuses %d %d %d %d %d %d %d %d", s[0], s[1], s[2], s[3],
           s[4], s[5], s[6], s[7]);
  trace(f, text);
  return HH_OK;
}

static void allocate_until_failure(faulty* f, hh_error* err, hh_status* status) {
  const size_t chunk = (size_t)64 << 20;
  size_t total = 0;
  char text[128];
  /* At most 4 GiB: without a limit this must still end. */
  while (total < ((size_t)4 << 30)) {
    char* p = (char*)malloc(chunk);
    size_t i;
    if (!p) break;
    for (i = 0; i < chunk; i += 4096) p[i] = 1;
    total += chunk;
  }
  snprintf(text, sizeof text, "allocation stopped after %zu MiB", total >> 20);
  trace(f, text);
  *status = hh_fail(err, HH_ERROR, text);
}

/* The configured fault, when this call is where it belongs; HH_OK when it is not. */
static hh_status misbehave(faulty* f, const char* callback, int64_t step, hh_run_request* req,
                           const hh_run_values* values, hh_error* err) {
  const char* b = f->behaviour;
  hh_status status = HH_OK;
  /* Every before_run keeps its request; every after_run uses the one it kept. */
  if (strcmp(b, "stale_request") == 0) {
    if (req) {
      f->kept_request = req;
      return HH_OK;
    }
    if (f->kept_request) {
      char text[64];
      snprintf(text, sizeof text, "stale add_fetch returned %d",
               f->kept_request->add_fetch(f->kept_request, "loss"));
      trace(f, text);
    }
    return HH_OK;
  }
  if (strcmp(f->callback, callback) != 0) return HH_OK;
  if ((strcmp(callback, "before_run") == 0 || strcmp(callback, "after_run") == 0) &&
      step != f->at_step)
    return HH_OK;
  if (strcmp(b, "ok") == 0) return HH_OK;
  if (strcmp(b, "error") == 0) return hh_fail(err, HH_ERROR, "faulty: error as configured");
  if (strcmp(b, "fatal") == 0) return hh_fail(err, HH_ERROR_FATAL, "faulty: fatal as configured");
  if (strcmp(b, "status42") == 0) return hh_fail(err, 42, "faulty: status 42");
  if (strcmp(b, "unterminated") == 0) {
    if (err) memset(err->message, 'x', HH_ERROR_MESSAGE_SIZE);
    return HH_ERROR;
  }
  if (strcmp(b, "abort") == 0) abort();
  if (strcmp(b, "segv") == 0) crash_with_segv();
  if (strcmp(b, "exit3") == 0) exit(3);
  if (strcmp(b, "_exit0") == 0) _exit(0);
  if (strcmp(b, "loop") == 0) {
    volatile unsigned long spin = 0;
    for (;;) ++spin;
  }
  if (strcmp(b, "sleep") == 0) {
    for (;;) sleep_ms(1000);
  }
  if (strcmp(b, "alloc") == 0) {
    allocate_until_failure(f, err, &status);
    return status;
  }
  if (strcmp(b, "flood") == 0) {
    int i;
    for (i = 0; i < 2000; ++i) printf("flood line %d\n", i);
    fflush(stdout);
    return HH_OK;
  }
  if (strcmp(b, "garbage_fetch") == 0 && req) return garbage_requests(f, req);
  if (strcmp(b, "thread_crash") == 0) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, crashing_thread, NULL) == 0) pthread_join(thread, NULL);
    return hh_fail(err, HH_ERROR, "faulty: the crashing thread did not start");
  }
  if (strcmp(b, "signal_handler") == 0) {
    /* Handlers that never return: only SIGKILL ends this process. */
    signal(SIGSEGV, hang_forever);
    signal(SIGTERM, hang_forever);
    signal(SIGINT, hang_forever);
    signal(SIGABRT, hang_forever);
    crash_with_segv();
  }
  if (strcmp(b, "install_handlers") == 0) {
    /* Takes SIGINT and SIGTERM for itself and returns: a stop request would then hang the job. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = hang_forever;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGINT, hang_forever);
    trace(f, "installed handlers");
    return HH_OK;
  }
  if (strcmp(b, "write_values") == 0 && values && values->count > 0) {
    const hh_tensor* v = hh_run_value(values, 0);
    const long page = sysconf(_SC_PAGESIZE);
    void* start = (void*)((uintptr_t)v->data & ~(uintptr_t)(page - 1));
    char text[256];
    snprintf(
        text, sizeof text, "mprotect of the values to writable: %s",
        mprotect(start, (size_t)page, PROT_READ | PROT_WRITE) == 0 ? "allowed" : strerror(errno));
    say(f, text);
    *(volatile char*)v->data = 42;
    return hh_fail(err, HH_ERROR, "faulty: wrote into the fetched values");
  }
  if (strcmp(b, "close_channel") == 0) {
    syscall(SYS_close_range, 3u, ~0u, 0u);
    for (;;) sleep_ms(1000);
  }
  if (strcmp(b, "big_data") == 0) {
    /* More than one frame each way: an 8 MiB state out and back, a log line over the limit. */
    const size_t size = (size_t)8 << 20;
    char* out = (char*)malloc(size);
    char* back = (char*)malloc(size);
    char text[256];
    size_t i, got = 0, needed = 0;
    hh_status put, get, small;
    char tiny[4];
    if (!out || !back) return hh_fail(err, HH_ERROR, "out of memory");
    for (i = 0; i < size; ++i) out[i] = (char)(i * 31 + 7);
    put = f->host->state_put(f->host, out, size);
    get = f->host->state_get(f->host, back, size, &got);
    small = f->host->state_get(f->host, tiny, sizeof tiny, &needed);
    snprintf(text, sizeof text, "big state put=%d get=%d same=%d size=%zu small=%d needed=%zu",
             (int)put, (int)get, got == size && memcmp(out, back, size) == 0, got, (int)small,
             needed);
    trace(f, text);
    memset(out, 'L', HH_MAX_LOG_MESSAGE + 100);
    f->host->log(f->host, HH_LOG_INFO, out, HH_MAX_LOG_MESSAGE + 100);
    free(out);
    free(back);
    return HH_OK;
  }
  if (strcmp(b, "thread_services") == 0) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, services_thread, f) == 0) pthread_join(thread, NULL);
    return HH_OK;
  }
  if (strcmp(b, "late_thread") == 0 && !f->late_thread_started) {
    f->late_thread_started = pthread_create(&f->late_thread, NULL, late_thread, f) == 0;
    return HH_OK;
  }
  return HH_OK;
}

/* ---- what every call does besides the fault ------------------------------------------------ */

static void trace_services(faulty* f) {
  char text[2048];
  char path[256] = "(unset)";
  int64_t written_step = -7;
  size_t size = 0;
  uint32_t version = 0;
  int32_t has_state = f->host->state_info(f->host, &size, &version);
  const hh_checkpoint_service* cp =
      (const hh_checkpoint_service*)f->host->get_service(f->host, HH_SERVICE_CHECKPOINT);
  const hh_steps_service* steps =
      (const hh_steps_service*)f->host->get_service(f->host, HH_SERVICE_STEPS);
  const hh_summary_service* summary =
      (const hh_summary_service*)f->host->get_service(f->host, HH_SERVICE_SUMMARY);
  int32_t found = cp ? cp->last_written(f->host, path, sizeof path, &written_step) : -1;
  hh_error err;
  hh_status bad_tag;
  hh_error_init(&err);
  bad_tag = summary ? summary->add_scalar(f->host, NULL, "", 1.0, 0, &err) : -1;
  snprintf(text, sizeof text,
           "services gs=%lld stop=%d enabled=%d/%d state=%d:%zu:%u checkpoint=%d steps=%lld "
           "unknown=%s bad_tag=%d:%s",
           (long long)f->host->global_step(f->host), (int)f->host->should_stop(f->host),
           (int)f->host->log_enabled(f->host, HH_LOG_DEBUG),
           (int)f->host->log_enabled(f->host, HH_LOG_ERROR), (int)has_state, size,
           (unsigned)version, (int)found, steps ? (long long)steps->last_step(f->host) : -2LL,
           f->host->get_service(f->host, "hh.no-such-service/1") ? "offered" : "null", (int)bad_tag,
           err.message);
  trace(f, text);
}

static hh_status f_begin(hh_hook* hook, hh_error* err) {
  faulty* f = (faulty*)hook->hook_data;
  const hh_steps_service* steps =
      (const hh_steps_service*)f->host->get_service(f->host, HH_SERVICE_STEPS);
  char text[128];
  snprintf(text, sizeof text, "begin publish=%d",
           steps ? (int)steps->publish_last_step(f->host, 1000) : -1);
  trace(f, text);
  say(f, "faulty: begin");
  if (strcmp(f->behaviour, "ok") == 0) trace_services(f);
  return misbehave(f, "begin", 0, NULL, NULL, err);
}

static hh_status f_after_create_session(hh_hook* hook, const hh_session_info* s, hh_error* err) {
  faulty* f = (faulty*)hook->hook_data;
  char text[128];
  snprintf(text, sizeof text, "after_create_session gs=%lld creation=%u", (long long)s->global_step,
           (unsigned)s->creation);
  trace(f, text);
  say(f, text);
  return misbehave(f, "after_create_session", 0, NULL, NULL, err);
}

static hh_status f_before_run(hh_hook* hook, const hh_run_context* ctx, hh_run_request* req,
                              hh_error* err) {
  faulty* f = (faulty*)hook->hook_data;
  char text[256];
  hh_status fetch = req->add_fetch(req, "loss");
  snprintf(text, sizeof text, "before_run gs=%lld it=%lld stop=%d fetch=%d",
           (long long)ctx->global_step, (long long)ctx->iteration, (int)ctx->stop_requested,
           (int)fetch);
  trace(f, text);
  if (strcmp(f->behaviour, "ok") == 0) {
    /* Fetches and feeds of every kind the sandbox carries: numeric and string. */
    static const int64_t one[1] = {1};
    static const int64_t two[1] = {2};
    hh_str notes[2];
    const float lr = 0.05f;
    hh_tensor feed;
    const hh_status s_weights = req->add_fetch(req, "weights");
    const hh_status s_tag = req->add_fetch(req, "tag");
    hh_status s_lr, s_note;
    hh_tensor_init(&feed);
    feed.name = "learning_rate";
    feed.dtype = HH_DTYPE_F32;
    feed.rank = 1;
    feed.shape = one;
    feed.data = &lr;
    feed.byte_size = sizeof lr;
    s_lr = req->add_feed(req, &feed);
    notes[0].data = "alpha";
    notes[0].size = 5;
    notes[1].data = "be\0ta"; /* an embedded NUL travels with its string */
    notes[1].size = 5;
    hh_tensor_init(&feed);
    feed.name = "note";
    feed.dtype = HH_DTYPE_STRING;
    feed.rank = 1;
    feed.shape = two;
    feed.data = notes;
    feed.byte_size = sizeof notes;
    s_note = req->add_feed(req, &feed);
    snprintf(text, sizeof text, "requests weights=%d tag=%d lr=%d note=%d", (int)s_weights,
             (int)s_tag, (int)s_lr, (int)s_note);
    trace(f, text);
  }
  return misbehave(f, "before_run", ctx->global_step, req, NULL, err);
}

static hh_status f_after_run(hh_hook* hook, const hh_run_context* ctx, const hh_run_values* values,
                             hh_error* err) {
  faulty* f = (faulty*)hook->hook_data;
  char text[1024];
  char state[64];
  int n;
  uint32_t i;
  n = snprintf(text, sizeof text,
               "after_run gs=%lld live=%lld values=", (long long)ctx->global_step,
               (long long)f->host->global_step(f->host));
  for (i = 0; i < values->count && n > 0 && (size_t)n < sizeof text; ++i) {
    const hh_tensor* v = hh_run_value(values, i);
    size_t k, count = hh_tensor_element_count(v);
    n += snprintf(text + n, sizeof text - (size_t)n, "%s%s:%s[", i ? "," : "", v->name,
                  hh_dtype_name(v->dtype));
    for (k = 0; k < count && n > 0 && (size_t)n < sizeof text; ++k) {
      if (v->dtype == HH_DTYPE_STRING) {
        const hh_str* item = (const hh_str*)v->data + k;
        size_t c;
        n += snprintf(text + n, sizeof text - (size_t)n, "%s'", k ? " " : "");
        for (c = 0; c < item->size && n > 0 && (size_t)n < sizeof text; ++c)
          n += snprintf(text + n, sizeof text - (size_t)n,
                        item->data[c] >= 32 && item->data[c] < 127 ? "%c" : "\\x%02x",
                        (unsigned char)item->data[c]);
        if (n > 0 && (size_t)n < sizeof text) n += snprintf(text + n, sizeof text - (size_t)n, "'");
      } else {
        n += snprintf(text + n, sizeof text - (size_t)n, "%s%g", k ? " " : "",
                      hh_tensor_get_double(v, k));
      }
    }
    if (n > 0 && (size_t)n < sizeof text) n += snprintf(text + n, sizeof text - (size_t)n, "]");
    /* A value handed with strides says so (the elements above are in their logical order). */
    if (v->strides && n > 0 && (size_t)n < sizeof text)
      n += snprintf(text + n, sizeof text - (size_t)n, "(strided)");
  }
  trace(f, text);
  ++f->after_runs;
  snprintf(state, sizeof state, "after_runs=%lld", (long long)f->after_runs);
  f->host->state_put(f->host, state, strlen(state));
  if (strcmp(f->behaviour, "ok") == 0) {
    const hh_summary_service* summary =
        (const hh_summary_service*)f->host->get_service(f->host, HH_SERVICE_SUMMARY);
    if (summary && values->count > 0) {
      hh_error e;
      hh_error_init(&e);
      summary->add_scalar(f->host, "summaries", "loss",
                          hh_tensor_get_double(hh_run_value(values, 0), 0), ctx->global_step, &e);
    }
    trace_services(f);
    hh_log(f->host, HH_LOG_WARN, "faulty: a warning from after_run");
  }
  return misbehave(f, "after_run", ctx->global_step, NULL, values, err);
}

static hh_status f_end(hh_hook* hook, const hh_end_info* info, hh_error* err) {
  faulty* f = (faulty*)hook->hook_data;
  char text[1024];
  snprintf(text, sizeof text, "end outcome=%s gs=%lld reason=%s", hh_outcome_name(info->outcome),
           (long long)info->global_step, info->reason);
  trace(f, text);
  say(f, "faulty: end");
  return misbehave(f, "end", 0, NULL, NULL, err);
}

static void f_destroy(hh_hook* hook) {
  faulty* f = (faulty*)hook->hook_data;
  if (f->late_thread_started) pthread_join(f->late_thread, NULL);
  trace(f, "destroy");
  misbehave(f, "destroy", 0, NULL, NULL, NULL);
  free(f);
}

static void copy_param(char* out, size_t size, const hh_create_args* args, const char* name) {
  const hh_param_value* v = hh_find_param(args, name);
  out[0] = '\0';
  if (v && v->is_set && v->string_value) {
    strncpy(out, v->string_value, size - 1);
    out[size - 1] = '\0';
  }
}

extern char** environ;

/* behaviour=describe_process: what the process it runs in inherited, one trace line each: every
 * environment variable ("env NAME=VALUE"), every open descriptor ("fd N TARGET") and the parent
 * death signal ("pdeathsig N"). */
static void describe_process(const faulty* f) {
  char text[2048];
  char target[1024];
  char** e;
  DIR* dir;
  struct dirent* entry;
  int signal_number = 0;
  for (e = environ; *e; ++e) {
    snprintf(text, sizeof text, "env %s", *e);
    trace(f, text);
  }
  dir = opendir("/proc/self/fd");
  while (dir && (entry = readdir(dir)) != NULL) {
    ssize_t n;
    if (entry->d_name[0] == '.' || atoi(entry->d_name) == dirfd(dir)) continue;
    n = readlinkat(dirfd(dir), entry->d_name, target, sizeof target - 1);
    target[n < 0 ? 0 : n] = '\0';
    snprintf(text, sizeof text, "fd %s %s", entry->d_name, target);
    trace(f, text);
  }
  if (dir) closedir(dir);
  /* Through syscall(): an imported prctl would change the process-wide calls tests expect. */
  syscall(SYS_prctl, PR_GET_PDEATHSIG, &signal_number, 0, 0, 0);
  snprintf(text, sizeof text, "pdeathsig %d", signal_number);
  trace(f, text);
}

static hh_status f_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                          hh_error* err) {
  const hh_param_value* at_step = hh_find_param(args, "at_step");
  faulty* f = (faulty*)calloc(1, sizeof *f);
  char text[512];
  char state[128];
  size_t size = 0;
  hh_status got;
  if (!f) return hh_fail(err, HH_ERROR, "out of memory");
  f->host = host;
  strncpy(f->name, args->instance_name, sizeof f->name - 1);
  copy_param(f->behaviour, sizeof f->behaviour, args, "behaviour");
  copy_param(f->callback, sizeof f->callback, args, "callback");
  copy_param(f->trace_path, sizeof f->trace_path, args, "trace");
  f->at_step = at_step ? at_step->int_value : 0;
  memset(state, 0, sizeof state);
  got = host->state_get(host, state, sizeof state - 1, &size);
  snprintf(text, sizeof text, "create behaviour=%s callback=%s state=%s", f->behaviour, f->callback,
           got == HH_OK ? state : "(none)");
  trace(f, text);
  say(f, text);
  if (strcmp(f->behaviour, "describe_process") == 0) describe_process(f);
  if (strcmp(f->callback, "create") == 0) {
    hh_status status = misbehave(f, "create", 0, NULL, NULL, err);
    if (status != HH_OK) {
      free(f);
      return status;
    }
  }
  f->hook.struct_size = HH_HOOK_SIZE;
  f->hook.hook_data = f;
  f->hook.begin = f_begin;
  f->hook.after_create_session = f_after_create_session;
  f->hook.before_run = f_before_run;
  f->hook.after_run = f_after_run;
  f->hook.end = f_end;
  f->hook.destroy = f_destroy;
  *out = &f->hook;
  return HH_OK;
}

#define FAULTY_PARAMS(P)                                                                      \
  P(behaviour, STRING, DEFAULT, "ok", "the fault: ok, error, fatal, segv, abort, exit3, ...") \
  P(callback, STRING, DEFAULT, "before_run", "where: create, begin, ..., end, destroy")       \
  P(at_step, INT, DEFAULT, "0", "the context's global step of the faulty before/after_run")   \
  P(trace, STRING, DEFAULT, "", "file to append one line per call to")

HH_PLUGIN_DEFINE("faulty", "1.0.0", "Test fixture: misbehaves as configured", FAULTY_PARAMS,
                 f_create)
