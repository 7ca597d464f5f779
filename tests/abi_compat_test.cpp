// The compatibility guard: plugins built against the frozen ABI 1.0 headers (tests/abi/v1.0/) run
// through full lifecycles in today's host, state saved and restored included.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plugin_harness.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {

using ::testing::ElementsAre;

class FrozenAbi : public ::testing::TestWithParam<const char*> {};

TEST_P(FrozenAbi, RunsTheFullLifecycleAndResumesItsState) {
  const std::string id = GetParam();
  TempDir dir;
  const fs::path first = dir / "first.txt", second = dir / "second.txt";
  std::map<std::string, SavedHookState> saved;
  {
    PluginHarness h({}, {id});
    h.session.end_at = 2;
    h.add("old", id, {{"trace", first.string()}});
    EXPECT_EQ(h.run().outcome, Outcome::completed);
    saved = h.runtime().saved_hook_states();
  }
  EXPECT_THAT(
      lines_of(read_file(first)),
      ElementsAre("begin restored=0", "after_create_session creation=1", "before_run",
                  "after_run gs=0 values=1 loss=10", "before_run", "after_run gs=1 values=1 loss=5",
                  "before_run",  // the step that found the end of the data
                  "end outcome=completed", "destroy"));
  ASSERT_EQ(saved.count("old"), 1u);
  EXPECT_EQ(saved.at("old"), (SavedHookState{id, 1, "2"}));

  PluginHarness h({}, {id});
  h.session.end_at = 0;
  h.add("old", id, {{"trace", second.string()}});
  h.runtime().restore_hook_states(saved);
  h.run();
  EXPECT_EQ(lines_of(read_file(second)).front(), "begin restored=2");
}

INSTANTIATE_TEST_SUITE_P(CAndCxx, FrozenAbi, ::testing::Values("frozen_v1_0_c", "frozen_v1_0_cxx"));

}  // namespace
}  // namespace hookhost::testing
