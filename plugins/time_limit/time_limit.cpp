// time_limit: the operator's way to end a job gracefully. Stops cleanly once the job has used
// max_secs of wall-clock time (counted across resumes: the time used is kept in the hook's saved
// state, which checkpoints carry, so a killed job loses the time run since its last checkpoint) or
// once stop_file exists. Both are checked after every step.
// Confined, it looks for the stop file its stop_file parameter names.
#define HH_PLUGIN_NEEDS HH_NEEDS_READ_PARAM(stop_file)
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

constexpr char kElapsedKey[] = "elapsed_secs";

using hookhost::format_number;

std::string format_secs(double secs) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(3) << secs;
  return text.str();
}

class TimeLimit : public hookhost::Hook {
 public:
  explicit TimeLimit(const hookhost::CreateContext& ctx) : Hook(ctx) {
    if (!params().has("max_secs") && !params().has("stop_file"))
      throw hookhost::Error("give 'max_secs' or 'stop_file' (or both); neither is set");
    if (params().has("max_secs")) {
      max_secs_ = params().get_float("max_secs");
      if (!(*max_secs_ > 0) || !std::isfinite(*max_secs_))
        throw hookhost::Error("invalid max_secs=" + format_number(*max_secs_) + " (must be > 0)");
    }
    if (params().has("stop_file")) {
      const std::string& file = params().get_string("stop_file");
      if (file.empty()) throw hookhost::Error("invalid stop_file='' (must be a path)");
      // A relative path is relative to the run directory, where an operator looks first.
      stop_file_ = host().resolve_path(file);
    }
  }

  void begin() override {
    started_ = std::chrono::steady_clock::now();
    const auto saved = host().load_state_map();
    if (auto it = saved.find(kElapsedKey); it != saved.end()) {
      try {
        std::size_t used = 0;
        used_before_ = std::stod(it->second, &used);
        if (used != it->second.size() || !(used_before_ >= 0)) throw std::invalid_argument("");
      } catch (const std::exception&) {
        throw hookhost::Error("the saved state holds an invalid " + std::string(kElapsedKey) +
                              "='" + it->second + "'");
      }
      host().info("resuming with " + format_secs(used_before_) + " s already used" +
                  (max_secs_ ? " of the " + format_number(*max_secs_) + " s budget" : ""));
    }
  }

  void after_run(const hh_run_context&, const hookhost::RunValues&) override {
    const double used = used_secs();
    host().save_state_map({{kElapsedKey, format_secs(used)}});
    if (stop_requested_) return;
    if (max_secs_ && used >= *max_secs_) {
      stop("time limit of " + format_number(*max_secs_) + " s reached (" + format_secs(used) +
           " s used)");
    } else if (stop_file_) {
      std::error_code ec;
      if (std::filesystem::exists(*stop_file_, ec))
        stop("stop file " + stop_file_->string() + " appeared");
    }
  }

  void end(const hh_end_info&) override {
    host().save_state_map({{kElapsedKey, format_secs(used_secs())}});
  }

 private:
  double used_secs() const {
    return used_before_ +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }

  void stop(const std::string& reason) {
    stop_requested_ = true;
    host().request_stop(reason);
  }

  std::optional<double> max_secs_;
  std::optional<std::filesystem::path> stop_file_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double used_before_ = 0;
  bool stop_requested_ = false;
};

}  // namespace

#define TIME_LIMIT_PARAMS(P)                                                        \
  P(max_secs, FLOAT, OPTIONAL, "",                                                  \
    "wall-clock budget in seconds, counted across resumes through the saved state") \
  P(stop_file, STRING, OPTIONAL, "",                                                \
    "stop cleanly once this file exists (relative paths are relative to the run directory)")

HOOKHOST_PLUGIN(TimeLimit, "time_limit", "1.0.0",
                "Stops the job cleanly after a wall-clock budget or when a stop file appears",
                TIME_LIMIT_PARAMS)
