// step_counter: TensorFlow's StepCounterHook. Logs the training speed as `global_step/sec: %g`
// every N steps or seconds and, when asked, writes it as a TensorBoard scalar through the host's
// shared event writer (hh.summary/1), into the same events file as other hooks using that folder.
#include <hookhost/ext/summary.h>

#include <cstdint>
#include <cstdio>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <hookhost/sdk/timer.hpp>
#include <optional>
#include <string>

namespace {

using hookhost::format_number;

constexpr int64_t kDefaultEveryNSteps = 100;
constexpr int kMaxStuckStepWarnings = 5;  // as TensorFlow: warn the first 5 times only
constexpr const char* kTag = "global_step/sec";

class StepCounter : public hookhost::Hook {
 public:
  explicit StepCounter(const hookhost::CreateContext& ctx)
      : Hook(ctx), timer_(hookhost::StepTimer::never()) {
    // every_n_steps has a default (100) only when every_n_secs is absent, so it is declared
    // OPTIONAL and "both" means both were given.
    if (params().has("every_n_steps") && params().has("every_n_secs"))
      params().require_exactly_one("every_n_steps", "every_n_secs");
    if (params().has("every_n_secs")) {
      const double secs = params().get_float("every_n_secs");
      if (!(secs > 0))
        throw hookhost::Error("invalid every_n_secs=" + format_number(secs) + " (must be > 0)");
      timer_ = hookhost::StepTimer::every_secs(secs);
    } else {
      const int64_t steps =
          params().has("every_n_steps") ? params().get_int("every_n_steps") : kDefaultEveryNSteps;
      if (steps <= 0)
        throw hookhost::Error("invalid every_n_steps=" + std::to_string(steps) + " (must be > 0)");
      timer_ = hookhost::StepTimer::every_steps(steps);
    }
    if (params().has("output_dir")) {
      // No trailing separator: "tb/" and "tb" must share the host's one writer per folder.
      output_dir_ = host().resolve_path(params().get_string("output_dir")).string();
      write_summaries_ = true;
    }
    if (params().get_bool("summaries")) write_summaries_ = true;
  }

  void begin() override {
    restore_schedule(host().global_step());
    if (!write_summaries_) return;
    summaries_ = host().service<hh_summary_service>(HH_SERVICE_SUMMARY);
    if (!summaries_ || summaries_->struct_size < HH_SUMMARY_SERVICE_SIZE_1_0)
      throw hookhost::Error("the host does not offer the summary service " HH_SERVICE_SUMMARY);
  }

  void after_create_session(const hh_session_info& session) override {
    // A recovery put every hook's state back to the restored checkpoint.
    if (session.creation > 1) restore_schedule(session.global_step);
  }

  // No fetch needed: the context already carries the stale global step TensorFlow fetches.
  void after_run(const hh_run_context& context, const hookhost::RunValues&) override {
    const int64_t stale = context.global_step;
    if (timer_.should_trigger(stale + 1)) {
      const int64_t live = host().global_step();
      if (timer_.should_trigger(live)) {
        // The first trigger returns nothing: it only sets the baseline.
        if (auto elapsed = timer_.update(live); elapsed && elapsed->first > 0)
          report(static_cast<double>(elapsed->second) / elapsed->first, live);
        host().save_state_map({{"last_triggered_step", std::to_string(live)}});
      }
    }
    if (previous_stale_ && stale == *previous_stale_ && stuck_warnings_ < kMaxStuckStepWarnings) {
      ++stuck_warnings_;
      host().warn("global step has not increased since the last step (it is still " +
                  std::to_string(stale) + ")");
    }
    previous_stale_ = stale;
  }

  void end(const hh_end_info&) override {
    if (summaries_)
      call([&](hh_error* err) { return summaries_->flush(host().raw(), dir(), err); });
  }

 private:
  void report(double steps_per_sec, int64_t step) {
    char text[64];
    std::snprintf(text, sizeof text, "%s: %g", kTag, steps_per_sec);
    host().info(text);
    if (!summaries_) return;
    // The host's writer thread puts it on disk within seconds; flushing here would put a write
    // on the training thread.
    call([&](hh_error* err) {
      return summaries_->add_scalar(host().raw(), dir(), kTag, steps_per_sec, step, err);
    });
  }

  // Beyond TensorFlow: the schedule survives a resume, so the rate is reported at the same steps
  // as in an uninterrupted job (measured from the resume).
  void restore_schedule(int64_t current_step) {
    const auto state = host().load_state_map();
    if (auto it = state.find("last_triggered_step"); it != state.end())
      timer_.restore(std::stoll(it->second), current_step);
  }

  // NULL asks the service for the run directory.
  const char* dir() const { return output_dir_.empty() ? nullptr : output_dir_.c_str(); }

  template <typename ServiceCall>
  static void call(ServiceCall&& service_call) {
    hh_error err = hookhost::make_error();
    if (service_call(&err) != HH_OK)
      throw hookhost::Error(std::string("cannot write the step rate summary: ") + err.message);
  }

  hookhost::StepTimer timer_;
  std::string output_dir_;
  bool write_summaries_ = false;
  const hh_summary_service* summaries_ = nullptr;
  std::optional<int64_t> previous_stale_;
  int stuck_warnings_ = 0;
};

}  // namespace

#define STEP_COUNTER_PARAMS(P)                                                               \
  P(every_n_steps, INT, OPTIONAL, "",                                                        \
    "log the rate every N global steps; default 100 when every_n_secs is not given either")  \
  P(every_n_secs, FLOAT, OPTIONAL, "",                                                       \
    "log the rate every N seconds instead (exclusive with every_n_steps)")                   \
  P(output_dir, STRING, OPTIONAL, "",                                                        \
    "also write the rate as a global_step/sec summary here (relative to the run directory)") \
  P(summaries, BOOL, DEFAULT, "false",                                                       \
    "also write the rate as a global_step/sec summary, into output_dir or the run directory")

HOOKHOST_PLUGIN(StepCounter, "step_counter", "1.0.0",
                "Logs global_step/sec every N steps or seconds, optionally as a summary",
                STEP_COUNTER_PARAMS, chief)
