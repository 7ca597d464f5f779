#include "check/check.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <system_error>
#include <tuple>

#include "check/build_hygiene.hpp"
#include "check/load_probe.hpp"
#include "check/param_edges.hpp"
#include "check/plugin_file.hpp"
#include "check/scenario_run.hpp"
#include "check/verdicts.hpp"
#include "hookhost/host/params.hpp"
#include "support/display_text.hpp"
#include "support/sanitizer.hpp"
#include "support/text.hpp"

namespace hookhost::check {

namespace fs = std::filesystem;

namespace {

// Few steps per scenario keep a whole check within seconds; only the memory scenario runs long.
constexpr int64_t kSteps = 20;
constexpr int64_t kEdgeSteps = 10;
constexpr int64_t kRecoverableErrorAt = 5;
constexpr int64_t kStopAfter = 10;
constexpr int64_t kNeighbourFailsAt = 8;
// The runner's memory is read after N, 5.5 N and 10 N steps; growth beyond the threshold that
// continues through both halves is a leak, not a one-off allocation.
const std::vector<int64_t> kMemorySamples = {100, 550, 1000};
constexpr uint64_t kMemoryGrowthThreshold = uint64_t{8} << 20;
constexpr int kMaxLearningAttempts = 3;
#if defined(HOOKHOST_ASAN)
// AddressSanitizer's quarantine keeps freed memory resident, so the runner's RSS grows with every
// allocation whether or not anything leaks.
constexpr bool kResidentMemoryTellsLeaks = false;
#else
constexpr bool kResidentMemoryTellsLeaks = true;
#endif

// A folder of its own for the scenarios' run directories, removed afterwards.
class WorkFolder {
 public:
  WorkFolder() {
    std::string pattern = (fs::temp_directory_path() / "hookhost-check-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot make a temporary folder for the scenarios' run directories");
    path_ = pattern;
  }
  ~WorkFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  WorkFolder(const WorkFolder&) = delete;
  WorkFolder& operator=(const WorkFolder&) = delete;
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

std::string display_setting(const std::string& key, const std::string& value) {
  return "--set " + display_text(key, 128) + "=" + display_text(value, 256);
}

// Checks the --set values as 'hookhost run' checks a hook's keys; throws ConfigError naming the
// setting. Required parameters without a value are returned, not refused: the check then runs
// what needs no instance.
std::vector<std::string> check_settings(
    const PluginMetadata& plugin, const std::string& instance,
    const std::vector<std::pair<std::string, std::string>>& settings,
    const std::multimap<std::string, std::string>& base) {
  const auto setting_of = [&](const std::string& key) {
    for (const auto& [k, v] : settings)
      if (k == key) return display_setting(k, v) + ": ";
    return std::string();
  };
  for (const auto& [key, value] : settings) {
    const ParamSpec* spec = plugin.find_param(key);
    if (!spec || spec->type != HH_PARAM_TYPE_FLOAT) continue;
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (end == value.c_str() + value.size() && !value.empty() && !std::isfinite(number))
      throw ConfigError(setting_of(key) + describe_hook(instance, plugin.id) + ": parameter '" +
                            key + "' must be a finite number (not NaN or infinite), got '" +
                            display_text(value) + "'",
                        key);
  }
  std::vector<std::string> missing;
  for (const ParamSpec& spec : plugin.params)
    if (spec.flag == ParamFlag::required && !base.count(spec.name)) missing.push_back(spec.name);
  try {
    resolve_params(plugin, instance, base);
  } catch (const ConfigError& e) {
    const bool only_missing = std::find(missing.begin(), missing.end(), e.key()) != missing.end();
    if (!only_missing) throw ConfigError(setting_of(e.key()) + e.what(), e.key());
  }
  return missing;
}

// Tensor names a hook is likely to fetch or feed: the usual ones, and every string its
// configuration holds (a tensor list, a monitored tensor's name).
std::set<std::string> likely_names(const PluginMetadata& plugin,
                                   const std::multimap<std::string, std::string>& base) {
  std::set<std::string> names = {"loss", "global_step", "learning_rate"};
  const auto add_items = [&](const std::string& text) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = std::min(text.find(',', start), text.size());
      std::string item = text.substr(start, comma - start);
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      if (!item.empty()) names.insert(item);
      start = comma + 1;
    }
  };
  for (const ParamSpec& spec : plugin.params) {
    if (spec.type != HH_PARAM_TYPE_STRING && spec.type != HH_PARAM_TYPE_STRING_LIST) continue;
    const auto given = base.find(spec.name);
    if (given != base.end())
      add_items(given->second);
    else if (spec.flag == ParamFlag::defaulted)
      add_items(spec.default_value);
  }
  return names;
}

class Checker {
 public:
  Checker(CheckTarget& target, CheckReport& report) : target_(target), report_(report) {}

  // Runs a scenario (again, when the hook asked for tensors the workload did not serve yet, so
  // that the judged run serves them) and adds what it found. Returns the outcome.
  RunOutcome run(const RunSpec& spec, bool base_configuration = false) {
    RunOutcome outcome;
    for (int attempt = 1;; ++attempt) {
      outcome = run_scenario(target_, spec);
      std::set<std::string> learnt;
      for (const auto& name : outcome.calls.unserved_names)
        if (!target_.names.count(name)) learnt.insert(name);
      if (learnt.empty() || attempt == kMaxLearningAttempts) break;
      target_.names.insert(learnt.begin(), learnt.end());
    }
    report_.scenarios.push_back(spec.scenario);
    if (!outcome.internal_error.empty())
      report_.notes.push_back("scenario '" + spec.scenario +
                              "' ended with an internal error of the host: " +
                              display_text(outcome.internal_error, 1024));
    if (outcome.created) {
      if (spec.edge)
        for (const std::string& failure : failure_signatures(outcome))
          if (spec.plain_failures.count(failure)) ++edges_failing_like_plain_;
      add_bounded(judge_run(target_, spec, outcome));
      return outcome;
    }
    const CreateFailure failure = classify_create_failure(target_, outcome.create_error);
    if (failure.kind == "refused") {
      // The plugin's own refusal of the user's configuration: a configuration error, as in
      // 'hookhost run'.
      if (base_configuration) throw ConfigError(outcome.create_error);
      if (spec.edge) {
        report_.notes.push_back("scenario '" + spec.scenario + "': create() refused the value: " +
                                display_text(failure.message, 1024));
        return outcome;
      }
    }
    Finding f;
    f.scenario = spec.scenario;
    f.callback = failure.callback;
    f.message = display_text(failure.message, 1024);
    if (failure.kind == "invalid-output") {
      f.kind = failure.kind;
      f.why =
          "the host cannot use what create() returned, so the hook never runs: create() returns "
          "HH_OK with an instance that has destroy, or HH_ERROR with a message";
    } else if (failure.kind != "refused") {
      f.kind = failure.kind;
    } else if (spec.restored) {
      f.kind = "state-restore";
      f.message = "create() refused the state it saved in the previous run: " + f.message;
    } else {
      f.kind = "error";
      f.message = "create() refused the configuration the plain run accepted: " + f.message;
    }
    report_.findings.add(std::move(f));
    return outcome;
  }

  // Failures of edge runs that the plain run showed too (they are not reported again).
  int edges_failing_like_plain() const { return edges_failing_like_plain_; }

 private:
  // A hook that fails on every step with a new text each time is one problem, not a thousand
  // lines: the first few findings of a kind in a callback are kept, and the last kept one counts
  // the others.
  void add_bounded(std::vector<Finding> found) {
    constexpr int kKeptPerKind = 3;
    struct Tally {
      int kept = 0;
      int dropped = 0;
      size_t last_kept = 0;
    };
    std::map<std::tuple<Severity, std::string, std::string>, Tally> tallies;
    std::vector<Finding> kept;
    for (Finding& f : found) {
      Tally& tally = tallies[{f.severity, f.kind, f.callback}];
      if (tally.kept == kKeptPerKind) {
        ++tally.dropped;
        continue;
      }
      ++tally.kept;
      tally.last_kept = kept.size();
      kept.push_back(std::move(f));
    }
    for (const auto& [kind, tally] : tallies)
      if (tally.dropped > 0)
        kept[tally.last_kept].message +=
            " (and " + std::to_string(tally.dropped) + " more like it in this scenario)";
    for (Finding& f : kept) report_.findings.add(std::move(f));
  }

  CheckTarget& target_;
  CheckReport& report_;
  int edges_failing_like_plain_ = 0;
};

}  // namespace

CheckReport run_check(const CheckOptions& options) {
  CheckReport report;
  report.file = options.file;
  const DiscoveredPlugin plugin = read_plugin_file(options.file);
  report.plugin = plugin.metadata;
  const std::string instance = plugin.metadata.id;

  std::multimap<std::string, std::string> base;
  for (const auto& [key, value] : options.settings) base.emplace(key, value);
  const std::vector<std::string> missing =
      check_settings(plugin.metadata, instance, options.settings, base);

  for (Finding& f : check_build_hygiene(plugin)) report.findings.add(std::move(f));

  const LoadProbeResult loaded = probe_load(plugin, options.call_timeout);
  if (!loaded.loaded) {
    Finding f;
    f.kind = loaded.kind;
    f.callback = "load";
    f.message = display_text(loaded.message, 2048);
    report.findings.add(std::move(f));
    report.notes.push_back("no scenario ran: the plugin does not load");
    return report;
  }
  if (!missing.empty()) {
    std::string names, example;
    for (const auto& name : missing) {
      names += (names.empty() ? "'" : ", '") + name + "'";
      example += " --set " + name + "=...";
    }
    Finding f;
    f.severity = Severity::warning;
    f.kind = "not-run";
    f.message = "no scenario ran in the sandbox: required parameter(s) " + names +
                " have no value; give them with" + example;
    report.findings.add(std::move(f));
    return report;
  }

  CheckTarget target;
  target.plugin = std::make_shared<const LoadedPlugin>(plugin.file, plugin.metadata, nullptr);
  target.instance = instance;
  target.call_timeout = options.call_timeout;
  target.sink = std::make_shared<CaptureSink>();
  target.logger = make_capture_logger(target.sink, options.verbose);
  target.names = likely_names(plugin.metadata, base);
  WorkFolder work;
  Checker checker(target, report);
  int index = 0;
  const auto spec_for = [&](std::string scenario, int64_t steps) {
    RunSpec spec;
    spec.scenario = std::move(scenario);
    spec.params = base;
    spec.run_dir = work / ("scenario-" + std::to_string(++index));
    spec.workload.steps = steps;
    return spec;
  };

  RunSpec plain = spec_for("plain run", kSteps);
  const RunOutcome plain_outcome = checker.run(plain, true);
  if (!plain_outcome.created) {
    report.notes.push_back("no other scenario ran: each needs an instance, and create() failed");
    return report;
  }

  RunSpec recovery = spec_for("recoverable workload error", kSteps);
  recovery.workload.recoverable_error_at = kRecoverableErrorAt;
  checker.run(recovery);

  RunSpec stop = spec_for("stop requested mid-run", kSteps);
  stop.stop_after_steps = kStopAfter;
  checker.run(stop);

  RunSpec neighbour = spec_for("another hook fails", kSteps);
  neighbour.neighbour_fails_at = kNeighbourFailsAt;
  checker.run(neighbour);

  RunSpec saving = spec_for("save and restore (run 1, saving)", kSteps);
  const RunOutcome saved = checker.run(saving);
  if (saved.created && saved.states.count(instance)) {
    RunSpec restoring = spec_for("save and restore (run 2, restored)", kSteps);
    restoring.run_dir = saving.run_dir;  // a resumed job continues in its run directory
    restoring.workload.first_step = saved.result.global_step;
    restoring.restore = saved.states;
    restoring.restored = true;
    checker.run(restoring);
  } else if (saved.created) {
    report.notes.push_back(
        "save and restore: the hook saved no state, so there was none to restore");
  }

  RunSpec memory = spec_for("memory over " + std::to_string(kMemorySamples.back()) + " steps",
                            kMemorySamples.back());
  memory.memory_samples_after = kMemorySamples;
  const RunOutcome measured = checker.run(memory);
  if (!kResidentMemoryTellsLeaks) {
    report.notes.push_back(
        "memory: not compared, this is a sanitizer build (freed memory stays resident)");
  } else if (measured.memory.size() == kMemorySamples.size()) {
    if (std::string growth = describe_growth(measured.memory, kMemoryGrowthThreshold);
        !growth.empty()) {
      Finding f;
      f.kind = "memory-growth";
      f.scenario = memory.scenario;
      f.message = std::move(growth);
      report.findings.add(std::move(f));
    }
  } else if (measured.created) {
    report.notes.push_back(
        measured.calls.runner_lost
            ? std::string("memory: not compared, the hook's runner was lost before the last sample")
            : "memory: not compared, the run ended after " +
                  std::to_string(measured.result.steps_run) + " of " +
                  std::to_string(kMemorySamples.back()) + " steps");
  }

  for (const ParamEdge& edge : parameter_edges(plugin.metadata, base)) {
    RunSpec spec = spec_for("edge " + edge.label, kEdgeSteps);
    spec.params.emplace(edge.name, edge.text);
    spec.edge = true;
    spec.plain_failures = failure_signatures(plain_outcome);
    checker.run(spec);
  }
  if (checker.edges_failing_like_plain() > 0)
    report.notes.push_back(
        "parameter edges: " + std::to_string(checker.edges_failing_like_plain()) +
        " failure(s) in the edge runs are the plain run's too, so they are reported for the "
        "plain run and not blamed on the edges; fix them and check again to see the edges alone");
  return report;
}

}  // namespace hookhost::check
