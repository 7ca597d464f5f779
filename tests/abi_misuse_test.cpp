// A real plugin (tests/fixtures/abuser) misusing the host: each misuse is refused with an error
// status and a log line naming the instance, and the job goes on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plugin_harness.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string run_abuse(const std::string& abuse, std::string* log = nullptr,
                      JobResult* result = nullptr) {
  TempDir dir;
  const fs::path file = dir / "report.txt";
  {
    PluginHarness h({}, {"abuser"});
    h.add("abuser", "abuser", {{"abuse", abuse}, {"report", file.string()}});
    JobResult r = h.run();
    if (result) *result = r;
    if (log) *log = h.log();
  }  // destroy() runs here
  return fs::exists(file) ? read_file(file) : "";
}

TEST(AbiMisuse, RequestUsedAfterItsBeforeRunIsRefused) {
  std::string log;
  EXPECT_THAT(run_abuse("request_after", &log), HasSubstr("request_after=1\n"));
  EXPECT_THAT(log, AllOf(HasSubstr("plugin misbehaving: add_fetch on a request whose before_run "
                                   "has returned"),
                         HasSubstr("abuser")));
}

TEST(AbiMisuse, RequestUsedFromAnotherThreadIsRefused) {
  std::string log;
  EXPECT_THAT(run_abuse("request_thread", &log), HasSubstr("request_thread=1\n"));
  EXPECT_THAT(log, HasSubstr("add_fetch from another thread than its before_run"));
}

TEST(AbiMisuse, ACheckpointRequestFromAPluginThreadWaitsForTheStepBoundary) {
  // request is [thread-safe]: it only records the wish; the runtime writes at the boundary.
  std::string log;
  EXPECT_THAT(run_abuse("checkpoint_thread", &log), HasSubstr("checkpoint_thread=0\n"));
  EXPECT_THAT(log, AllOf(HasSubstr("wrote checkpoint"), HasSubstr("model.ckpt-1 "),
                         HasSubstr("requested by hook 'abuser': from a plugin thread")));
}

TEST(AbiMisuse, StateOverTheLimitOrWithNullDataIsRefused) {
  std::string log;
  const std::string report = run_abuse("state_limit", &log);
  EXPECT_THAT(report,
              AllOf(HasSubstr("state_put_over_limit=1\n"), HasSubstr("state_put_null=1\n")));
  EXPECT_THAT(log, HasSubstr("more than the job's state limit of 16777216 bytes"));
}

TEST(AbiMisuse, StateIsCopiedOutAndTooSmallABufferSaysTheSizeNeeded) {
  EXPECT_EQ(run_abuse("state_copy"),
            "info_before=0\nput=0\ninfo_after=1\ninfo_size=3\ninfo_version=1\nget_small=1\n"
            "needed=3\nget_exact=0\ncopied_ok=1\ndestroyed=1\n");
}

TEST(AbiMisuse, OverflowingFeedFailsTheCallNamingTheField) {
  std::string log;
  EXPECT_THAT(run_abuse("bad_feed", &log), HasSubstr("bad_feed=1\n"));
  EXPECT_THAT(log, AllOf(HasSubstr("invalid feed of 'learning_rate'"),
                         HasSubstr("the element count overflows size_t"),
                         HasSubstr("failed in before_run")));
}

TEST(AbiMisuse, NullFetchNameFailsTheCall) {
  std::string log;
  EXPECT_THAT(run_abuse("bad_fetch", &log), HasSubstr("bad_fetch=1\n"));
  EXPECT_THAT(log, HasSubstr("invalid fetch name: the name is NULL"));
}

TEST(AbiMisuse, HugeLogMessageIsCut) {
  std::string log;
  run_abuse("long_log", &log);
  EXPECT_THAT(log, HasSubstr("[cut at 65536 of 100000 bytes]"));
}

TEST(AbiMisuse, UnterminatedErrorMessageIsCutAtTheBuffersEnd) {
  std::string log;
  run_abuse("unterminated_error", &log);
  EXPECT_THAT(log, HasSubstr(std::string(HH_ERROR_MESSAGE_SIZE, 'x')));
  EXPECT_THAT(log, ::testing::Not(HasSubstr(std::string(HH_ERROR_MESSAGE_SIZE + 1, 'x'))));
}

TEST(AbiMisuse, UndefinedStatusIsAnErrorSaidAsSuch) {
  std::string log;
  run_abuse("undefined_status", &log);
  EXPECT_THAT(log, HasSubstr("returned the undefined status 42 (treated as HH_ERROR)"));
}

std::string create_error(const std::string& abuse) {
  PluginHarness h({}, {"abuser"});
  try {
    h.add("abuser", "abuser", {{"abuse", abuse}, {"report", (h.root() / "r.txt").string()}});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(AbiMisuse, CreateWithAnUndefinedStatusOrWithoutAHookIsSaidAsSuch) {
  EXPECT_THAT(create_error("create_status_42"),
              AllOf(HasSubstr("hook 'abuser' (plugin 'abuser'"),
                    HasSubstr("create() returned the undefined status 42")));
  EXPECT_THAT(create_error("create_without_hook"),
              HasSubstr("create() returned HH_OK without an instance"));
}

TEST(AbiMisuse, RewritingTheHookAfterCreateCannotMakeTheHostCallNull) {
  // The plugin re-runs hh_hook_init in begin, which clears destroy in its own memory.
  EXPECT_THAT(run_abuse("reinit_hook"), HasSubstr("destroyed=1\n"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

TEST(AbiMisuse, AnExceptionEscapingDestroyIsLoggedWithTheInstanceName) {
  PluginHarness h({}, {"throwing_destroy"});
  h.add("thrower", "throwing_destroy");
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  h.finish();  // destroy() runs here
  EXPECT_THAT(h.log(), ::testing::HasSubstr("hook 'thrower' (plugin 'throwing_destroy', " +
                                            (h.plugin_dir() / "throwing_destroy.so").string() +
                                            "): an exception escaped destroy(): boom in destroy"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
