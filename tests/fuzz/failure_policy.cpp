// parse_policy() for the config parser's fuzz target. It is defined in host/src/runtime.cpp, which
// clang 14 cannot compile (a lambda there captures a structured binding, which clang supports from
// version 16); the config parser needs nothing else from it. Keep in step with runtime.cpp.
#include "hookhost/host/runtime.hpp"

namespace hookhost {

std::optional<FailurePolicy> parse_policy(const std::string& text) {
  if (text == "disable") return FailurePolicy::disable;
  if (text == "stop") return FailurePolicy::stop;
  if (text == "fail") return FailurePolicy::fail;
  return std::nullopt;
}

}  // namespace hookhost
