// <hookhost/testing.hpp> teaches test frameworks the names of the enums an author compares, so a
// failed EXPECT_EQ(run.outcome, Outcome::stopped) prints "completed", not the enum's bytes.
#include <gtest/gtest.h>

#include <hookhost/testing.hpp>
#include <sstream>
#include <string>

namespace {
namespace HOOKHOST_TEST_FILE {

using hookhost::Callback;
using hookhost::CrashPolicy;
using hookhost::FailurePolicy;
using hookhost::Isolation;
using hookhost::Outcome;
using hookhost::StepStatus;
using ::testing::PrintToString;

TEST(TestingPrinters, OutcomePrintsItsName) {
  EXPECT_EQ(PrintToString(Outcome::completed), "completed");
  EXPECT_EQ(PrintToString(Outcome::stopped), "stopped");
  EXPECT_EQ(PrintToString(Outcome::failed), "failed");
}

TEST(TestingPrinters, PoliciesAndIsolationPrintTheirConfigWords) {
  EXPECT_EQ(PrintToString(FailurePolicy::disable), "disable");
  EXPECT_EQ(PrintToString(FailurePolicy::fail), "fail");
  EXPECT_EQ(PrintToString(CrashPolicy::restart), "restart");
  EXPECT_EQ(PrintToString(Isolation::process), "process");
  EXPECT_EQ(PrintToString(Isolation::in_process), "in_process");
}

TEST(TestingPrinters, CallbacksAndStepStatusesPrintTheirNames) {
  EXPECT_EQ(PrintToString(Callback::after_run), "after_run");
  EXPECT_EQ(PrintToString(Callback::after_create_session), "after_create_session");
  EXPECT_EQ(PrintToString(StepStatus::end_of_data), "end_of_data");
  EXPECT_EQ(PrintToString(StepStatus::cancelled), "cancelled");
}

TEST(TestingPrinters, StreamingOutsideGoogleTestWritesTheSameName) {
  std::ostringstream os;
  os << Outcome::stopped << ' ' << Callback::begin;
  EXPECT_EQ(os.str(), "stopped begin");
}

TEST(TestingPrinters, AFailedComparisonNamesBothOutcomes) {
  // What an author reads when EXPECT_EQ(run.outcome, Outcome::stopped) fails.
  const ::testing::AssertionResult result = ::testing::internal::EqHelper::Compare(
      "run.outcome", "Outcome::stopped", Outcome::completed, Outcome::stopped);
  ASSERT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("Which is: completed"), std::string::npos)
      << result.message();
  EXPECT_EQ(std::string(result.message()).find("4-byte object"), std::string::npos)
      << result.message();
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
