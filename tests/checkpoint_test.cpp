// Checkpoint files as docs/checkpoint-format.md describes them: the byte layout, the CRC-32C
// trailer, the index file, retention, atomic writes and how restore skips corrupt files; and how
// the runtime writes them in the background: one save in flight, a new one waiting for it, the
// snapshot taken at the request, close() waiting for the disk.
#include <dlfcn.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <semaphore>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include "storage/checkpoint.hpp"
#include "storage/checkpoint_writer.hpp"
#include "storage/event_writer.hpp"

#include "plugin_harness.hpp"
#include "plugins/trust.hpp"
#include "test_support.hpp"

// Every fsync of this test program is recorded (by the path of its descriptor) while `recording`
// holds: the checkpoint code is linked in statically, so this definition is the one it calls.
namespace fsync_record {
std::atomic<bool> recording{false};
std::mutex mutex;
std::vector<std::string> paths;
}  // namespace fsync_record

extern "C" int fsync(int fd) {
  using Fsync = int (*)(int);
  static const Fsync real = reinterpret_cast<Fsync>(::dlsym(RTLD_NEXT, "fsync"));
  if (fsync_record::recording) {
    char target[4096];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target);
    std::lock_guard lock(fsync_record::mutex);
    fsync_record::paths.emplace_back(target, n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  return real(fd);
}

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;

// Little-endian fields written byte by byte, independent of the host's own encoder.
void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

struct Section {
  uint8_t kind;
  std::string name;
  std::string data;
  std::string plugin_id = "p";  // kinds 3 and 4
  uint32_t state_version = 1;   // kinds 3 and 4
  std::string plugin_build{};   // kind 4 only
};

// A checkpoint built by hand from the documented layout; `version` lets a test make other formats.
std::string encode_by_hand(int64_t step, const std::vector<Section>& sections,
                           uint32_t version = 3) {
  std::string out("HHCKPT\r\n", 8);
  put_le(out, version, 4);
  put_le(out, static_cast<uint64_t>(step), 8);
  put_le(out, sections.size(), 4);
  for (const auto& s : sections) {
    put_le(out, s.kind, 1);
    put_le(out, s.name.size(), 4);
    out += s.name;
    if (s.kind == 3 || s.kind == 4) {
      put_le(out, s.plugin_id.size(), 4);
      out += s.plugin_id;
      put_le(out, s.state_version, 4);
    }
    if (s.kind == 4) {
      put_le(out, s.plugin_build.size(), 4);
      out += s.plugin_build;
    }
    put_le(out, s.data.size(), 8);
    out += s.data;
  }
  put_le(out, crc32c(out), 4);
  return out;
}

// A plugin build: the SHA-256 of a plugin file's bytes (this one is the SHA-256 of "test").
const std::string kBuildA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

Checkpoint sample(int64_t step) {
  Checkpoint c;
  c.global_step = step;
  c.workload_state = "workload@" + std::to_string(step);
  c.hook_states = {{"saver", {"checkpoint_saver", 1, "last=" + std::to_string(step), kBuildA}},
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
                         {"b", {"pb", 7, "after_runs=3\n", kBuildA}},
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
                         {4, "saver", "last=7", "checkpoint_saver", 1, kBuildA},
                         {4, "stopper", "last_step=100\n", "stop_at_step", 2}});
  EXPECT_EQ(read_file(file), expected);
  // 8 magic + 4 version + 8 step + 4 count + 3 sections + 4 CRC; a hook section adds
  // 4 + id + 4 + 4 + build.
  EXPECT_EQ(expected.size(), 8u + 4 + 8 + 4 + (13 + 10) + (13 + 5 + 6 + 8 + 16 + 4 + 64) +
                                 (13 + 7 + 14 + 8 + 12 + 4) + 4);
}

TEST(Checkpoint, DocumentedExampleIsByteExact) {
  // The example in docs/checkpoint-format.md.
  const std::string expected_crc_hex = "1ad12cac";  // CRC-32C 0xac2cd11a, as the doc states
  TempDir dir;
  Checkpoint c;
  c.global_step = 7;
  c.workload_state = "7";
  c.hook_states = {{"stopper", {"stop_at_step", 1, "last_step=12\n", kBuildA}}};
  const std::string bytes = read_file(write_checkpoint(dir.path(), "model.ckpt", c, 5));
  std::string hex;
  for (unsigned char b : bytes) {
    static const char digits[] = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  EXPECT_EQ(hex,
            "4848434b50540d0a"                  // magic "HHCKPT\r\n"
            "03000000"                          // format version 3
            "0700000000000000"                  // global step 7
            "02000000"                          // 2 sections
            "01"                                // workload section
            "00000000"                          //   name length 0
            "0100000000000000"                  //   data length 1
            "37"                                //   "7"
            "04"                                // hook state section
            "07000000"                          //   name length 7
            "73746f70706572"                    //   "stopper"
            "0c000000"                          //   plugin id length 12
            "73746f705f61745f73746570"          //   "stop_at_step"
            "01000000"                          //   state version 1
            "40000000"                          //   plugin build length 64
            "39663836643038313838346337643635"  // "9f86d081884c7d65"
            "39613266656161306335356164303135"  // "9a2feaa0c55ad015"
            "61336266346631623262306238323263"  // "a3bf4f1b2b0b822c"
            "64313564366331356230663030613038"  // "d15d6c15b0f00a08"
            "0d00000000000000"                  //   data length 13
            "6c6173745f737465703d31320a"        //   "last_step=12\n"
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
  write_file(
      dir / "hand-3",
      encode_by_hand(3, {{4, "z", "zz", "pz", 4, kBuildA}, {1, "", "w"}, {4, "a", "", "pa", 1}}));
  const Checkpoint c = read_checkpoint(dir / "hand-3");
  EXPECT_EQ(c.global_step, 3);
  EXPECT_EQ(c.workload_state, "w");
  EXPECT_EQ(c.hook_states, (std::map<std::string, SavedHookState>{
                               {"a", {"pa", 1, ""}}, {"z", {"pz", 4, "zz", kBuildA}}}));
}

TEST(Checkpoint, Format2FileIsReadWithItsHookStatesOfUnknownBuild) {
  // Checkpoints written before the plugin's build was recorded: any build may take their states.
  TempDir dir;
  write_file(dir / "two-3", encode_by_hand(3, {{1, "", "w"}, {3, "a", "x=1", "pa", 2}}, 2));
  const Checkpoint c = read_checkpoint(dir / "two-3");
  EXPECT_EQ(c.hook_states, (std::map<std::string, SavedHookState>{{"a", {"pa", 2, "x=1", ""}}}));
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
  // Format 3's hook sections are kind 4: a kind 3 section (format 2's) in it is refused, and
  // format 3's kind in a format 2 file.
  write_file(dir / "mixed-4", encode_by_hand(4, {{1, "", "w"}, {3, "a", "x=1"}}, 3));
  EXPECT_THAT(read_error(dir / "mixed-4"), HasSubstr("unknown section kind 3"));
  write_file(dir / "mixed-5", encode_by_hand(5, {{1, "", "w"}, {4, "a", "x=1"}}, 2));
  EXPECT_THAT(read_error(dir / "mixed-5"), HasSubstr("unknown section kind 4"));
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
              AllOf(HasSubstr((dir / "model.ckpt-9").string()), HasSubstr("at byte 37"),
                    HasSubstr("a section needs 1099511627776 bytes"), HasSubstr("1 are left")));
  // 2^63, and 2^64 - 1 (which would wrap a sum): refused the same way.
  for (const uint64_t length : {uint64_t{1} << 63, ~uint64_t{0}}) {
    body.resize(body.size() - 1 - 4 - 8);
    put_le(body, length, 8);
    body += "w";
    put_le(body, crc32c(body), 4);
    write_file(dir / "model.ckpt-9", body);
    EXPECT_THAT(read_error(dir / "model.ckpt-9"),
                AllOf(HasSubstr("at byte 37"),
                      HasSubstr("a section needs " + std::to_string(length) + " bytes")));
  }
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
  write_file(dir / "m-1", encode_by_hand(1, {{1, "", "w"}}, 4));
  EXPECT_THAT(read_error(dir / "m-1"), HasSubstr("checkpoint format 4 is not supported (this "
                                                 "hookhost reads formats 1 to 3)"));
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

// ---- the background writer ------------------------------------------------------------------

Checkpoint at_step(int64_t step) {
  Checkpoint c;
  c.global_step = step;
  c.workload_state = std::to_string(step);
  return c;
}

TEST(CheckpointWriter, SubmitReturnsWhileTheSaveIsWrittenAndSavesAreWrittenOneAtATimeInOrder) {
  std::binary_semaphore first_started{0}, release_first{0};
  std::mutex mutex;
  std::vector<int64_t> written;
  int writing = 0, most_writing = 0;
  CheckpointWriter writer([&](const CheckpointSave& save) {
    {
      std::lock_guard lock(mutex);
      most_writing = std::max(most_writing, ++writing);
    }
    if (save.checkpoint.global_step == 1) {
      first_started.release();
      release_first.acquire();
    }
    std::lock_guard lock(mutex);
    --writing;
    written.push_back(save.checkpoint.global_step);
  });
  EXPECT_FALSE(writer.busy());
  writer.submit({at_step(1), "first"});  // returns although its write is held up
  first_started.acquire();
  EXPECT_TRUE(writer.busy());
  std::atomic<bool> second_submitted{false};
  std::thread training([&] {
    writer.submit({at_step(2), "second"});  // waits for the first to be written
    second_submitted = true;
    writer.submit({at_step(3), "third"});
  });
  EXPECT_FALSE(second_submitted);
  release_first.release();
  training.join();
  writer.wait_idle();
  EXPECT_FALSE(writer.busy());
  std::lock_guard lock(mutex);
  EXPECT_THAT(written, ElementsAre(1, 2, 3));  // none skipped, none reordered
  EXPECT_EQ(most_writing, 1);
}

TEST(CheckpointWriter, SubmitReplacingNeverWaitsAndTheNewestWaitingSaveWins) {
  std::binary_semaphore first_started{0}, release_first{0};
  std::mutex mutex;
  std::vector<int64_t> written;
  CheckpointWriter writer([&](const CheckpointSave& save) {
    if (save.checkpoint.global_step == 1) {
      first_started.release();
      release_first.acquire();
    }
    std::lock_guard lock(mutex);
    written.push_back(save.checkpoint.global_step);
  });
  EXPECT_FALSE(writer.submit_replacing({at_step(1), "first"}).has_value());
  first_started.acquire();
  EXPECT_FALSE(writer.submit_replacing({at_step(2), "second"}).has_value());  // waits behind
  const auto replaced = writer.submit_replacing({at_step(3), "third"});
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->global_step, 2);
  EXPECT_EQ(replaced->reasons, "second");
  const auto again = writer.submit_replacing({at_step(4), "fourth"});
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->global_step, 3);
  EXPECT_TRUE(writer.busy());
  release_first.release();
  writer.wait_idle();  // waits for the waiting save too
  EXPECT_FALSE(writer.busy());
  std::lock_guard lock(mutex);
  EXPECT_THAT(written, ElementsAre(1, 4));
}

// A writer destroyed with a save waiting writes it before its thread ends.
TEST(CheckpointWriter, DestroyingTheWriterWritesTheWaitingSaveToo) {
  std::binary_semaphore first_started{0}, release_first{0};
  std::vector<int64_t> written;
  {
    CheckpointWriter writer([&](const CheckpointSave& save) {
      if (save.checkpoint.global_step == 1) {
        first_started.release();
        release_first.acquire();
      }
      written.push_back(save.checkpoint.global_step);
    });
    writer.submit_replacing({at_step(1), "first"});
    first_started.acquire();
    writer.submit_replacing({at_step(2), "second"});
    release_first.release();
  }
  EXPECT_THAT(written, ElementsAre(1, 2));
}

TEST(CheckpointWriter, DestroyingTheWriterFinishesTheSaveInFlight) {
  std::vector<int64_t> written;
  {
    CheckpointWriter writer(
        [&](const CheckpointSave& save) { written.push_back(save.checkpoint.global_step); });
    writer.submit({at_step(7), "last"});
  }
  EXPECT_THAT(written, ElementsAre(7));
}

// The runtime's log, which a test can hold up: the first message containing `hold_on` blocks the
// thread logging it until release(). It takes no lock while it holds a thread, so others go on
// logging, and wait_for() lets the test wait for a message (or for another thread to say it is
// done) instead of for time.
class HoldingSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit HoldingSink(std::string hold_on = "") : hold_on_(std::move(hold_on)) {}

  std::binary_semaphore held{0};  // released once a thread is held
  void release() { release_.release(); }

  // Returns once a message containing `what` was logged, or `done` holds (checked again whenever
  // something is logged or wake() is called). True when the message came.
  bool wait_for(const std::string& what, const std::atomic<bool>& done) {
    std::unique_lock lock(mutex_);
    logged_.wait(lock, [&] { return text_.find(what) != std::string::npos || done; });
    return text_.find(what) != std::string::npos;
  }
  void wake() {
    { std::lock_guard lock(mutex_); }  // a waiter is either before its check or inside wait()
    logged_.notify_all();
  }
  std::string text() const {
    std::lock_guard lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string line(msg.payload.data(), msg.payload.size());
    bool hold = false;
    {
      std::lock_guard lock(mutex_);
      text_ += line + "\n";
      hold = !hold_on_.empty() && !holding_done_ && line.find(hold_on_) != std::string::npos;
      holding_done_ = holding_done_ || hold;
    }
    logged_.notify_all();
    if (hold) {
      held.release();
      release_.acquire();
    }
  }
  void flush_() override {}

 private:
  const std::string hold_on_;
  mutable std::mutex mutex_;
  std::condition_variable logged_;
  std::string text_;
  bool holding_done_ = false;
  std::binary_semaphore release_{0};
};

// A runtime over the scripted workload with one recorder hook (its state counts its after_runs),
// logging into a HoldingSink.
struct BackgroundSaves {
  explicit BackgroundSaves(const std::string& hold_on = "", bool checkpoint_wait = false)
      : sink(std::make_shared<HoldingSink>(hold_on)), h({}, {"scripted"}) {
    h.options.logger = std::make_shared<spdlog::logger>("hookhost", sink);
    h.options.keep_checkpoints = 0;
    h.options.checkpoint_wait = checkpoint_wait;
    h.add("recorder", "scripted", {{"trace", (h.root() / "trace.txt").string()}});
  }
  Runtime& runtime() { return h.runtime(); }
  fs::path folder() const { return h.run_dir() / "checkpoints"; }
  fs::path file(int64_t step) const { return folder() / ("model.ckpt-" + std::to_string(step)); }

  // Puts a FIFO where this process writes `name` before renaming it: the writer thread's open()
  // of it blocks until the test opens it for reading (drain). A FIFO cannot be fsynced, so that
  // save then fails, as a full disk would make it fail.
  fs::path hold_write_of(const std::string& name) {
    fs::create_directories(folder());
    const fs::path fifo = folder() / ("." + name + ".tmp-" + std::to_string(::getpid()));
    if (::mkfifo(fifo.c_str(), 0644) != 0) ADD_FAILURE() << "mkfifo: " << std::strerror(errno);
    return fifo;
  }
  // Lets the held write go on and returns every byte it wrote.
  static std::string drain(const fs::path& fifo) {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      ADD_FAILURE() << "cannot open " << fifo << ": " << std::strerror(errno);
      return "";
    }
    std::string bytes;
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      bytes.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return bytes;
  }

  std::shared_ptr<HoldingSink> sink;
  PluginHarness h;
};

TEST(CheckpointWriting, WithCheckpointWaitASaveAskedForDuringAWriteWaitsForItAndBothAreWritten) {
  // Holds the writer as it reports its first file.
  BackgroundSaves job("wrote checkpoint", /*checkpoint_wait=*/true);
  ASSERT_TRUE(job.runtime().start());
  std::atomic<bool> second_returned{false};
  std::thread training([&] {
    job.runtime().request_checkpoint("first");
    job.runtime().run();
    job.runtime().request_checkpoint("second");
    job.runtime().run();  // its boundary finds the first save in flight
    second_returned = true;
    job.sink->wake();
  });
  job.sink->held.acquire();
  EXPECT_TRUE(job.sink->wait_for("the checkpoint at global step 2 waits for the one being written",
                                 second_returned));
  EXPECT_FALSE(second_returned);
  EXPECT_FALSE(fs::exists(job.file(2)));
  job.sink->release();
  training.join();
  job.runtime().wait_for_checkpoints();
  EXPECT_THAT(list_checkpoints(job.folder()), ElementsAre(job.file(2), job.file(1)));
  const Checkpoint second = read_checkpoint(job.file(2));
  EXPECT_EQ(second.workload_state, "2");
  EXPECT_EQ(second.hook_states.at("recorder").bytes, "after_runs=2");
  ASSERT_TRUE(job.runtime().last_checkpoint().has_value());
  EXPECT_EQ(job.runtime().last_checkpoint()->file, job.file(2));
  const std::string log = job.sink->text();
  EXPECT_LT(log.find("wrote checkpoint " + job.file(1).string() + " (requested by first)"),
            log.find("wrote checkpoint " + job.file(2).string() + " (requested by second)"));
  // The wait is counted apart from the hooks' time: one checkpoint waited, for a while.
  const JobResult result = job.runtime().close();
  EXPECT_EQ(result.checkpoint_waits, 1u);
  EXPECT_GT(result.checkpoint_wait_time.count(), 0);
  EXPECT_EQ(result.checkpoints_skipped, 0u);
}

// The default: a request during a write takes its snapshot at once and waits behind the write;
// a newer one replaces it there. The step never waits; the newest snapshot is written, each at its
// own step, and the skipped ones are logged once and counted.
TEST(CheckpointWriting, SavesAskedForDuringAWriteCoalesceTheNewestWinsAndTheStepNeverWaits) {
  BackgroundSaves job("wrote checkpoint");  // holds the writer as it reports its first file
  ASSERT_TRUE(job.runtime().start());
  job.runtime().request_checkpoint("first");
  job.runtime().run();
  job.sink->held.acquire();  // the first is written; its writer is held before it says so
  for (const char* who : {"second", "third", "fourth"}) {
    job.runtime().request_checkpoint(who);
    job.runtime().run();  // returns although the writer is held: nothing waits for it
  }
  EXPECT_EQ(job.h.workload.global_step(), 4);
  const std::string held_log = job.sink->text();
  EXPECT_THAT(held_log, HasSubstr("the checkpoint at global step 2 (requested by second) was not "
                                  "written: the one at global step 3 replaced it"));
  EXPECT_THAT(held_log, Not(HasSubstr("global step 3 (requested by third) was not written")));
  EXPECT_THAT(held_log, Not(HasSubstr("waits for the one being written")));
  job.sink->release();
  const JobResult result = job.runtime().close();
  EXPECT_EQ(result.checkpoints_skipped, 2u);
  EXPECT_EQ(result.checkpoint_waits, 0u);
  EXPECT_EQ(result.checkpoint_failures, 0u);
  EXPECT_THAT(list_checkpoints(job.folder()), ElementsAre(job.file(4), job.file(1)));
  const Checkpoint newest = read_checkpoint(job.file(4));
  EXPECT_EQ(newest.global_step, 4);
  EXPECT_EQ(newest.workload_state, "4");  // the state of its own step, not a later one
  EXPECT_EQ(newest.hook_states.at("recorder").bytes, "after_runs=4");
  ASSERT_TRUE(job.runtime().last_checkpoint().has_value());
  EXPECT_EQ(job.runtime().last_checkpoint()->file, job.file(4));
}

TEST(CheckpointWriting, TheCheckpointHoldsTheStateAtTheRequestWhileTheJobMovesOn) {
  BackgroundSaves job;
  const fs::path fifo = job.hold_write_of("model.ckpt-1");
  ASSERT_TRUE(job.runtime().start());
  job.runtime().request_checkpoint("at step 1");
  job.runtime().run();  // the snapshot is taken here; its write is held up
  job.runtime().run();
  job.runtime().run();
  EXPECT_EQ(job.h.workload.global_step(), 3);
  EXPECT_EQ(job.runtime().saved_hook_states().at("recorder").bytes, "after_runs=3");
  EXPECT_FALSE(job.runtime().last_checkpoint().has_value());  // in flight: not named yet

  const std::string bytes = BackgroundSaves::drain(fifo);
  const fs::path copy = job.h.root() / "written";
  write_file(copy, bytes);
  const Checkpoint written = read_checkpoint(copy);
  EXPECT_EQ(written.global_step, 1);
  EXPECT_EQ(written.workload_state, "1");
  EXPECT_EQ(written.hook_states.at("recorder"),
            (SavedHookState{"scripted", 1, "after_runs=1",
                            sha256_of_file(job.h.plugin_dir() / "scripted.so")}));

  // Later saves are not affected by the one that failed.
  job.runtime().request_checkpoint("at step 3");
  job.runtime().close();
  EXPECT_THAT(job.sink->text(), HasSubstr("could not write the checkpoint at global step 1 "
                                          "requested by at step 1: cannot fsync"));
  EXPECT_FALSE(fs::exists(fifo));
  EXPECT_EQ(read_checkpoint(job.file(3)).workload_state, "3");
  EXPECT_EQ(read_checkpoint(job.file(3)).hook_states.at("recorder").bytes, "after_runs=3");
}

TEST(CheckpointWriting, AFailedWriteIsLoggedAndTheNewestCompletedCheckpointIsStillNamed) {
  BackgroundSaves job;
  ASSERT_TRUE(job.runtime().start());
  job.runtime().request_checkpoint("first");
  job.runtime().run();
  job.runtime().wait_for_checkpoints();
  ASSERT_TRUE(job.runtime().last_checkpoint().has_value());
  ASSERT_EQ(job.runtime().last_checkpoint()->file, job.file(1));

  // The folder is gone and a file took its name: the next save cannot even create it.
  fs::rename(job.folder(), job.h.root() / "moved");
  write_file(job.folder(), "not a folder");
  job.runtime().request_checkpoint("second");
  job.runtime().run();
  job.runtime().wait_for_checkpoints();
  EXPECT_THAT(job.sink->text(), AllOf(HasSubstr("could not write the checkpoint at global step 2 "
                                                "requested by second: "),
                                      HasSubstr("cannot create checkpoint folder")));
  const auto newest = job.runtime().last_checkpoint();
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->file, job.file(1));
  EXPECT_EQ(newest->global_step, 1);
  EXPECT_FALSE(job.runtime().should_stop());  // the job goes on
  EXPECT_NE(job.runtime().close().outcome, Outcome::failed);
}

TEST(CheckpointWriting, CloseAndTheDestructorReturnOnlyOnceTheSaveInFlightIsDone) {
  for (const bool destroy : {false, true}) {
    SCOPED_TRACE(destroy ? "destructor" : "close()");
    BackgroundSaves job;
    const fs::path fifo = job.hold_write_of("model.ckpt-1");
    ASSERT_TRUE(job.runtime().start());
    job.runtime().request_checkpoint("before the end");
    job.runtime().run();
    std::atomic<bool> returned{false};
    std::thread ending([&] {
      if (destroy)
        job.h.finish();
      else
        job.runtime().close();
      returned = true;
      job.sink->wake();
    });
    EXPECT_TRUE(job.sink->wait_for("waiting for the checkpoint being written", returned));
    EXPECT_FALSE(returned);
    EXPECT_FALSE(BackgroundSaves::drain(fifo).empty());
    ending.join();
    const std::string log = job.sink->text();
    const auto save_done = log.find("could not write the checkpoint at global step 1");
    const auto job_line = log.find("(global step 1, 1 steps run)");
    ASSERT_NE(save_done, std::string::npos) << log;
    ASSERT_NE(job_line, std::string::npos) << log;
    EXPECT_LT(save_done, job_line);
  }
}

// The fsyncs of one write_checkpoint, in order, as the paths of the descriptors.
std::vector<std::string> fsyncs_of_a_save(const fs::path& dir, int64_t step) {
  {
    std::lock_guard lock(fsync_record::mutex);
    fsync_record::paths.clear();
  }
  fsync_record::recording = true;
  write_checkpoint(dir, "model.ckpt", sample(step), 0);
  fsync_record::recording = false;
  std::lock_guard lock(fsync_record::mutex);
  return fsync_record::paths;
}

TEST(CheckpointDurability, EachFileThenItsFolderIsFsyncedAndANewFoldersParentToo) {
  TempDir root;
  const fs::path parent = fs::canonical(root.path());
  const fs::path dir = parent / "ckpts";  // created by the first save
  const std::string pid = std::to_string(::getpid());
  EXPECT_THAT(fsyncs_of_a_save(dir, 3),
              ElementsAre(parent.string(), (dir / (".model.ckpt-3.tmp-" + pid)).string(),
                          dir.string(), (dir / (".checkpoint.tmp-" + pid)).string(), dir.string()));
  // The folder exists now: its parent is not fsynced again.
  EXPECT_THAT(fsyncs_of_a_save(dir, 4),
              ElementsAre((dir / (".model.ckpt-4.tmp-" + pid)).string(), dir.string(),
                          (dir / (".checkpoint.tmp-" + pid)).string(), dir.string()));
}

// Files are created with mode 0644, so the process's umask takes its bits away.
TEST(CheckpointDurability, FilesAreCreatedWithMode0644LessTheUmask) {
  for (const mode_t mask : {mode_t{022}, mode_t{027}}) {
    TempDir dir;
    const mode_t previous = ::umask(mask);
    const fs::path file = write_checkpoint(dir.path(), "model.ckpt", sample(5), 0);
    ::umask(previous);
    for (const fs::path& written : {file, dir.path() / "checkpoint"}) {
      struct stat st {};
      ASSERT_EQ(::stat(written.c_str(), &st), 0) << written;
      EXPECT_EQ(st.st_mode & 07777, 0644 & ~mask) << written << " with umask 0" << std::oct << mask;
    }
  }
}

// What the writer thread is, read from inside it while it writes a save.
TEST(CheckpointWriter, TheWriterThreadRunsAsSchedBatchWithAsynchronousSignalsBlocked) {
  int policy = -1;
  sigset_t writer_mask;
  sigemptyset(&writer_mask);
  sigset_t caller_before, caller_after;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &caller_before);
  {
    CheckpointWriter writer([&](const CheckpointSave&) {
      policy = ::sched_getscheduler(0);
      ::pthread_sigmask(SIG_BLOCK, nullptr, &writer_mask);
    });
    writer.submit({at_step(1), "probe"});
    writer.wait_idle();
  }
  ::pthread_sigmask(SIG_BLOCK, nullptr, &caller_after);
  EXPECT_EQ(policy, SCHED_BATCH);
  for (int async : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE, SIGALRM})
    EXPECT_EQ(sigismember(&writer_mask, async), 1) << "signal " << async << " is not blocked";
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS})
    EXPECT_EQ(sigismember(&writer_mask, fault), 0) << "fault signal " << fault << " is blocked";
  // Starting the thread leaves the caller's own mask as it was.
  for (int sig = 1; sig < SIGRTMIN; ++sig)
    EXPECT_EQ(sigismember(&caller_after, sig), sigismember(&caller_before, sig)) << sig;
}

// A restored state goes back only to an instance of the same name whose plugin has the id that
// saved it; a state another plugin saved is dropped with a warning naming both ids. A state without
// a plugin id (checkpoint format 1) goes to whichever plugin the instance now uses.
TEST(RestoredStates, AStateSavedByAnotherPluginIsDroppedWithAWarningNamingBoth) {
  PluginHarness h({}, {"scripted"});
  h.workload.script().end_of_data_step = 2;
  const fs::path trace = h.root() / "trace.txt";
  for (const char* name : {"swapped", "same", "untagged"})
    h.add(name, "scripted", {{"trace", trace.string()}});
  h.runtime().restore_hook_states(std::map<std::string, SavedHookState>{
      {"swapped", SavedHookState{"other_plugin", 1, "after_runs=5"}},
      {"same", SavedHookState{"scripted", 1, "after_runs=4"}},
      {"untagged", SavedHookState{"", 1, "after_runs=3"}}});
  h.run();
  std::map<std::string, std::string> begin_lines;
  for (const std::string& line : lines_of(read_file(trace))) {
    const std::size_t space = line.find(' ');
    if (line.compare(space + 1, 6, "begin ") == 0)
      begin_lines[line.substr(0, space)] = line.substr(space + 1);
  }
  EXPECT_THAT(begin_lines["swapped"], StartsWith("begin state=- "));
  EXPECT_THAT(begin_lines["same"], StartsWith("begin state=after_runs=4 "));
  EXPECT_THAT(begin_lines["untagged"], StartsWith("begin state=after_runs=3 "));
  EXPECT_THAT(h.log(), HasSubstr("[warning] the checkpoint holds state for hook 'swapped' saved by "
                                 "plugin 'other_plugin', but 'swapped' now uses plugin 'scripted': "
                                 "it starts without state"));
  EXPECT_THAT(h.log(), Not(HasSubstr("hook 'same' saved by")));
  EXPECT_THAT(h.log(), Not(HasSubstr("hook 'untagged' saved by")));
}

// A restored state goes back only to the build of its plugin that saved it, unless the instance's
// HookSettings::resume_state is any_build: at start and when existing instances get their states
// back (a recovery); a state of unknown build goes to any build, and an instance of unknown build
// takes any state.
TEST(RestoredStates, AStateSavedByAnotherBuildIsGivenOnlyUnderAnyBuild) {
  PluginHarness h({}, {"scripted"});
  h.workload.script().end_of_data_step = 2;
  const fs::path trace = h.root() / "trace.txt";
  const auto plugin = h.plugin("scripted");
  const std::string mine = plugin->sha256(), other(64, 'a');
  ASSERT_EQ(mine, sha256_of_file(h.plugin_dir() / "scripted.so"));
  const auto add = [&](const char* name, ResumeState resume_state, std::string build = {}) {
    HookSettings settings{name, 0, FailurePolicy::disable};
    settings.resume_state = resume_state;
    settings.plugin_build = std::move(build);
    h.runtime().add_hook(plugin, settings,
                         resolve_params(plugin->metadata(), name, {{"trace", trace.string()}}));
  };
  add("strict", ResumeState::same_build);
  add("lenient", ResumeState::any_build);
  add("mine", ResumeState::same_build);
  add("unknown", ResumeState::same_build);
  add("unbuilt", ResumeState::same_build, "");  // empty: the runtime takes the plugin's
  const std::map<std::string, SavedHookState> states{
      {"strict", {"scripted", 1, "after_runs=5", other}},
      {"lenient", {"scripted", 1, "after_runs=6", other}},
      {"mine", {"scripted", 1, "after_runs=7", mine}},
      {"unknown", {"scripted", 1, "after_runs=8", ""}},
      {"unbuilt", {"scripted", 1, "after_runs=9", other}}};
  h.runtime().restore_hook_states(states);  // existing instances: as in a recovery
  EXPECT_THAT(h.log(), HasSubstr("[warning] hook 'strict' (plugin 'scripted') starts without the "
                                 "state the checkpoint holds for it: another build of the plugin "
                                 "saved it (SHA-256 aaaaaaaaaaaa, this build " +
                                 mine.substr(0, 12) +
                                 "); set resume_state = any_build in [hook.strict] to resume it "
                                 "anyway"));
  EXPECT_THAT(h.log(), HasSubstr("[info] hook 'lenient' (plugin 'scripted') resumes the state "
                                 "another build of the plugin saved (SHA-256 aaaaaaaaaaaa, this "
                                 "build " +
                                 mine.substr(0, 12) + "): resume_state = any_build"));
  EXPECT_THAT(h.log(), HasSubstr("hook 'unbuilt' (plugin 'scripted') starts without the state"));
  for (const char* quiet : {"'mine'", "'unknown'"})
    EXPECT_THAT(h.log(), Not(HasSubstr("hook " + std::string(quiet)))) << quiet;
  const auto held = h.runtime().saved_hook_states();
  EXPECT_EQ(held.count("strict"), 0u);
  EXPECT_EQ(held.count("unbuilt"), 0u);
  // The other build's bytes keep its build until the hook saves its own; unknown becomes mine.
  EXPECT_EQ(held.at("lenient"), (SavedHookState{"scripted", 1, "after_runs=6", other}));
  EXPECT_EQ(held.at("mine"), (SavedHookState{"scripted", 1, "after_runs=7", mine}));
  EXPECT_EQ(held.at("unknown"), (SavedHookState{"scripted", 1, "after_runs=8", mine}));
  h.run();  // one step: each hook counts it on what it was given, and saves under its own build
  const auto after = h.runtime().saved_hook_states();
  EXPECT_EQ(after.at("strict"), (SavedHookState{"scripted", 1, "after_runs=1", mine}));
  EXPECT_EQ(after.at("lenient"), (SavedHookState{"scripted", 1, "after_runs=7", mine}));
  EXPECT_EQ(after.at("mine").bytes, "after_runs=8");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
