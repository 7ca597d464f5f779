// The hookhost program: dispatches to its commands (run, plugins, check, report, ctl, new).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <hookhost/version.h>
#include "command_line.hpp"
#include "new_command.hpp"
#include "plugins_command.hpp"
#include "run_command.hpp"
#include "runtime/crash_blame.hpp"

using namespace hookhost::app;

namespace {

const char* const kMainHelp =
    R"(hookhost )" HOOKHOST_VERSION_STRING R"( - a plugin host for training-loop hooks

Usage:
  hookhost run [--config FILE] [options]     run a training job with hooks
  hookhost run --check --config FILE         validate a job's configuration; run no step
  hookhost plugins list [--plugin-dir DIR]   list the plugins found (runs no plugin code)
  hookhost plugins describe ID               show a plugin's parameters
  hookhost check PLUGIN.so [--set K=V]...    check a plugin file: metadata, build, sandboxed runs
  hookhost report RUN_DIR [--output FILE]    write a run's report.html (curves, hook cost, timeline)
  hookhost ctl RUN_DIR REQUEST               see or steer a running job: status, attach, detach,
                                             set, checkpoint, stop
  hookhost new NAME [--lang cpp|c]           start a plugin project (builds, tests, runs)
  hookhost COMMAND --help                    help on one command
  hookhost --version

Examples:
  hookhost run --config <prefix>/share/doc/hookhost/examples/demo.ini --run-dir demo
  hookhost run --set hook.stop.plugin=stop_at_step --set hook.stop.last_step=100
  hookhost plugins describe logging_tensor
  hookhost new loss_guard && cat loss_guard/README.md

Plugin folders are searched in this order: --plugin-dir, [run] plugin_dir in the config,
HOOKHOST_PLUGIN_PATH (colon-separated), then the built-in plugins.

Exit status:
  0      the job completed, or a hook stopped it (run --check: the configuration is valid)
  1      the job failed (a workload error, a hook with on_error = fail, ...); with run --strict,
         also a job in which any hook failed (disabled, an error under continue, a lost runner)
  2      usage or configuration error (nothing ran)
  70     a plugin or library called exit(), _exit() or _Exit() during the job; in a distributed
         job, an internal error ended every process
  128+N  stopped by signal N (130 for SIGINT, 143 for SIGTERM), or killed by it (134 SIGABRT,
         139 SIGSEGV, 137 SIGKILL)
)";

}  // namespace

int cmd_check(const std::vector<std::string>& args);   // app/check_command.cpp
int cmd_report(const std::vector<std::string>& args);  // app/report_command.cpp
int cmd_ctl(const std::vector<std::string>& args);     // app/ctl_command.cpp

int run_program(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kMainHelp;
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::printf("hookhost %s (plugin ABI %d.%d)\n", HOOKHOST_VERSION_STRING, HH_ABI_MAJOR,
                HH_ABI_MINOR);
    return kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "run") return cmd_run(args);
  if (command == "plugins") return cmd_plugins(args);
  if (command == "check") return cmd_check(args);
  if (command == "report") return cmd_report(args);
  if (command == "ctl") return cmd_ctl(args);
  if (command == "new") return cmd_new(args);
  return usage_error("unknown command '" + command + "'", "");
}

int main(int argc, char** argv) {
  // Before any plugin is loaded: a hook that crashes or exits the process gets named.
  hookhost::CrashBlame::install();
  const int status = run_program(argc, argv);
  hookhost::CrashBlame::program_exits();
  return status;
}
