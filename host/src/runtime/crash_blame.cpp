#include "runtime/crash_blame.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "context/host_services.hpp"
#include "context/service_context.hpp"

namespace hookhost {
namespace {

std::atomic<bool> g_installed{false};
std::atomic<bool> g_program_exits{false};
constexpr size_t kWatched = 16;
std::array<std::atomic<const RunningCall*>, kWatched> g_runtimes{};
constexpr std::array<int, 5> kFatalSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction g_previous[NSIG];
// The C library's sigaction, resolved at install time. A program may define its own sigaction
// (the hookhost program's refuses plugins' changes, with dladdr and a mutex): the handler must
// not run that code, so it restores the previous disposition through this one.
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
SigactionFn g_real_sigaction = nullptr;

// A line built without allocating.
struct Line {
  char text[1024];
  size_t size = 0;
  void add(const char* s) {
    while (s && *s && size < sizeof text - 1) text[size++] = *s++;
  }
  void add(int64_t v) {
    char digits[24];
    int n = 0;
    const bool negative = v < 0;
    uint64_t u = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u && n < 23);
    if (negative) add("-");
    while (n > 0 && size < sizeof text - 1) text[size++] = digits[--n];
  }
  void write_out() {
    add("\n");
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::write(STDERR_FILENO, text + done, size - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
};

// "hook 'X' (plugin 'id', FILE) in CALLBACK at global step N", from the call on this thread, else
// from any watched runtime with a call running. A hook's create() and destroy() count as calls.
// False when no hook call is running.
bool describe_running_call(Line& line) {
  const RunningCall* running = nullptr;
  const HostServices* in_call = nullptr;   // whose lifecycle call runs
  const HostServices* instance = nullptr;  // whose create() or destroy() runs
  const HostServices* here = t_current_call;
  const RunningCall* observed = t_observer_call;  // an observer's worker: its own record
  if (observed && observed->instance()) {
    running = observed;
    in_call = observed->instance();
  } else if (here && !here->orphaned.load(std::memory_order_relaxed) && here->context) {
    // An orphaned instance's runtime may be gone: its context is not read.
    running = &here->context->running_call();
    in_call = running->instance();
    if (!in_call && running->instance_call() == here) instance = here;
  }
  const bool this_thread = in_call != nullptr || instance != nullptr;
  for (size_t i = 0; !in_call && !instance && i < kWatched; ++i) {
    running = g_runtimes[i].load(std::memory_order_acquire);
    if (!running) continue;
    in_call = running->instance();
    if (!in_call) instance = running->instance_call();
  }
  if (!in_call && !instance) return false;
  const char* callback_name = nullptr;
  if (in_call) {
    line.add(in_call->blame_name.c_str());
    const int callback = running->callback();
    if (callback >= 0 && static_cast<size_t>(callback) < kCallbackNames.size())
      callback_name = kCallbackNames[static_cast<size_t>(callback)];
  } else {
    line.add(instance->blame_name.c_str());
    callback_name = running->instance_call_name();
  }
  if (callback_name) {
    line.add(" in ");
    line.add(callback_name);
  }
  line.add(" at global step ");
  line.add(running->step());
  if (!this_thread) line.add(" (the fault was on another thread, maybe one the plugin started)");
  return true;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
  }
  return "a fatal signal";
}

void on_fatal_signal(int sig) {
  Line line;
  line.add("hookhost: ");
  line.add(signal_name(sig));
  line.add(" (signal ");
  line.add(static_cast<int64_t>(sig));
  line.add(") while ");
  if (!describe_running_call(line)) line.add("no hook call was running");
  line.add(
      "; the process dies: resume from the last checkpoint, and run this hook with "
      "isolation = process to contain it");
  line.write_out();
  // The previous disposition (the default, or a sanitizer's report) handles it from here.
  g_real_sigaction(sig, &g_previous[sig], nullptr);
  ::raise(sig);
}

void on_exit() {
  if (g_program_exits.load()) return;
  // exit()'s own status is not known here; the program's _exit would blame a second time.
  ::syscall(SYS_exit_group, CrashBlame::exit_status_for("exit()", -1));
}

}  // namespace

void CrashBlame::install() {
  if (g_installed.exchange(true)) return;
  // The next definition after this program's own, if it has one: the C library's (or a
  // sanitizer's, which forwards to it).
  g_real_sigaction = reinterpret_cast<SigactionFn>(::dlsym(RTLD_NEXT, "sigaction"));
  if (!g_real_sigaction) g_real_sigaction = &::sigaction;
  static char alternate_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  ::sigaltstack(&ss, nullptr);
  for (int sig : kFatalSignals) {
    struct sigaction sa {};
    sa.sa_handler = &on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK;
    ::sigaction(sig, &sa, &g_previous[sig]);
  }
  std::atexit(&on_exit);
}

void CrashBlame::program_exits() {
  g_program_exits.store(true);
}

void CrashBlame::watch(const RunningCall* running) {
  for (auto& slot : g_runtimes) {
    const RunningCall* expected = nullptr;
    if (slot.compare_exchange_strong(expected, running)) return;
  }
}

void CrashBlame::unwatch(const RunningCall* running) {
  for (auto& slot : g_runtimes) {
    const RunningCall* expected = running;
    slot.compare_exchange_strong(expected, nullptr);
  }
}

int CrashBlame::exit_status_for(const char* function, int status) {
  if (g_program_exits.load()) return status;
  Line line;
  line.add("hookhost: ");
  line.add(function);
  if (status >= 0) {
    line.add(" with status ");
    line.add(static_cast<int64_t>(status));
  }
  line.add(" was called by ");
  if (!describe_running_call(line)) line.add("a plugin or library outside any hook call");
  line.add("; the job did not finish: exiting with status ");
  line.add(static_cast<int64_t>(kPluginExitStatus));
  line.add(" (run this hook with isolation = process to contain it)");
  line.write_out();
  return kPluginExitStatus;
}

}  // namespace hookhost
