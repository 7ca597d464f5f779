// Failure policy names (and resume_state's), as the config file spells them. Apart from the
// lifecycle so the config parser (and its fuzz target) needs nothing else of the runtime.
#include <array>
#include <utility>

#include "hookhost/host/runtime.hpp"

namespace hookhost {

namespace {

// Each policy with the word the configuration spells it with, in the order help texts list them.
template <typename Policy>
using PolicyWords = std::array<std::pair<Policy, const char*>, 4>;

constexpr PolicyWords<FailurePolicy> kFailurePolicyWords{{{FailurePolicy::keep_going, "continue"},
                                                          {FailurePolicy::disable, "disable"},
                                                          {FailurePolicy::stop, "stop"},
                                                          {FailurePolicy::fail, "fail"}}};
constexpr PolicyWords<CrashPolicy> kCrashPolicyWords{{{CrashPolicy::restart, "restart"},
                                                      {CrashPolicy::disable, "disable"},
                                                      {CrashPolicy::stop, "stop"},
                                                      {CrashPolicy::fail, "fail"}}};

template <typename Policy>
const char* word_of(const PolicyWords<Policy>& words, Policy policy) {
  for (const auto& [value, word] : words)
    if (value == policy) return word;
  return "?";
}

template <typename Policy>
std::optional<Policy> policy_of(const PolicyWords<Policy>& words, const std::string& text) {
  for (const auto& [value, word] : words)
    if (text == word) return value;
  return std::nullopt;
}

}  // namespace

const char* policy_name(FailurePolicy policy) {
  return word_of(kFailurePolicyWords, policy);
}

std::optional<FailurePolicy> parse_policy(const std::string& text) {
  return policy_of(kFailurePolicyWords, text);
}

const char* policy_choices() {
  return "continue, disable, stop or fail";
}

const char* crash_policy_name(CrashPolicy policy) {
  return word_of(kCrashPolicyWords, policy);
}

std::optional<CrashPolicy> parse_crash_policy(const std::string& text) {
  return policy_of(kCrashPolicyWords, text);
}

const char* resume_state_name(ResumeState resume_state) {
  return resume_state == ResumeState::any_build ? "any_build" : "same_build";
}

}  // namespace hookhost
