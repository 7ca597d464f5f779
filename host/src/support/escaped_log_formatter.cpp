#include <hookhost/host/log_format.hpp>

#include "support/display_text.hpp"

namespace hookhost {

namespace {

class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text =
        display_text(std::string_view(msg.payload.data(), msg.payload.size()), kLogMessageLimit);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> escaped_log_formatter(const std::string& pattern) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern(pattern);
  return formatter;
}

}  // namespace hookhost
