// hookhost new: the project it writes is the template in examples/, renamed; bad names and
// occupied folders are refused before anything is written.
#include <gtest/gtest.h>

#include <set>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {

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
}

INSTANTIATE_TEST_SUITE_P(Languages, NewCommandTest, ::testing::Values("cpp", "c"));

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

}  // namespace
}  // namespace hookhost::testing
