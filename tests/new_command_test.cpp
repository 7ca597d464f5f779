// hookhost new: the project it writes is the template in examples/, renamed; bad names and
// occupied folders are refused before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <set>
#include <vector>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

// Every regular file under `dir`, relative to it, with its contents.
std::map<std::string, std::string> files_under(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file())
      out[fs::relative(entry.path(), dir).string()] = read_file(entry.path());
  return out;
}

const fs::path kExamples = fs::path(HOOKHOST_SOURCE_DIR) / "examples";

class NewCommandTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NewCommandTest, WritesTheTemplateUnchangedForItsOwnName) {
  TempDir tmp;
  const ProcessResult r =
      run_hookhost({"new", "my_hook", "--lang", GetParam(), "--dir", "project"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(files_under(tmp.path() / "project"),
            files_under(kExamples / ("plugin-template-" + GetParam())));
  EXPECT_NE(r.out.find("Next:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hookhost check project/"), std::string::npos) << r.out;
}

TEST_P(NewCommandTest, RenamesTheHookInPathsAndText) {
  TempDir tmp;
  const ProcessResult r = run_hookhost({"new", "loss_guard", "--lang", GetParam()}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto files = files_under(tmp.path() / "loss_guard");
  ASSERT_FALSE(files.empty());
  const std::string source = GetParam() == "c" ? "loss_guard.c" : "src/loss_guard.cpp";
  ASSERT_TRUE(files.count(source)) << "no " << source;
  ASSERT_TRUE(files.count("test/loss_guard_test.cpp"));
  ASSERT_TRUE(files.count("loss_guard.ini"));
  for (const auto& [path, text] : files) {
    EXPECT_EQ(path.find("my_hook"), std::string::npos) << path;
    EXPECT_EQ(text.find("my_hook"), std::string::npos) << path;
    EXPECT_EQ(text.find("MyHook"), std::string::npos) << path;
    EXPECT_EQ(text.find("MY_HOOK"), std::string::npos) << path;
  }
  EXPECT_NE(files.at(source).find("\"loss_guard\""), std::string::npos);
  if (GetParam() == "cpp") {
    EXPECT_NE(files.at(source).find("class LossGuard"), std::string::npos);
  }
  // It shows how a hook declares what it needs when confined, in a comment: it needs nothing.
  const std::string shown = "#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path) HH_NEEDS_NETWORK";
  const std::string& text = files.at(source);
  const std::size_t at = text.find(shown);
  ASSERT_NE(at, std::string::npos) << source;
  const std::size_t line_start = text.rfind('\n', at) + 1;
  const std::string before = text.substr(line_start, at - line_start);
  EXPECT_TRUE(before == "// " || before == " *   ") << "not commented out: '" << before << "'";
  EXPECT_EQ(text.find(shown, at + 1), std::string::npos);
}

// What a project needs before its first commit: its build output and its job's runs ignored.
TEST_P(NewCommandTest, IgnoresTheBuildOutputAndTheRunsOfItsJob) {
  TempDir tmp;
  const ProcessResult r = run_hookhost({"new", "guard", "--lang", GetParam()}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto files = files_under(tmp.path() / "guard");
  ASSERT_TRUE(files.count(".gitignore")) << "no .gitignore";
  const std::vector<std::string> ignored = lines_of(files.at(".gitignore"));
  const auto has = [&](const std::string& line) {
    return std::find(ignored.begin(), ignored.end(), line) != ignored.end();
  };
  EXPECT_TRUE(has("runs/")) << files.at(".gitignore");
  if (GetParam() == "cpp") {
    EXPECT_TRUE(has("build/")) << files.at(".gitignore");
  } else {
    EXPECT_TRUE(has("*.so")) << files.at(".gitignore");
    EXPECT_TRUE(has("guard_test")) << files.at(".gitignore");
  }
  // The job writes where .gitignore looks.
  EXPECT_NE(files.at("guard.ini").find("\nrun_dir = runs/guard\n"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Languages, NewCommandTest, ::testing::Values("cpp", "c"));

TEST(NewCommand, TheCMakeProjectRegistersEachTestCaseWithCtest) {
  TempDir tmp;
  const ProcessResult r = run_hookhost({"new", "guard"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string cmake = read_file(tmp.path() / "guard" / "CMakeLists.txt");
  EXPECT_NE(cmake.find("include(GoogleTest)"), std::string::npos) << cmake;
  EXPECT_NE(cmake.find("gtest_discover_tests(guard_test)"), std::string::npos) << cmake;
  EXPECT_EQ(cmake.find("add_test("), std::string::npos) << cmake;
}

// make with no hookhost for pkg-config stops on that cause, naming PKG_CONFIG_PATH, before it
// runs a compiler that would only say a header is missing.
TEST(NewCommand, TheMakefileStopsWhenPkgConfigFindsNoHookhost) {
  if (::system("command -v make >/dev/null 2>&1 && command -v pkg-config >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "make or pkg-config is not installed";
  TempDir tmp;
  ASSERT_EQ(run_hookhost({"new", "guard", "--lang", "c"}, tmp.path()).exit_code, 0);
  fs::create_directories(tmp.path() / "empty");
  const std::vector<std::string> env = {"PKG_CONFIG_PATH=" + (tmp.path() / "empty").string(),
                                        "PKG_CONFIG_LIBDIR=" + (tmp.path() / "empty").string()};
  for (const std::vector<std::string>& goal : {std::vector<std::string>{}, {"check"}}) {
    std::vector<std::string> args = {"-C", (tmp.path() / "guard").string()};
    args.insert(args.end(), goal.begin(), goal.end());
    const ProcessResult made = Process(args, tmp.path(), env, "/usr/bin/make").wait();
    EXPECT_NE(made.exit_code, 0) << made.out << made.err;
    EXPECT_NE(made.err.find("pkg-config finds no hookhost-plugin"), std::string::npos) << made.err;
    EXPECT_NE(made.err.find("PKG_CONFIG_PATH"), std::string::npos) << made.err;
    EXPECT_EQ(made.err.find("No such file"), std::string::npos) << made.err;
    EXPECT_FALSE(fs::exists(tmp.path() / "guard" / "guard.so"));
  }
  // clean needs no pkg-config.
  const ProcessResult cleaned =
      Process({"-C", (tmp.path() / "guard").string(), "clean"}, tmp.path(), env, "/usr/bin/make")
          .wait();
  EXPECT_EQ(cleaned.exit_code, 0) << cleaned.err;
}

// The tutorial shows what `hookhost new loss_guard` prints (docs/writing-a-plugin.md, section 2):
// the same lines, but for the installation's prefix, which the page writes as <prefix>.
TEST(NewCommand, PrintsWhatTheTutorialShows) {
  const std::string page =
      read_file(fs::path(HOOKHOST_SOURCE_DIR) / "docs" / "writing-a-plugin.md");
  const std::string opening = "```\nCreated loss_guard:";
  const std::size_t start = page.find(opening);
  ASSERT_NE(start, std::string::npos) << "the tutorial shows no output of hookhost new";
  const std::size_t end = page.find("```", start + 4);
  std::string shown = page.substr(start + 4, end - start - 4);
  TempDir tmp;
  const ProcessResult r = run_hookhost({"new", "loss_guard"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex prefix(" -DCMAKE_PREFIX_PATH=\\S+");
  EXPECT_EQ(std::regex_replace(r.out, prefix, ""), std::regex_replace(shown, prefix, ""));
}

TEST(NewCommand, RefusesANameThatCannotBeAnIdentifier) {
  TempDir tmp;
  for (const std::string name : {"Loss", "2fast", "loss-guard", "a b", ""}) {
    const ProcessResult r = run_hookhost({"new", name}, tmp.path());
    EXPECT_EQ(r.exit_code, 2) << name;
    EXPECT_NE(r.err.find("cannot be a hook name"), std::string::npos) << name << ": " << r.err;
  }
  // Only the captured output is there: no project folder was started.
  for (const auto& entry : fs::directory_iterator(tmp.path()))
    EXPECT_TRUE(entry.path().filename().string().starts_with(".std")) << entry.path();
}

TEST(NewCommand, RefusesAFolderThatIsNotEmptyAndWritesNothing) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "taken");
  write_file(tmp.path() / "taken" / "notes.txt", "mine");
  const ProcessResult r = run_hookhost({"new", "guard", "--dir", "taken"}, tmp.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("taken already exists and is not an empty folder"), std::string::npos)
      << r.err;
  EXPECT_EQ(files_under(tmp.path() / "taken").size(), 1u);
}

TEST(NewCommand, RefusesAnUnknownLanguage) {
  TempDir tmp;
  const ProcessResult r = run_hookhost({"new", "guard", "--lang", "rust"}, tmp.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected cpp or c"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp.path() / "guard"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
