// Every built-in plugin runs sandboxed and confined ([run] confine = sandboxed, the default) as it
// runs unconfined: the seccomp allow-list and Landlock leave it everything it needs
// (docs/isolation.md, "Confinement").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

struct Builtin {
  const char* plugin;
  const char* params;
};

// Parameters that make each one do its work within linreg's 4 steps.
const Builtin kBuiltins[] = {
    {"checkpoint_saver", "save_steps = 2"},
    {"early_stopping", "min_delta = 0.001\npatience = 40"},
    {"global_step_waiter", "wait_until_step = 0"},
    {"history_saver", "every_n_steps = 1\ntensors = loss, weights"},
    {"lifecycle_trace", ""},
    {"logging_tensor", "tensors = loss, global_step\nevery_n_iter = 1"},
    {"loss_threshold", "threshold = 0.01"},
    {"nan_tensor", ""},
    {"progress_bar", ""},
    {"step_counter", "every_n_steps = 1\nsummaries = true"},
    {"stop_at_step", "last_step = 3"},
    {"summary_saver", "save_steps = 1\ntensors = loss, bias"},
    {"time_limit", "max_secs = 3600"},
};

// The lines that say what the job and the hook did, with what differs by design between the two
// runs taken out: the log's clock, and where a confined hook's outputs go (its own run folder).
std::vector<std::string> outcome(const std::string& out, const std::string& run_dir) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.find("hook 'h'") == std::string::npos && line.find("job ") == std::string::npos)
      continue;
    if (line.find("confinement") != std::string::npos ||
        line.find("runs confined: ") != std::string::npos)
      continue;
    line = std::regex_replace(line, std::regex(R"(^\[[0-9:.]+\] )"), "");
    for (size_t at; (at = line.find(run_dir + "/hooks/h")) != std::string::npos;)
      line.replace(at, run_dir.size() + 8, run_dir);
    lines.push_back(line);
  }
  return lines;
}

TEST(BuiltinsConfined, EveryBuiltinBehavesAsUnconfined) {
  for (const Builtin& b : kBuiltins) {
    SCOPED_TRACE(b.plugin);
    TempDir dir;
    // checkpoint_wait: every requested checkpoint is written, whatever the timing of either run.
    write_file(dir / "job.ini", std::string("[run]\nrun_dir = run\nisolation = process\n") +
                                    "checkpoint_wait = true\n\n" +
                                    "[workload]\nname = linreg\nepochs = 1\n\n[hook.h]\nplugin = " +
                                    b.plugin + "\n" + b.params + "\n");
    auto run = [&](const std::string& confine) {
      ProcessResult r = run_hookhost({"run", "--config", (dir / "job.ini").string(), "--fresh",
                                      "--set", "run.confine=" + confine},
                                     dir.path());
      r.out += r.err;
      return r;
    };
    const ProcessResult confined = run("sandboxed");
    const ProcessResult open = run("off");
    EXPECT_EQ(confined.exit_code, open.exit_code) << confined.out << "\n----\n" << open.out;
    EXPECT_THAT(confined.out, HasSubstr("confinement: sandboxed hooks run under a seccomp"));
    for (const char* sign : {"denied by its capability policy", "SIGSYS", "could not be applied",
                             "was killed", "runner process"})
      EXPECT_THAT(confined.out, Not(HasSubstr(sign))) << confined.out;
    EXPECT_EQ(outcome(confined.out, (dir / "run").string()),
              outcome(open.out, (dir / "run").string()))
        << confined.out << "\n----\n"
        << open.out;
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
