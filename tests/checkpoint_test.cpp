// Checkpoint files as docs/checkpoint-format.md describes them: the byte layout, the CRC-32C
// trailer, the index file, retention, atomic writes and how restore skips corrupt files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include "services/checkpoint.hpp"
#include "services/event_writer.hpp"
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace hookhost::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// Little-endian fields written byte by byte, independent of the host's own encoder.
void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

struct Section {
  uint8_t kind;
  std::string name;
  std::string data;
  std::string plugin_id = "p";  // kind 3 only
  uint32_t state_version = 1;   // kind 3 only
};

// A checkpoint built by hand from the documented layout; `version` lets a test make other formats.
std::string encode_by_hand(int64_t step, const std::vector<Section>& sections,
                           uint32_t version = 2) {
  std::string out("HHCKPT\r\n", 8);
  put_le(out, version, 4);
  put_le(out, static_cast<uint64_t>(step), 8);
  put_le(out, sections.size(), 4);
  for (const auto& s : sections) {
    put_le(out, s.kind, 1);
    put_le(out, s.name.size(), 4);
    out += s.name;
    if (s.kind == 3) {
      put_le(out, s.plugin_id.size(), 4);
      out += s.plugin_id;
      put_le(out, s.state_version, 4);
    }
    put_le(out, s.data.size(), 8);
    out += s.data;
  }
  put_le(out, crc32c(out), 4);
  return out;
}

Checkpoint sample(int64_t step) {
  Checkpoint c;
  c.global_step = step;
  c.workload_state = "workload@" + std::to_string(step);
  c.hook_states = {{"saver", {"checkpoint_saver", 1, "last=" + std::to_string(step)}},
                   {"stopper", {"stop_at_step", 2, "last_step=100\n"}}};
  return c;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

void flip_byte(const fs::path& file, std::size_t offset) {
  std::string bytes = read_file(file);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x5a);
  write_file(file, bytes);
}

std::string read_error(const fs::path& file) {
  try {
    read_checkpoint(file);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, RoundTripKeepsStepWorkloadStateAndEveryHookState) {
  TempDir dir;
  Checkpoint written;
  written.global_step = 1234567890123;
  written.workload_state = std::string("binary\0state\n\xff", 14);
  written.hook_states = {{"a", {"pa", 1, ""}},
                         {"b", {"pb", 7, "after_runs=3\n"}},
                         {"c", {"", 1, std::string(70000, 'x')}}};
  const fs::path file = write_checkpoint(dir.path(), "model.ckpt", written, 0);
  EXPECT_EQ(file, dir / "model.ckpt-1234567890123");
  const Checkpoint read = read_checkpoint(file);
  EXPECT_EQ(read.global_step, written.global_step);
  EXPECT_EQ(read.workload_state, written.workload_state);
  EXPECT_EQ(read.hook_states, written.hook_states);
}

TEST(Checkpoint, FileBytesMatchTheDocumentedLayout) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir.path(), "model.ckpt", sample(7), 0);
  const std::string expected =
      encode_by_hand(7, {{1, "", "workload@7"},
                         {3, "saver", "last=7", "checkpoint_saver", 1},
                         {3, "stopper", "last_step=100\n", "stop_at_step", 2}});
  EXPECT_EQ(read_file(file), expected);
  // 8 magic + 4 version + 8 step + 4 count + 3 sections + 4 CRC; a hook section adds 4 + id + 4.
  EXPECT_EQ(expected.size(),
            8u + 4 + 8 + 4 + (13 + 10) + (13 + 5 + 6 + 8 + 16) + (13 + 7 + 14 + 8 + 12) + 4);
}

TEST(Checkpoint, DocumentedExampleIsByteExact) {
  // The example in docs/checkpoint-format.md.
  const std::string expected_crc_hex = "b9a26460";  // CRC-32C 0x6064a2b9, as the doc states
  TempDir dir;
  Checkpoint c;
  c.global_step = 7;
  c.workload_state = "7";
  c.hook_states = {{"stopper", {"stop_at_step", 1, "last_step=12\n"}}};
  const std::string bytes = read_file(write_checkpoint(dir.path(), "model.ckpt", c, 5));
  std::string hex;
  for (unsigned char b : bytes) {
    static const char digits[] = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  EXPECT_EQ(hex,
            "4848434b50540d0a"            // magic "HHCKPT\r\n"
            "02000000"                    // format version 2
            "0700000000000000"            // global step 7
            "02000000"                    // 2 sections
            "01"                          // workload section
            "00000000"                    //   name length 0
            "0100000000000000"            //   data length 1
            "37"                          //   "7"
            "03"                          // hook state section
            "07000000"                    //   name length 7
            "73746f70706572"              //   "stopper"
            "0c000000"                    //   plugin id length 12
            "73746f705f61745f73746570"    //   "stop_at_step"
            "01000000"                    //   state version 1
            "0d00000000000000"            //   data length 13
            "6c6173745f737465703d31320a"  //   "last_step=12\n"
                + expected_crc_hex);
}

TEST(Checkpoint, ChecksumIsCrc32cOfEverythingBeforeIt) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  TempDir dir;
  const std::string bytes = read_file(write_checkpoint(dir.path(), "m", sample(1), 0));
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i)
    stored |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[bytes.size() - 4 + i])) << (8 * i);
  EXPECT_EQ(stored, crc32c(std::string_view(bytes).substr(0, bytes.size() - 4)));
}

TEST(Checkpoint, HandBuiltFileIsReadBack) {
  TempDir dir;
  write_file(dir / "hand-3",
             encode_by_hand(3, {{3, "z", "zz", "pz", 4}, {1, "", "w"}, {3, "a", "", "pa", 1}}));
  const Checkpoint c = read_checkpoint(dir / "hand-3");
  EXPECT_EQ(c.global_step, 3);
  EXPECT_EQ(c.workload_state, "w");
  EXPECT_EQ(c.hook_states,
            (std::map<std::string, SavedHookState>{{"a", {"pa", 1, ""}}, {"z", {"pz", 4, "zz"}}}));
}

TEST(Checkpoint, Format1FileIsReadWithItsHookStatesUntagged) {
  // Checkpoints written before ABI 1.0 carry no plugin id: any plugin may take their states.
  TempDir dir;
  write_file(dir / "old-3", encode_by_hand(3, {{1, "", "w"}, {2, "a", "x=1"}}, 1));
  const Checkpoint c = read_checkpoint(dir / "old-3");
  EXPECT_EQ(c.hook_states, (std::map<std::string, SavedHookState>{{"a", {"", 1, "x=1"}}}));
}

TEST(Checkpoint, SectionKindOfTheOtherFormatIsRefused) {
  TempDir dir;
  write_file(dir / "mixed-3", encode_by_hand(3, {{1, "", "w"}, {2, "a", "x=1"}}, 2));
  EXPECT_THROW(read_checkpoint(dir / "mixed-3"), std::runtime_error);
}

TEST(Checkpoint, IndexNamesTheNewestAndListsKeptOnesOldestFirst) {
  TempDir dir;
  for (int64_t step : {1, 2, 3}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 0);
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-2\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-3\"\n");
}

TEST(Checkpoint, RetentionKeepsTheNewestByStepNumber) {
  TempDir dir;
  // 9 < 10 < 100 as numbers, but "model.ckpt-9" sorts last as text.
  for (int64_t step : {9, 10, 99, 100}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 2);
  EXPECT_EQ(names_in(dir.path()),
            (std::set<std::string>{"checkpoint", "model.ckpt-99", "model.ckpt-100"}));
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-100\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-99\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-100\"\n");
  EXPECT_THAT(list_checkpoints(dir.path()),
              ElementsAre(dir / "model.ckpt-100", dir / "model.ckpt-99"));
}

TEST(Checkpoint, MaxToKeepZeroKeepsEveryCheckpoint) {
  TempDir dir;
  for (int64_t step = 0; step < 12; ++step)
    write_checkpoint(dir.path(), "model.ckpt", sample(step), 0);
  EXPECT_THAT(list_checkpoints(dir.path()), SizeIs(12));
}

TEST(Checkpoint, NeverDeletesTheCheckpointJustWritten) {
  TempDir dir;
  for (int64_t step = 1; step <= 5; ++step)
    write_checkpoint(dir.path(), "model.ckpt", sample(step), 1);
  EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"checkpoint", "model.ckpt-5"}));
  EXPECT_EQ(read_checkpoint(dir / "model.ckpt-5").workload_state, "workload@5");
  // After a rollback the new checkpoint has a lower step than the kept one; it still survives.
  const fs::path older = write_checkpoint(dir.path(), "model.ckpt", sample(3), 1);
  EXPECT_TRUE(fs::exists(older));
  EXPECT_TRUE(fs::exists(dir / "model.ckpt-5"));
}

TEST(Checkpoint, OtherFilesInTheFolderAreNeitherCountedNorDeleted) {
  TempDir dir;
  // An event file whose hostname ends in -<digits> (a Kubernetes pod) and another basename.
  write_file(dir / "events.out.tfevents.1500000000.trainer-0", "events");
  write_file(dir / "other.ckpt-50", "x");
  for (int64_t step : {1, 2, 3}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 2);
  EXPECT_TRUE(fs::exists(dir / "events.out.tfevents.1500000000.trainer-0"));
  EXPECT_TRUE(fs::exists(dir / "other.ckpt-50"));
  EXPECT_FALSE(fs::exists(dir / "model.ckpt-1"));
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-2\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-3\"\n");
  auto restored = restore_latest_checkpoint(dir.path(), "model.ckpt");
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->checkpoint.global_step, 3);
  EXPECT_THAT(restored->skipped, IsEmpty());
}

TEST(Checkpoint, IndexListsACheckpointWrittenAfterARollback) {
  TempDir dir;
  for (int64_t step : {6, 7}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 2);
  write_checkpoint(dir.path(), "model.ckpt", sample(3), 2);
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-3\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-6\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-7\"\n");
}

TEST(Checkpoint, SavingTheSameStepAgainReplacesTheFile) {
  TempDir dir;
  write_checkpoint(dir.path(), "model.ckpt", sample(4), 0);
  Checkpoint again = sample(4);
  again.workload_state = "second";
  write_checkpoint(dir.path(), "model.ckpt", again, 0);
  EXPECT_EQ(read_checkpoint(dir / "model.ckpt-4").workload_state, "second");
  EXPECT_THAT(list_checkpoints(dir.path()), SizeIs(1));
}

TEST(Checkpoint, WritesLeaveNoTemporaryFiles) {
  TempDir dir;
  for (int64_t step = 0; step < 6; ++step)
    write_checkpoint(dir.path(), "model.ckpt", sample(step), 3);
  EXPECT_EQ(names_in(dir.path()),
            (std::set<std::string>{"checkpoint", "model.ckpt-3", "model.ckpt-4", "model.ckpt-5"}));
}

TEST(Checkpoint, CreatesMissingFolders) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir / "a/b/c", "model.ckpt", sample(2), 0);
  EXPECT_EQ(file, dir / "a/b/c/model.ckpt-2");
  EXPECT_TRUE(fs::exists(dir / "a/b/c/checkpoint"));
}

TEST(Checkpoint, ListingIgnoresTemporaryAndUnrelatedFiles) {
  TempDir dir;
  write_checkpoint(dir.path(), "model.ckpt", sample(2), 0);
  write_file(dir / ".model.ckpt-9.tmp-123", "partial");
  write_file(dir / "notes.txt", "hello");
  fs::create_directory(dir / "model.ckpt-50");  // a folder, not a checkpoint file
  EXPECT_THAT(list_checkpoints(dir.path()), ElementsAre(dir / "model.ckpt-2"));
}

TEST(Checkpoint, CorruptedByteFailsWithChecksumMismatch) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir.path(), "model.ckpt", sample(5), 0);
  flip_byte(file, 40);  // inside the workload state
  EXPECT_THAT(read_error(file), AllOf(HasSubstr(file.string()), HasSubstr("checksum mismatch")));
}

TEST(Checkpoint, CorruptedChecksumFailsWithChecksumMismatch) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir.path(), "model.ckpt", sample(5), 0);
  flip_byte(file, fs::file_size(file) - 1);
  EXPECT_THAT(read_error(file), HasSubstr("checksum mismatch"));
}

TEST(Checkpoint, TruncatedFileFailsToRead) {
  TempDir dir;
  const fs::path file = write_checkpoint(dir.path(), "model.ckpt", sample(5), 0);
  const std::string bytes = read_file(file);
  write_file(file, bytes.substr(0, bytes.size() / 2));
  EXPECT_THAT(read_error(file),
              AllOf(HasSubstr(file.string()), HasSubstr("truncated or corrupt checkpoint")));
  write_file(file, bytes.substr(0, 6));
  EXPECT_THAT(read_error(file), HasSubstr("too short for a checkpoint"));
  write_file(file, "");
  EXPECT_THAT(read_error(file), HasSubstr("too short for a checkpoint"));
}

TEST(Checkpoint, AStrayFileIsRejectedWithoutReadingItWhole) {
  TempDir dir;
  // 64 MiB that do not start with the magic: refused after its first 8 bytes.
  {
    std::ofstream out(dir / "model.ckpt-9", std::ios::binary);
    out << "PK\x03\x04 not a checkpoint";
    out.seekp((64 << 20) - 1);
    out.put('\0');
  }
  EXPECT_THAT(read_error(dir / "model.ckpt-9"), HasSubstr("not a hookhost checkpoint (bad magic)"));
  // A header announcing a 1 TiB section in a small file: refused before anything is allocated.
  std::string body("HHCKPT\r\n", 8);
  put_le(body, 2, 4);
  put_le(body, 9, 8);
  put_le(body, 1, 4);
  put_le(body, 1, 1);
  put_le(body, 0, 4);
  put_le(body, uint64_t{1} << 40, 8);
  body += "w";
  put_le(body, crc32c(body), 4);
  write_file(dir / "model.ckpt-9", body);
  EXPECT_THAT(read_error(dir / "model.ckpt-9"),
              AllOf(HasSubstr("a section needs 1099511627776 bytes"), HasSubstr("1 are left")));
}

TEST(Checkpoint, RestoreSkipsACheckpointWhoseNameAndHeaderDisagree) {
  TempDir dir;
  write_checkpoint(dir.path(), "model.ckpt", sample(4), 0);
  write_checkpoint(dir.path(), "model.ckpt", sample(6), 0);
  fs::rename(dir / "model.ckpt-6", dir / "model.ckpt-7");  // a step-6 checkpoint named 7
  const auto restored = restore_latest_checkpoint(dir.path());
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->file, dir / "model.ckpt-4");
  ASSERT_THAT(restored->skipped, SizeIs(1));
  EXPECT_THAT(restored->skipped[0], AllOf(HasSubstr("model.ckpt-7"),
                                          HasSubstr("its name says global step 7 but its header "
                                                    "says 6")));
}

TEST(Checkpoint, RestoreSkipsACheckpointTheValidatorRefuses) {
  TempDir dir;
  for (int64_t step : {2, 5}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 0);
  std::vector<std::string> seen;
  const auto restored = restore_latest_checkpoint(
      dir.path(), "model.ckpt", [&](const fs::path& file, const Checkpoint& c) {
        seen.push_back(file.filename().string());
        if (c.global_step == 5) throw std::runtime_error(file.string() + ": workload disagrees");
      });
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->file, dir / "model.ckpt-2");
  EXPECT_THAT(seen, ElementsAre("model.ckpt-5", "model.ckpt-2"));
  EXPECT_THAT(restored->skipped, ElementsAre(HasSubstr("workload disagrees")));
}

TEST(Checkpoint, TidyingRemovesInterruptedSavesAndRepairsTheIndex) {
  TempDir dir;
  for (int64_t step : {1, 2, 3}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 0);
  write_file(dir / ".model.ckpt-4.tmp-12345", "half a checkpoint");
  write_file(dir / ".checkpoint.tmp-12345", "half an index");
  write_file(dir / ".unrelated.tmp-1", "not ours");
  fs::remove(dir / "model.ckpt-3");  // the index still names it
  const std::vector<std::string> done = tidy_checkpoint_folder(dir.path());
  EXPECT_THAT(done, ::testing::UnorderedElementsAre(
                        HasSubstr(".model.ckpt-4.tmp-12345, left by a save that was interrupted"),
                        HasSubstr(".checkpoint.tmp-12345, left by a save that was interrupted"),
                        HasSubstr("it named checkpoint files that do not exist")));
  EXPECT_FALSE(fs::exists(dir / ".model.ckpt-4.tmp-12345"));
  EXPECT_FALSE(fs::exists(dir / ".checkpoint.tmp-12345"));
  EXPECT_TRUE(fs::exists(dir / ".unrelated.tmp-1"));
  EXPECT_EQ(read_file(dir / "checkpoint"),
            "model_checkpoint_path: \"model.ckpt-2\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-2\"\n");
  EXPECT_THAT(tidy_checkpoint_folder(dir.path()), IsEmpty());  // nothing left to repair
}

TEST(Checkpoint, SectionRunningPastTheEndIsReportedAsTruncated) {
  TempDir dir;
  // A valid checksum over a body that announces two sections but holds one.
  std::string body("HHCKPT\r\n", 8);
  put_le(body, 1, 4);
  put_le(body, 8, 8);
  put_le(body, 2, 4);
  put_le(body, 1, 1);
  put_le(body, 0, 4);
  put_le(body, 1, 8);
  body += "w";
  put_le(body, crc32c(body), 4);
  write_file(dir / "m-8", body);
  EXPECT_THAT(read_error(dir / "m-8"), HasSubstr("truncated or corrupt checkpoint"));
}

TEST(Checkpoint, UnknownFormatVersionAndSectionKindAreRejected) {
  TempDir dir;
  write_file(dir / "m-1", encode_by_hand(1, {{1, "", "w"}}, 3));
  EXPECT_THAT(read_error(dir / "m-1"), HasSubstr("checkpoint format 3 is not supported"));
  write_file(dir / "m-2", encode_by_hand(2, {{1, "", "w"}, {9, "x", "y"}}));
  EXPECT_THAT(read_error(dir / "m-2"), HasSubstr("unknown section kind 9"));
  std::string trailing = encode_by_hand(3, {{1, "", "w"}});
  trailing.resize(trailing.size() - 4);
  trailing += "junk";
  put_le(trailing, crc32c(trailing), 4);
  write_file(dir / "m-3", trailing);
  EXPECT_THAT(read_error(dir / "m-3"), HasSubstr("trailing bytes"));
}

TEST(Checkpoint, RestoreSkipsACorruptNewestAndReturnsThePreviousValidOne) {
  TempDir dir;
  for (int64_t step : {1, 2, 3}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 0);
  flip_byte(dir / "model.ckpt-3", fs::file_size(dir / "model.ckpt-3") - 8);  // in a hook state
  const auto restored = restore_latest_checkpoint(dir.path());
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->file, dir / "model.ckpt-2");
  EXPECT_EQ(restored->checkpoint.global_step, 2);
  EXPECT_EQ(restored->checkpoint.workload_state, "workload@2");
  EXPECT_EQ(restored->checkpoint.hook_states.at("saver").bytes, "last=2");
  ASSERT_THAT(restored->skipped, SizeIs(1));
  EXPECT_THAT(restored->skipped[0],
              AllOf(HasSubstr("model.ckpt-3"), HasSubstr("checksum mismatch")));
}

TEST(Checkpoint, RestoreReturnsTheNewestWhenAllAreValid) {
  TempDir dir;
  for (int64_t step : {4, 12, 8}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 0);
  const auto restored = restore_latest_checkpoint(dir.path());
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->file, dir / "model.ckpt-12");
  EXPECT_THAT(restored->skipped, IsEmpty());
}

TEST(Checkpoint, RestoreReportsWhenEveryCheckpointIsCorrupt) {
  TempDir dir;
  for (int64_t step : {1, 2}) write_checkpoint(dir.path(), "model.ckpt", sample(step), 0);
  flip_byte(dir / "model.ckpt-1", 20);
  write_file(dir / "model.ckpt-2", "");
  const auto restored = restore_latest_checkpoint(dir.path());
  ASSERT_TRUE(restored.has_value());
  EXPECT_TRUE(restored->file.empty());
  EXPECT_THAT(restored->skipped, ElementsAre(HasSubstr("model.ckpt-2"), HasSubstr("model.ckpt-1")));
}

TEST(Checkpoint, RestoreFindsNothingInAnEmptyOrMissingFolder) {
  TempDir dir;
  EXPECT_FALSE(restore_latest_checkpoint(dir.path()).has_value());
  EXPECT_FALSE(restore_latest_checkpoint(dir / "missing").has_value());
}

}  // namespace
}  // namespace hookhost::testing
