// Keeps what a runtime and its hooks log (every hook logs through a clone of the runtime's logger,
// so one sink sees all of it): HookTest reports it, `hookhost check` judges it.
#pragma once

#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hookhost::testing {

struct LogRecord {
  std::string logger;  // "hookhost" for the runtime, else the hook instance's name
  spdlog::level::level_enum level = spdlog::level::info;
  std::string text;
};

class CaptureSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Records logged so far, and forgets them. [thread-safe]
  std::vector<LogRecord> take();

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  std::vector<LogRecord> records_;
};

// A logger named "hookhost" that writes into `sink`, and also to stderr when `echo` (--verbose).
std::shared_ptr<spdlog::logger> make_capture_logger(std::shared_ptr<CaptureSink> sink, bool echo);

}  // namespace hookhost::testing
