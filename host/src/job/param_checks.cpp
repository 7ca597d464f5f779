#include "job/param_checks.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "hookhost/host/job.hpp"
#include "support/display_text.hpp"

namespace hookhost {

void rethrow_at(const ConfigError& e, const std::string& where) {
  throw ConfigError(where + e.what(), e.key());
}

namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

// The first of `keys` that `message` names as a whole word, e.g. "num_steps" in "invalid
// num_steps=-3"; empty when none. Lets a plugin's refusal in create() point at the key's line.
std::string key_named_in(const std::string& message,
                         const std::multimap<std::string, std::string>& keys) {
  std::string best;
  size_t best_pos = std::string::npos;
  for (const auto& [key, value] : keys) {
    for (size_t pos = message.find(key); pos != std::string::npos;
         pos = message.find(key, pos + 1)) {
      const bool starts = pos == 0 || !is_identifier_char(message[pos - 1]);
      const size_t end = pos + key.size();
      const bool ends = end == message.size() || !is_identifier_char(message[end]);
      if (starts && ends) {
        if (pos < best_pos) best = key, best_pos = pos;
        break;
      }
    }
  }
  return best;
}

// What Boost's value parsing in resolve_params() lets through or reports without the valid range:
// integers beyond 64 bits, NaN and infinite numbers, empty items in a list. Throws ConfigError with
// the key; the caller adds the file, line and section.
void check_param_texts(const PluginMetadata& schema,
                       const std::multimap<std::string, std::string>& raw) {
  for (const auto& [key, text] : raw) {
    const ParamSpec* spec = schema.find_param(key);
    if (!spec) continue;  // resolve_params() names the unknown key and lists the valid ones
    const std::string got = ", got '" + display_text(text) + "'";
    switch (spec->type) {
      case HH_PARAM_TYPE_INT: {
        const bool integer_shaped =
            !text.empty() &&
            std::all_of(text.begin() + (text[0] == '-' || text[0] == '+'), text.end(),
                        [](unsigned char c) { return std::isdigit(c); }) &&
            text.find_first_of("0123456789") != std::string::npos;
        int64_t value = 0;
        const char* first = text.data() + (text[0] == '+');
        if (integer_shaped && std::from_chars(first, text.data() + text.size(), value).ec ==
                                  std::errc::result_out_of_range)
          throw ConfigError("must be an integer between " +
                                std::to_string(std::numeric_limits<int64_t>::min()) + " and " +
                                std::to_string(std::numeric_limits<int64_t>::max()) + got,
                            key);
        break;
      }
      case HH_PARAM_TYPE_FLOAT: {
        double value = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data() + (text[0] == '+'), end, value);
        if (ptr == end && (ec == std::errc::result_out_of_range || !std::isfinite(value)))
          throw ConfigError("must be a finite number (not NaN or infinite)" + got, key);
        break;
      }
      case HH_PARAM_TYPE_STRING_LIST: {
        if (text.find_first_not_of(" \t") == std::string::npos) break;  // an empty list
        size_t start = 0, item = 1;
        for (;; ++item) {
          const size_t comma = std::min(text.find(',', start), text.size());
          if (text.find_first_not_of(" \t", start) >= comma)
            throw ConfigError("item " + std::to_string(item) +
                                  " of the comma-separated list is empty" + got +
                                  "; remove the extra comma",
                              key);
          if (comma == text.size()) break;
          start = comma + 1;
        }
        break;
      }
      default: break;
    }
  }
}

// Checks a hook's or the workload's parameters against `schema`; errors name the key's line.
ResolvedParams resolve_checked(const PluginMetadata& schema, const std::string& instance,
                               const std::multimap<std::string, std::string>& raw,
                               const std::function<std::string(const std::string&)>& where) {
  try {
    check_param_texts(schema, raw);
    return resolve_params(schema, instance, raw);
  } catch (const ConfigError& e) {
    rethrow_at(e, where(e.key()));
  }
}

}  // namespace hookhost
