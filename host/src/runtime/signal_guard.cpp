#include "runtime/signal_guard.hpp"

#include <spdlog/spdlog.h>

#include "context/host_services.hpp"
#include "context/service_context.hpp"

namespace hookhost {

bool refuse_plugin_signal_change(int signal, const void* caller, const char* function) {
  if (!is_guarded_signal(signal)) return false;
  // Only code inside a plugin library: the host's own calls (the crash handler restoring the
  // previous disposition, say) must pass, and a hook call running on this thread says nothing
  // about who the caller is.
  const std::string file = plugin_file_at(caller);
  if (file.empty()) return false;
  const std::string what = std::string(function) + "(" + signal_names({signal}) + ")";
  const std::string advice =
      ": refused, the host keeps its own handler (it needs it for a clean stop and for naming "
      "crashes); run this hook with isolation = process if it must handle signals";
  const HostServices* call = t_current_call;
  const bool reachable = call && !call->orphaned.load() && call->context;
  const RunningCall* running = reachable ? &call->context->running_call() : nullptr;
  if (call && !call->blame_name.empty()) {
    std::string in = " outside its lifecycle calls";
    if (running && running->instance() == call) {
      const int callback = running->callback();
      if (callback >= 0 && static_cast<size_t>(callback) < kCallbackNames.size())
        in = std::string(" in ") + kCallbackNames[static_cast<size_t>(callback)] +
             " at global step " + std::to_string(running->step());
    }
    call->logger->error("{}{} called {}{}", call->blame_name, in, what, advice);
  } else {
    spdlog::error("plugin {} called {}{}", file, what, advice);
  }
  return true;
}

}  // namespace hookhost
