/* A well-behaved plugin doing what a confined hook still may: start a thread, dlopen a system
 * library, map executable memory, signal its own process. */
#include "hostile.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

static void* thread_body(void* arg) {
  *(int*)arg = 42;
  return NULL;
}

static void hostile_attempt(hostile* h) {
  int value = 0;
  pthread_t thread;
  void* library;
  void* code;
  const int started = pthread_create(&thread, NULL, thread_body, &value);
  if (started == 0) pthread_join(thread, NULL);
  hostile_report(h, "pthread_create", started == 0 && value == 42 ? 0 : (errno = started, -1));
  library = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  hostile_report(h, "dlopen(libm.so.6)",
                 library && dlsym(library, "cos") ? 0 : (errno = ENOENT, -1));
  code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  hostile_report(h, "mmap+mprotect(PROT_EXEC)",
                 code != MAP_FAILED ? (long)mprotect(code, 4096, PROT_READ | PROT_EXEC) : -1L);
  hostile_report(h, "kill(self, 0)", syscall(SYS_kill, getpid(), 0));
  hostile_report(h, "tgkill(self, self, 0)", syscall(SYS_tgkill, getpid(), gettid(), 0));
}

HH_PLUGIN_DEFINE("confined_probe", "1.0.0", "Test fixture: what a confined hook still may do",
                 HH_NO_PARAMS, hostile_create)
