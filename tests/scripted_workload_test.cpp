// The harness's scripted workload on its own: what it serves, where its data ends, the faults it
// plays once or on every attempt, and the state it saves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/scripted_workload.hpp"

namespace {
namespace HOOKHOST_TEST_FILE {

using hookhost::StepResult;
using hookhost::StepStatus;
using hookhost::testing::ScriptedWorkload;
using hookhost::testing::SessionRun;
using hookhost::testing::Value;
using hookhost::testing::detail::Script;
using ::testing::ElementsAre;

TEST(ScriptedWorkload, ServesTheBuiltInNamesAndTheScriptedOnes) {
  Script script;
  script.values["accuracy"] = [](int64_t step) { return Value(0.5 * static_cast<double>(step)); };
  script.feedable.insert("momentum");
  ScriptedWorkload workload(script);
  EXPECT_THAT(workload.fetchable(),
              ElementsAre("accuracy", "bias", "global_step", "learning_rate", "loss", "weights"));
  EXPECT_THAT(workload.feedable(), ElementsAre("learning_rate", "momentum"));
  const StepResult r = workload.run({"global_step", "accuracy"}, {});
  ASSERT_EQ(r.status, StepStatus::ok);
  EXPECT_EQ(r.values.at("global_step").as_double(), 1);
  EXPECT_EQ(r.values.at("accuracy").as_double(), 0.5);
  EXPECT_EQ(workload.global_step(), 1);
}

TEST(ScriptedWorkload, WithoutBuiltInsServesOnlyTheScript) {
  Script script;
  script.builtin_values = false;
  script.values["x"] = [](int64_t) { return Value(1.0f); };
  ScriptedWorkload workload(script);
  EXPECT_THAT(workload.fetchable(), ElementsAre("x"));
  EXPECT_TRUE(workload.feedable().empty());
  EXPECT_TRUE(workload.serves("x"));
  EXPECT_FALSE(workload.serves("loss"));
}

TEST(ScriptedWorkload, AFedValueIsWhatTheFetchReturns) {
  ScriptedWorkload workload(Script{});
  const StepResult r =
      workload.run({"learning_rate"}, {{"learning_rate", hookhost::Tensor::scalar_f32(0.5f)}});
  EXPECT_EQ(r.values.at("learning_rate").as_double(), 0.5);
}

TEST(ScriptedWorkload, DataEndsAtTheScriptedStepWithItsMessage) {
  Script script;
  script.end_of_data_step = 3;
  script.end_of_data_message = "no more batches";
  ScriptedWorkload workload(script);
  EXPECT_EQ(workload.last_step(), 2);
  EXPECT_EQ(workload.run({}, {}).status, StepStatus::ok);
  EXPECT_EQ(workload.run({}, {}).status, StepStatus::ok);
  const StepResult end = workload.run({}, {});
  EXPECT_EQ(end.status, StepStatus::end_of_data);
  EXPECT_EQ(end.message, "no more batches");
}

TEST(ScriptedWorkload, AFaultFailsOneAttemptUnlessItFailsEvery) {
  Script script;
  script.faults[1].push_back({StepStatus::aborted, "lost once", false});
  script.faults[2].push_back({StepStatus::error, "broken", true});
  std::vector<SessionRun> runs;
  ScriptedWorkload workload(script, &runs);
  EXPECT_EQ(workload.run({}, {}).message, "lost once");
  EXPECT_EQ(workload.run({}, {}).status, StepStatus::ok);
  EXPECT_EQ(workload.run({}, {}).message, "broken");
  EXPECT_EQ(workload.run({}, {}).message, "broken");
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].status, StepStatus::aborted);
  EXPECT_EQ(runs[1].status, StepStatus::ok);
  EXPECT_EQ(runs[3].step, 2);
}

TEST(ScriptedWorkload, ItsStateIsItsStep) {
  Script script;
  script.start_step = 7;
  ScriptedWorkload workload(script);
  EXPECT_EQ(workload.save_state(), "7");
  workload.restore_state("3");
  EXPECT_EQ(workload.global_step(), 3);
  EXPECT_THROW(workload.restore_state("three"), std::runtime_error);
}

TEST(ScriptedWorkload, AnEndlessScriptNeverEndsItsDataAndKnowsNoLastStep) {
  Script script;
  script.end_of_data_step = Script::kEndless;
  ScriptedWorkload workload(script);
  EXPECT_EQ(workload.last_step(), std::nullopt);
  workload.set_global_step(1000000);
  EXPECT_EQ(workload.run({}, {}).status, StepStatus::ok);
  EXPECT_EQ(workload.global_step(), 1000001);
}

TEST(ScriptedWorkload, RecordsEveryCreationAndCanRestoreAStepOnCreate) {
  ScriptedWorkload plain(Script{});
  plain.set_global_step(4);
  plain.create(1);
  EXPECT_EQ(plain.global_step(), 4);

  Script script;
  script.end_of_data_step = 40;
  script.step_after_create = 30;
  ScriptedWorkload restored(script);
  restored.create(1);
  EXPECT_EQ(restored.global_step(), 30);
  EXPECT_EQ(restored.run({}, {}).status, StepStatus::ok);
  restored.create(2);
  EXPECT_EQ(restored.global_step(), 30);
  EXPECT_THAT(restored.creations(), ElementsAre(1, 2));
  EXPECT_EQ(restored.creation(), 2);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
