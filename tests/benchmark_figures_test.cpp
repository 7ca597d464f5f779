// The benchmarks' goal figures are stated on one page, docs/benchmark-figures.md, which
// scripts/bench_figures.py writes from scripts/bench.sh output; every other page links to it. A
// page that states a goal figure the table does not hold fails here, naming the page, the line and
// what the table says. What counts as stating a goal figure, line by line:
// - `measured=N`, or `last run` followed by a number;
// - a line naming a goal (`NAME` in backticks): each number in that goal's unit (× for a ratio,
//   ns, ms, MiB, KiB, bytes by the name's suffix) must be that goal's measured value or limit;
// - a line with the word PASS or MISS: each number with ×, ns, µs or ms must be one of the table's;
// - a line with the word "goal": each ratio N× must be one of the table's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

struct Goal {
  double measured = 0;
  double limit = 0;
  std::string verdict;
  std::string run;
};

fs::path source() {
  return fs::path(HOOKHOST_SOURCE_DIR);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double number(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  return std::stod(text);
}

std::map<std::string, Goal> read_table(const std::string& page) {
  static const std::regex row(
      R"(^\| `([a-z0-9_]+)` \| ([0-9.,]+) \| ([0-9.,]+) \| (PASS|MISS) \| ([^|]+) \|$)");
  std::map<std::string, Goal> goals;
  std::istringstream in(page);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, row)) goals[m[1]] = Goal{number(m[2]), number(m[3]), m[4], m[5]};
  return goals;
}

// The unit a goal's figures are written in, from its name.
std::string unit_of(const std::string& goal) {
  auto ends = [&](const std::string& s) {
    return goal.size() >= s.size() && goal.compare(goal.size() - s.size(), s.size(), s) == 0;
  };
  if (goal.find("_ns") != std::string::npos) return "ns";
  if (ends("_ms")) return "ms";
  if (ends("_mib")) return "MiB";
  if (ends("_kib")) return "KiB";
  if (goal.find("bytes") != std::string::npos) return "bytes";
  return "×";
}

struct Finding {
  int line = 0;
  std::string figure;
  std::string why;
};

// Every goal figure `text` states that the table does not hold.
std::vector<Finding> stray_figures(const std::string& text,
                                   const std::map<std::string, Goal>& goals) {
  std::set<double> any;
  for (const auto& [name, g] : goals) {
    any.insert(g.measured);
    any.insert(g.limit);
  }
  auto is_any = [&](double v) { return any.count(v) > 0; };
  static const std::regex measured(R"((?:goal ([a-z0-9_]+) )?measured=([0-9][0-9.,]*))");
  static const std::regex last_run(R"(last run[^0-9]*([0-9][0-9.,]*))");
  static const std::regex with_unit(R"(([0-9][0-9.,]*)\s?(×|ns|µs|ms|MiB|KiB|bytes)(?![A-Za-z]))");
  static const std::regex ratio(R"(([0-9][0-9.,]*)\s?×)");
  static const std::regex verdict(R"(\b(PASS|MISS)\b)");
  static const std::regex goal_word(R"(\bgoals?\b)");
  std::vector<Finding> found;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_of("0123456789") == std::string::npos) continue;
    for (std::sregex_iterator i(line.begin(), line.end(), measured), e; i != e; ++i) {
      const auto of = goals.find((*i)[1].str());
      const double v = number((*i)[2]);
      if (of == goals.end() ? !is_any(v) : v != of->second.measured)
        found.push_back({n, (*i)[0], "a measured value the table does not hold"});
    }
    if (line.find("last run") != std::string::npos)
      for (std::sregex_iterator i(line.begin(), line.end(), last_run), e; i != e; ++i)
        if (!is_any(number((*i)[1])))
          found.push_back({n, (*i)[0], "a last run's figure the table does not hold"});
    for (const auto& [name, g] : goals) {
      if (line.find("`" + name + "`") == std::string::npos &&
          line.find("goal " + name + " ") == std::string::npos)
        continue;
      const std::string unit = unit_of(name);
      for (std::sregex_iterator i(line.begin(), line.end(), with_unit), e; i != e; ++i) {
        if ((*i)[2] != unit) continue;
        const double v = number((*i)[1]);
        if (v != g.measured && v != g.limit)
          found.push_back({n, (*i)[0],
                           "on a line naming " + name + ", whose table row is " +
                               std::to_string(g.measured) + " (limit " + std::to_string(g.limit) +
                               ")"});
      }
    }
    if ((line.find("PASS") != std::string::npos || line.find("MISS") != std::string::npos) &&
        std::regex_search(line, verdict))
      for (std::sregex_iterator i(line.begin(), line.end(), with_unit), e; i != e; ++i) {
        const std::string u = (*i)[2];
        if (u != "×" && u != "ns" && u != "µs" && u != "ms") continue;
        if (!is_any(number((*i)[1])))
          found.push_back({n, (*i)[0], "a figure next to PASS or MISS the table does not hold"});
      }
    if (line.find("goal") != std::string::npos && std::regex_search(line, goal_word))
      for (std::sregex_iterator i(line.begin(), line.end(), ratio), e; i != e; ++i)
        if (!is_any(number((*i)[1])))
          found.push_back({n, (*i)[0], "a ratio next to a goal the table does not hold"});
  }
  return found;
}

std::vector<fs::path> pages() {
  std::vector<fs::path> out{source() / "README.md"};
  for (const char* dir : {"docs", "bench", "examples"})
    for (const auto& e : fs::recursive_directory_iterator(source() / dir))
      if (e.path().extension() == ".md" && e.path().filename() != "benchmark-figures.md")
        out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, Goal> the_table() {
  return read_table(slurp(source() / "docs" / "benchmark-figures.md"));
}

TEST(BenchmarkFigures, TheTableHoldsEveryGoalOnceWithItsRunAndAVerdictItsFiguresAgreeWith) {
  const auto goals = the_table();
  ASSERT_GE(goals.size(), 25u) << "docs/benchmark-figures.md lost its table";
  const std::string sources =
      slurp(source() / "bench" / "dispatch_bench.cpp") +
      slurp(source() / "bench" / "sandbox_bench.cpp") +
      slurp(source() / "bench" / "observer_bench.cpp") +
      slurp(source() / "bench" / "checkpoint_bench.cpp") +
      slurp(source() / "bench" / "record_bench.cpp") + slurp(source() / "bench" / "job_bench.cpp") +
      slurp(source() / "bench" / "discovery_bench.cpp") +
      slurp(source() / "bench" / "python_bench.cpp") + slurp(source() / "bench" / "mpi_bench.cpp") +
      slurp(source() / "bench" / "pytorch_bench.py") +
      slurp(source() / "bench" / "pytorch_ddp_bench.py");
  for (const auto& [name, g] : goals) {
    SCOPED_TRACE(name);
    EXPECT_EQ(g.verdict, g.measured <= g.limit ? "PASS" : "MISS");
    EXPECT_THAT(g.run, ::testing::MatchesRegex(".*20[0-9][0-9]-[0-9][0-9]-[0-9][0-9].*"))
        << "each row names the date of its run";
    // The name a bench program prints: literally, or built from the parts around a number
    // ("dispatch_" + n + "_hooks_x_indirect_calls").
    std::smatch parts;
    const bool known = sources.find('"' + name + '"') != std::string::npos ||
                       (std::regex_match(name, parts, std::regex("^(.*_)[0-9]+[a-z]*(_.*)$")) &&
                        sources.find('"' + parts[1].str() + '"') != std::string::npos &&
                        sources.find('"' + parts[2].str() + '"') != std::string::npos);
    EXPECT_TRUE(known) << "no bench program reports " << name;
  }
}

TEST(BenchmarkFigures, NoPageStatesAGoalFigureThatIsNotTheTables) {
  const auto goals = the_table();
  ASSERT_FALSE(goals.empty());
  std::vector<std::string> stray;
  for (const fs::path& page : pages())
    for (const Finding& f : stray_figures(slurp(page), goals))
      stray.push_back(fs::relative(page, source()).string() + ":" + std::to_string(f.line) + ": '" +
                      f.figure + "': " + f.why);
  EXPECT_THAT(stray, ::testing::IsEmpty())
      << "state goal figures only in docs/benchmark-figures.md (scripts/bench_figures.py) and "
         "link there";
}

// The rules find what the pages stated before the table: the check can fail.
TEST(BenchmarkFigures, TheRulesFindFiguresTheTableDoesNotHold) {
  const std::map<std::string, Goal> goals{{"python_call", {3.2, 2.0, "MISS", "r 2026-11-26"}},
                                          {"history_row_ns", {409, 1000, "PASS", "r 2026-11-26"}}};
  EXPECT_EQ(
      stray_figures("a step costs 2.9× the same calls from a Python loop (goal 2×)", goals).size(),
      1u);
  EXPECT_EQ(stray_figures("`python_call` = bridge / floor, limit 2.0 (last run: 61.3, MISS)", goals)
                .size(),
            1u);
  EXPECT_EQ(stray_figures("| one Python no-op hook | 3.12× MISS | 2× |", goals).size(), 1u);
  EXPECT_EQ(stray_figures("`goal history_row_ns measured=412.5 limit=1000 PASS`", goals).size(),
            1u);
  // A limit is a figure of the table, but not a goal's measured value.
  EXPECT_EQ(stray_figures("goal history_row_ns measured=1000 limit=1000 PASS", goals).size(), 1u);
  EXPECT_EQ(stray_figures("`history_row_ns` read 380 ns", goals).size(), 1u);
  // What the table holds, and figures of no goal, pass.
  EXPECT_TRUE(stray_figures("`python_call` is 3.20× (goal 2×)", goals).empty());
  EXPECT_TRUE(stray_figures("`history_row_ns`: 409 ns, a 4 KiB chunk", goals).empty());
  EXPECT_TRUE(stray_figures("a scikit-learn 8×8 digits set, retried at 2×, 4×", goals).empty());
}

// The page is what scripts/bench_figures.py writes: feeding it one of its own rows back leaves it
// byte for byte as it is, and a new run of one goal replaces that row alone.
TEST(BenchmarkFigures, TheGeneratorRewritesThePageAndARunReplacesOnlyItsGoalsRows) {
  TempDir dir;
  const fs::path page = dir.path() / "figures.md";
  const std::string original = slurp(source() / "docs" / "benchmark-figures.md");
  { std::ofstream(page) << original; }
  const auto goals = read_table(original);
  ASSERT_TRUE(goals.count("history_row_ns"));
  const Goal& row = goals.at("history_row_ns");
  const fs::path script = source() / "scripts" / "bench_figures.py";
  auto feed = [&](const std::string& input, const std::string& run) {
    { std::ofstream(dir.path() / "in.txt") << input; }
    return Process({"-c", "exec /usr/bin/python3 \"$0\" --page \"$1\" --run \"$2\" < in.txt",
                    script.string(), page.string(), run},
                   dir.path(), {}, "/bin/sh")
        .wait();
  };
  // The row as the page writes it: its own text for measured and limit.
  const std::regex line_re(R"(\| `history_row_ns` \| ([^|]+) \| ([^|]+) \|)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(original, m, line_re));
  const std::string measured = m[1], limit = m[2];
  ProcessResult same = feed("noise\ngoal history_row_ns measured=" + measured + " limit=" + limit +
                                " " + row.verdict + "\n",
                            row.run);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(slurp(page), original) << "docs/benchmark-figures.md is not the generator's output";

  ProcessResult next =
      feed("goal history_row_ns measured=123.000 limit=1000.000 PASS\n", "Release, 2030-01-02, x");
  ASSERT_EQ(next.exit_code, 0) << next.err;
  const auto after = read_table(slurp(page));
  EXPECT_EQ(after.size(), goals.size());
  EXPECT_EQ(after.at("history_row_ns").measured, 123.0);
  EXPECT_EQ(after.at("history_row_ns").run, "Release, 2030-01-02, x");
  for (const auto& [name, g] : goals) {
    if (name != "history_row_ns") {
      EXPECT_EQ(after.at(name).run, g.run) << name;
    }
  }

  ProcessResult wrong = feed("goal history_row_ns measured=5000 limit=1000 PASS\n", "r");
  EXPECT_NE(wrong.exit_code, 0) << "a verdict its figures contradict is refused";
}

}  // namespace HOOKHOST_TEST_FILE
using namespace HOOKHOST_TEST_FILE;
}  // namespace
}  // namespace hookhost::testing
