#include "testing/log_capture.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "support/display_text.hpp"

namespace hookhost::testing {

namespace {

// Plugin texts reach the terminal with their control characters escaped, as in 'hookhost run'.
class EscapedMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text =
        display_text(std::string_view(msg.payload.data(), msg.payload.size()), 4096);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

}  // namespace

std::vector<LogRecord> CaptureSink::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(records_, {});
}

void CaptureSink::sink_it_(const spdlog::details::log_msg& msg) {
  records_.push_back({std::string(msg.logger_name.data(), msg.logger_name.size()), msg.level,
                      std::string(msg.payload.data(), msg.payload.size())});
}

std::shared_ptr<spdlog::logger> make_capture_logger(std::shared_ptr<CaptureSink> sink, bool echo) {
  std::vector<spdlog::sink_ptr> sinks{std::move(sink)};
  if (echo) {
    auto err = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessage>('*').set_pattern("  [%n] [%^%l%$] %*");
    err->set_formatter(std::move(formatter));
    sinks.push_back(std::move(err));
  }
  auto logger = std::make_shared<spdlog::logger>("hookhost", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::info);
  return logger;
}

}  // namespace hookhost::testing
