// The host's TensorBoard event writing: CRC-32C and its mask, TFRecord framing and Event encoding
// checked byte for byte against the test vectors of the reference (session-run-hook-semantics.md
// §4), and event files read back with an independent record reader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <future>
#include <limits>
#include "storage/event_writer.hpp"
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "event_file_reader.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// ---- helpers ---------------------------------------------------------------------------------

std::string from_hex(std::string_view hex) {
  std::string out;
  std::string digits;
  for (char c : hex)
    if (c != ' ') digits.push_back(c);
  for (std::size_t i = 0; i + 1 < digits.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  return out;
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out.push_back(digits[(static_cast<unsigned char>(c) >> 4) & 0xf]);
    out.push_back(digits[static_cast<unsigned char>(c) & 0xf]);
  }
  return out;
}

// Bit-at-a-time CRC-32C (reflected polynomial 0x82F63B78): slow, obviously right.
uint32_t reference_crc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (char c : data) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
  }
  return ~crc;
}

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

// The steps of the scalar events in `file`.
std::vector<int64_t> scalar_steps(const fs::path& file) {
  std::vector<int64_t> steps;
  for (const Event& event : read_events(file))
    if (!event.scalars.empty()) steps.push_back(event.step);
  return steps;
}

std::vector<int64_t> steps_from(int64_t first, int64_t last) {
  std::vector<int64_t> steps;
  for (int64_t step = first; step <= last; ++step) steps.push_back(step);
  return steps;
}

// The whole records at the start of `bytes`, checksums checked; a record still being written
// (a concurrent write seen half-way) ends the list instead of failing it.
std::vector<std::string> whole_records(std::string_view bytes) {
  std::vector<std::string> records;
  std::size_t at = 0;
  while (bytes.size() - at >= 12) {
    const uint64_t length = read_le(bytes, at, 8);
    if (bytes.size() - at - 12 < length + 4) break;
    EXPECT_EQ(read_le(bytes, at + 8, 4), masked_crc32c(bytes.substr(at, 8))) << "at byte " << at;
    const std::string_view data = bytes.substr(at + 12, length);
    EXPECT_EQ(read_le(bytes, at + 12 + length, 4), masked_crc32c(data)) << "at byte " << at;
    records.emplace_back(data);
    at += 12 + length + 4;
  }
  return records;
}

// A schedule under which only a flush or the end writes: the thread is never woken.
constexpr EventWriteSchedule kOnlyFlushWrites{std::chrono::hours(24),
                                              std::numeric_limits<std::size_t>::max(),
                                              std::numeric_limits<std::size_t>::max()};

// Reference §4 test vectors, and records derived from the same rules (independently computed).
constexpr std::string_view kFileVersionRecord =
    "1800000000000000 a37f4b22 09000000c00b5ad641 1a0d627261696e2e4576656e743a32 4ca9a464";
constexpr std::string_view kScalarRecord =
    "2500000000000000 eabc36f3 09000020c00b5ad641 100b 2a18 0a16 "
    "0a0f676c6f62616c5f737465702f736563 1500000040 afb95551";
// Event{wall_time=1500000000.0, step=1, session_log{status=START}}.
constexpr std::string_view kStartRecord =
    "0f00000000000000 6d532b09 09000000c00b5ad641 1001 3a02 0801 159d126a";

// ---- CRC-32C and its mask --------------------------------------------------------------------

TEST(Crc32c, MatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(Crc32c, AgreesWithABitwiseImplementationOnManyInputs) {
  std::string data;
  uint32_t seed = 12345;
  for (std::size_t length = 0; length <= 1100; length += 37) {
    data.clear();
    for (std::size_t i = 0; i < length; ++i) {
      seed = seed * 1103515245u + 12345u;
      data.push_back(static_cast<char>(seed >> 16));
    }
    EXPECT_EQ(crc32c(data), reference_crc32c(data)) << "length " << length;
  }
}

TEST(MaskedCrc32c, OfEmptyDataIsTheMaskOfZero) {
  // mask(0) = rotate_right(0, 15) + 0xa282ead8.
  EXPECT_EQ(masked_crc32c(""), 0xa282ead8u);
}

TEST(MaskedCrc32c, RotatesRightBy15AndAddsTheDelta) {
  // rotate_right(0xE3069283, 15) + 0xa282ead8, modulo 2^32.
  EXPECT_EQ(masked_crc32c("123456789"), 0xc78ab0e5u);
}

// ---- framing and encoding, byte for byte -----------------------------------------------------

TEST(FrameRecord, FileVersionEventMatchesTheReferenceRecord) {
  const std::string event = encode_file_version_event(1500000000.0);
  EXPECT_THAT(event, SizeIs(24));
  EXPECT_EQ(to_hex(frame_record(event)), to_hex(from_hex(kFileVersionRecord)));
  // The two masked CRCs the reference names, stored little-endian.
  EXPECT_EQ(masked_crc32c(from_hex("1800000000000000")), 0x224b7fa3u);
  EXPECT_EQ(masked_crc32c(event), 0x64a4a94cu);
}

TEST(FrameRecord, ScalarSummaryEventMatchesTheReferenceRecord) {
  const std::string event = encode_scalar_event(1500000000.5, 11, "global_step/sec", 2.0f);
  EXPECT_THAT(event, SizeIs(37));
  EXPECT_EQ(to_hex(frame_record(event)), to_hex(from_hex(kScalarRecord)));
}

TEST(FrameRecord, SessionLogStartMatchesTheRecordDerivedFromTheWireKeys) {
  const std::string event = encode_session_log_event(1500000000.0, 1, 1, "");
  EXPECT_EQ(to_hex(event), "09000000c00b5ad64110013a020801");
  EXPECT_EQ(to_hex(frame_record(event)), to_hex(from_hex(kStartRecord)));
}

TEST(FrameRecord, CheckpointSessionLogCarriesItsPath) {
  const std::string event = encode_session_log_event(1500000000.0, 30, 3, "ckpt/model.ckpt-30");
  EXPECT_EQ(to_hex(event), "09000000c00b5ad641101e3a1608031212" + to_hex("ckpt/model.ckpt-30"));
  const Event decoded = decode_event(event);
  EXPECT_EQ(decoded.session_log_status, 3);
  EXPECT_EQ(decoded.checkpoint_path, "ckpt/model.ckpt-30");
  EXPECT_EQ(decoded.step, 30);
}

TEST(FrameRecord, EmptyDataIsAHeaderAndAFooterOnly) {
  EXPECT_EQ(to_hex(frame_record("")), "000000000000000029039807d8ea82a2");
}

TEST(FrameRecord, RecordReaderRoundTripsTheReferenceRecords) {
  const std::string both = from_hex(kFileVersionRecord) + from_hex(kScalarRecord);
  const std::vector<std::string> records = read_records(both);
  ASSERT_THAT(records, SizeIs(2));
  const Event version = decode_event(records[0]);
  EXPECT_EQ(version.file_version, "brain.Event:2");
  EXPECT_EQ(version.wall_time, 1500000000.0);
  const Event scalar = decode_event(records[1]);
  EXPECT_EQ(scalar.wall_time, 1500000000.5);
  EXPECT_EQ(scalar.step, 11);
  ASSERT_THAT(scalar.scalars, SizeIs(1));
  EXPECT_EQ(scalar.scalars[0].first, "global_step/sec");
  EXPECT_EQ(scalar.scalars[0].second, 2.0f);
}

// ---- EventFileWriter on disk -----------------------------------------------------------------

TEST(EventFileWriter, NamesTheFileAfterItsCreationSecondAndTheHost) {
  TempDir dir;
  const auto before = std::chrono::system_clock::now();
  EventFileWriter writer(dir.path());
  const auto after = std::chrono::system_clock::now();
  const std::vector<fs::path> files = event_files(dir.path());
  ASSERT_THAT(files, SizeIs(1));
  EXPECT_EQ(files[0], writer.file());
  std::smatch match;
  const std::string name = files[0].filename().string();
  ASSERT_TRUE(std::regex_match(name, match, std::regex(R"(events\.out\.tfevents\.(\d{10})\.(.+))")))
      << name;
  EXPECT_EQ(match[2].str(), this_hostname());
  // The creation second lies between the clock readings around the constructor.
  const long long created = std::stoll(match[1].str());
  using std::chrono::duration_cast;
  EXPECT_GE(created, duration_cast<std::chrono::seconds>(before.time_since_epoch()).count());
  EXPECT_LE(created, duration_cast<std::chrono::seconds>(after.time_since_epoch()).count());
}

TEST(EventFileWriter, FirstRecordIsTheFileVersionAndIsOnDiskAtOnce) {
  TempDir dir;
  EventFileWriter writer(dir.path());
  // No flush: TensorFlow writes the version record immediately, so readers see a valid file.
  const std::string bytes = read_file(writer.file());
  const std::vector<std::string> records = read_records(bytes);
  ASSERT_THAT(records, SizeIs(1));
  EXPECT_THAT(records[0], HasSubstr("brain.Event:2"));
  const Event event = decode_event(records[0]);
  EXPECT_EQ(event.file_version, "brain.Event:2");
  EXPECT_EQ(event.step, 0);
  // wall_time is the creation time in whole seconds, the same second as in the file name.
  EXPECT_EQ(event.wall_time, std::floor(event.wall_time));
  const std::string name = writer.file().filename().string();
  EXPECT_EQ(static_cast<long long>(event.wall_time),
            std::stoll(name.substr(std::string("events.out.tfevents.").size(), 10)));
}

TEST(EventFileWriter, CreatesMissingFolders) {
  TempDir dir;
  EventFileWriter writer(dir / "a/b/c");
  EXPECT_EQ(writer.file().parent_path(), dir / "a/b/c");
  EXPECT_THAT(read_records(read_file(writer.file())), SizeIs(1));
}

TEST(EventFileWriter, FlushedScalarIsReadableWithValidChecksums) {
  TempDir dir;
  EventFileWriter writer(dir.path());
  writer.add_scalar(5, "loss", 0.25f);
  writer.add_scalar(6, "accuracy", 0.875f);
  writer.flush();
  const std::vector<Event> events = read_events(writer.file());
  ASSERT_THAT(events, SizeIs(3));
  EXPECT_EQ(events[1].step, 5);
  ASSERT_THAT(events[1].scalars, SizeIs(1));
  EXPECT_EQ(events[1].scalars[0], std::make_pair(std::string("loss"), 0.25f));
  EXPECT_EQ(events[2].step, 6);
  ASSERT_THAT(events[2].scalars, SizeIs(1));
  EXPECT_EQ(events[2].scalars[0], std::make_pair(std::string("accuracy"), 0.875f));
  // Each event carries its own wall time (not whole seconds), never before the file's creation.
  EXPECT_GE(events[1].wall_time, events[0].wall_time);
  EXPECT_GE(events[2].wall_time, events[1].wall_time);
}

TEST(EventFileWriter, SessionLogStartRecordCarriesItsStep) {
  TempDir dir;
  EventFileWriter writer(dir.path());
  writer.add_session_log(1, 1, "");
  writer.flush();
  const std::string bytes = read_file(writer.file());
  const std::vector<std::string> records = read_records(bytes);
  ASSERT_THAT(records, SizeIs(2));
  // Everything after wall_time is fixed: step 1, session_log{status: START}.
  EXPECT_EQ(to_hex(records[1].substr(9)), "10013a020801");
  const Event event = decode_event(records[1]);
  EXPECT_EQ(event.session_log_status, 1);
  EXPECT_EQ(event.step, 1);
  EXPECT_TRUE(event.scalars.empty());
}

TEST(EventFileWriter, AppendsAcrossSeveralFlushes) {
  TempDir dir;
  EventFileWriter writer(dir.path());
  for (int step = 1; step <= 3; ++step) {
    writer.add_scalar(step, "loss", 1.0f / static_cast<float>(step));
    writer.flush();
    EXPECT_THAT(read_records(read_file(writer.file())), SizeIs(1 + step));
  }
}

// ---- one writer per folder -------------------------------------------------------------------

TEST(EventWriterFor, SharesOneWriterAndOneFilePerFolder) {
  TempDir dir;
  EventWriters writers;
  EventFileWriter& first = writers.for_folder(dir / "shared");
  EventFileWriter& again = writers.for_folder(dir / "shared");
  EventFileWriter& dotted = writers.for_folder(dir / "shared/.");
  EventFileWriter& other = writers.for_folder(dir / "other");
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(&first, &dotted);
  EXPECT_NE(&first, &other);
  first.add_scalar(1, "loss", 1.0f);
  again.add_scalar(1, "global_step/sec", 50.0f);
  writers.flush_all();
  const std::vector<fs::path> files = event_files(dir / "shared");
  ASSERT_THAT(files, SizeIs(1));
  const std::vector<Event> events = read_events(files[0]);
  ASSERT_THAT(events, SizeIs(3));
  EXPECT_EQ(events[1].scalars.at(0).first, "loss");
  EXPECT_EQ(events[2].scalars.at(0).first, "global_step/sec");
}

// weakly_canonical keeps a trailing separator for a missing folder but drops it once the folder
// exists: the writer's key must not depend on that, or "x/" asked twice gives two writers.
TEST(EventWriterFor, TrailingSeparatorOnANewFolderStillSharesTheWriter) {
  TempDir dir;
  EventWriters writers;
  const fs::path folder = dir.path().string() + "/fresh/";
  EventFileWriter& first = writers.for_folder(folder);
  EventFileWriter& second = writers.for_folder(folder);
  EXPECT_EQ(&first, &second);
  writers.flush_all();
  const std::vector<fs::path> files = event_files(dir / "fresh");
  ASSERT_THAT(files, SizeIs(1));
  EXPECT_THAT(read_records(read_file(files[0])), SizeIs(1));
}

TEST(EventWriterFor, TwoJobsInOneProcessHaveTheirOwnWriters) {
  TempDir dir;
  auto first = std::make_unique<EventWriters>();
  EventWriters second;
  EventFileWriter& a = first->for_folder(dir / "tb");
  EventFileWriter& b = second.for_folder(dir / "tb");
  EXPECT_NE(&a, &b);
  b.add_scalar(1, "loss", 2.0f);
  first.reset();  // the first job ends: the second's writer is untouched
  second.flush_all();
  EXPECT_EQ(scalars(read_events(b.file()), "loss"),
            (std::vector<std::pair<int64_t, float>>{{1, 2.0f}}));
}

// ---- buffering: the writer thread, flushes from other threads, the end --------------------------

TEST(EventFileWriter, RecordsWaitInMemoryUntilAFlush) {
  TempDir dir;
  EventFileWriter writer(dir.path(), kOnlyFlushWrites);
  for (int step = 1; step <= 50; ++step) writer.add_scalar(step, "loss", 1.0f);
  EXPECT_THAT(read_records(read_file(writer.file())), SizeIs(1));  // the version record only
  writer.flush();
  EXPECT_EQ(scalar_steps(writer.file()), steps_from(1, 50));
}

TEST(EventFileWriter, DestroyingTheWriterWritesEverythingStillBuffered) {
  TempDir dir;
  fs::path file;
  {
    EventFileWriter writer(dir.path(), kOnlyFlushWrites);
    file = writer.file();
    for (int step = 1; step <= 200; ++step) writer.add_scalar(step, "loss", 0.5f);
    writer.add_session_log(201, 2, "");
  }
  const std::vector<Event> events = read_events(file);
  ASSERT_THAT(events, SizeIs(202));
  EXPECT_EQ(scalar_steps(file), steps_from(1, 200));
  EXPECT_EQ(events.back().session_log_status, 2);
}

TEST(EventFileWriter, TheWriterThreadWritesOnceEnoughBytesWaitWithoutAnyFlush) {
  TempDir dir;
  // Every record wakes the thread; the interval never passes.
  EventFileWriter writer(dir.path(), {std::chrono::hours(24), 1, 1 << 20});
  for (int step = 1; step <= 10; ++step) writer.add_scalar(step, "loss", 1.0f);
  // Waits for the thread's write (nobody else writes); never for a set time.
  while (whole_records(read_file(writer.file())).size() < 11) std::this_thread::yield();
  EXPECT_EQ(scalar_steps(writer.file()), steps_from(1, 10));
}

TEST(EventFileWriter, TheWriterThreadWritesOnceTheIntervalPassesWithoutAnyFlush) {
  TempDir dir;
  // The buffer never gets large enough to wake the thread: only its interval brings it.
  EventFileWriter writer(dir.path(), {std::chrono::milliseconds(1), 1 << 20, 1 << 20});
  writer.add_scalar(7, "loss", 0.25f);
  while (whole_records(read_file(writer.file())).size() < 2) std::this_thread::yield();
  EXPECT_EQ(scalar_steps(writer.file()), std::vector<int64_t>{7});
}

TEST(EventFileWriter, ACallerFindingTheBufferFullWritesItItself) {
  TempDir dir;
  // The thread is never woken and its interval never passes: the bound is all that writes.
  EventFileWriter writer(dir.path(), {std::chrono::hours(24),
                                      std::numeric_limits<std::size_t>::max(), 1000});
  int step = 0;
  while (whole_records(read_file(writer.file())).size() < 2) writer.add_scalar(++step, "x", 1.0f);
  // Every record appended so far went out in that one write.
  EXPECT_EQ(scalar_steps(writer.file()), steps_from(1, step));
}

TEST(EventWriters, FlushAllOnAnotherThreadWritesEveryRecordAppendedBeforeIt) {
  TempDir dir;
  EventWriters writers;
  EventFileWriter& run = writers.for_folder(dir / "run");
  EventFileWriter& eval = writers.for_folder(dir / "eval");
  std::promise<void> appended;
  std::thread training([&] {
    for (int step = 1; step <= 500; ++step) {
      run.add_scalar(step, "loss", 1.0f);
      if (step % 5 == 0) eval.add_scalar(step, "accuracy", 0.5f);
    }
    appended.set_value();
  });
  appended.get_future().wait();
  std::thread checkpointing([&] { writers.flush_all(); });
  checkpointing.join();
  // Read while the writers still live: the flush, not their destructors, wrote this.
  EXPECT_EQ(scalar_steps(run.file()), steps_from(1, 500));
  EXPECT_THAT(scalar_steps(eval.file()), SizeIs(100));
  training.join();
}

// A flush from one thread while another keeps appending and the writer thread keeps writing:
// every record appended before the flush was called is on disk, whole, when it returns.
TEST(EventFileWriter, AFlushRacingAppendsAndTheWriterThreadLosesNothingAppendedBeforeIt) {
  TempDir dir;
  EventFileWriter writer(dir.path(), {std::chrono::milliseconds(1), 512, 1 << 20});
  constexpr int64_t kRecords = 20000;
  std::atomic<int64_t> appended{0};
  std::thread training([&] {
    for (int64_t step = 1; step <= kRecords; ++step) {
      writer.add_scalar(step, "loss", 1.0f);
      appended.store(step, std::memory_order_release);
    }
  });
  int64_t before = 0;
  for (int round = 0; before < kRecords; ++round) {
    before = appended.load(std::memory_order_acquire);
    writer.flush();
    // Records are in append order, so the one at index `before` (after the version record) is
    // the last one appended before the flush.
    const std::vector<std::string> records = whole_records(read_file(writer.file()));
    ASSERT_GT(records.size(), static_cast<std::size_t>(before)) << "round " << round;
    ASSERT_EQ(decode_event(records[static_cast<std::size_t>(before)]).step, before);
  }
  training.join();
  EXPECT_EQ(scalar_steps(writer.file()), steps_from(1, kRecords));
}

// Runs in a child: some records flushed, then more appended, then the process is killed.
[[noreturn]] void append_then_get_killed(const fs::path& dir) {
  EventFileWriter writer(dir, kOnlyFlushWrites);
  for (int step = 1; step <= 5; ++step) writer.add_scalar(step, "loss", 1.0f);
  writer.flush();
  for (int step = 6; step <= 8; ++step) writer.add_scalar(step, "loss", 1.0f);
  ::raise(SIGKILL);
  std::_Exit(3);
}

TEST(EventFileWriter, AKilledProcessLosesOnlyTheUnwrittenTailAndTheFileStaysReadable) {
  TempDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) append_then_get_killed(dir.path());
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  const std::vector<fs::path> files = event_files(dir.path());
  ASSERT_THAT(files, SizeIs(1));
  EXPECT_EQ(truncate_to_last_whole_record(files[0]), 0u);  // whole records only
  EXPECT_EQ(scalar_steps(files[0]), steps_from(1, 5));      // steps 6 to 8 were never written
}

// ---- torn records ----------------------------------------------------------------------------

TEST(EventFileRepair, ATornTailIsCutBackToTheLastWholeRecord) {
  TempDir dir;
  fs::path file;
  {
    EventFileWriter writer(dir.path());
    writer.add_scalar(1, "loss", 1.0f);
    writer.add_scalar(2, "loss", 0.5f);
    writer.flush();
    file = writer.file();
  }
  const std::string whole = read_file(file);
  const std::string torn_record = frame_record(encode_scalar_event(0, 3, "loss", 0.25f));
  for (size_t cut : {size_t{1}, size_t{11}, size_t{12}, torn_record.size() - 1}) {
    write_file(file, whole + torn_record.substr(0, cut));
    EXPECT_EQ(truncate_to_last_whole_record(file), cut);
    EXPECT_EQ(read_file(file), whole);
  }
  // A flipped byte in the last record's data: the record is not whole either.
  std::string spoiled = whole + torn_record;
  spoiled[whole.size() + 14] ^= 0x40;
  write_file(file, spoiled);
  EXPECT_EQ(truncate_to_last_whole_record(file), torn_record.size());
  EXPECT_EQ(truncate_to_last_whole_record(file), 0u);  // nothing left to repair
  EXPECT_THAT(read_records(read_file(file)), SizeIs(3));
}

// Runs in a child with a small file-size limit: the write stops part-way through a record (EFBIG).
[[noreturn]] void write_past_a_file_size_limit(const fs::path& dir) {
  ::signal(SIGXFSZ, SIG_IGN);
  EventFileWriter writer(dir);
  const auto start = fs::file_size(writer.file());
  rlimit limit{static_cast<rlim_t>(start + 100), static_cast<rlim_t>(start + 100)};
  ::setrlimit(RLIMIT_FSIZE, &limit);
  for (int step = 0; step < 20; ++step) writer.add_scalar(step, "loss", 1.0f);
  bool failed = false;
  try {
    writer.flush();
  } catch (const std::exception& e) {
    failed =
        std::string(e.what()).find("rolled back to the last whole record") != std::string::npos;
  }
  // The file holds whole records only, so a later small write is readable after them.
  const auto records = read_records(read_file(writer.file()));
  writer.add_scalar(99, "loss", 9.0f);
  writer.flush();
  const auto after = read_events(writer.file());
  const bool readable = after.size() == records.size() + 1 && after.back().step == 99;
  std::_Exit(failed && fs::file_size(writer.file()) <= start + 100 && readable ? 0 : 1);
}

TEST(EventFileRepair, AWriteThatFailsPartWayIsRolledBackAndLaterRecordsStayReadable) {
  TempDir dir;
  EXPECT_EXIT(write_past_a_file_size_limit(dir.path()), ::testing::ExitedWithCode(0), "");
}

// Runs in a child with a small file-size limit: the writer thread's write fails, and the next
// call on the writer reports it.
[[noreturn]] void fail_in_the_writer_thread(const fs::path& dir) {
  ::signal(SIGXFSZ, SIG_IGN);
  std::string reported;
  fs::path file;
  {
    EventFileWriter writer(dir,
                           {std::chrono::hours(24), 1, std::numeric_limits<std::size_t>::max()});
    file = writer.file();
    const auto start = fs::file_size(file);
    rlimit limit{static_cast<rlim_t>(start + 100), static_cast<rlim_t>(start + 100)};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    // Every record wakes the thread; appending goes on until a call reports its failure.
    for (int64_t step = 0; reported.empty(); ++step) {
      try {
        writer.add_scalar(step, "loss", 1.0f);
      } catch (const std::exception& e) {
        reported = e.what();
      }
      std::this_thread::yield();
    }
  }  // the writer thread has stopped: nothing writes any more
  const bool named = reported.find("rolled back to the last whole record") != std::string::npos &&
                     reported.find(file.string()) != std::string::npos;
  std::_Exit(named && truncate_to_last_whole_record(file) == 0 ? 0 : 1);
}

TEST(EventFileRepair, AFailedWriteOfTheWriterThreadIsReportedByTheNextCall) {
  TempDir dir;
  EXPECT_EXIT(fail_in_the_writer_thread(dir.path()), ::testing::ExitedWithCode(0), "");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
