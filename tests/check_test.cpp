// `hookhost check`: the real program on real plugin files (the built-in plugins, the sandbox's
// fault corpus, fixtures and patched copies of them), plus the pieces of the checker whose
// judgement needs inputs no real plugin gives on demand (a JSON escaper's worst cases, memory
// growth).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include <hookhost/sdk/json.hpp>

#include "check/runner_memory.hpp"
#include "plugin_files.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- a small JSON reader, to check that --json output is JSON and has the documented shape ----

struct Json {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  // An object's members, in order: names[i] is values[i]'s (a pair would need Json complete).
  std::vector<std::string> member_names;
  std::vector<Json> member_values;

  const Json& at(const std::string& key) const {
    for (size_t i = 0; i < member_names.size(); ++i)
      if (member_names[i] == key) return member_values[i];
    throw std::runtime_error("no member '" + key + "'");
  }
  bool has(const std::string& key) const {
    return std::find(member_names.begin(), member_names.end(), key) != member_names.end();
  }
};

// A code point below U+10000 as UTF-8.
void append_utf8(std::string& out, unsigned code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// RFC 8259, strictly: raw control characters in strings, trailing commas and anything after the
// value are errors.
class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : text_(text) {}

  Json document() {
    Json value = read_value();
    skip_space();
    if (pos_ != text_.size()) fail("text after the value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("invalid JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_])) ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  bool take_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json read_value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    Json value;
    const char c = text_[pos_];
    if (c == '{') {
      value.type = Json::Type::object;
      ++pos_;
      if (take('}')) return value;
      do {
        skip_space();
        std::string key = read_string();
        expect(':');
        value.member_names.push_back(std::move(key));
        value.member_values.push_back(read_value());
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      value.type = Json::Type::array;
      ++pos_;
      if (take(']')) return value;
      do value.items.push_back(read_value());
      while (take(','));
      expect(']');
    } else if (c == '"') {
      value.type = Json::Type::string;
      value.text = read_string();
    } else if (take_word("true")) {
      value.type = Json::Type::boolean;
      value.boolean = true;
    } else if (take_word("false")) {
      value.type = Json::Type::boolean;
    } else if (take_word("null")) {
      value.type = Json::Type::null;
    } else {
      const size_t start = pos_;
      if (text_[pos_] == '-') ++pos_;
      while (pos_ < text_.size() && std::strchr("0123456789.eE+-", text_[pos_])) ++pos_;
      if (pos_ == start) fail("unexpected character");
      value.type = Json::Type::number;
      value.number = std::stod(std::string(text_.substr(start, pos_ - start)));
    }
    return value;
  }

  std::string read_string() {
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string");
    ++pos_;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      const auto c = static_cast<unsigned char>(text_[pos_++]);
      if (c < 0x20) fail("a raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= text_.size()) fail("unfinished escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (pos_ + 4 > text_.size()) fail("short \\u escape");
          const unsigned code = std::stoul(std::string(text_.substr(pos_, 4)), nullptr, 16);
          pos_ += 4;
          if (code >= 0xD800 && code <= 0xDFFF) fail("this reader takes no surrogate escapes");
          append_utf8(out, code);
          break;
        }
        default: fail("unknown escape");
      }
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// ---- running the checker --------------------------------------------------------------------

// The --set values the built-in plugins need: their required parameters, and one of each pair of
// exclusive ones their create() asks for. global_step_waiter would otherwise wait for a step the
// synthetic workload never reaches.
const std::map<std::string, std::vector<std::string>> kBuiltinSettings = {
    {"global_step_waiter", {"--set", "wait_until_step=0"}},
    {"logging_tensor", {"--set", "tensors=loss", "--set", "every_n_iter=1"}},
    {"loss_threshold", {"--set", "threshold=0.001"}},
    {"stop_at_step", {"--set", "num_steps=15"}},
    {"summary_saver", {"--set", "save_steps=5"}},
    {"time_limit", {"--set", "max_secs=1000"}},
    {"python_hook", {"--set", "module=hookhost", "--set", "class=SessionRunHook"}},
};

class CheckTest : public ::testing::Test {
 protected:
  ProcessResult check(std::vector<std::string> args) {
    args.insert(args.begin(), "check");
    return run_hookhost(args, dir_.path());
  }
  // `hookhost check faulty.so` misbehaving as told, in `callback` at global step `step`.
  ProcessResult check_faulty(const std::string& behaviour, const std::string& callback, int step,
                             std::vector<std::string> more = {}) {
    std::vector<std::string> args = {fixture_plugin("faulty").string(),
                                     "--set",
                                     "behaviour=" + behaviour,
                                     "--set",
                                     "callback=" + callback,
                                     "--set",
                                     "at_step=" + std::to_string(step)};
    args.insert(args.end(), more.begin(), more.end());
    return check(args);
  }

  TempDir dir_;
};

// The lines of `out` that report a finding of `severity` and `kind`.
std::vector<std::string> findings(const std::string& out, const std::string& severity,
                                  const std::string& kind) {
  std::vector<std::string> found;
  for (const auto& line : lines_of(out))
    if (line.starts_with(severity + " [" + kind + "] ")) found.push_back(line);
  return found;
}

// ---- usage ----------------------------------------------------------------------------------

TEST_F(CheckTest, HelpSaysWhatIsCheckedTheOptionsTheExitStatusAndAnExample) {
  const ProcessResult help = check({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, AllOf(HasSubstr("Usage: hookhost check PLUGIN.so"),
                              HasSubstr("What is checked"), HasSubstr("--set"), HasSubstr("--json"),
                              HasSubstr("--timeout-ms"), HasSubstr("isolation = process"),
                              HasSubstr("Exit status"), HasSubstr("Examples:\n  hookhost check ")));
  const ProcessResult main_help = run_hookhost({"--help"}, dir_.path());
  EXPECT_THAT(main_help.out, HasSubstr("hookhost check PLUGIN.so"));
}

TEST_F(CheckTest, AFileThatIsNotAPluginIsAUsageErrorNamingTheFileAndWhy) {
  write_file(dir_ / "notes.so", "just some text, not an ELF file\n");
  const ProcessResult text = check({"notes.so"});
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_THAT(text.err, AllOf(HasSubstr("notes.so"), HasSubstr("not a usable hookhost plugin")));
  EXPECT_EQ(text.out, "");

  const ProcessResult no_note = check({fixture_plugin("no_note").string()});
  EXPECT_EQ(no_note.exit_code, 2);
  EXPECT_THAT(no_note.err, AllOf(HasSubstr("no_note.so"), HasSubstr("note")));

  const ProcessResult missing = check({"no-such-plugin.so"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, AllOf(HasSubstr("no-such-plugin.so"), HasSubstr("no such file")));

  EXPECT_EQ(check({}).exit_code, 2);
}

TEST_F(CheckTest, AnUnknownSetKeyIsAConfigurationErrorNamingItAndListingTheParameters) {
  const ProcessResult r = check({fixture_plugin("faulty").string(), "--set", "no_such_key=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("configuration error"), HasSubstr("'no_such_key'"),
                           HasSubstr("behaviour, callback, at_step, trace")));
  EXPECT_EQ(r.out, "");
}

TEST_F(CheckTest, ABadValueOrASettingWithoutValueIsAConfigurationError) {
  const ProcessResult integer = check({fixture_plugin("faulty").string(), "--set", "at_step=soon"});
  EXPECT_EQ(integer.exit_code, 2);
  EXPECT_THAT(integer.err,
              AllOf(HasSubstr("at_step"), HasSubstr("must be an integer"), HasSubstr("soon")));
  const ProcessResult no_equals = check({fixture_plugin("faulty").string(), "--set", "at_step"});
  EXPECT_EQ(no_equals.exit_code, 2);
  EXPECT_THAT(no_equals.err, HasSubstr("KEY=VALUE"));
  const ProcessResult not_finite =
      check({builtin_plugin("loss_threshold").string(), "--set", "threshold=nan"});
  EXPECT_EQ(not_finite.exit_code, 2);
  EXPECT_THAT(not_finite.err, AllOf(HasSubstr("threshold"), HasSubstr("finite")));
  const ProcessResult timeout = check({fixture_plugin("faulty").string(), "--timeout-ms", "0"});
  EXPECT_EQ(timeout.exit_code, 2);
}

TEST_F(CheckTest, AConfigurationTheHooksCreateRefusesIsAConfigurationError) {
  // stop_at_step takes num_steps or last_step, not both: its create() says so.
  const ProcessResult r = check(
      {builtin_plugin("stop_at_step").string(), "--set", "num_steps=5", "--set", "last_step=5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("configuration error"), HasSubstr("stop_at_step")));
}

// A check that ran no scenario does not pass: exit 2, as for a configuration it cannot run.
TEST_F(CheckTest, ARequiredParameterWithoutValueSkipsTheScenariosAndSaysSo) {
  const ProcessResult r = check({fixture_plugin("good_c").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("no scenario ran, so the plugin was not checked"));
  const auto not_run = findings(r.out, "warning", "not-run");
  ASSERT_EQ(not_run.size(), 1u) << r.out;
  EXPECT_THAT(not_run[0], AllOf(HasSubstr("'every_n'"), HasSubstr("--set every_n=")));
  EXPECT_THAT(r.out, Not(HasSubstr("scenarios run")));
}

// ---- plugins that pass ----------------------------------------------------------------------

TEST_F(CheckTest, EveryBuiltInPluginPasses) {
  std::vector<fs::path> plugins;
  for (const auto& entry : fs::directory_iterator(HOOKHOST_BUILTIN_DIR))
    if (entry.path().extension() == ".so") plugins.push_back(entry.path());
  std::sort(plugins.begin(), plugins.end());
  ASSERT_GE(plugins.size(), 10u) << "the built-in plugins were not found in "
                                 << HOOKHOST_BUILTIN_DIR;
  for (const fs::path& plugin : plugins) {
    SCOPED_TRACE(plugin.string());
    std::vector<std::string> args = {plugin.string()};
    if (auto it = kBuiltinSettings.find(plugin.stem().string()); it != kBuiltinSettings.end())
      args.insert(args.end(), it->second.begin(), it->second.end());
    const ProcessResult r = check(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("\ncheck: 0 violation(s), "));
    // Every scenario ran: a check that ran none would pass too.
    EXPECT_THAT(r.out,
                AllOf(HasSubstr("'plain run'"), HasSubstr("'recoverable workload error'"),
                      HasSubstr("'stop requested mid-run'"), HasSubstr("'another hook fails'"),
                      HasSubstr("'memory over 1000 steps'")));
    EXPECT_THAT(findings(r.out, "warning", "not-run"), ::testing::IsEmpty());
  }
}

TEST_F(CheckTest, EdgeValuesACreateRefusesAreAcceptedAndListedAsNotes) {
  const ProcessResult r = check(
      {builtin_plugin("global_step_waiter").string(), "--set", "wait_until_step=0", "--verbose"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("'edge poll_secs=0'"), HasSubstr("'edge timeout_secs=-1'")));
  EXPECT_THAT(r.out, HasSubstr("note: scenario 'edge poll_secs=0': create() refused the value: "
                               "invalid poll_secs=0"));
  // The pinned parameter is not varied.
  EXPECT_THAT(r.out, Not(HasSubstr("'edge wait_until_step=")));
}

TEST_F(CheckTest, SavedStateIsRestoredIntoAFreshInstance) {
  // history_saver keeps the rows it has not written yet as its state.
  const ProcessResult r =
      check({builtin_plugin("history_saver").string(), "--set", "flush_secs=1000"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("'save and restore (run 2, restored)'"));
}

// ---- plugins that fail ----------------------------------------------------------------------

TEST_F(CheckTest, ASegfaultInAfterRunIsACrashWithItsSignal) {
  const ProcessResult r = check_faulty("segv", "after_run", 3);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto crashes = findings(r.out, "violation", "crash");
  ASSERT_FALSE(crashes.empty()) << r.out;
  EXPECT_THAT(crashes[0],
              AllOf(HasSubstr("scenario 'plain run', after_run at step 3: "),
                    HasSubstr("killed by signal 11 (SIGSEGV"),
                    HasSubstr("Why it matters: in process this takes the whole job down")));
  EXPECT_THAT(r.out, HasSubstr("\ncheck: "));
  EXPECT_THAT(
      lines_of(r.out).back(),
      ::testing::MatchesRegex("check: [1-9][0-9]* violation\\(s\\), [0-9]+ warning\\(s\\)"));
}

TEST_F(CheckTest, AnAbortIsACrashWithSigabrt) {
  const ProcessResult r = check_faulty("abort", "before_run", 2);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto crashes = findings(r.out, "violation", "crash");
  ASSERT_FALSE(crashes.empty()) << r.out;
  EXPECT_THAT(crashes[0],
              AllOf(HasSubstr("before_run at step 2"), HasSubstr("killed by signal 6 (SIGABRT")));
}

TEST_F(CheckTest, AnExitIsReportedWithItsStatus) {
  const ProcessResult r = check_faulty("exit3", "after_run", 1);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto exits = findings(r.out, "violation", "exit");
  ASSERT_FALSE(exits.empty()) << r.out;
  EXPECT_THAT(exits[0], AllOf(HasSubstr("after_run at step 1"), HasSubstr("exited with status 3"),
                              HasSubstr("Why it matters: ")));
}

TEST_F(CheckTest, ASleepOrALoopOverTheTimeBudgetIsAHang) {
  for (const char* behaviour : {"sleep", "loop"}) {
    SCOPED_TRACE(behaviour);
    const ProcessResult r = check_faulty(behaviour, "before_run", 2, {"--timeout-ms", "300"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto hangs = findings(r.out, "violation", "hang");
    ASSERT_FALSE(hangs.empty()) << r.out;
    EXPECT_THAT(hangs[0], AllOf(HasSubstr("scenario 'plain run', before_run at step 2"),
                                HasSubstr("did not answer within call_timeout_ms = 300")));
  }
}

TEST_F(CheckTest, AnErrorNothingProvokedIsAViolation) {
  const ProcessResult r = check_faulty("error", "after_run", 4);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto errors = findings(r.out, "violation", "error");
  ASSERT_FALSE(errors.empty()) << r.out;
  EXPECT_THAT(errors[0], AllOf(HasSubstr("scenario 'plain run', after_run at step 4"),
                               HasSubstr("returned HH_ERROR: faulty: error as configured")));
}

// A bug that fires for every parameter value is the plain run's violation, reported once; the
// edge runs that hit it too are not warned about as if an edge value had caused it. A failure
// only an edge value causes is still an edge warning.
TEST_F(CheckTest, AnErrorWithEveryValueIsNotBlamedOnTheParameterEdges) {
  const ProcessResult r = check({fixture_plugin("always_throws").string(), "--verbose"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto errors = findings(r.out, "violation", "error");
  ASSERT_FALSE(errors.empty()) << r.out;
  EXPECT_THAT(errors[0], AllOf(HasSubstr("scenario 'plain run', after_run"),
                               HasSubstr("std::out_of_range"), HasSubstr("map::at")));
  for (const auto& line : lines_of(r.out))
    EXPECT_THAT(line, Not(AllOf(HasSubstr("edge"), HasSubstr("map::at")))) << r.out;
  // The edges did run, and the report says why their failures are not listed.
  EXPECT_THAT(r.out, AllOf(HasSubstr("'edge patience=0'"), HasSubstr("'edge min_delta=")));
  EXPECT_THAT(r.out, HasSubstr("note: parameter edges: "));
  EXPECT_THAT(r.out, HasSubstr("not blamed on the edges"));
  const auto edge_errors = findings(r.out, "warning", "edge-error");
  ASSERT_FALSE(edge_errors.empty()) << r.out;
  for (const auto& line : edge_errors)
    EXPECT_THAT(line, AllOf(HasSubstr("edge tensor=\"\""), HasSubstr("no tensor to watch")));
}

TEST_F(CheckTest, AnErrorTextWithoutTerminatorIsAViolation) {
  const ProcessResult r = check_faulty("unterminated", "before_run", 1);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto found = findings(r.out, "violation", "unterminated-error");
  ASSERT_FALSE(found.empty()) << r.out;
  EXPECT_THAT(found[0],
              AllOf(HasSubstr("before_run at step 1"), HasSubstr("without a terminating")));
}

TEST_F(CheckTest, AnExceptionEscapingTheRawAbiIsAViolation) {
  const ProcessResult r = check({fixture_plugin("faulty_throw").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto found = findings(r.out, "violation", "exception");
  ASSERT_FALSE(found.empty()) << r.out;
  EXPECT_THAT(found[0], AllOf(HasSubstr("after_run"),
                              HasSubstr("exception escaped the plugin: faulty_throw: thrown in "
                                        "after_run")));
}

TEST_F(CheckTest, OutputTheHostRefusedIsAViolationEvenWhenTheHookReturnedOk) {
  // abuser's before_run hands over a feed whose element count overflows, and returns HH_OK.
  const fs::path report = dir_ / "report.txt";
  const ProcessResult feed = check({fixture_plugin("abuser").string(), "--set", "abuse=bad_feed",
                                    "--set", "report=" + report.string()});
  EXPECT_EQ(feed.exit_code, 1) << feed.out << feed.err;
  const auto refused = findings(feed.out, "violation", "invalid-output");
  ASSERT_FALSE(refused.empty()) << feed.out;
  EXPECT_THAT(refused[0], AllOf(HasSubstr("before_run at step 0"),
                                HasSubstr("invalid feed of 'learning_rate'")));
  // A host call refused as misuse (a request used after its before_run returned).
  const ProcessResult late = check({fixture_plugin("abuser").string(), "--set",
                                    "abuse=request_after", "--set", "report=" + report.string()});
  EXPECT_EQ(late.exit_code, 1) << late.out << late.err;
  EXPECT_THAT(findings(late.out, "violation", "invalid-output"),
              ::testing::Contains(HasSubstr("on a request whose before_run has returned")));
  // create() returning HH_OK without an instance.
  const ProcessResult no_hook =
      check({fixture_plugin("abuser").string(), "--set", "abuse=create_without_hook", "--set",
             "report=" + report.string()});
  EXPECT_EQ(no_hook.exit_code, 1) << no_hook.out << no_hook.err;
  EXPECT_THAT(findings(no_hook.out, "violation", "invalid-output"),
              ::testing::Contains(AllOf(HasSubstr("scenario 'plain run', create: "),
                                        HasSubstr("without an instance"))));
}

TEST_F(CheckTest, ACrashWhileTheLibraryLoadsIsAViolationAndTheCheckSurvivesIt) {
  const ProcessResult r = check({fixture_plugin("faulty_constructor").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto crashes = findings(r.out, "violation", "crash");
  ASSERT_EQ(crashes.size(), 1u) << r.out;
  EXPECT_THAT(crashes[0], AllOf(HasSubstr(" load: "), HasSubstr("killed by signal 11")));
}

TEST_F(CheckTest, ANoteAndAnEntryThatDisagreeAreAViolation) {
  const ProcessResult r = check({fixture_plugin("param_mismatch").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto found = findings(r.out, "violation", "metadata");
  ASSERT_EQ(found.size(), 1u) << r.out;
  EXPECT_THAT(found[0],
              AllOf(HasSubstr("its note and its entry symbol disagree"), HasSubstr("'limit'")));
}

// ---- the build ------------------------------------------------------------------------------

TEST_F(CheckTest, ProcessWideImportsAreAWarningSuggestingProcessIsolation) {
  const ProcessResult r = check_faulty("segv", "after_run", 3);
  const auto found = findings(r.out, "warning", "process-wide-calls");
  ASSERT_EQ(found.size(), 1u) << r.out;
  EXPECT_THAT(found[0],
              AllOf(HasSubstr("exit"), HasSubstr("sigaction"), HasSubstr("isolation = process")));
  // A plugin that imports none gets no such warning.
  const ProcessResult clean = check({builtin_plugin("nan_tensor").string()});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_THAT(findings(clean.out, "warning", "process-wide-calls"), ::testing::IsEmpty());
}

TEST_F(CheckTest, LazyBindingIsAWarningToLinkWithZNow) {
  // missing_symbol is linked without -z now (and with a symbol that does not exist, so the
  // loader refuses it too).
  const ProcessResult r = check({fixture_plugin("missing_symbol").string()});
  const auto lazy = findings(r.out, "warning", "lazy-binding");
  ASSERT_EQ(lazy.size(), 1u) << r.out << r.err;
  EXPECT_THAT(lazy[0], HasSubstr("link with -z now"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(findings(r.out, "violation", "metadata"), ::testing::SizeIs(1));
  // A plugin built with hookhost_add_plugin binds at load.
  const ProcessResult bound = check({builtin_plugin("nan_tensor").string()});
  EXPECT_EQ(bound.exit_code, 0) << bound.out << bound.err;
  EXPECT_THAT(findings(bound.out, "warning", "lazy-binding"), ::testing::IsEmpty());
}

// Makes the import `name` of a copy of a plugin a defined, exported symbol of its own, as a build
// without the version script leaves the plugin's functions exported. The loader still binds the
// plugin's calls to the C library's (the global scope is searched first).
void export_an_import(const fs::path& file, const std::string& name) {
  std::string content = read_file(file);
  Elf64_Ehdr eh;
  std::memcpy(&eh, content.data(), sizeof eh);
  const auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, content.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  std::size_t text = 0;
  Elf64_Shdr dynsym{};
  for (std::size_t i = 1; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type == SHT_DYNSYM) dynsym = sh;
    if (!text && (sh.sh_flags & SHF_EXECINSTR)) text = i;
  }
  ASSERT_NE(dynsym.sh_size, 0u);
  ASSERT_NE(text, 0u);
  const Elf64_Shdr strtab = section(dynsym.sh_link);
  for (std::size_t at = dynsym.sh_offset; at < dynsym.sh_offset + dynsym.sh_size;
       at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, content.data() + at, sizeof sym);
    if (content.c_str() + strtab.sh_offset + sym.st_name != name) continue;
    sym.st_shndx = static_cast<Elf64_Half>(text);
    sym.st_value = section(text).sh_addr;
    sym.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    std::memcpy(content.data() + at, &sym, sizeof sym);
    write_file(file, content);
    return;
  }
  FAIL() << "no symbol " << name << " in " << file;
}

TEST_F(CheckTest, SymbolsExportedBesidesTheEntryAreAWarning) {
  const fs::path copy = copy_plugin(fixture_plugin("good_c"), dir_.path(), "exports_more.so");
  ASSERT_NO_FATAL_FAILURE(export_an_import(copy, "free"));
  const ProcessResult r = check({copy.string(), "--set", "every_n=1"});
  const auto exported = findings(r.out, "warning", "exported-symbols");
  ASSERT_EQ(exported.size(), 1u) << r.out << r.err;
  EXPECT_THAT(exported[0],
              AllOf(HasSubstr("besides hookhost_plugin_v1: free"), HasSubstr("version script")));
  EXPECT_EQ(r.exit_code, 0) << r.out;  // a warning: the check still passes

  const ProcessResult original = check({fixture_plugin("good_c").string(), "--set", "every_n=1"});
  EXPECT_EQ(original.exit_code, 0) << original.out << original.err;
  EXPECT_THAT(findings(original.out, "warning", "exported-symbols"), ::testing::IsEmpty());
}

// ---- the JSON report ------------------------------------------------------------------------

TEST_F(CheckTest, JsonOutputIsOneObjectWithTheDocumentedFields) {
  const ProcessResult r = check_faulty("segv", "after_run", 3, {"--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  Json report;
  ASSERT_NO_THROW(report = JsonReader(r.out).document()) << r.out;
  ASSERT_EQ(report.type, Json::Type::object);
  EXPECT_EQ(report.at("plugin").text, "faulty");
  EXPECT_EQ(report.at("file").text, fixture_plugin("faulty").string());
  EXPECT_FALSE(report.at("passed").boolean);
  const Json& counts = report.at("counts");
  EXPECT_GE(counts.at("violations").number, 1);
  EXPECT_GE(counts.at("warnings").number, 1);
  const Json& list = report.at("findings");
  ASSERT_EQ(list.type, Json::Type::array);
  EXPECT_EQ(static_cast<double>(list.items.size()),
            counts.at("violations").number + counts.at("warnings").number);
  bool crash_seen = false;
  for (const Json& f : list.items) {
    for (const char* key :
         {"severity", "kind", "scenario", "callback", "step", "message", "why", "also_in"})
      EXPECT_TRUE(f.has(key)) << key;
    if (f.at("kind").text != "crash") continue;
    crash_seen = true;
    EXPECT_EQ(f.at("severity").text, "violation");
    EXPECT_EQ(f.at("scenario").text, "plain run");
    EXPECT_EQ(f.at("callback").text, "after_run");
    EXPECT_EQ(f.at("step").number, 3);
    EXPECT_THAT(f.at("message").text, HasSubstr("killed by signal 11"));
    EXPECT_THAT(f.at("why").text, HasSubstr("whole job down"));
  }
  EXPECT_TRUE(crash_seen) << r.out;
  // What is read from the file has no scenario, callback or step.
  EXPECT_THAT(r.out, HasSubstr("\"kind\":\"process-wide-calls\",\"scenario\":null,"
                               "\"callback\":null,\"step\":null"));
}

// The report's strings come from <hookhost/sdk/json.hpp>, as a plugin's would.
TEST(CheckJsonTest, EveryStringIsValidJsonWhateverItHolds) {
  const std::string nasty = std::string("quote\" backslash\\ newline\n tab\t bell\a nul") +
                            std::string(1, '\0') + " esc\x1b utf8 \xc3\xa9 \xe2\x82\xac" +
                            " bad \xff\xc3 overlong \xc0\xaf surrogate \xed\xa0\x80 end";
  const std::string quoted = hookhost::json_string(nasty);
  Json parsed;
  ASSERT_NO_THROW(parsed = JsonReader(quoted).document()) << quoted;
  EXPECT_EQ(parsed.type, Json::Type::string);
  EXPECT_THAT(parsed.text, AllOf(HasSubstr("quote\" backslash\\ newline\n tab\t bell\a nul"),
                                 HasSubstr(" esc\x1b utf8 \xc3\xa9 \xe2\x82\xac"),
                                 HasSubstr(" bad \xef\xbf\xbd\xef\xbf\xbd overlong")));
  EXPECT_EQ(parsed.text.find('\xff'), std::string::npos);
  EXPECT_EQ(parsed.text.find("\xed\xa0\x80"), std::string::npos);
  EXPECT_EQ(hookhost::json_string(""), "\"\"");
}

// ---- memory growth --------------------------------------------------------------------------

TEST(CheckMemoryTest, OnlyClearSteadyGrowthIsReported) {
  constexpr uint64_t kMiB = 1 << 20;
  constexpr uint64_t kThreshold = 8 * kMiB;
  // 20 KiB per step from step 100 to 1000: 18 MiB, half in each half.
  const std::string leak = check::describe_growth(
      {{100, 10 * kMiB}, {550, 10 * kMiB + 9 * kMiB}, {1000, 10 * kMiB + 18 * kMiB}}, kThreshold);
  EXPECT_THAT(leak, AllOf(HasSubstr("grew from 10.0 MiB"), HasSubstr("28.0 MiB after 1000"),
                          HasSubstr("KiB per step")));
  // The same amount allocated once (a cache filled in the first half) is not a leak.
  EXPECT_EQ(
      check::describe_growth({{100, 10 * kMiB}, {550, 28 * kMiB}, {1000, 28 * kMiB}}, kThreshold),
      "");
  // Steady, but small.
  EXPECT_EQ(
      check::describe_growth({{100, 10 * kMiB}, {550, 12 * kMiB}, {1000, 14 * kMiB}}, kThreshold),
      "");
  // Resident memory of a live process can be read; of no process, not.
  EXPECT_TRUE(check::resident_bytes(::getpid()).has_value());
  EXPECT_FALSE(check::resident_bytes(-1).has_value());
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
