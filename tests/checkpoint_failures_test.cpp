// Checkpoint writes that fail, through the real program: the writer does not depend on what a hook
// leaves of the process's memory, and a job whose checkpoints failed says so and does not exit 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "process.hpp"
#include "support/sanitizer.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

// The global steps of the checkpoint files in `dir` (model.ckpt-<step>), sorted.
std::vector<long> checkpoint_steps(const fs::path& dir) {
  std::vector<long> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "model.ckpt-";
    if (name.rfind(prefix, 0) == 0 && name.find('.', prefix.size()) == std::string::npos)
      steps.push_back(std::stol(name.substr(prefix.size())));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::string job_ini(const std::string& run_section_extra, const std::string& hooks) {
  return "[run]\nrun_dir = run\n" + run_section_extra +
         "\n[workload]\nname = linreg\nepochs = 2\n\n"
         "[hook.saver]\nplugin = checkpoint_saver\nsave_steps = 5\n\n" +
         hooks;
}

// A hook leaves the process too little address space for a new thread before the first save:
// every checkpoint is still written, since the writer thread was started before any hook ran.
TEST(CheckpointFailures, AHookThatExhaustsMemoryBeforeTheFirstSaveDoesNotStopCheckpoints) {
#if defined(HOOKHOST_ASAN)
  // AddressSanitizer maps its own memory as the program runs: an address-space cap stops it, not
  // the checkpoint writer.
  GTEST_SKIP() << "an address-space cap and AddressSanitizer do not mix";
#endif
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  copy_plugin(fixture_plugin("address_space_cap"), plugins);
  copy_plugin(builtin_plugin("checkpoint_saver"), plugins);
  write_file(dir / "job.ini",
             job_ini("", "[hook.cap]\nplugin = address_space_cap\norder = -1\nheadroom_mb = 4\n"));
  const ProcessResult r = run_hookhost(
      {"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
      dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("could not write the checkpoint")));
  const std::vector<long> steps = checkpoint_steps(dir / "run" / "checkpoints");
  ASSERT_FALSE(steps.empty()) << r.err;
  EXPECT_EQ(steps.front(), 0) << r.err;  // the save before the first step
  EXPECT_THAT(r.out, HasSubstr("job completed"));
}

// Every save fails (the checkpoint folder's parent is a file): the job runs to its end, the
// summary says how many writes failed and why, and the exit status is 1.
TEST(CheckpointFailures, AJobWhoseCheckpointsFailedSaysSoAndExits1) {
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  copy_plugin(builtin_plugin("checkpoint_saver"), plugins);
  write_file(dir / "blocked", "a file where the checkpoint folder's parent should be\n");
  const fs::path folder = dir / "blocked" / "checkpoints";
  write_file(dir / "job.ini", job_ini("checkpoint_dir = " + folder.string() + "\n", ""));
  const ProcessResult r = run_hookhost(
      {"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
      dir.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const long failed_writes = count_occurrences(r.err, "could not write the checkpoint");
  ASSERT_GT(failed_writes, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job completed")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("checkpoints: " + std::to_string(failed_writes) +
                               " writes failed, so the job cannot resume where it should"))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr(folder.parent_path().string())) << r.out;
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
