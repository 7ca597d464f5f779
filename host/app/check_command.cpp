// hookhost check PLUGIN.so: the conformance check of one plugin file (host/src/check/).
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "check/check.hpp"
#include "check/report.hpp"
#include "command_line.hpp"
#include "hookhost/host/params.hpp"
#include "support/display_text.hpp"

namespace po = boost::program_options;

namespace {

using hookhost::app::kExitOk;
using hookhost::app::kExitUsage;
constexpr int kExitViolations = hookhost::app::kExitFailed;

const char* const kCheckAbout =
    R"help(Checks one plugin file for its author, or for an operator vetting it before enabling it.

What is checked:
  metadata   the note is read without loading the file; then the file is loaded in a child
             process and its entry symbol compared with the note, field by field
  build      only hookhost_plugin_v1 exported, symbols bound at load (-z now), no executable
             stack, the process-wide calls it imports (exit, signal, sigaction, ...), whether
             'hookhost run' would trust the file where it lies
  behaviour  the hook runs sandboxed (isolation = process, through the real runtime), around a
             synthetic workload that serves every tensor it asks for (loss as
             1 / (1 + 0.01 * step), global_step as the step, any other as the float 0.5; --set
             a threshold so these values cross it to run that branch), in these scenarios:
             a plain run to the end of the data; a recoverable workload error (the session is
             created again); a stop requested mid-run; another hook failing the job beside it;
             its state saved in one run and restored into a new instance in the next; 1000
             steps with the runner's memory sampled; and each parameter not given with --set at
             the edges of its type, one at a time (create() may refuse an edge value)

Violations (exit status 1): a crash (killed by a signal), an exit, a hang (a call over
--timeout-ms), an error returned where nothing provoked one, an exception or an undefined status,
an error text without its terminator, output the host refused (a bad fetch, feed or service
call), memory that grows with the steps, saved state the plugin cannot take back, a note and an
entry that disagree. Warnings (reported; the check still passes): other exported symbols, lazy
binding, an executable stack, process-wide calls, a file 'hookhost run' would not trust, an error
at a parameter's edge only, errors the hook logs.

)help";

const char* const kCheckFooter = R"help(
Every --set parameter keeps its value in every scenario; a required parameter without one means
no scenario can run (a warning, and exit status 2: nothing was checked in the sandbox). One line
per finding says what was seen, where, and why it matters; the last line on standard output is
"check: N violation(s), M warning(s)" (when no scenario ran, standard error says so after it).

Exit status:
  0  no violation (warnings may have been reported)
  1  at least one violation
  2  usage or configuration error, nothing was checked: no such file, not a hookhost plugin, a
     --set key the plugin does not declare, a bad value, a configuration its create() refuses,
     a required parameter without a value (no scenario ran)

Examples:
  hookhost check lib/hookhost/plugins/stop_at_step.so --set last_step=100
  hookhost check ./my_hook.so --set tensors=loss,accuracy --timeout-ms 2000
  hookhost check ./my_hook.so --set tensors=loss --json > report.json
)help";

int usage_error(const std::string& message) {
  return hookhost::app::usage_error(message, "check ");
}

int configuration_error(const std::string& message) {
  std::fprintf(stderr, "hookhost: configuration error: %s\nNothing was checked.\n",
               message.c_str());
  return kExitUsage;
}

}  // namespace

int cmd_check(const std::vector<std::string>& args) {
  po::options_description desc("Options", 100, 50);
  desc.add_options()("help,h", "show this help")(
      "set,s", po::value<std::vector<std::string>>()->composing()->value_name("KEY=VALUE"),
      "a parameter of the plugin, e.g. last_step=100 (repeatable)")(
      "json", "print the report as one JSON object on stdout")(
      "timeout-ms", po::value<int64_t>()->default_value(5000)->value_name("N"),
      "every call's time budget in milliseconds; a call over it is a hang")(
      "verbose,v", "print each scenario's log on stderr, and notes on what was skipped or refused");
  const auto parsed = hookhost::app::parse_command_line(args, desc, "plugin", -1, "check ");
  if (!parsed) return hookhost::app::kExitUsage;
  const po::variables_map& vm = *parsed;
  if (vm.count("help")) {
    std::cout << "Usage: hookhost check PLUGIN.so [--set KEY=VALUE]... [--json] [--timeout-ms N]"
                 " [--verbose]\n\n"
              << kCheckAbout << desc << kCheckFooter;
    return kExitOk;
  }
  std::vector<std::string> plugins;
  if (vm.count("plugin")) plugins = vm["plugin"].as<std::vector<std::string>>();
  if (plugins.size() != 1)
    return usage_error(plugins.empty()
                           ? "check needs a plugin file (PLUGIN.so)"
                           : "check takes one plugin file, got " + std::to_string(plugins.size()));
  // A call needs a budget (without one a hang would hang the check), and one that fits a deadline.
  constexpr int64_t kMaxTimeoutMs = 3'600'000;
  const int64_t timeout_ms = vm["timeout-ms"].as<int64_t>();
  if (timeout_ms < 1 || timeout_ms > kMaxTimeoutMs)
    return usage_error("--timeout-ms must be between 1 and " + std::to_string(kMaxTimeoutMs) +
                       ", got " + std::to_string(timeout_ms));

  hookhost::check::CheckOptions options;
  options.file = plugins[0];
  options.call_timeout = std::chrono::milliseconds(timeout_ms);
  options.verbose = vm.count("verbose") > 0;
  if (vm.count("set")) {
    for (const std::string& setting : vm["set"].as<std::vector<std::string>>()) {
      const auto equals = setting.find('=');
      if (equals == std::string::npos || equals == 0)
        return configuration_error("--set " + hookhost::display_text(setting) +
                                   ": expected KEY=VALUE, a parameter of the plugin and its value");
      options.settings.emplace_back(setting.substr(0, equals), setting.substr(equals + 1));
    }
  }

  hookhost::check::CheckReport report;
  try {
    report = hookhost::check::run_check(options);
  } catch (const hookhost::ConfigError& e) {
    return configuration_error(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hookhost: cannot check %s: %s\n",
                 hookhost::display_text(plugins[0], 1024).c_str(), e.what());
    return kExitUsage;
  }
  std::cout << (vm.count("json") ? hookhost::check::format_json(report)
                                 : hookhost::check::format_text(report, options.verbose));
  std::cout.flush();
  if (report.findings.count(hookhost::check::Severity::violation)) return kExitViolations;
  // A check that ran no scenario checked nothing in the sandbox: it does not pass.
  if (report.scenarios.empty()) {
    std::fprintf(stderr,
                 "hookhost: check: no scenario ran, so the plugin was not checked (see the "
                 "warning above)\n");
    return kExitUsage;
  }
  return kExitOk;
}
