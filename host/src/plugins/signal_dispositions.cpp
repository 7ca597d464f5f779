#include "plugins/signal_dispositions.hpp"

#include <dlfcn.h>
#include <string.h>

#include <spdlog/spdlog.h>

#include <array>
#include <mutex>

#include "support/text.hpp"

namespace hookhost {
namespace {

constexpr std::array<int, 7> kGuarded = {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

bool same_disposition(const struct sigaction& a, const struct sigaction& b) {
  // The handler and the flags that decide how it runs; the mask is the installer's detail.
  const bool info_a = a.sa_flags & SA_SIGINFO;
  const bool info_b = b.sa_flags & SA_SIGINFO;
  if (info_a != info_b) return false;
  if (info_a ? a.sa_sigaction != b.sa_sigaction : a.sa_handler != b.sa_handler) return false;
  constexpr int kFlags = SA_ONSTACK | SA_RESETHAND | SA_NODEFER | SA_RESTART;
  return (a.sa_flags & kFlags) == (b.sa_flags & kFlags);
}

struct PluginLibrary {
  const void* base;
  std::string file;
};
std::mutex g_libraries_mutex;
std::vector<PluginLibrary> g_libraries;

}  // namespace

std::string plugin_file_at(const void* caller) {
  Dl_info info{};
  if (!caller || ::dladdr(caller, &info) == 0 || !info.dli_fbase) return {};
  std::lock_guard lock(g_libraries_mutex);
  for (const auto& library : g_libraries)
    if (library.base == info.dli_fbase) return library.file;
  return {};
}

bool is_guarded_signal(int signal) {
  for (int s : kGuarded)
    if (s == signal) return true;
  return false;
}

std::string signal_names(const std::vector<int>& signals) {
  std::vector<std::string> names;
  for (int s : signals) {
    const char* abbrev = ::sigabbrev_np(s);
    names.push_back(abbrev ? "SIG" + std::string(abbrev) : std::to_string(s));
  }
  return join(names, ", ");
}

SignalDispositions SignalDispositions::snapshot() {
  SignalDispositions out;
  out.saved_.reserve(kGuarded.size());
  for (int s : kGuarded) {
    struct sigaction now {};
    ::sigaction(s, nullptr, &now);
    out.saved_.emplace_back(s, now);
  }
  return out;
}

std::vector<int> SignalDispositions::restore_changes() const {
  std::vector<int> changed;
  for (const auto& [s, saved] : saved_) {
    struct sigaction now {};
    ::sigaction(s, nullptr, &now);
    if (same_disposition(now, saved)) continue;
    ::sigaction(s, &saved, nullptr);
    changed.push_back(s);
  }
  return changed;
}

void SignalDispositions::restore_and_report(spdlog::logger& log, const std::string& who,
                                            const std::string& during) const {
  const std::vector<int> changed = restore_changes();
  if (changed.empty()) return;
  log.error(
      "{} replaced the handler of {} {}; the host's handler is restored (the host needs it for a "
      "clean stop and for naming crashes): run it with isolation = process if it must handle "
      "signals",
      who, signal_names(changed), during);
}

void register_plugin_library(const void* base, const std::string& file) {
  if (!base) return;
  std::lock_guard lock(g_libraries_mutex);
  for (const auto& library : g_libraries)
    if (library.base == base) return;
  g_libraries.push_back({base, file});
}

}  // namespace hookhost
