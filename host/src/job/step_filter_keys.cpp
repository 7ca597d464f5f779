#include "job/step_filter_keys.hpp"

#include <algorithm>
#include <charconv>

#include "support/display_text.hpp"

namespace hookhost {
namespace {

constexpr const char* kEveryNSteps = "every_n_steps";
constexpr const char* kAtSteps = "at_steps";
constexpr const char* kFirstN = "first_n";
// Far past any job's steps, and a multiple of it still fits a 64-bit step.
constexpr uint64_t kMaxCount = uint64_t{1} << 62;
constexpr size_t kMaxAtSteps = 100000;

// Digits only, no sign or space; nullopt when the text is not such a number or exceeds `max`.
std::optional<uint64_t> count_of(std::string_view text, uint64_t max) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

SplitHookKeys split_step_filter(const JobConfig& cfg, const HookConfig& hook,
                                const PluginMetadata& plugin) {
  SplitHookKeys out;
  for (const auto& [key, value] : hook.params) {
    const bool filter_key = key == kEveryNSteps || key == kAtSteps || key == kFirstN;
    if (!filter_key || plugin.find_param(key)) {
      out.plugin_params.emplace(key, value);
      continue;
    }
    const std::string at = cfg.where(hook, key);
    const std::string got = "; got '" + display_text(value) + "'";
    if (key == kEveryNSteps || key == kFirstN) {
      const std::optional<uint64_t> n = count_of(value, kMaxCount);
      if (!n || *n == 0)
        throw ConfigError(
            at + "expected an integer from 1 to " + std::to_string(kMaxCount) +
                (key == kEveryNSteps ? " (the hook's before_run and after_run are called on steps "
                                       "whose global step is a multiple of it)"
                                     : " (the hook's before_run and after_run are called on the "
                                       "first N steps of the run only)") +
                got,
            key);
      (key == kEveryNSteps ? out.filter.every_n_steps : out.filter.first_n) = *n;
      continue;
    }
    std::string_view rest = value;
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = trimmed(rest.substr(0, comma));
      const std::optional<uint64_t> step = count_of(item, kMaxCount);
      if (!step)
        throw ConfigError(at +
                              "expected a comma-separated list of global steps (integers >= 0); '" +
                              display_text(item) + "' is not one" + got,
                          key);
      out.filter.at_steps.push_back(static_cast<int64_t>(*step));
      if (out.filter.at_steps.size() > kMaxAtSteps)
        throw ConfigError(at + "lists more than " + std::to_string(kMaxAtSteps) +
                              " steps; use every_n_steps for a regular cadence",
                          key);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    std::sort(out.filter.at_steps.begin(), out.filter.at_steps.end());
    out.filter.at_steps.erase(std::unique(out.filter.at_steps.begin(), out.filter.at_steps.end()),
                              out.filter.at_steps.end());
  }
  return out;
}

}  // namespace hookhost
