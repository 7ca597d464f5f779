/* Asks the host's summary service (hh.summary/1), which the host carries out with its own rights,
 * to write where the hook itself may not: `path` is the folder it hands add_scalar. With
 * `plant` set, it first makes the folder `path` in its own run folder and puts a symbolic link to
 * the file `plant` names where the event file of the next few seconds will go (the name is
 * events.out.tfevents.<seconds>.<hostname>), so a host that followed it would cut and overwrite
 * that file. Logs "hostile: summary PATH: ok" or "... failed: <the host's message>". */
#define HOSTILE_ID "hostile_summary"
#include "hostile.h"

#include <fcntl.h>
#include <hookhost/ext/summary.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

static char plant_target[1024];

/* Links <run folder>/<path>/events.out.tfevents.<T>.<host> to `target` for T from now to now + 9.
 */
static void plant_links(hostile* h, const char* target) {
  char folder[2048], link[2400];
  struct utsname name;
  long rc = 0;
  const time_t now = time(NULL);
  snprintf(folder, sizeof folder, "%s/%s", h->host->run_dir(h->host), h->path);
  mkdir(folder, 0755);
  uname(&name);
  for (time_t t = now; t < now + 10 && rc == 0; ++t) {
    snprintf(link, sizeof link, "%s/events.out.tfevents.%010lld.%s", folder, (long long)t,
             name.nodename);
    rc = syscall(SYS_symlinkat, target, AT_FDCWD, link);
  }
  hostile_report(h, "plant links", rc);
}

static void hostile_attempt(hostile* h) {
  const hh_summary_service* summaries =
      (const hh_summary_service*)h->host->get_service(h->host, HH_SERVICE_SUMMARY);
  hh_error err;
  char text[1400];
  hh_error_init(&err);
  if (!summaries) {
    hostile_say(h, "summary: no summary service");
    return;
  }
  if (plant_target[0]) plant_links(h, plant_target);
  const int ok = summaries->add_scalar(h->host, h->path, "hostile", 1.0, 0, &err) == HH_OK &&
                 summaries->flush(h->host, h->path, &err) == HH_OK;
  const int n = ok ? snprintf(text, sizeof text, "summary %s: ok", h->path)
                   : snprintf(text, sizeof text, "summary %s: failed: %s", h->path, err.message);
  if (n < 0) return;
  hostile_say(h, text);
}

static hh_status summary_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                                hh_error* err) {
  const hh_param_value* plant = hh_find_param(args, "plant");
  if (plant && plant->is_set && plant->string_value)
    snprintf(plant_target, sizeof plant_target, "%s", plant->string_value);
  return hostile_create(host, args, out, err);
}

#define HOSTILE_SUMMARY_PARAMS(P)                                  \
  P(path, STRING, REQUIRED, "", "the folder to hand hh.summary/1") \
  P(plant, STRING, OPTIONAL, "", "a file to link the event file's name to")

HH_PLUGIN_DEFINE(HOSTILE_ID, "1.0.0", "Test fixture: summaries outside its folder",
                 HOSTILE_SUMMARY_PARAMS, summary_create)
