/* The hostile corpus (tests/confine_test.cpp): each plugin's begin() tries one thing against the
 * host process (the runner's parent) or the system, through syscall() so the attempt is exactly
 * the one system call, and logs one line through the host: "hostile: WHAT: ok" or
 * "hostile: WHAT: failed: ENAME (text)". begin() always succeeds, so the job goes on. */
#ifndef HOOKHOST_TESTS_HOSTILE_H
#define HOOKHOST_TESTS_HOSTILE_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <hookhost/hookhost.h>

typedef struct hostile {
  hh_hook hook;
  const hh_host* host;
  char target[32]; /* the string parameter "target", when the plugin has one */
  int64_t signal;  /* the integer parameter "signal", when the plugin has one */
  char path[1024]; /* the string parameter "path", when the plugin has one */
  int64_t port;    /* the integer parameter "port", when the plugin has one */
  char name[64];   /* the instance's name */
} hostile;

/* The process that started this runner: the host. */
static inline pid_t hostile_host_pid(void) {
  return getppid();
}

static inline void hostile_say(const hostile* h, const char* text) {
  char line[1500];
  snprintf(line, sizeof line, "hostile: %s", text);
  hh_log(h->host, HH_LOG_INFO, line);
}

/* Logs what `rc` (a system call's result, errno set when it is -1) means. */
static inline void hostile_report(const hostile* h, const char* what, long rc) {
  char text[1400];
  if (rc == -1) {
    const int e = errno;
    snprintf(text, sizeof text, "%s: failed: %s (%s)", what, strerrorname_np(e), strerror(e));
  } else {
    snprintf(text, sizeof text, "%s: ok", what);
  }
  hostile_say(h, text);
}

/* The host's TracerPid line from /proc, so a test sees that nothing attached to it. */
static inline void hostile_report_tracer(const hostile* h) {
  char path[64], line[256], text[300];
  FILE* status;
  snprintf(path, sizeof path, "/proc/%d/status", (int)hostile_host_pid());
  status = fopen(path, "r");
  if (!status) return;
  while (fgets(line, sizeof line, status))
    if (strncmp(line, "TracerPid:", 10) == 0) {
      snprintf(text, sizeof text, "host TracerPid %d", atoi(line + 10));
      hostile_say(h, text);
    }
  fclose(status);
}

/* The plugin's attempt, defined by each plugin before it includes HOSTILE_PLUGIN. */
static void hostile_attempt(hostile* h);

static hh_status hostile_begin(hh_hook* hook, hh_error* err) {
  (void)err;
  hostile_attempt((hostile*)hook->hook_data);
  return HH_OK;
}

static void hostile_destroy(hh_hook* hook) {
  free(hook->hook_data);
}

static hh_status hostile_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                                hh_error* err) {
  hostile* h = (hostile*)calloc(1, sizeof *h);
  const hh_param_value* target;
  const hh_param_value* signal_number;
  const hh_param_value* path;
  const hh_param_value* port;
  if (!h) return hh_fail(err, HH_ERROR, "out of memory");
  path = hh_find_param(args, "path");
  port = hh_find_param(args, "port");
  if (path && path->is_set && path->string_value)
    snprintf(h->path, sizeof h->path, "%s", path->string_value);
  h->port = port && port->is_set ? port->int_value : 0;
  target = hh_find_param(args, "target");
  signal_number = hh_find_param(args, "signal");
  h->host = host;
  if (args->instance_name) snprintf(h->name, sizeof h->name, "%s", args->instance_name);
  if (target && target->is_set && target->string_value)
    snprintf(h->target, sizeof h->target, "%s", target->string_value);
  h->signal = signal_number && signal_number->is_set ? signal_number->int_value : 0;
  hh_hook_init(&h->hook, h);
  h->hook.begin = hostile_begin;
  h->hook.destroy = hostile_destroy;
  *out = &h->hook;
  return HH_OK;
}

#endif
