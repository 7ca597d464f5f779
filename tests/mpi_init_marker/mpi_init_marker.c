/* Preloaded (LD_PRELOAD) into the programs a test starts: records, in the file
 * $HOOKHOST_TEST_MPI_INIT_MARKER, one line per process it is loaded into ("loaded PROGRAM PID")
 * and one per call that initialises MPI ("MPI_Init_thread PID"), then forwards the call to the
 * MPI library. A process without the second line never initialised MPI. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void record(const char* what) {
  const char* file = getenv("HOOKHOST_TEST_MPI_INIT_MARKER");
  char line[512];
  int fd, n;
  if (!file || !*file) return;
  n = snprintf(line, sizeof line, "%s %ld\n", what, (long)getpid());
  if (n <= 0 || (size_t)n >= sizeof line) return;
  fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) != n) { /* a lost line fails the test that reads it */
  }
  close(fd);
}

__attribute__((constructor)) static void loaded(void) {
  char exe[256] = {0}, what[300];
  const char* name = exe;
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) strcpy(exe, "?");
  if (strrchr(exe, '/')) name = strrchr(exe, '/') + 1;
  snprintf(what, sizeof what, "loaded %s", name);
  record(what);
}

typedef int (*init_fn)(int*, char***);
typedef int (*init_thread_fn)(int*, char***, int, int*);

int MPI_Init(int* argc, char*** argv) {
  init_fn next = (init_fn)dlsym(RTLD_NEXT, "MPI_Init");
  record("MPI_Init");
  return next ? next(argc, argv) : 1;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  init_thread_fn next = (init_thread_fn)dlsym(RTLD_NEXT, "MPI_Init_thread");
  record("MPI_Init_thread");
  return next ? next(argc, argv, required, provided) : 1;
}
