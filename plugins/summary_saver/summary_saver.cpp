// summary_saver: TensorFlow's SummarySaverHook. Writes chosen tensors as TensorBoard scalar
// summaries every N steps or seconds, through the host's shared event writer (hh.summary/1), so
// its records land in the same events file as any other hook writing to the same folder.
// The host stamps an observer's records with its step's time, so with mode = observe they read
// the same as on the step.
#include <hookhost/ext/summary.h>

#include <cstdint>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <hookhost/sdk/timer.hpp>
#include <optional>
#include <string>
#include <vector>

namespace {

using hookhost::format_number;

class SummarySaver : public hookhost::Hook {
 public:
  explicit SummarySaver(const hookhost::CreateContext& ctx)
      : Hook(ctx), timer_(hookhost::StepTimer::never()) {
    params().require_exactly_one("save_steps", "save_secs");
    if (params().has("save_steps")) {
      const int64_t steps = params().get_int("save_steps");
      if (steps <= 0)
        throw hookhost::Error("invalid save_steps=" + std::to_string(steps) + " (must be > 0)");
      timer_ = hookhost::StepTimer::every_steps(steps);
    } else {
      const double secs = params().get_float("save_secs");
      if (!(secs > 0))
        throw hookhost::Error("invalid save_secs=" + format_number(secs) + " (must be > 0)");
      timer_ = hookhost::StepTimer::every_secs(secs);
    }
    tensors_ = params().get_string_list("tensors");
    if (tensors_.empty()) throw hookhost::Error("'tensors' must name at least one tensor");
    // No trailing separator: "tb/" and "tb" must share the host's one writer per folder.
    if (params().has("output_dir"))
      output_dir_ = host().resolve_path(params().get_string("output_dir")).string();
  }

  void begin() override {
    summaries_ = host().service<hh_summary_service>(HH_SERVICE_SUMMARY);
    if (!summaries_ || summaries_->struct_size < HH_SUMMARY_SERVICE_SIZE_1_0)
      throw hookhost::Error("the host does not offer the summary service " HH_SERVICE_SUMMARY);
    next_step_.reset();
    restore_schedule(host().global_step());
  }

  void after_create_session(const hh_session_info& session) override {
    // A recovery put every hook's state back to the restored checkpoint.
    if (session.creation > 1) restore_schedule(session.global_step);
    skip_asked_.reset();  // the host forgot it: the first call of the session says it again
  }

  void before_run(const hh_run_context& context, hookhost::RunRequest& request) override {
    // Fetch only when this step will be written (TensorFlow: the first step, then the timer).
    // A timer that never triggered triggers at once (the first step); a restored one follows the
    // saved schedule. The step this run makes is the context's plus one, also after steps the
    // host skipped.
    writing_ = timer_.should_trigger(context.global_step + 1);
    // The first call asks even when it writes nothing (a resumed schedule): behind the step, the
    // host fetches what an observer asked for from then on, so no step it writes misses a value.
    if (writing_ || !asked_)
      for (const auto& name : tensors_) request.fetch(name);
    asked_ = true;
  }

  void after_run(const hh_run_context& context, const hookhost::RunValues& values) override {
    const bool first = !next_step_;
    // The context holds the step before this one ran; the host already counts this step.
    const int64_t step = (first || writing_) ? host().global_step() : context.global_step + 1;
    if (first) write_session_start(step);
    if (writing_) {
      timer_.update(step);
      for (const auto& name : tensors_) write_scalar(name, mean(values.get(name)), step);
      host().save_state_map({{"last_written_step", std::to_string(step)}});
    }
    // No flush here: the host's writer thread puts the records on disk within seconds (as
    // TensorFlow's does), before every checkpoint and at the end, off the training thread.
    next_step_ = step + 1;
    // On save_steps, no call is needed before the step that writes next: the host skips them
    // (hh.steps/1 skip_until; an older host calls every step). Said once per schedule change; the
    // host calls every step of a session until it is said, so the first one writes its log.
    if (const auto next = timer_.next_trigger_step(); next && next != skip_asked_) {
      host().skip_until(*next - 1);
      skip_asked_ = next;
    }
  }

  void end(const hh_end_info&) override {
    if (summaries_) flush();
  }

 private:
  // Beyond TensorFlow: the schedule survives a resume, so scalars land at the same steps as in an
  // uninterrupted job (the resumed session still starts with a SessionLog START).
  void restore_schedule(int64_t current_step) {
    const auto state = host().load_state_map();
    if (auto it = state.find("last_written_step"); it != state.end())
      timer_.restore(std::stoll(it->second), current_step);
  }

  // NULL asks the service for the run directory.
  const char* dir() const { return output_dir_.empty() ? nullptr : output_dir_.c_str(); }

  void write_session_start(int64_t step) const {
    hh_error err = hookhost::make_error();
    check(
        summaries_->add_session_log(host().raw(), dir(), HH_SESSION_LOG_START, nullptr, step, &err),
        err);
  }
  void write_scalar(const std::string& tag, double value, int64_t step) const {
    hh_error err = hookhost::make_error();
    check(summaries_->add_scalar(host().raw(), dir(), tag.c_str(), value, step, &err), err);
  }
  void flush() const {
    hh_error err = hookhost::make_error();
    check(summaries_->flush(host().raw(), dir(), &err), err);
  }
  static void check(hh_status status, const hh_error& err) {
    if (status != HH_OK)
      throw hookhost::Error(std::string("cannot write summaries: ") + err.message);
  }

  // A scalar summary of a non-scalar tensor records its mean.
  static double mean(const hookhost::TensorView& tensor) {
    if (!tensor.is_numeric())
      throw hookhost::Error("tensor '" + std::string(tensor.name()) +
                            "' is not numeric and cannot be written as a scalar summary");
    if (tensor.size() == 0)
      throw hookhost::Error("tensor '" + std::string(tensor.name()) + "' is empty");
    double sum = 0;
    for (std::size_t i = 0; i < tensor.size(); ++i) sum += tensor.at(i);
    return sum / static_cast<double>(tensor.size());
  }

  hookhost::StepTimer timer_;
  bool asked_ = false;  // for its tensors, in a before_run of this process
  std::vector<std::string> tensors_;
  std::string output_dir_;
  const hh_summary_service* summaries_ = nullptr;
  std::optional<int64_t> next_step_;   // the step expected after the last one; unset before it
  std::optional<int64_t> skip_asked_;  // the step last passed to skip_until this session
  bool writing_ = false;
};

}  // namespace

#define SUMMARY_SAVER_PARAMS(P)                                                                   \
  P(save_steps, INT, OPTIONAL, "",                                                                \
    "write summaries at the first step and then every N global steps (exclusive with save_secs)") \
  P(save_secs, FLOAT, OPTIONAL, "",                                                               \
    "write summaries at the first step and then every N seconds (exclusive with save_steps)")     \
  P(output_dir, STRING, OPTIONAL, "",                                                             \
    "folder of the events file; relative to the run directory; default: the run directory")       \
  P(tensors, STRING_LIST, DEFAULT, "loss",                                                        \
    "tensors to write as scalar summaries tagged with their names (non-scalars: their mean)")

HOOKHOST_PLUGIN(SummarySaver, "summary_saver", "1.0.0",
                "Writes tensors as TensorBoard scalar summaries every N steps or seconds",
                SUMMARY_SAVER_PARAMS, chief)
