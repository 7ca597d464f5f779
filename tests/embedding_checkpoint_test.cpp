// The checkpoint functions docs/embedding.md offers to embedding programs, reached through the
// installed header alone (included first, so it must stand on its own): a save and a restore in
// the program's format, and the newest usable checkpoint chosen over a corrupt newer one.
#include <hookhost/host/checkpoint.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

Checkpoint at(int64_t step) {
  Checkpoint c;
  c.global_step = step;
  c.workload_state = "weights@" + std::to_string(step);
  c.hook_states["saver"] = SavedHookState{"checkpoint_saver", 1, "last=" + std::to_string(step)};
  return c;
}

TEST(EmbeddingCheckpoints, APublicSaveIsRestoredAndACorruptNewerOneIsSkipped) {
  TempDir dir;
  const std::filesystem::path ckpts = dir.path() / "ckpts";
  write_checkpoint(ckpts, "model.ckpt", at(10), 5);
  const std::filesystem::path newer = write_checkpoint(ckpts, "model.ckpt", at(20), 5);
  EXPECT_EQ(newer.filename(), "model.ckpt-20");
  EXPECT_THAT(list_checkpoints(ckpts),
              ElementsAre(ckpts / "model.ckpt-20", ckpts / "model.ckpt-10"));

  std::string bytes = read_file(newer);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_file(newer, bytes);

  const std::optional<RestoredCheckpoint> restored = restore_latest_checkpoint(ckpts);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->file, ckpts / "model.ckpt-10");
  EXPECT_EQ(restored->checkpoint.global_step, 10);
  EXPECT_EQ(restored->checkpoint.workload_state, "weights@10");
  EXPECT_EQ(restored->checkpoint.hook_states.at("saver").bytes, "last=10");
  ASSERT_THAT(restored->skipped, SizeIs(1));
  EXPECT_THAT(restored->skipped[0], HasSubstr("model.ckpt-20"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
