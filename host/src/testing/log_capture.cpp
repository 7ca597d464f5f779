#include "testing/log_capture.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <hookhost/host/log_format.hpp>

namespace hookhost::testing {

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
    err->set_formatter(escaped_log_formatter("  [%n] [%^%l%$] %*"));
    sinks.push_back(std::move(err));
  }
  auto logger = std::make_shared<spdlog::logger>("hookhost", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::info);
  return logger;
}

}  // namespace hookhost::testing
