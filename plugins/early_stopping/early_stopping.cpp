// early_stopping: stops the job cleanly when a monitored tensor stops improving (Keras/Lightning
// EarlyStopping). Checks after every step that brings the global step to a multiple of
// `every_n_steps`. A check improves when the value beats the best so far by more than `min_delta`
// (and beats `baseline`, when set); otherwise `wait` grows, and a check without improvement that
// brings `wait` to `patience` stops the job, as in Keras and Lightning (so patience 0 acts like 1).
// Its best value, wait and stop decision are saved hook state, so a resumed job goes on counting
// where it left off, and a job it already stopped stops again at once.
// It checks only where the step makes the global step a multiple of every_n_steps: its cadence
// says so, and the host skips its calls at the other steps.
#define HH_PLUGIN_CADENCE HH_CADENCE_EVERY_N_STEPS(every_n_steps)
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace {

using hookhost::format_number;

// Round-trips a double exactly through the key=value state.
std::string exact_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// What a hook that cannot read its saved state tells the operator to do.
constexpr const char* kUnreadableStateAdvice =
    " (the checkpoint was edited or written by another plugin; start without it: hookhost run "
    "--fresh)";

double parse_number(const std::string& key, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw hookhost::Error("saved state has an unreadable " + key + "='" + text +
                          "', not a finite number" + kUnreadableStateAdvice);
  return v;
}

// A count saved as decimal digits: anything else (a sign, a fraction, an exponent, a value past
// int64_t) is refused rather than converted, so no value can wrap the count.
int64_t parse_count(const std::string& key, const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw hookhost::Error(
        "saved state has an unreadable " + key + "='" + text + "', not a count from 0 to " +
        std::to_string(std::numeric_limits<int64_t>::max()) + kUnreadableStateAdvice);
  return v;
}

class EarlyStopping : public hookhost::Hook {
 public:
  explicit EarlyStopping(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        monitor_(params().get_string("monitor")),
        min_delta_(params().get_float("min_delta")),
        patience_(params().get_int("patience")),
        every_n_steps_(params().get_int("every_n_steps")) {
    if (monitor_.empty()) throw hookhost::Error("'monitor' must name a tensor");
    const std::string& mode = params().get_string("mode");
    if (mode != "min" && mode != "max")
      throw hookhost::Error("invalid mode='" + mode + "' ('mode' must be 'min' or 'max')");
    maximize_ = mode == "max";
    if (!(min_delta_ >= 0) || !std::isfinite(min_delta_))
      throw hookhost::Error("invalid min_delta=" + format_number(min_delta_) +
                            " ('min_delta' must be a finite number >= 0)");
    if (patience_ < 0)
      throw hookhost::Error("invalid patience=" + std::to_string(patience_) +
                            " ('patience' must be >= 0)");
    if (every_n_steps_ <= 0)
      throw hookhost::Error("invalid every_n_steps=" + std::to_string(every_n_steps_) +
                            " ('every_n_steps' must be > 0)");
    if (params().has("baseline")) {
      baseline_ = params().get_float("baseline");
      if (!std::isfinite(*baseline_))
        throw hookhost::Error("invalid baseline=" + format_number(*baseline_) +
                              " ('baseline' must be a finite number)");
    }
  }

  void begin() override {
    // Restored from a checkpoint when the job resumes; empty on a fresh start.
    const auto state = host().load_state_map();
    if (auto it = state.find("best"); it != state.end()) best_ = parse_number("best", it->second);
    if (auto it = state.find("wait"); it != state.end()) wait_ = parse_count("wait", it->second);
    if (auto it = state.find("stopped"); it != state.end()) stopped_ = it->second == "1";
    if (auto it = state.find("reason"); it != state.end()) stop_reason_ = it->second;
    if (!state.empty())
      host().info("restored state: best " + (best_ ? format_number(*best_) : "none") + ", wait " +
                  std::to_string(wait_) + (stopped_ ? ", already stopped" : ""));
  }

  void after_create_session(const hh_session_info&) override {
    // The stop decision is final: a job resumed after it stops again before any step.
    if (stopped_)
      host().request_stop("early stopping had already stopped this job: " + stop_reason_);
  }

  void before_run(const hh_run_context& ctx, hookhost::RunRequest& request) override {
    checking_ = !stopped_ && (ctx.global_step + 1) % every_n_steps_ == 0;
    if (checking_) request.fetch(monitor_);
  }

  void after_run(const hh_run_context&, const hookhost::RunValues& values) override {
    if (!checking_) return;
    const double value = monitored_value(values);
    const bool improved = improves(value);
    if (improved) {
      best_ = value;
      wait_ = 0;
    } else {
      // A restored count may be the largest one: it stays there instead of wrapping.
      if (wait_ < std::numeric_limits<int64_t>::max()) ++wait_;
      if (!std::isfinite(value))
        host().warn("'" + monitor_ + "' is " + format_number(value) +
                    ": counted as no improvement");
    }
    host().debug("check at global step " + std::to_string(host().global_step()) + ": '" + monitor_ +
                 "' = " + format_number(value) + ", best " +
                 (best_ ? format_number(*best_) : "none") + ", wait " + std::to_string(wait_));
    // Not after an improvement: with patience 0, wait 0 would otherwise stop the job.
    if (!improved && wait_ >= patience_) {
      stopped_ = true;
      stop_reason_ = "'" + monitor_ + "' did not improve for " + std::to_string(wait_) +
                     " checks (patience " + std::to_string(patience_) + "); best value " +
                     (best_ ? format_number(*best_) : "none") +
                     (baseline_ ? " (baseline " + format_number(*baseline_) + ")" : "") +
                     ", stopped at global step " + std::to_string(host().global_step());
      host().info("early stopping: " + stop_reason_);
      host().request_stop("early stopping: " + stop_reason_);
    }
    save();
  }

 private:
  // The mean, for a non-scalar tensor.
  double monitored_value(const hookhost::RunValues& values) const {
    const hookhost::TensorView t = values.get(monitor_);
    if (!t.is_numeric() || t.size() == 0)
      throw hookhost::Error("'" + monitor_ + "' is not a numeric tensor");
    double sum = 0;
    for (std::size_t i = 0; i < t.size(); ++i) sum += t.at(i);
    return sum / static_cast<double>(t.size());
  }

  bool better(double value, double reference, double delta) const {
    return maximize_ ? value > reference + delta : value < reference - delta;
  }

  bool improves(double value) const {
    if (!std::isfinite(value)) return false;
    if (baseline_ && !better(value, *baseline_, 0)) return false;
    return !best_ || better(value, *best_, min_delta_);
  }

  void save() const {
    std::map<std::string, std::string> state{{"wait", std::to_string(wait_)},
                                             {"stopped", stopped_ ? "1" : "0"}};
    if (best_) state["best"] = exact_number(*best_);
    if (stopped_) state["reason"] = stop_reason_;
    host().save_state_map(state);
  }

  std::string monitor_;
  bool maximize_ = false;
  double min_delta_;
  int64_t patience_;
  int64_t every_n_steps_;
  std::optional<double> baseline_;

  std::optional<double> best_;
  int64_t wait_ = 0;
  bool stopped_ = false;
  std::string stop_reason_;
  bool checking_ = false;
};

}  // namespace

#define EARLY_STOPPING_PARAMS(P)                                                                 \
  P(monitor, STRING, DEFAULT, "loss", "the tensor to watch (the mean, if it is not a scalar)")   \
  P(mode, STRING, DEFAULT, "min", "min: lower is better; max: higher is better")                 \
  P(min_delta, FLOAT, DEFAULT, "0", "an improvement must beat the best value by more than this") \
  P(patience, INT, DEFAULT, "3",                                                                 \
    "checks without improvement after which the job stops (as in Keras and Lightning)")          \
  P(every_n_steps, INT, DEFAULT, "1", "check when the global step is a multiple of this")        \
  P(baseline, FLOAT, OPTIONAL, "", "an improvement must also beat this value")

HOOKHOST_PLUGIN(EarlyStopping, "early_stopping", "1.0.0",
                "Stops the job when a monitored tensor stops improving (Keras/Lightning style)",
                EARLY_STOPPING_PARAMS)
