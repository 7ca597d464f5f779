// The dispositions of the signals the host relies on, and where plugin libraries lie: what the
// loader guards around loading a library and the runtime around a hook's calls
// (runtime/signal_guard.hpp says why).
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace spdlog {
class logger;
}

namespace hookhost {

class SignalDispositions {
 public:
  // The dispositions of the guarded signals now.
  static SignalDispositions snapshot();
  // Puts back every guarded signal whose disposition differs from the snapshot's; returns them.
  std::vector<int> restore_changes() const;
  // restore_changes(), and when there were any, one error on `log`: "WHO replaced the handler of
  // SIGTERM DURING; the host's handler is restored ...".
  void restore_and_report(spdlog::logger& log, const std::string& who,
                          const std::string& during) const;

 private:
  std::vector<std::pair<int, struct sigaction>> saved_;
};

// True for a signal whose handler only the host may set.
bool is_guarded_signal(int signal);
// "SIGTERM, SIGSEGV".
std::string signal_names(const std::vector<int>& signals);

// The loader tells the guard where each plugin library lies, so a call from plugin code on a
// plugin's own thread is recognised too. `base` is the library's load address (dladdr's dli_fbase).
void register_plugin_library(const void* base, const std::string& file);
// The plugin file whose code `caller` is in, or "".
std::string plugin_file_at(const void* caller);

}  // namespace hookhost
