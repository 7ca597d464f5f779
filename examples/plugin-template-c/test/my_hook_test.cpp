// Unit tests of my_hook: the built plugin file, driven through scripted lifecycles by hookhost's
// test harness, which runs it in hookhost's real runtime around a workload it scripts. The harness
// is C++ and asserts nothing itself; these checks need no test framework.
//   ./my_hook_test ./my_hook.so
#include <cstdio>
#include <hookhost/testing.hpp>
#include <string>
#include <vector>

using hookhost::Outcome;
using hookhost::testing::HookTest;
using hookhost::testing::RunResult;
using Lines = std::vector<std::string>;

namespace {

int failures = 0;

void check(bool ok, const char* what, const RunResult& run) {
  if (ok) return;
  ++failures;
  std::printf("FAILED: %s\n%s\n", what, run.log_text().c_str());
}

// The loss the scripted workload returns: 10 / step (10, 5, 3.33, 2.5, 2, ...).
double falling_loss(int64_t step) {
  return 10.0 / static_cast<double>(step);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
    return 2;
  }
  const char* plugin = argv[1];

  {  // It fetches the tensor and logs it every log_every steps.
    HookTest hook(plugin);
    hook.set("log_every", "5").steps(10).value("loss", falling_loss);
    const auto run = hook.run();
    check(run.outcome == Outcome::completed, "the job completes", run);
    check(run.fetched(3) == Lines{"loss"}, "step 3 fetched the loss", run);
    check(run.log_lines("info") ==
              Lines{"loss = 2 at step 5 (best 2)", "loss = 1 at step 10 (best 1)"},
          "the loss is logged at steps 5 and 10", run);
  }
  {  // It stops the job after the first step below stop_below: 10/7 = 1.43 < 1.5.
    HookTest hook(plugin);
    hook.set("stop_below", "1.5").steps(100).value("loss", falling_loss);
    const auto run = hook.run();
    check(run.outcome == Outcome::stopped && run.global_step == 7, "stopped at step 7", run);
    check(run.stopped_by_hook && run.hook_stop_reason == "loss 1.42857 fell below stop_below 1.5",
          "the hook asked for the stop, saying why", run);
  }
  {  // It keeps its best value when the job resumes.
    HookTest first(plugin);
    first.steps(4).value("loss", falling_loss);
    const auto stopped = first.run();
    check(stopped.state_bytes() == "2.5", "the best value is the saved state", stopped);
    HookTest resumed(plugin);
    resumed.set("log_every", "2").resume_from(stopped).steps(6).value("loss", 4.0);
    const auto run = resumed.run();
    check(run.log_lines("info") == Lines{"loss = 4 at step 6 (best 2.5)"},
          "the resumed hook remembers the best value", run);
  }
  {  // It refuses log_every below 1 before the job starts.
    HookTest hook(plugin);
    hook.set("log_every", "0");
    const bool refused =
        hook.configuration_error().find("'log_every' must be at least 1") != std::string::npos;
    if (!refused) {
      ++failures;
      std::printf("FAILED: log_every = 0 is refused\n");
    }
  }

  std::printf("%s: %d check(s) failed\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
