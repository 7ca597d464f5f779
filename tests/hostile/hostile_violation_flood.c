/* Floods the runner's violation pipe (descriptor 5, confine/violation.hpp) with forged records of
 * denied calls: `signal` records (default 20000), each a different one (a kill of another pid, or
 * a write of another path), each naming instance 1 to 4 as the caller (so, in an isolation group,
 * the other members), every tenth one marked fatal. Then it logs how many it wrote and goes on. */
#include "hostile.h"

#include <stdint.h>

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

static void hostile_attempt(hostile* h) {
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

#define HOSTILE_FLOOD_PARAMS(P) P(signal, INT, DEFAULT, "0", "how many records (0: 20000)")

HH_PLUGIN_DEFINE("hostile_violation_flood", "1.0.0",
                 "Test fixture: floods its violation pipe with forged records",
                 HOSTILE_FLOOD_PARAMS, hostile_create)
