// Parameter validation from a plugin's schema (Boost.Program_options underneath).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/host/params.hpp>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

PluginMetadata schema() {
  PluginMetadata m;
  m.id = "demo";
  m.params = {
      {"flag", HH_PARAM_TYPE_BOOL, ParamFlag::defaulted, "false", "a switch"},
      {"count", HH_PARAM_TYPE_INT, ParamFlag::defaulted, "10", "how many"},
      {"rate", HH_PARAM_TYPE_FLOAT, ParamFlag::optional, "", "a rate"},
      {"path", HH_PARAM_TYPE_STRING, ParamFlag::required, "", "where to write"},
      {"tensors", HH_PARAM_TYPE_STRING_LIST, ParamFlag::defaulted, "loss", "what to record"},
  };
  return m;
}

std::string error_of(const std::multimap<std::string, std::string>& raw) {
  try {
    resolve_params(schema(), "inst", raw);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Params, DefaultsApplyAndOptionalStaysUnset) {
  ResolvedParams p = resolve_params(schema(), "inst", {{"path", "/tmp/x"}});
  EXPECT_FALSE(p.find("flag")->b);
  EXPECT_TRUE(p.find("flag")->is_set);
  EXPECT_EQ(p.find("count")->i, 10);
  EXPECT_FALSE(p.find("rate")->is_set);
  EXPECT_EQ(p.find("path")->s, "/tmp/x");
  EXPECT_THAT(p.find("tensors")->list, ElementsAre("loss"));
}

TEST(Params, TypedValuesParse) {
  ResolvedParams p = resolve_params(schema(), "inst",
                                    {{"path", "p"},
                                     {"flag", "yes"},
                                     {"count", "-3"},
                                     {"rate", "2.5e-3"},
                                     {"tensors", "loss, global_step"},
                                     {"tensors", "weights"}});
  EXPECT_TRUE(p.find("flag")->b);
  EXPECT_EQ(p.find("count")->i, -3);
  EXPECT_DOUBLE_EQ(p.find("rate")->f, 2.5e-3);
  EXPECT_THAT(p.find("tensors")->list, ElementsAre("loss", "global_step", "weights"));
  EXPECT_EQ(p.find("tensors")->text, "loss,global_step,weights");
}

TEST(Params, CValuesMirrorTheResolvedValuesInDeclarationOrder) {
  ResolvedParams p = resolve_params(schema(), "inst", {{"path", "p"}, {"tensors", "a,b"}});
  ResolvedParams::CValues c_values = p.c_values();
  std::vector<hh_param_value>& c = c_values.values;
  ASSERT_EQ(c.size(), 5u);
  EXPECT_STREQ(c[0].name, "flag");
  EXPECT_EQ(c[1].int_value, 10);
  EXPECT_EQ(c[2].is_set, 0);
  EXPECT_STREQ(c[3].string_value, "p");
  ASSERT_EQ(c[4].list_count, 2u);
  EXPECT_STREQ(c[4].list_items[1], "b");
}

TEST(Params, UnknownKeyNamesTheKeyAndTheValidOnes) {
  EXPECT_THAT(error_of({{"path", "p"}, {"cuont", "3"}}),
              AllOf(HasSubstr("hook 'inst'"), HasSubstr("plugin 'demo'"), HasSubstr("'cuont'"),
                    HasSubstr("flag, count, rate, path, tensors")));
}

TEST(Params, WrongTypeSaysWhatWasExpected) {
  EXPECT_THAT(error_of({{"path", "p"}, {"count", "ten"}}),
              AllOf(HasSubstr("'count'"), HasSubstr("an integer"), HasSubstr("got 'ten'")));
  EXPECT_THAT(error_of({{"path", "p"}, {"count", "1.5"}}), HasSubstr("an integer"));
  EXPECT_THAT(error_of({{"path", "p"}, {"flag", "maybe"}}), HasSubstr("a bool"));
  EXPECT_THAT(error_of({{"path", "p"}, {"rate", "fast"}}), HasSubstr("a number"));
}

TEST(Params, MissingRequiredNamesTheKey) {
  EXPECT_THAT(error_of({}),
              AllOf(HasSubstr("required parameter 'path'"), HasSubstr("where to write")));
}

TEST(Params, ScalarGivenTwiceIsAnError) {
  EXPECT_THAT(error_of({{"path", "p"}, {"count", "1"}, {"count", "2"}}),
              AllOf(HasSubstr("'count'"), HasSubstr("more than once")));
}

TEST(Params, BadDefaultInThePluginIsReportedAsThePluginsFault) {
  PluginMetadata m = schema();
  m.params[1].default_value = "lots";
  try {
    resolve_params(m, "inst", {{"path", "p"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("default for 'count'"), HasSubstr("plugin's author")));
  }
}

// A plugin whose constructor reads a parameter wrongly: the message says which mistake it is, names
// the parameter, the plugin and the fix, and points at no line of the config (none is wrong).
TEST(ParamsInPluginCode, ReadingAParameterWronglyNamesTheMistakeAndTheFix) {
  testing::TempDir dir;
  testing::copy_plugin(testing::fixture_plugin("param_reader"), dir.path());
  testing::write_file(dir / "job.ini",
                      "[run]\nrun_dir = run\n\n[workload]\nname = linreg\nepochs = 1\n\n"
                      "[hook.reader]\nplugin = param_reader\n");
  const auto run = [&](const std::string& mistake) {
    return testing::run_hookhost({"run", "--config", (dir / "job.ini").string(), "--plugin-dir",
                                  dir.path().string(), "--set", "hook.reader.mistake=" + mistake},
                                 dir.path());
  };
  const std::string file = (dir / "job.ini").string();
  const testing::ProcessResult undeclared = run("undeclared");
  EXPECT_EQ(undeclared.exit_code, 2) << undeclared.err;
  EXPECT_THAT(undeclared.err,
              AllOf(HasSubstr(file + ": [hook.reader]: "), HasSubstr("plugin 'param_reader'"),
                    HasSubstr("the plugin reads parameter 'warmup_steps', which is not in the "
                              "plugin's parameter list: declare it there (e.g. P(warmup_steps, "
                              "INT, DEFAULT")));
  EXPECT_THAT(undeclared.err, ::testing::Not(HasSubstr(file + ":8")));
  const testing::ProcessResult wrong_type = run("wrong_type");
  EXPECT_EQ(wrong_type.exit_code, 2) << wrong_type.err;
  EXPECT_THAT(wrong_type.err,
              HasSubstr("the plugin reads parameter 'label' as INT, but the plugin's parameter "
                        "list declares it STRING: read it with get_string()"));
  const testing::ProcessResult unset = run("unset");
  EXPECT_EQ(unset.exit_code, 2) << unset.err;
  EXPECT_THAT(unset.err, HasSubstr("parameter 'ratio' is OPTIONAL and not set in the "
                                   "configuration: check has() before reading it"));
  EXPECT_EQ(run("none").exit_code, 0);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
