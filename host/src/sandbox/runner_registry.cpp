#include "runner_registry.hpp"

#include <map>
#include <mutex>

namespace hookhost::sandbox {
namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<pid_t, std::string>& registry() {
  static std::map<pid_t, std::string> runners;
  return runners;
}

}  // namespace

void register_runner(pid_t pid, std::string whose) {
  std::lock_guard lock(registry_mutex());
  registry()[pid] = std::move(whose);
}

void forget_runner(pid_t pid) {
  std::lock_guard lock(registry_mutex());
  registry().erase(pid);
}

std::optional<std::string> runner_of(pid_t pid) {
  std::lock_guard lock(registry_mutex());
  const auto it = registry().find(pid);
  if (it == registry().end()) return std::nullopt;
  return it->second;
}

}  // namespace hookhost::sandbox
