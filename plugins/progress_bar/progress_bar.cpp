// progress_bar: training progress for people watching. On a terminal a live bar on stderr,
// redrawn at most 10 times a second; elsewhere (CI logs, files) one plain log line every
// `every_n_secs`. The total is the expected last step from the hh.steps/1 service (a step-limit
// hook or the workload); without one it shows a counter. A final line says how the job ended.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <hookhost/ext/steps.h>
#include <hookhost/hook.hpp>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kBarWidth = 30;
constexpr double kMinRedrawSecs = 0.1;

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// "14s", "2m05s", "1h02m".
std::string format_duration(double secs) {
  const long long total = std::llround(std::max(secs, 0.0));
  char buffer[48];
  if (total < 60) {
    std::snprintf(buffer, sizeof buffer, "%llds", total);
  } else if (total < 3600) {
    std::snprintf(buffer, sizeof buffer, "%lldm%02llds", total / 60, total % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", total / 3600, total % 3600 / 60);
  }
  return buffer;
}

std::string format_rate(double steps_per_sec) {
  return format(steps_per_sec >= 10 ? "%.1f" : "%.2f", steps_per_sec) + " steps/s";
}

class ProgressBar : public hookhost::Hook {
 public:
  explicit ProgressBar(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        label_(params().get_string("label")),
        every_n_secs_(params().get_float("every_n_secs")),
        show_loss_(params().get_bool("show_loss")),
        loss_tensor_(params().get_string("loss_tensor")) {
    const std::string& mode = params().get_string("mode");
    if (mode == "bar") {
      bar_ = true;
    } else if (mode == "lines") {
      bar_ = false;
    } else if (mode == "auto") {
      bar_ = ::isatty(STDERR_FILENO) == 1;
    } else {
      throw hookhost::Error("parameter 'mode' must be auto, bar or lines, got '" + mode + "'");
    }
    if (!(every_n_secs_ > 0))
      throw hookhost::Error("parameter 'every_n_secs' must be > 0, got " +
                            format("%g", every_n_secs_));
    steps_ = host().service<hh_steps_service>(HH_SERVICE_STEPS);
    if (steps_ && !HH_HAS_FIELD(steps_, hh_steps_service, last_step)) steps_ = nullptr;
  }

  void after_create_session(const hh_session_info& session) override {
    // The rate counts from here: startup time is not training time, and after a recovery the
    // steps replayed from a checkpoint are not progress.
    base_step_ = session.global_step;
    base_time_ = Clock::now();
  }

  void before_run(const hh_run_context&, hookhost::RunRequest& request) override {
    if (show_loss_) request.fetch(loss_tensor_);
  }

  void after_run(const hh_run_context&, const hookhost::RunValues& values) override {
    ++steps_run_;
    if (show_loss_) {
      const hookhost::TensorView loss = values.get(loss_tensor_);
      double total = 0;
      for (std::size_t i = 0; i < loss.size(); ++i) total += loss.at(i);
      loss_ = loss.size() ? total / static_cast<double>(loss.size()) : 0.0;
    }
    const Clock::time_point now = Clock::now();
    const double since_draw =
        last_draw_ ? std::chrono::duration<double>(now - *last_draw_).count() : 0.0;
    if (last_draw_ && since_draw < (bar_ ? kMinRedrawSecs : every_n_secs_)) return;
    last_draw_ = now;
    draw(host().global_step(), now);
  }

  void end(const hh_end_info& info) override {
    const int64_t total = last_step();
    if (bar_ && last_draw_) {
      draw(info.global_step, Clock::now());
      write_stderr("\n");
    }
    std::string line =
        label_ + " " + hh_outcome_name(info.outcome) + " after " + std::to_string(info.global_step);
    const bool short_of_total = total > 0 && info.global_step < total;
    if (info.outcome == HH_OUTCOME_COMPLETED && !short_of_total) {
      host().info(line + " steps");
      return;
    }
    if (total > 0) line += " of " + std::to_string(total);
    host().info(line + " steps: " + info.reason);
  }

 private:
  int64_t last_step() const { return steps_ ? steps_->last_step(host().raw()) : -1; }

  void draw(int64_t step, Clock::time_point now) {
    const int64_t total = last_step();
    const double elapsed = std::chrono::duration<double>(now - base_time_).count();
    const int64_t steps_done = step - base_step_;
    std::optional<double> rate;
    if (elapsed > 0 && steps_done > 0) rate = static_cast<double>(steps_done) / elapsed;

    std::string text = label_ + " " + std::to_string(step);
    if (total > 0) {
      const double fraction = std::clamp(static_cast<double>(step) / total, 0.0, 1.0);
      text.append("/").append(std::to_string(total));  // not "/" + ...: a GCC 12 -O3 false warning
      if (bar_) {
        const int filled = static_cast<int>(fraction * kBarWidth);
        std::string bar(kBarWidth, ' ');
        for (int i = 0; i < filled; ++i) bar[i] = '=';
        if (filled > 0 && filled < kBarWidth) bar[filled - 1] = '>';
        text += " [" + bar + "]";
        if (rate)
          text += " - ETA: " +
                  format_duration(static_cast<double>(std::max<int64_t>(total - step, 0)) / *rate);
      } else {
        text += " (" + format("%.1f", fraction * 100) + "%)";
      }
    } else {
      text += " [steps: " + std::to_string(steps_run_) + "]";
    }
    if (rate) text += " - " + format_rate(*rate);
    if (show_loss_ && loss_) text += " - loss: " + format("%.4f", *loss_);

    if (bar_) {
      // Back to the line start, redraw, clear what a longer previous line left behind.
      write_stderr("\r" + text + "\x1b[K");
    } else {
      host().info(text);
    }
  }

  static void write_stderr(const std::string& text) {
    // One write(2), unbuffered: a bar must not sit in a stdio buffer or mix with other output.
    ssize_t written;
    do {
      written = ::write(STDERR_FILENO, text.data(), text.size());
    } while (written < 0 && errno == EINTR);
  }

  const std::string label_;
  const double every_n_secs_;
  const bool show_loss_;
  const std::string loss_tensor_;
  bool bar_ = false;
  const hh_steps_service* steps_ = nullptr;
  int64_t base_step_ = 0;
  Clock::time_point base_time_ = Clock::now();
  int64_t steps_run_ = 0;
  std::optional<double> loss_;
  std::optional<Clock::time_point> last_draw_;
};

}  // namespace

#define PROGRESS_BAR_PARAMS(P)                                                 \
  P(mode, STRING, DEFAULT, "auto",                                             \
    "auto (a bar when stderr is a terminal, else log lines), bar or lines")    \
  P(every_n_secs, FLOAT, DEFAULT, "10",                                        \
    "seconds between two progress lines when not drawing a bar")               \
  P(label, STRING, DEFAULT, "Training", "text in front of the progress")       \
  P(show_loss, BOOL, DEFAULT, "true", "fetch the loss every step and show it") \
  P(loss_tensor, STRING, DEFAULT, "loss", "tensor shown as the loss (the mean of its elements)")

HOOKHOST_PLUGIN(ProgressBar, "progress_bar", "1.0.0",
                "Shows training progress: a live bar on a terminal, periodic log lines otherwise",
                PROGRESS_BAR_PARAMS, chief)
