/* A system call no hook needs and no table names but the allow-list: `target` personality
 * (personality(ADDR_NO_RANDOMIZE), then this process's personality as /proc says), or any other
 * text: the raw call number `signal` (an unassigned one by default). */
#include "hostile.h"

#include <sys/personality.h>

static void hostile_attempt(hostile* h) {
  char what[96];
  if (strcmp(h->target, "personality") == 0) {
    char line[32] = "";
    FILE* in;
    hostile_report(h, "personality(ADDR_NO_RANDOMIZE)",
                   syscall(SYS_personality, ADDR_NO_RANDOMIZE));
    in = fopen("/proc/self/personality", "r");
    if (in && fgets(line, sizeof line, in)) {
      line[strcspn(line, "\n")] = '\0';
      snprintf(what, sizeof what, "personality now %s", line);
      hostile_say(h, what);
    }
    if (in) fclose(in);
    return;
  }
  snprintf(what, sizeof what, "system call %d", (int)h->signal);
  hostile_report(h, what, syscall(h->signal, 0, 0, 0, 0, 0, 0));
}

#define HOSTILE_SYSCALL_PARAMS(P)                                \
  P(target, STRING, DEFAULT, "number", "personality, or number") \
  P(signal, INT, DEFAULT, "1000", "the call's number (target number)")

HH_PLUGIN_DEFINE("hostile_syscall", "1.0.0", "Test fixture: makes a call off the allow-list",
                 HOSTILE_SYSCALL_PARAMS, hostile_create)
