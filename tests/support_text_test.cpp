// The shared text helpers (support/text.hpp), the log formatter that escapes messages
// (hookhost/host/log_format.hpp), and the owned descriptors (support/unique_fd.hpp) on
// the host's paths that open one: every way out, a refusal included, closes what was opened.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "hookhost/host/config.hpp"
#include "hookhost/host/log_format.hpp"
#include "hookhost/host/params.hpp"
#include "job/run_dir_lock.hpp"
#include "job/signal_bridge.hpp"
#include "plugins/trust.hpp"
#include "support/text.hpp"
#include "support/unique_fd.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::open_descriptors;
using testing::TempDir;

TEST(TextTrim, RemovesOnlyTheEnds) {
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t\r\n\v\f"), "");
  EXPECT_EQ(trim("  a b\t"), "a b");
  EXPECT_EQ(trim("a"), "a");
  EXPECT_EQ(trim("\na\tb c\r\n"), "a\tb c");
}

TEST(TextTrim, UsesTheBlanksGiven) {
  // The INI rule: only spaces and tabs; any other character stays for the parser to judge.
  EXPECT_EQ(trim(" \v x \f\t", " \t"), "\v x \f");
  EXPECT_EQ(trim("\r\r", " \t"), "\r\r");
  EXPECT_EQ(trim("--x--", "-"), "x");
  EXPECT_EQ(trim("x", ""), "x");
}

TEST(TextJoin, PutsTheSeparatorBetweenEveryTwoItems) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join({"a", "b"}, ""), "ab");
  // Empty items keep their place: a list never loses a separator because its first item is "".
  EXPECT_EQ(join({"", "b"}, ","), ",b");
  EXPECT_EQ(join({"a", "", ""}, ";"), "a;;");
}

TEST(TextDescribeHook, NamesTheHookThePluginAndTheFile) {
  EXPECT_EQ(describe_hook("avg", "hookhost.mean", "/p/libmean.so"),
            "hook 'avg' (plugin 'hookhost.mean', /p/libmean.so)");
  EXPECT_EQ(describe_hook("avg", "hookhost.mean"), "hook 'avg' (plugin 'hookhost.mean')");
  const std::string long_name(300, 'n');
  EXPECT_EQ(describe_hook(long_name, "p", "f"), "hook '" + long_name + "' (plugin 'p', f)");
}

std::string config_error(const fs::path& file) {
  try {
    load_job_config(file, {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(TextCopyCut, FitsTerminatesAndCutsAtTheBufferEnd) {
  // Guard bytes after the buffer show that nothing is written past `capacity`.
  std::array<char, 8> out;
  out.fill('#');
  copy_cut("abc", out.data(), 4);  // one short of the capacity: whole
  EXPECT_STREQ(out.data(), "abc");
  copy_cut("abcd", out.data(), 4);  // as long as the capacity: the terminator takes the last byte
  EXPECT_STREQ(out.data(), "abc");
  EXPECT_EQ(out[4], '#');
  copy_cut("", out.data(), 4);
  EXPECT_STREQ(out.data(), "");
  copy_cut("abc", out.data(), 1);  // room for the terminator only
  EXPECT_EQ(out[0], '\0');
  EXPECT_EQ(out[1], 'b');  // untouched since the second copy
  const std::string huge(1 << 20, 'x');
  std::array<char, 1024> message;
  copy_cut(huge, message.data(), message.size());
  EXPECT_EQ(std::strlen(message.data()), message.size() - 1);
}

// The program's, the harness's and the Python package's loggers all format with it: a plugin's
// text cannot set the terminal's title, clear it or start a forged line; the rest of the pattern
// is spdlog's.
TEST(EscapedLogFormatter, EscapesControlCharactersOfTheMessageOnly) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
  sink->set_formatter(escaped_log_formatter("[%n] [%l] %*"));
  spdlog::logger logger("plugin", sink);
  logger.info("title \x1b]0;pwned\x07 set\n[hookhost] [error] forged\tline \xc3\xa9");
  logger.warn(std::string(kLogMessageLimit + 10, 'x'));
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("[plugin] [info] title \\e]0;pwned\\x07 set\\n[hookhost] [error] "
                              "forged\\tline \xc3\xa9\n"));
  EXPECT_THAT(text, HasSubstr("[plugin] [warning] " + std::string(kLogMessageLimit, 'x') +
                              "...(10 more bytes)\n"));
  EXPECT_THAT(text, Not(HasSubstr("\x1b")));
  EXPECT_THAT(text, Not(HasSubstr("\x07")));
}

TEST(UniqueFdPaths, RefusedConfigFilesLeaveNoDescriptorOpen) {
  TempDir dir;
  const fs::path fifo = dir / "job.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path big = dir / "big.ini";
  std::ofstream(big) << "[run]\n" << std::string(kMaxConfigBytes + 1, ';') << "\n";
  const fs::path bad = dir / "bad.ini";
  std::ofstream(bad) << "[run]\nno equals sign here\n";
  const fs::path good = dir / "good.ini";
  std::ofstream(good) << "[run]\nlog_level = info\n";
  const size_t before = open_descriptors();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(config_error(dir.path()), HasSubstr("is a folder"));
    EXPECT_THAT(config_error(fifo), HasSubstr("is not a regular file"));
    EXPECT_THAT(config_error(big), HasSubstr("larger than"));
    EXPECT_THAT(config_error(bad), HasSubstr("bad.ini:2"));
    EXPECT_THAT(config_error(dir / "missing.ini"), HasSubstr("cannot open the config file"));
    EXPECT_EQ(config_error(good), "(accepted)");
  }
  EXPECT_EQ(open_descriptors(), before);
}

TEST(UniqueFdPaths, RunDirLockClosesItsFileWhenRefusedAndWhenReleased) {
  TempDir dir;
  const size_t before = open_descriptors();
  {
    RunDirLock held(dir.path());
    EXPECT_EQ(open_descriptors(), before + 1);
    for (int i = 0; i < 3; ++i) {
      try {
        RunDirLock second(dir.path());
        ADD_FAILURE() << "a second lock on the same run directory was granted";
      } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("in use by another hookhost job (pid " +
                                        std::to_string(::getpid()) + ")"));
      }
    }
    EXPECT_EQ(open_descriptors(), before + 1);
  }
  EXPECT_EQ(open_descriptors(), before);
  RunDirLock again(dir.path());  // released: it can be taken again
  EXPECT_THROW(RunDirLock(dir.path() / "no-such-folder"), ConfigError);
}

TEST(UniqueFdPaths, HashingAFileClosesIt) {
  TempDir dir;
  const fs::path file = dir / "bytes";
  std::ofstream(file) << "abc";
  const size_t before = open_descriptors();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sha256_of_file(file),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_THROW(sha256_of_file(dir / "missing"), std::runtime_error);
    EXPECT_THROW(sha256_of_file(dir.path()), std::runtime_error);  // a folder cannot be read
  }
  EXPECT_EQ(open_descriptors(), before);
}

TEST(UniqueFdPaths, SignalBridgeClosesItsPipeWhenRefusedAndWhenDestroyed) {
  const size_t before = open_descriptors();
  {
    SignalBridge bridge([](int, int) {});
    EXPECT_EQ(open_descriptors(), before + 2);
    // Only one bridge at a time: the refused one must not keep its pipe.
    EXPECT_THROW(SignalBridge([](int, int) {}), std::logic_error);
    EXPECT_EQ(open_descriptors(), before + 2);
  }
  EXPECT_EQ(open_descriptors(), before);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
