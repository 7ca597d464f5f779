// A hook's saved state is resumed only into the build of its plugin that saved it: the real program
// resumes a job whose plugin file was replaced by another build of the same plugin (same id,
// version and state version, other bytes: test_plugins/rebuilt/scripted.so) between the runs, in
// a temporary plugin folder, in process and sandboxed; `resume_state = any_build` resumes it
// anyway; the same build and a checkpoint written before builds were recorded resume as before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/trust.hpp"
#include "process.hpp"
#include "storage/checkpoint.hpp"
#include "storage/event_writer.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// `c` as checkpoint format 2 wrote it (docs/checkpoint-format.md): hook sections of kind 3, with
// a plugin id and a state version but no build.
std::string format2_bytes(const Checkpoint& c) {
  std::string out("HHCKPT\r\n", 8);
  put_le(out, 2, 4);
  put_le(out, static_cast<uint64_t>(c.global_step), 8);
  put_le(out, 1 + c.hook_states.size(), 4);
  put_le(out, 1, 1);
  put_le(out, 0, 4);
  put_le(out, c.workload_state.size(), 8);
  out += c.workload_state;
  for (const auto& [name, state] : c.hook_states) {
    put_le(out, 3, 1);
    put_le(out, name.size(), 4);
    out += name;
    put_le(out, state.plugin_id.size(), 4);
    out += state.plugin_id;
    put_le(out, state.state_version, 4);
    put_le(out, state.bytes.size(), 8);
    out += state.bytes;
  }
  put_le(out, crc32c(out), 4);
  return out;
}

class ResumeBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(plugins());
    copy_plugin(fixture_plugin("scripted"), plugins());
  }
  fs::path plugins() const { return dir_ / "plugins"; }
  fs::path trace() const { return dir_ / "trace.txt"; }
  fs::path checkpoint(int step) const {
    return dir_ / "run" / "checkpoints" / ("model.ckpt-" + std::to_string(step));
  }
  // The plugin folder's scripted.so replaced by another build of the same plugin.
  void rebuild_plugin() {
    copy_plugin(fs::path(HOOKHOST_FIXTURE_DIR) / "rebuilt" / "scripted.so", plugins());
  }
  // A linreg job with a checkpoint every 5 steps, stopping at `last_step`, and the scripted hook
  // `probe` (whose state counts its after_run calls) from the temporary plugin folder.
  ProcessResult run(int last_step, std::vector<std::string> extra = {}) {
    const fs::path config = dir_ / "job.ini";
    write_file(config,
               "[run]\nrun_dir = run\nplugin_dir = plugins\n\n"
               "[workload]\nname = linreg\nepochs = 25\n\n"
               "[hook.checkpoints]\nplugin = checkpoint_saver\nsave_steps = 5\n"
               "order = 100\n\n[hook.stop]\nplugin = stop_at_step\nlast_step = " +
                   std::to_string(last_step) +
                   "\n\n[hook.probe]\nplugin = scripted\ntrace = " + trace().string() + "\n");
    std::vector<std::string> args{"run", "--config", config.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_hookhost(args, dir_.path());
  }
  // What probe's begin found: the trace's "probe begin state=..." lines, one per run.
  std::vector<std::string> begins() const {
    return starting_with(lines_of(read_file(trace())), "probe begin ");
  }
  // The first 12 hex digits of a plugin file's SHA-256, as the warning names a build.
  static std::string short_build(const fs::path& file) {
    return sha256_of_file(file).substr(0, 12);
  }
  TempDir dir_;
};

// (a) The author's trap: the plugin was rebuilt (rewritten under the same id and versions) since
// the checkpoint was written. The new build starts without the old build's state, and one warning
// line names the hook, the plugin, both builds and the key that resumes it anyway.
TEST_F(ResumeBuildTest, AnotherBuildStartsWithoutTheStateAndAWarningSaysWhy) {
  const std::string first_build = short_build(plugins() / "scripted.so");
  ProcessResult first = run(10);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(read_checkpoint(checkpoint(10)).hook_states.at("probe").plugin_build,
            sha256_of_file(plugins() / "scripted.so"));

  rebuild_plugin();
  const std::string second_build = short_build(plugins() / "scripted.so");
  ASSERT_NE(first_build, second_build);
  ProcessResult second = run(20);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.err, HasSubstr("resuming from"));
  EXPECT_THAT(lines_of(second.err),
              Contains(AllOf(HasSubstr("[warning]"),
                             HasSubstr("hook 'probe' (plugin 'scripted') starts without the state "
                                       "the checkpoint holds for it: another build of the plugin "
                                       "saved it (SHA-256 " +
                                       first_build + ", this build " + second_build +
                                       "); set resume_state = any_build in [hook.probe] to resume "
                                       "it anyway"))))
      << second.err;
  ASSERT_EQ(begins().size(), 2u);
  EXPECT_THAT(begins()[1], HasSubstr("state=- live=10"));
  // It saves its own state from then on, tagged with its own build: 10 after_runs, not 20.
  const SavedHookState saved = read_checkpoint(checkpoint(20)).hook_states.at("probe");
  EXPECT_EQ(saved.bytes, "after_runs=10");
  EXPECT_EQ(saved.plugin_build, sha256_of_file(plugins() / "scripted.so"));
  // The built-in hooks' states (the same builds) were resumed: no other hook is warned about.
  EXPECT_THAT(second.err, Not(HasSubstr("hook 'stop' (plugin")));
}

// The same in the sandbox: the build compared is the one the host checked and hands its runner.
TEST_F(ResumeBuildTest, AnotherBuildStartsWithoutTheStateInTheSandboxToo) {
  ProcessResult first = run(10, {"--set", "hook.probe.isolation=process"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(read_checkpoint(checkpoint(10)).hook_states.at("probe").plugin_build,
            sha256_of_file(plugins() / "scripted.so"));
  rebuild_plugin();
  ProcessResult second = run(20, {"--set", "hook.probe.isolation=process"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.err, HasSubstr("hook 'probe' (plugin 'scripted') starts without the state"));
  ASSERT_EQ(begins().size(), 2u);
  EXPECT_THAT(begins()[1], HasSubstr("state=- live=10"));
}

// (b) resume_state = any_build: the other build's state is resumed, and said so at info level.
TEST_F(ResumeBuildTest, AnyBuildResumesAnotherBuildsState) {
  ASSERT_EQ(run(10).exit_code, 0);
  rebuild_plugin();
  ProcessResult second = run(20, {"--set", "hook.probe.resume_state=any_build"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.err, Not(HasSubstr("starts without the state")));
  EXPECT_THAT(second.err, HasSubstr("hook 'probe' (plugin 'scripted') resumes the state another "
                                    "build of the plugin saved"));
  ASSERT_EQ(begins().size(), 2u);
  EXPECT_THAT(begins()[1], HasSubstr("state=after_runs=10 live=10"));
  EXPECT_EQ(read_checkpoint(checkpoint(20)).hook_states.at("probe").bytes, "after_runs=20");
}

// (c) The same build (every kill/resume of an unchanged job): resumed, nothing said.
TEST_F(ResumeBuildTest, TheSameBuildResumesItsStateSilently) {
  ASSERT_EQ(run(10).exit_code, 0);
  copy_plugin(fixture_plugin("scripted"), plugins());  // the same bytes, written again
  ProcessResult second = run(20);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.err, AllOf(Not(HasSubstr("another build")), HasSubstr("resuming from")));
  ASSERT_EQ(begins().size(), 2u);
  EXPECT_THAT(begins()[1], HasSubstr("state=after_runs=10 live=10"));
}

// (d) A checkpoint written before builds were recorded (format 2) resumes as before, whatever
// build the plugin is now, and the next checkpoint records the build that resumed it.
TEST_F(ResumeBuildTest, ACheckpointWithoutBuildsResumesAsBefore) {
  ASSERT_EQ(run(10).exit_code, 0);
  const Checkpoint written = read_checkpoint(checkpoint(10));
  write_file(checkpoint(10), format2_bytes(written));
  const Checkpoint old = read_checkpoint(checkpoint(10));
  ASSERT_EQ(old.hook_states.at("probe").plugin_build, "");
  ASSERT_EQ(old.hook_states.at("probe").bytes, "after_runs=10");

  rebuild_plugin();
  ProcessResult second = run(20);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.err, Not(HasSubstr("another build")));
  ASSERT_EQ(begins().size(), 2u);
  EXPECT_THAT(begins()[1], HasSubstr("state=after_runs=10 live=10"));
  EXPECT_EQ(read_checkpoint(checkpoint(20)).hook_states.at("probe").plugin_build,
            sha256_of_file(plugins() / "scripted.so"));
}

// The key takes its two words only, and is the host's in every [hook.NAME] section.
TEST_F(ResumeBuildTest, ResumeStateTakesSameBuildOrAnyBuild) {
  ProcessResult r = run(10, {"--set", "hook.probe.resume_state=always"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("--set hook.probe.resume_state=always"),
                           HasSubstr("expected same_build or any_build; got 'always'")));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
