// Trusted plugin folders, end to end through the hookhost program: the ownership and permission
// rules, links out of the folder, SHA-256 pins, the plugin allowlist, and loading from a private
// copy so the installed file can be replaced while a job runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "plugins/trust.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class PluginTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    plugins_ = dir_ / "plugins";
    fs::create_directories(plugins_);
    fs::permissions(plugins_, fs::perms(0755));
    plugin_ = copy_plugin(fixture_plugin("scripted"), plugins_);
    fs::permissions(plugin_, fs::perms(0755));
  }
  // A short job with one scripted hook from the test's plugin folder.
  ProcessResult run(const std::string& extra_run = "", const std::string& extra_hook = "",
                    const std::vector<std::string>& more = {}) {
    const fs::path ini = dir_ / "job.ini";
    write_file(ini, "[run]\nrun_dir = run\n" + extra_run +
                        "\n[workload]\nname = linreg\nepochs = 1\n\n[hook.probe]\nplugin = "
                        "scripted\ntrace = " +
                        (dir_ / "trace.txt").string() + "\n" + extra_hook);
    std::vector<std::string> args{"run", "--config", ini.string(), "--plugin-dir",
                                  plugins_.string()};
    args.insert(args.end(), more.begin(), more.end());
    return run_hookhost(args, dir_.path());
  }

  TempDir dir_;
  fs::path plugins_;
  fs::path plugin_;
};

TEST_F(PluginTrust, ATrustedFolderAndFileLoad) {
  ProcessResult r = run();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("loading plugin 'scripted' from " + plugin_.string()));
}

TEST_F(PluginTrust, AFileWritableByOthersIsRefusedSayingHowToFixIt) {
  fs::permissions(plugin_, fs::perms(0757));
  ProcessResult r = run();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("job.ini:"), HasSubstr("[hook.probe] plugin"),
                           HasSubstr("refusing to load plugin 'scripted': plugin file " +
                                     plugin_.string() + " is writable by group or others (mode "
                                                        "0757): run 'chmod go-w " +
                                     plugin_.string() + "'"),
                           HasSubstr("allow_insecure_plugins = true")));
  EXPECT_FALSE(fs::exists(dir_ / "trace.txt")) << "no hook may run";
  // The operator's explicit override loads it.
  EXPECT_EQ(run("allow_insecure_plugins = true").exit_code, 0);
}

TEST_F(PluginTrust, AFolderWritableByGroupIsRefused) {
  fs::permissions(plugins_, fs::perms(0775));
  ProcessResult r = run();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("plugin folder " + fs::canonical(plugins_).string() +
                               " is writable by group or others (mode 0775)"));
  EXPECT_EQ(run("", "", {"--set", "run.allow_insecure_plugins=true"}).exit_code, 0);
}

TEST_F(PluginTrust, AFileOwnedBySomeoneElseIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
  ASSERT_EQ(::chown(plugin_.c_str(), 4242, 4242), 0);
  ProcessResult r = run();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is owned by uid 4242, neither root nor the user running hookhost"));
}

TEST_F(PluginTrust, ALinkOutOfTheFolderIsRefusedAndOneInsideIsFollowed) {
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directories(elsewhere);
  const fs::path outside = copy_plugin(fixture_plugin("scripted"), elsewhere);
  fs::remove(plugin_);
  fs::create_symlink(outside, plugins_ / "scripted.so");
  ProcessResult r = run();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("is a link to " + fs::canonical(outside).string()),
                           HasSubstr("outside its plugin folder")));
  // A link to a file inside the same folder is fine.
  fs::remove(plugins_ / "scripted.so");
  copy_plugin(fixture_plugin("scripted"), plugins_, "scripted-1.2.so");
  fs::create_symlink("scripted-1.2.so", plugins_ / "scripted.so");
  ProcessResult inside = run();
  EXPECT_EQ(inside.exit_code, 0) << inside.err;
}

TEST_F(PluginTrust, ASha256PinMustMatchTheLoadedBytes) {
  const std::string actual = sha256_of_file(plugin_);
  ASSERT_EQ(actual.size(), 64u);
  EXPECT_EQ(run("", "sha256 = " + actual + "\n").exit_code, 0);
  // Upper case is the same hash.
  std::string upper = actual;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(run("", "sha256 = " + upper + "\n").exit_code, 0);

  const std::string wrong(64, 'a');
  ProcessResult r = run("", "sha256 = " + wrong + "\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("[hook.probe] sha256"), HasSubstr("has SHA-256 " + actual),
                           HasSubstr("the configuration pins " + wrong)));
  ProcessResult bad = run("", "sha256 = 1234\n");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("expected 64 hexadecimal digits"));
}

TEST_F(PluginTrust, OnlyAllowedPluginIdsMayBeUsed) {
  EXPECT_EQ(run("allowed_plugins = scripted, checkpoint_saver").exit_code, 0);
  ProcessResult r = run("allowed_plugins = checkpoint_saver,history_saver");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("plugin 'scripted' is not in [run] allowed_plugins "
                               "(checkpoint_saver, history_saver)"));
  ProcessResult empty = run("allowed_plugins = scripted,,x");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_THAT(empty.err, HasSubstr("got an empty item"));
}

TEST_F(PluginTrust, OverwritingTheInstalledFileDuringAJobDoesNotHurtIt) {
  const fs::path ini = dir_ / "job.ini";
  write_file(ini, "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 1\n\n[hook.probe]\n"
                  "plugin = scripted\nblock_in_before_secs = 1\ntrace = " +
                      (dir_ / "trace.txt").string() + "\n");
  Process job({"run", "--config", ini.string(), "--plugin-dir", plugins_.string()}, dir_.path());
  ASSERT_TRUE(wait_until(
      [&] { return read_file(dir_ / "trace.txt").find("probe before_run") != std::string::npos; }));
  // In place, as a careless `cp` onto the installed file does: same inode, new bytes.
  {
    std::string garbage(fs::file_size(plugin_), '\x5a');
    std::FILE* f = std::fopen(plugin_.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fwrite(garbage.data(), 1, garbage.size(), f);
    std::fclose(f);
  }
  ProcessResult r = job.wait(std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job completed"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
