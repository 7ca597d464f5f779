// Every INI example in README.md and docs/*.md is a config a user can copy: each block fenced
// ```ini is read by the config reader and checked by `hookhost run --check`, in a temporary folder
// that holds the files it names. Conventions:
// - A block may be a fragment (a [hook.NAME] section alone): the job's defaults fill in the rest
//   ([workload] is linreg), so no wrapper is added. Its run directory is the temporary folder's.
// - Files a block names are made there: each [run] plugin_dir folder, a python_hook `script`
//   (examples/python/ has the documented ones) and each `python_path` folder.
// - Plugins the docs teach to write (loss_log, loss_guard) are stand-ins with the documented
//   parameter lists (tests/fixtures/doc_plugins), found through --plugin-dir.
// - A block with `distributed = mpi` is checked with --set run.distributed=none (no launcher
//   here); the file's own value is still read and checked.
// - A block that shows a mistake on purpose is fenced ```ini-error and must be refused (exit 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <hookhost/version.h>

#include "hookhost/host/config.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;

struct IniBlock {
  std::string doc;  // relative to the source tree, e.g. docs/distributed.md
  int line = 0;     // of the opening fence
  bool mistake = false;
  std::string text;
  std::string where() const { return doc + ":" + std::to_string(line); }
};

fs::path source_dir() {
  return fs::path(HOOKHOST_SOURCE_DIR);
}

std::vector<IniBlock> ini_blocks() {
  std::vector<fs::path> docs = {source_dir() / "README.md"};
  for (const auto& e : fs::directory_iterator(source_dir() / "docs"))
    if (e.path().extension() == ".md") docs.push_back(e.path());
  std::sort(docs.begin() + 1, docs.end());
  std::vector<IniBlock> blocks;
  for (const fs::path& doc : docs) {
    std::ifstream in(doc);
    std::string line;
    int n = 0;
    std::optional<IniBlock> open;
    bool in_other_fence = false;
    while (std::getline(in, line)) {
      ++n;
      const std::string fence = line.substr(std::min(line.find_first_not_of(' '), line.size()));
      if (fence.rfind("```", 0) != 0) {
        if (open) open->text += line + "\n";
        continue;
      }
      if (open) {
        blocks.push_back(std::move(*open));
        open.reset();
      } else if (in_other_fence) {
        in_other_fence = false;
      } else if (fence == "```ini" || fence == "```ini-error") {
        open = IniBlock{fs::relative(doc, source_dir()).string(), n, fence == "```ini-error", ""};
      } else {
        in_other_fence = true;
      }
    }
  }
  return blocks;
}

// The folder of stand-ins for the plugins the docs teach to write.
fs::path stand_in_plugins(const fs::path& dir) {
  const fs::path folder = dir / "doc-plugins";
  fs::create_directories(folder);
  for (const char* id : {"loss_log", "loss_guard"}) copy_plugin(fixture_plugin(id), folder);
  return folder;
}

// Writes the block and every file it names into `dir`; returns the extra arguments it needs.
std::vector<std::string> lay_out(const IniBlock& block, const fs::path& dir) {
  const fs::path ini = dir / "job.ini";
  write_file(ini, block.text);
  std::vector<std::string> args = {"--plugin-dir", stand_in_plugins(dir).string()};
  JobConfig cfg;
  try {
    cfg = load_job_config(ini, {});
  } catch (const ConfigError&) {
    return args;  // a mistake on purpose: nothing else to lay out
  }
  for (const fs::path& folder : cfg.plugin_dirs) {
    fs::create_directories(folder);
    for (const char* id : {"loss_log", "loss_guard"}) copy_plugin(fixture_plugin(id), folder);
  }
  for (const HookConfig& hook : cfg.hooks) {
    if (hook.plugin != "python_hook") continue;
    if (auto script = hook.params.find("script"); script != hook.params.end()) {
      const fs::path target = dir / script->second;
      fs::create_directories(target.parent_path());
      const fs::path example = source_dir() / "examples" / "python" / target.filename();
      if (fs::exists(example))
        fs::copy_file(example, target, fs::copy_options::overwrite_existing);
      else
        write_file(target, "class LossHook:\n    def __init__(self, **kwargs):\n        pass\n");
    }
    if (auto path = hook.params.find("python_path"); path != hook.params.end()) {
      std::stringstream items(path->second);
      for (std::string item; std::getline(items, item, ',');)
        fs::create_directories(dir / std::regex_replace(item, std::regex("^\\s+|\\s+$"), ""));
    }
  }
  if (cfg.distributed == Distribution::mpi)
    args.insert(args.end(), {"--set", "run.distributed=none"});
  if (cfg.run_dir.empty() || cfg.run_dir == fs::path("hookhost-run"))
    args.insert(args.end(), {"--run-dir", (dir / "run").string()});
  return args;
}

// One ABI version in every page: each "ABI 1.0 to 1.N" (or "1.0-1.N", "1.0–1.N") an outsider
// reads names the minor the headers declare (HH_ABI_MINOR).
TEST(DocExamples, EveryPageNamesTheHeadersAbiMinorAsTheNewestFrozen) {
  const std::regex range(R"(1\.0(?: to |-|\xE2\x80\x93)1\.([0-9]+))");
  std::vector<std::filesystem::path> pages{std::filesystem::path(HOOKHOST_SOURCE_DIR) /
                                           "README.md"};
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(HOOKHOST_SOURCE_DIR) / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  int ranges = 0;
  for (const auto& page : pages) {
    const std::string text = read_file(page);
    for (std::sregex_iterator it(text.begin(), text.end(), range), end; it != end; ++it) {
      ++ranges;
      EXPECT_EQ(std::stoi((*it)[1]), HH_ABI_MINOR)
          << page.filename() << " says " << it->str() << " (the headers: 1." << HH_ABI_MINOR << ")";
    }
  }
  EXPECT_GE(ranges, 3);  // README, abi.md and architecture.md say it
}

TEST(DocExamples, TheDocsHoldIniBlocks) {
  // Guards the extraction itself: a renamed fence would silently check nothing.
  std::vector<std::string> docs;
  for (const IniBlock& block : ini_blocks()) docs.push_back(block.doc);
  EXPECT_THAT(docs, ::testing::Contains("docs/distributed.md"));
  EXPECT_THAT(docs, ::testing::Contains("docs/python-hooks.md"));
  EXPECT_GE(docs.size(), 4u);
}

// Every ```ini block is read without an error, and no value keeps text meant as a comment: a ';'
// or '#' in a value must come from a quoted value in the doc.
TEST(DocExamples, EveryIniBlockIsReadAsWritten) {
  for (const IniBlock& block : ini_blocks()) {
    SCOPED_TRACE(block.where());
    TempDir dir;
    write_file(dir / "job.ini", block.text);
    JobConfig cfg;
    try {
      cfg = load_job_config(dir / "job.ini", {});
    } catch (const ConfigError& e) {
      EXPECT_TRUE(block.mistake) << e.what();
      continue;
    }
    EXPECT_FALSE(block.mistake) << "a block fenced ini-error is accepted";
    for (const HookConfig& hook : cfg.hooks) {
      for (const auto& [key, value] : hook.params) {
        if (value.find_first_of(";#") == std::string::npos) continue;
        EXPECT_THAT(block.text, HasSubstr("\"" + value + "\""))
            << "[hook." << hook.name << "] " << key << " = '" << value << "' keeps a comment";
      }
    }
  }
}

bool run_knows_check() {
  TempDir dir;
  const ProcessResult help = run_hookhost({"run", "--help"}, dir.path());
  return help.out.find("--check") != std::string::npos;
}

// Every ```ini block passes `hookhost run --check` (parse, discover, load and create every hook;
// no step), and every ```ini-error block is refused with exit status 2.
TEST(DocExamples, EveryIniBlockPassesRunCheck) {
  if (!run_knows_check()) GTEST_SKIP() << "this hookhost has no 'run --check' yet";
  const bool python = fs::exists(builtin_plugin("python_hook"));
  for (const IniBlock& block : ini_blocks()) {
    SCOPED_TRACE(block.where());
    if (!python && block.text.find("python_hook") != std::string::npos) continue;
    TempDir dir;
    std::vector<std::string> args = {"run", "--check", "-c", (dir / "job.ini").string()};
    for (std::string& extra : lay_out(block, dir.path())) args.push_back(std::move(extra));
    const ProcessResult r = run_hookhost(args, dir.path());
    EXPECT_EQ(r.exit_code, block.mistake ? 2 : 0) << r.err;
  }
}

// The first ```c block after `heading` in `doc`, or "" when there is none.
std::string c_block_after(const fs::path& doc, const std::string& heading) {
  const std::string text = read_file(doc);
  const std::size_t at = text.find("\n" + heading + "\n");
  if (at == std::string::npos) return {};
  const std::size_t open = text.find("\n```c\n", at);
  if (open == std::string::npos) return {};
  const std::size_t body = open + 6;
  const std::size_t close = text.find("\n```\n", body);
  return close == std::string::npos ? std::string() : text.substr(body, close - body + 1);
}

// writing-a-plugin.md's example of declared needs is a whole plugin: built from the doc's text as
// an author builds it, its note says what the doc says, and a job runs it.
TEST(DocExamples, TheDeclaredNeedsExampleBuildsDescribesAndRuns) {
  const std::string source = c_block_after(source_dir() / "docs" / "writing-a-plugin.md",
                                           "## Declaring what your hook needs when confined");
  ASSERT_THAT(source, HasSubstr("HH_PLUGIN_NEEDS")) << "the section or its ```c block is gone";
  TempDir dir;
  fs::create_directories(dir / "plugins");
  write_file(dir / "loss_file.c", source);
  const ProcessResult cc =
      Process({"-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
               "-I" + (fs::path(HOOKHOST_SOURCE_DIR) / "plugin_api" / "include").string(), "-o",
               (dir / "plugins" / "loss_file.so").string(), (dir / "loss_file.c").string()},
              dir.path(), {}, HOOKHOST_C_COMPILER)
          .wait();
  ASSERT_EQ(cc.exit_code, 0) << cc.err;

  const ProcessResult describe =
      run_hookhost({"plugins", "describe", "loss_file", "--plugin-dir", "plugins"}, dir.path());
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_THAT(describe.out, HasSubstr("\n  needs (when confined): read the paths parameter "
                                      "'header' names; write the paths parameter 'path' names\n"));

  write_file(dir / "header.txt", "step,loss\n");
  write_file(dir / "job.ini",
             "[run]\nplugin_dir = plugins\nrun_dir = run\n[workload]\nname = linreg\nepochs = 1\n"
             "batch_size = 8\n[hook.losses]\nplugin = loss_file\npath = losses.csv\n"
             "header = header.txt\n");
  const ProcessResult run = run_hookhost({"run", "--config", "job.ini"}, dir.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> lines = lines_of(read_file(dir / "run" / "losses.csv"));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "step,loss");
  EXPECT_THAT(lines[1], ::testing::MatchesRegex("[0-9]+,[-0-9.e+]+"));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
