// The program's own sigaction() and signal(): the dynamic loader binds a plugin's calls to these
// (the executable comes first in symbol lookup), so a plugin that tries to replace the handler of
// SIGINT, SIGTERM or a fatal signal is refused at once, on any thread and in any callback, and the
// log names it (runtime/signal_guard.hpp). Every other call goes to the C library's function.
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>

#include "runtime/signal_guard.hpp"

namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);

// Resolved while the program starts, so no lookup runs inside a signal handler that calls
// sigaction; a call made before that (a library constructor) looks it up itself.
SigactionFn g_next_sigaction = reinterpret_cast<SigactionFn>(::dlsym(RTLD_NEXT, "sigaction"));
SignalFn g_next_signal = reinterpret_cast<SignalFn>(::dlsym(RTLD_NEXT, "signal"));

bool resolve() {
  if (!g_next_sigaction)
    g_next_sigaction = reinterpret_cast<SigactionFn>(::dlsym(RTLD_NEXT, "sigaction"));
  if (!g_next_signal) g_next_signal = reinterpret_cast<SignalFn>(::dlsym(RTLD_NEXT, "signal"));
  return g_next_sigaction && g_next_signal;
}

}  // namespace

extern "C" {

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (!resolve()) {
    errno = ENOSYS;
    return -1;
  }
  if (act && hookhost::refuse_plugin_signal_change(sig, __builtin_return_address(0), "sigaction"))
    return g_next_sigaction(sig, nullptr, old);  // the caller sees the handler that stays
  return g_next_sigaction(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t handler) {
  if (!resolve()) {
    errno = ENOSYS;
    return SIG_ERR;
  }
  if (hookhost::refuse_plugin_signal_change(sig, __builtin_return_address(0), "signal")) {
    struct sigaction now {};
    g_next_sigaction(sig, nullptr, &now);
    return now.sa_handler;
  }
  return g_next_signal(sig, handler);
}
}
