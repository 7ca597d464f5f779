// What the host does for a confined hook is done with the hook's rights (docs/isolation.md, "What
// the host does for a confined hook"): a folder a hook hands hh.summary/1 is resolved beneath what
// it may write, never through a symbolic link; the event file is never written through a link the
// hook planted; and a granted folder swapped for a link before a restart grants nothing. Each
// test runs the hostile plugin (tests/hostile/) in a real job through the hookhost program and
// looks at the files on disk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

// Every file and folder below `root`, as relative paths (links listed, not followed).
std::vector<std::string> tree(const fs::path& root) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it)
    out.push_back(fs::relative(it->path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

class ServicePaths : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    for (const char* name : {"hostile_summary", "hostile_swap"})
      copy_plugin(fixture_plugin(name), plugins_);
    // What no hook may touch: a folder beside the run folder, with a file of known content.
    fs::create_directories(outside_);
    write_file(outside_ / "canary.txt", kCanary);
  }
  // linreg for one epoch, the hostile hook sandboxed and confined (the default).
  // Without `fresh`, the run folder of an earlier run is kept (resumed).
  ProcessResult run(const std::string& plugin, const std::string& params, bool fresh = true) {
    write_file(dir_ / "job.ini",
               "[run]\nrun_dir = run\nisolation = process\n\n[workload]\nname = linreg\n"
               "epochs = 1\n\n[hook.hostile]\nplugin = " +
                   plugin + "\n" + params + "\n");
    std::vector<std::string> args{"run", "--config", (dir_ / "job.ini").string(), "--plugin-dir",
                                  plugins_.string()};
    if (fresh) args.push_back("--fresh");
    ProcessResult r = run_hookhost(args, dir_.path());
    r.out += r.err;
    return r;
  }
  // The job completed, and nothing outside the run folder changed.
  void expect_intact(const ProcessResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.out, HasSubstr("job completed"));
    EXPECT_EQ(tree(outside_), std::vector<std::string>{"canary.txt"});
    EXPECT_EQ(read_file(outside_ / "canary.txt"), kCanary);
  }
  fs::path own() const { return dir_ / "run" / "hooks" / "hostile"; }

  static constexpr const char* kCanary = "the user's file\n";
  TempDir dir_;
  fs::path plugins_;
  fs::path outside_ = dir_ / "outside";
};

TEST_F(ServicePaths, AnAbsoluteSummaryFolderOutsideTheHooksFoldersIsRefused) {
  const fs::path target = outside_ / "events";
  ProcessResult r = run("hostile_summary", "path = " + target.string());
  EXPECT_THAT(r.out,
              HasSubstr("summary " + target.string() +
                        ": failed: hh.summary/1 add_scalar: "
                        "dir: EXDEV: '" +
                        target.string() + "' resolves outside the folders the hook may write"));
  EXPECT_THAT(r.out, HasSubstr("plugin misbehaving: hh.summary/1 add_scalar dir: "));
  EXPECT_FALSE(fs::exists(target));
  expect_intact(r);
}

TEST_F(ServicePaths, ASummaryFolderThatClimbsOutOfTheRunFolderIsRefused) {
  ProcessResult r = run("hostile_summary", "path = ../../../outside/climbed");
  EXPECT_THAT(r.out, HasSubstr("dir: EXDEV: '../../../outside/climbed' resolves outside the run "
                               "folder the hook may write"));
  EXPECT_FALSE(fs::exists(outside_ / "climbed"));
  expect_intact(r);
  // A folder of its own, `..` and all, is its to write, and so is an absolute one inside it.
  r = run("hostile_summary", "path = tb/../tb2");
  EXPECT_THAT(r.out, HasSubstr("summary tb/../tb2: ok"));
  EXPECT_EQ(std::distance(fs::directory_iterator(own() / "tb2"), fs::directory_iterator()), 1);
  r = run("hostile_summary", "path = " + (own() / "abs").string());
  EXPECT_THAT(r.out, HasSubstr("abs: ok"));
  EXPECT_TRUE(fs::is_directory(own() / "abs"));
}

TEST_F(ServicePaths, ALinkOnTheWayToTheSummaryFolderIsNotFollowed) {
  // A link in the hook's folder (as a hook of an earlier run could have left it), and a resume.
  ProcessResult r = run("hostile_summary", "path = tb");
  EXPECT_THAT(r.out, HasSubstr("summary tb: ok"));
  fs::create_directory_symlink(outside_, own() / "link");
  r = run("hostile_summary", "path = link/tb", false);
  EXPECT_THAT(r.out, HasSubstr("dir: ELOOP: a symbolic link on the way to 'link/tb'"));
  EXPECT_FALSE(fs::exists(outside_ / "tb"));
  expect_intact(r);
}

TEST_F(ServicePaths, ALinkPlantedWhereTheEventFileGoesIsRefusedNotFollowed) {
  const fs::path canary = outside_ / "canary.txt";
  ProcessResult r = run("hostile_summary", "path = sub\nplant = " + canary.string());
  EXPECT_THAT(r.out, HasSubstr("hostile: plant links: ok"));
  EXPECT_THAT(r.out, HasSubstr("summary sub: failed: hh.summary/1 add_scalar: dir: ELOOP: the "
                               "event file "));
  EXPECT_THAT(r.out, HasSubstr("is a symbolic link: the host writes no event file through a link"));
  EXPECT_THAT(r.out, HasSubstr("plugin misbehaving: hh.summary/1 add_scalar dir: "));
  expect_intact(r);  // the canary's bytes among them
  for (const auto& entry : fs::directory_iterator(own() / "sub"))
    EXPECT_TRUE(fs::is_symlink(entry.symlink_status())) << entry.path();  // none written through
}

TEST_F(ServicePaths, AGrantedFolderSwappedForALinkGrantsNothingAfterARestart) {
  ProcessResult r = run("hostile_swap", "path = " + outside_.string());
  EXPECT_THAT(r.out, HasSubstr("hostile: swap data for a link: ok"));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(own() / "data")));
  // The restarted runner's rule for <own>/data is left out, not moved to where the link points.
  EXPECT_THAT(r.out, HasSubstr("landlock: ELOOP: a symbolic link on the way to '" +
                               (fs::canonical(own()) / "data").string() + "'"));
  EXPECT_THAT(r.out, HasSubstr("planted.txt: failed: EACCES"));
  EXPECT_FALSE(fs::exists(outside_ / "planted.txt"));
  expect_intact(r);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
