// The crash handler restores the previous disposition of a fatal signal through the C library's
// sigaction, never through a sigaction the program defines (the hookhost program's guard takes a
// lock and calls dladdr: not for a signal handler). This test program defines such a sigaction;
// once a crash is under way it ends the process with a status of its own, so a handler that
// reached it could not die of the signal.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

#include "runtime/crash_blame.hpp"
#include "support/sanitizer.hpp"

// Outside the file's own namespace: the program's sigaction below reads them.
namespace {

constexpr int kInterposerReached = 42;
std::atomic<bool> g_crashing{false};

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);

}  // namespace

// This program's own sigaction, as the hookhost program has one: the library's calls bind to it.
extern "C" int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  static const auto next = reinterpret_cast<SigactionFn>(::dlsym(RTLD_NEXT, "sigaction"));
  if (g_crashing.load() && act) ::_exit(kInterposerReached);
  return next(sig, act, old);
}

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

// The program's sigaction does run outside the crash: installing goes through it.
TEST(CrashHandler, TheProgramsOwnSigactionIsInPlace) {
  struct sigaction now {};
  g_crashing = true;
  EXPECT_EXIT(::sigaction(SIGUSR1, &now, nullptr), ::testing::ExitedWithCode(kInterposerReached),
              "");
  g_crashing = false;
}

// How the process must end once the handler handed SIGSEGV on: killed by it, or, under
// AddressSanitizer (whose report was the previous disposition), with its report's status; never
// with the status of the program's own sigaction.
bool died_of_sigsegv(int status) {
#if defined(HOOKHOST_ASAN)
  return !WIFEXITED(status) ||
         (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != kInterposerReached);
#else
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
#endif
}

TEST(CrashHandler, RestoresThePreviousDispositionWithoutTheProgramsSigaction) {
  EXPECT_EXIT(
      {
        CrashBlame::install();
        g_crashing = true;
        std::raise(SIGSEGV);
      },
      died_of_sigsegv, "hookhost: SIGSEGV \\(signal 11\\) while no hook call was running");
}

TEST(CrashHandler, AbortDiesOfSigabrtWithItsBlameLine) {
  EXPECT_EXIT(
      {
        CrashBlame::install();
        g_crashing = true;
        std::abort();
      },
      ::testing::KilledBySignal(SIGABRT), "hookhost: SIGABRT \\(signal 6\\) while ");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
