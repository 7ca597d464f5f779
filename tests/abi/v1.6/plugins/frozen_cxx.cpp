// A C++ SDK plugin as an ABI 1.6 author wrote it: the 1.5 plugin (the same trace and state as
// frozen_c.c, Hook::implements asked for every callback, the needs of its trace and model files
// and of processes, its hooks declared observers, the step's wall time through
// hookhost::step_wall_time, Host::skip_until to be called next `every` steps later), knowing the
// outcome 1.6 added: a detached hook's end traces its reason.
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(trace) HH_NEEDS_READ_PARAM(model) HH_NEEDS_PROCESSES
#define HH_PLUGIN_MODE HH_MODE_OBSERVE
#include <hookhost/hook.hpp>

#include <fstream>

namespace {

class Frozen : public hookhost::Hook {
 public:
  explicit Frozen(const hookhost::CreateContext& ctx)
      : Hook(ctx), trace_(params().get_string("trace")), every_(params().get_int("every")) {}
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
    // Before 2020 would be a time the host did not take from its clock.
    if (hookhost::step_wall_time(ctx) < std::chrono::system_clock::from_time_t(1577836800))
      throw hookhost::Error("the step's wall time is before 2020");
    write("after_run gs=" + std::to_string(ctx.global_step) +
          " values=" + std::to_string(values.size()) + " loss=" + value +
          (ctx.wall_time_ns != 0 ? " behind" : ""));
    host().save_state(std::to_string(after_runs_));
    if (!host().skip_until(ctx.global_step + every_))
      throw hookhost::Error("hh.steps/1 skip_until is missing or refused a step ahead");
  }
  void end(const hh_end_info& info) override {
    if (info.outcome == HH_OUTCOME_DETACHED)
      write(std::string("end outcome=detached reason=") + info.reason);
    else
      write(std::string("end outcome=") + hh_outcome_name(info.outcome));
  }
  bool implements(hookhost::Callback) const override { return true; }
  ~Frozen() override { write("destroy"); }

 private:
  void write(const std::string& line) { std::ofstream(trace_, std::ios::app) << line << "\n"; }
  std::string trace_;
  long long after_runs_ = 0;
  int64_t every_;
};

}  // namespace

#define FROZEN_PARAMS(P)                                                            \
  P(trace, STRING, REQUIRED, "", "file to append one line per call to")             \
  P(model, STRING, DEFAULT, "model.bin", "a file it would read (declared, unused)") \
  P(every, INT, DEFAULT, "1", "the steps between its calls (Host::skip_until)")
HOOKHOST_PLUGIN(Frozen, "frozen_v1_6_cxx", "1.6.0",
                "Built against the frozen ABI 1.6 headers (C++)", FROZEN_PARAMS)
