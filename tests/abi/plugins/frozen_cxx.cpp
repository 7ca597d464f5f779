// A C++ SDK plugin as an ABI 1.N author wrote it, for every frozen minor N: built once per minor
// (frozen_v1_N_cxx) against that minor's own headers alone, so HH_ABI_MINOR is N and each
// `#if HH_ABI_MINOR >= M` keeps what 1.M added for the plugins of 1.M on:
//   1.0: the same trace and state as frozen_c.c;
//   1.1: Hook::implements, which came with 1.1's SDK, asked for every callback;
//   1.2: declares what it needs when confined: the file its trace parameter names, a parameter's
//        files to read, processes;
//   1.3: declares its hooks observers;
//   1.4: stamps its trace with the step's wall time through hookhost::step_wall_time: " behind"
//        when the host gave that time;
//   1.5: asks through Host::skip_until to be called next `every` steps later;
//   1.6: knows the outcome 1.6 added: a detached hook's end traces its reason.
#include <hookhost/version.h>  // HH_ABI_MINOR, for the options hook.hpp reads
#if HH_ABI_MINOR >= 2
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(trace) HH_NEEDS_READ_PARAM(model) HH_NEEDS_PROCESSES
#endif
#if HH_ABI_MINOR >= 3
#define HH_PLUGIN_MODE HH_MODE_OBSERVE
#endif
#include <hookhost/hook.hpp>

#include <fstream>

namespace {

class Frozen : public hookhost::Hook {
 public:
  explicit Frozen(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        trace_(params().get_string("trace"))
#if HH_ABI_MINOR >= 5
        ,
        every_(params().get_int("every"))
#endif
  {
  }
  void begin() override {
    const std::string state = host().load_state();
    if (!state.empty()) after_runs_ = std::stoll(state);
    write("begin restored=" + std::to_string(after_runs_));
  }
  void after_create_session(const hh_session_info& s) override {
    write("after_create_session creation=" + std::to_string(s.creation));
  }
  void before_run(const hh_run_context&, hookhost::RunRequest& request) override {
    write("before_run");
    request.fetch("loss");
  }
  void after_run(const hh_run_context& ctx, const hookhost::RunValues& values) override {
    ++after_runs_;
    char value[32];
    std::snprintf(value, sizeof value, "%g", values.scalar("loss"));
#if HH_ABI_MINOR >= 4
    // Before 2020 would be a time the host did not take from its clock.
    if (hookhost::step_wall_time(ctx) < std::chrono::system_clock::from_time_t(1577836800))
      throw hookhost::Error("the step's wall time is before 2020");
    write("after_run gs=" + std::to_string(ctx.global_step) +
          " values=" + std::to_string(values.size()) + " loss=" + value +
          (ctx.wall_time_ns != 0 ? " behind" : ""));
#else
    write("after_run gs=" + std::to_string(ctx.global_step) +
          " values=" + std::to_string(values.size()) + " loss=" + value);
#endif
    host().save_state(std::to_string(after_runs_));
#if HH_ABI_MINOR >= 5
    if (!host().skip_until(ctx.global_step + every_))
      throw hookhost::Error("hh.steps/1 skip_until is missing or refused a step ahead");
#endif
  }
  void end(const hh_end_info& info) override {
    std::string line = std::string("end outcome=") + hh_outcome_name(info.outcome);
    if (info.outcome == HH_OUTCOME_STOPPED) line += " cause=" + std::to_string(info.stop_cause);
#if HH_ABI_MINOR >= 6
    if (info.outcome == HH_OUTCOME_DETACHED) line += std::string(" reason=") + info.reason;
#endif
    write(line);
  }
#if HH_ABI_MINOR >= 1
  bool implements(hookhost::Callback) const override { return true; }
#endif
  ~Frozen() override { write("destroy"); }

 private:
  void write(const std::string& line) { std::ofstream(trace_, std::ios::app) << line << "\n"; }
  std::string trace_;
  long long after_runs_ = 0;
#if HH_ABI_MINOR >= 5
  int64_t every_;
#endif
};

}  // namespace

#if HH_ABI_MINOR >= 2
#define FROZEN_MODEL(P) \
  P(model, STRING, DEFAULT, "model.bin", "a file it would read (declared, unused)")
#else
#define FROZEN_MODEL(P)
#endif
#if HH_ABI_MINOR >= 5
#define FROZEN_EVERY(P) \
  P(every, INT, DEFAULT, "1", "the steps between its calls (Host::skip_until)")
#else
#define FROZEN_EVERY(P)
#endif
#define FROZEN_PARAMS(P)                                                \
  P(trace, STRING, REQUIRED, "", "file to append one line per call to") \
  FROZEN_MODEL(P) FROZEN_EVERY(P)

// "frozen_v1_N_cxx", "1.N.0": N is the minor of the headers it is built against.
#define FROZEN_STR_(x) #x
#define FROZEN_STR(x) FROZEN_STR_(x)
#define FROZEN_MINOR FROZEN_STR(HH_ABI_MINOR)
HOOKHOST_PLUGIN(Frozen, "frozen_v1_" FROZEN_MINOR "_cxx", "1." FROZEN_MINOR ".0",
                "Built against the frozen ABI 1." FROZEN_MINOR " headers (C++)", FROZEN_PARAMS)
