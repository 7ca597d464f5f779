// Failure policy names, as the config file spells them. Apart from the lifecycle so the config
// parser (and its fuzz target) needs nothing else of the runtime.
#include "hookhost/host/runtime.hpp"

namespace hookhost {

const char* policy_name(FailurePolicy policy) {
  switch (policy) {
    case FailurePolicy::keep_going: return "continue";
    case FailurePolicy::disable: return "disable";
    case FailurePolicy::stop: return "stop";
    case FailurePolicy::fail: return "fail";
  }
  return "?";
}

std::optional<FailurePolicy> parse_policy(const std::string& text) {
  if (text == "continue") return FailurePolicy::keep_going;
  if (text == "disable") return FailurePolicy::disable;
  if (text == "stop") return FailurePolicy::stop;
  if (text == "fail") return FailurePolicy::fail;
  return std::nullopt;
}

const char* policy_choices() {
  return "continue, disable, stop or fail";
}

const char* crash_policy_name(CrashPolicy policy) {
  switch (policy) {
    case CrashPolicy::restart: return "restart";
    case CrashPolicy::disable: return "disable";
    case CrashPolicy::stop: return "stop";
    case CrashPolicy::fail: return "fail";
  }
  return "?";
}

std::optional<CrashPolicy> parse_crash_policy(const std::string& text) {
  for (CrashPolicy p :
       {CrashPolicy::restart, CrashPolicy::disable, CrashPolicy::stop, CrashPolicy::fail})
    if (text == crash_policy_name(p)) return p;
  return std::nullopt;
}

}  // namespace hookhost
