// hh.checkpoint/1 last_written in one process: it names the newest *completed* checkpoint and
// never waits for the save being written in the background.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "plugin_harness.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;

TEST(CheckpointLastWritten, ASaveInFlightIsNotWaitedForAndNotNamedYet) {
  PluginHarness h({}, {"checkpoint_probe"});
  const fs::path trace = h.root() / "probe.txt";
  h.add("probe", "checkpoint_probe", {{"trace", trace.string()}, {"request_at", "1, 2"}});
  const fs::path folder = h.run_dir() / "checkpoints";
  // A FIFO where the save of step 2 is written before its rename: the writer thread's open()
  // blocks until this test opens it for reading, so that save stays in flight until then.
  fs::create_directories(folder);
  const fs::path fifo = folder / (".model.ckpt-2.tmp-" + std::to_string(::getpid()));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0) << std::strerror(errno);

  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  std::thread training([&] {
    runtime.run();  // asks at step 1: written in the background
    runtime.wait_for_checkpoints();
    runtime.run();  // asks at step 2: its save is held at the FIFO
    runtime.run();  // before_run asks last_written while the save of step 2 is in flight
  });
  // The third before_run (global step 2) answers at once, with the save of step 1.
  const bool answered =
      wait_until([&] { return read_file(trace).find("before_run gs=2 ") != std::string::npos; });
  // Let the held save go on (it fails: a FIFO cannot be fsynced), so the job can end.
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  char buffer[4096];
  while (::read(fd, buffer, sizeof buffer) > 0) {
  }
  ::close(fd);
  training.join();
  runtime.close();

  ASSERT_TRUE(answered) << "last_written waited for the save in flight";
  const auto lines = lines_of(trace);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], "before_run gs=0 last=none");
  EXPECT_EQ(lines[1], "before_run gs=1 last=1 path=" + (folder / "model.ckpt-1").string());
  EXPECT_EQ(lines[2], "before_run gs=2 last=1 path=" + (folder / "model.ckpt-1").string());
  // The failed save never becomes the newest.
  EXPECT_THAT(lines.back(), HasSubstr("end gs=3 last=1 path="));
}

// The run record's checkpoint event says when the checkpoint was taken, at its step boundary
// (inside the run() that took it), though it is reported once the background write is done.
TEST(CheckpointLastWritten, ItsRunEventIsStampedWhenTheCheckpointWasTaken) {
  PluginHarness h({}, {"checkpoint_probe"});
  std::mutex mutex;
  std::vector<RunEvent> events;
  h.options.on_event = [&](const RunEvent& e) {
    std::lock_guard lock(mutex);
    events.push_back(e);
  };
  h.add("probe", "checkpoint_probe",
        {{"trace", (h.root() / "probe.txt").string()}, {"request_at", "1"}});
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  const auto before = std::chrono::system_clock::now();
  runtime.run();  // the probe asks at global step 1: taken at a boundary of these two steps,
  runtime.run();  // and written in the background
  const auto after = std::chrono::system_clock::now();
  runtime.wait_for_checkpoints();
  runtime.close();
  std::lock_guard lock(mutex);
  const auto it = std::find_if(events.begin(), events.end(), [](const RunEvent& e) {
    return e.kind == RunEvent::Kind::checkpoint;
  });
  ASSERT_NE(it, events.end()) << h.log();
  EXPECT_LE(before, it->at);
  EXPECT_LE(it->at, after);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
