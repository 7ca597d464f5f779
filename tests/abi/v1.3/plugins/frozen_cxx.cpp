// A C++ SDK plugin as an ABI 1.3 author wrote it: the 1.2 plugin (the same trace and state as
// frozen_c.c, Hook::implements asked for every callback, the needs of its trace and model files
// and of processes), declaring its hooks observers, as 1.3 added.
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(trace) HH_NEEDS_READ_PARAM(model) HH_NEEDS_PROCESSES
#define HH_PLUGIN_MODE HH_MODE_OBSERVE
#include <hookhost/hook.hpp>

#include <fstream>

namespace {

class Frozen : public hookhost::Hook {
 public:
  explicit Frozen(const hookhost::CreateContext& ctx)
      : Hook(ctx), trace_(params().get_string("trace")) {}
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
    write("after_run gs=" + std::to_string(ctx.global_step) +
          " values=" + std::to_string(values.size()) + " loss=" + value);
    host().save_state(std::to_string(after_runs_));
  }
  void end(const hh_end_info& info) override {
    write(std::string("end outcome=") + hh_outcome_name(info.outcome));
  }
  bool implements(hookhost::Callback) const override { return true; }
  ~Frozen() override { write("destroy"); }

 private:
  void write(const std::string& line) { std::ofstream(trace_, std::ios::app) << line << "\n"; }
  std::string trace_;
  long long after_runs_ = 0;
};

}  // namespace

#define FROZEN_PARAMS(P)                                                \
  P(trace, STRING, REQUIRED, "", "file to append one line per call to") \
  P(model, STRING, DEFAULT, "model.bin", "a file it would read (declared, unused)")
HOOKHOST_PLUGIN(Frozen, "frozen_v1_3_cxx", "1.3.0",
                "Built against the frozen ABI 1.3 headers (C++)", FROZEN_PARAMS)
