/* Writes what it likes on the runner's violation pipe (descriptor 5, confine/violation.hpp),
 * which its SIGSYS handler writes records of denied calls to. `target`:
 *   "" (flood): forged records, `signal` of them (default 20000), each a different one (a kill of
 *       another pid, or a write of another path), each naming instance 1 to 4 as the caller (so,
 *       in an isolation group, the other members), every tenth one marked fatal;
 *   "garbage": bytes that are no record; once the host has read them, a real denied call (a
 *       signal 0 to the host), whose record the handler writes to the same pipe;
 *   "lies": well-formed records that no handler writes: a call of another architecture (which
 *       kills a runner before any handler runs), a kill of pid 424242 marked fatal (a kill is not),
 *       a record whose `writes` is 7.
 * Then it logs what it did and goes on. */
#include "hostile.h"

#include <poll.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>

/* confine::ViolationRecord, as the runner's SIGSYS handler writes it. */
struct forged_record {
  uint32_t magic, instance;
  int32_t nr;
  uint32_t arch;
  uint16_t fatal, writes;
  uint32_t path_bytes;
  uint64_t args[6];
};
_Static_assert(sizeof(struct forged_record) == 72, "the record's layout");

#if defined(__x86_64__)
#define FORGED_ARCH 0xC000003Eu /* AUDIT_ARCH_X86_64 */
#elif defined(__aarch64__)
#define FORGED_ARCH 0xC00000B7u /* AUDIT_ARCH_AARCH64 */
#else
#define FORGED_ARCH 0u
#endif

static void forge(struct forged_record* record, int32_t nr, uint64_t pid) {
  memset(record, 0, sizeof *record);
  record->magic = 0x31564848u; /* "HHV1" */
  record->arch = FORGED_ARCH;
  record->nr = nr;
  record->args[0] = pid;
}

/* Garbage, then a real denial once the host has read the garbage (or 2 s passed). */
static void write_garbage(hostile* h) {
  char garbage[80];
  char text[160];
  int waited_ms = 0, queued = 1;
  struct pollfd end = {5, 0, 0};
  const struct timespec tick = {0, 10 * 1000 * 1000};
  memset(garbage, 'G', sizeof garbage);
  if (write(5, garbage, sizeof garbage) != (ssize_t)sizeof garbage) {
    hostile_report(h, "write garbage to descriptor 5", -1);
    return;
  }
  while (waited_ms < 2000 && ioctl(5, FIONREAD, &queued) == 0 && queued > 0) {
    nanosleep(&tick, NULL);
    waited_ms += 10;
  }
  /* A reader that closes its end does it right after the read: give it that moment. */
  (void)poll(&end, 1, 200);
  snprintf(text, sizeof text, "wrote garbage to descriptor 5 (%s)",
           queued == 0 ? "read by the host" : "not read within 2 s");
  hostile_say(h, text);
  hostile_report(h, "after the garbage, signal 0 to host",
                 syscall(SYS_kill, (long)hostile_host_pid(), 0L));
}

static void write_lies(hostile* h) {
  struct forged_record record;
  long written = 0;
  char text[96];
  forge(&record, 37, 424241); /* kill on i386 */
  record.arch = 0x40000003u;  /* AUDIT_ARCH_I386 */
  if (write(5, &record, sizeof record) > 0) ++written;
  forge(&record, SYS_kill, 424242);
  record.fatal = 1;
  if (write(5, &record, sizeof record) > 0) ++written;
  forge(&record, SYS_kill, 424243);
  record.writes = 7;
  if (write(5, &record, sizeof record) > 0) ++written;
  snprintf(text, sizeof text, "wrote %ld lying records", written);
  hostile_say(h, text);
}

static void hostile_attempt(hostile* h) {
  if (strcmp(h->target, "garbage") == 0) {
    write_garbage(h);
    return;
  }
  if (strcmp(h->target, "lies") == 0) {
    write_lies(h);
    return;
  }
  const long count = h->signal > 0 ? (long)h->signal : 20000;
  long written = 0;
  char text[128];
  for (long i = 0; i < count; ++i) {
    struct {
      struct forged_record record;
      char path[96];
    } out;
    memset(&out, 0, sizeof out);
    out.record.magic = 0x31564848u; /* "HHV1" */
    out.record.instance = (uint32_t)(1 + i % 4);
    out.record.arch = FORGED_ARCH;
    out.record.fatal = i % 10 == 0;
    if (i % 2 == 0) {
      out.record.nr = SYS_kill;
      out.record.args[0] = (uint64_t)(100000 + i);
      out.record.args[1] = 9;
    } else {
      out.record.nr = SYS_openat;
      out.record.writes = 1;
      out.record.args[2] = 0101; /* O_WRONLY | O_CREAT */
      out.record.path_bytes =
          (uint32_t)snprintf(out.path, sizeof out.path, "/forged/by/hostile/%ld", i);
    }
    if (write(5, &out, sizeof out.record + out.record.path_bytes) > 0) ++written;
  }
  snprintf(text, sizeof text, "forged %ld violation records", written);
  hostile_say(h, text);
}

#define HOSTILE_FLOOD_PARAMS(P)                               \
  P(signal, INT, DEFAULT, "0", "how many records (0: 20000)") \
  P(target, STRING, DEFAULT, "", "what to write: flood, garbage, lies")

HH_PLUGIN_DEFINE("hostile_violation_flood", "1.0.0",
                 "Test fixture: floods its violation pipe with forged records",
                 HOSTILE_FLOOD_PARAMS, hostile_create)
