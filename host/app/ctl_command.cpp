// hookhost ctl: see and steer a running job through its run directory's control socket.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "command_line.hpp"
#include "control/client.hpp"

namespace hookhost::app {
namespace {

namespace po = boost::program_options;

constexpr const char* kCtlHelp = R"(
Requests (each applies at the job's next step boundary, in the order received):
  status                 global step, steps/s, ETA, newest checkpoint, each hook's state and its
                         per-callback calls, p50, p99 and max
  attach NAME --plugin ID [--set KEY=VALUE]...
                         add hook NAME (as a [hook.NAME] section would): it gets begin and
                         after_create_session, then runs from the next step
  detach NAME            end hook NAME (end: outcome detached, reason "detached: by hookhost
                         ctl"; a plugin built before ABI 1.6 gets outcome stopped; the other
                         outcomes a detach can end with: docs/operations.md)
  set NAME.KEY=VALUE... [--allow-widen]
                         recreate hook NAME with new values and its saved state; if its plugin
                         refuses, it runs on unchanged and you see the plugin's message. A set
                         that gives the hook more (isolation process -> in_process, a weaker
                         confine, an allow_* grant, a raised limit) is refused (exit 2) unless
                         --allow-widen is given
  checkpoint             take a checkpoint at the next step boundary
  stop [--reason TEXT]   stop the job after the current step

Changes are checked like the configuration file, logged, written to the run record and saved in
every checkpoint, so a resumed job runs the hooks it had at that checkpoint.

Examples:
  hookhost ctl runs/demo status --watch
  hookhost ctl runs/demo attach loss_log --plugin logging_tensor --set tensors=loss --set every_n_iter=10
  hookhost ctl runs/demo set loss_log.every_n_iter=100
  hookhost ctl runs/demo detach loss_log
  hookhost ctl runs/demo stop --reason "enough"
Exit status: 0 done, 1 refused or no job answering, 2 usage error. See docs/operations.md.
)";

volatile std::sig_atomic_t g_interrupted = 0;

int print_reply(const control::Reply& reply) {
  if (reply.ok) {
    std::cout << reply.text << std::flush;
    return kExitOk;
  }
  std::cerr << "hookhost ctl: " << reply.text << std::flush;
  return reply.needs_consent ? kExitUsage : kExitFailed;
}

// status --watch: the status again every `interval`, in place on a terminal, until the job ends
// or Ctrl-C.
int watch(const std::string& run_dir, std::chrono::milliseconds interval,
          std::chrono::milliseconds timeout) {
  const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  // Without SA_RESTART: Ctrl-C ends a wait for the job's answer at once, not when it comes.
  struct sigaction on_interrupt {};
  on_interrupt.sa_handler = [](int) { g_interrupted = 1; };
  ::sigemptyset(&on_interrupt.sa_mask);
  ::sigaction(SIGINT, &on_interrupt, nullptr);
  for (bool first = true; !g_interrupted; first = false) {
    control::Reply reply;
    try {
      reply = control::send_request(run_dir, {"status"}, timeout, &g_interrupted);
    } catch (const control::Interrupted&) {
      return kExitOk;
    } catch (const std::exception& e) {
      if (first) {
        std::cerr << "hookhost ctl: " << e.what() << "\n";
        return kExitFailed;
      }
      std::cout << "hookhost ctl: the job no longer answers (" << e.what() << ")\n";
      return kExitOk;
    }
    if (terminal)
      std::cout << "\x1b[H\x1b[2J";  // home, clear: the status replaces the last
    else if (!first)
      std::cout << "\n";
    if (print_reply(reply) != kExitOk) return kExitFailed;
    for (auto slept = std::chrono::milliseconds(0); slept < interval && !g_interrupted;
         slept += std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return kExitOk;
}

}  // namespace
}  // namespace hookhost::app

using namespace hookhost;
using namespace hookhost::app;
namespace po = boost::program_options;

int cmd_ctl(const std::vector<std::string>& args) {
  po::options_description desc("Usage: hookhost ctl RUN_DIR REQUEST [ARGS] [options]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "plugin", po::value<std::string>()->value_name("ID"), "attach: the new hook's plugin")(
      "set,s", po::value<std::vector<std::string>>()->composing()->value_name("KEY=VALUE"),
      "attach: a key of the new hook's section (repeatable)")(
      "reason", po::value<std::string>()->value_name("TEXT"), "stop: why, for the log and record")(
      "allow-widen",
      "set: give the hook more than it has (the operator's consent, as in the "
      "configuration file)")("watch,w",
                             "status: refresh every --interval until the job ends or Ctrl-C")(
      "interval", po::value<double>()->default_value(1.0)->value_name("SECS"),
      "status --watch: seconds between refreshes")(
      "timeout", po::value<int>()->default_value(30000)->value_name("MS"),
      "how long to wait for the job's answer");
  const auto vm = parse_command_line(args, desc, "words", -1, "ctl ");
  if (!vm) return kExitUsage;
  if (vm->count("help")) {
    std::cout << desc << kCtlHelp;
    return kExitOk;
  }
  std::vector<std::string> words;
  if (vm->count("words")) words = (*vm)["words"].as<std::vector<std::string>>();
  if (words.size() < 2) return usage_error("expected a run directory and a request", "ctl ");
  const std::string run_dir = words[0];
  words.erase(words.begin());
  const std::string& verb = words[0];
  const auto timeout = std::chrono::milliseconds((*vm)["timeout"].as<int>());
  if (timeout.count() <= 0) return usage_error("--timeout must be positive", "ctl ");
  auto only_with = [&](const char* option, const char* request) {
    return vm->count(option) && verb != request;
  };
  if (only_with("plugin", "attach") || only_with("set", "attach"))
    return usage_error("--plugin and --set go with attach", "ctl ");
  if (only_with("reason", "stop")) return usage_error("--reason goes with stop", "ctl ");
  if (only_with("watch", "status")) return usage_error("--watch goes with status", "ctl ");
  if (only_with("allow-widen", "set")) return usage_error("--allow-widen goes with set", "ctl ");

  if (verb == "attach") {
    if (words.size() != 2 || !vm->count("plugin"))
      return usage_error("attach takes NAME and --plugin ID (and any --set KEY=VALUE)", "ctl ");
    words.push_back((*vm)["plugin"].as<std::string>());
    if (vm->count("set"))
      for (const auto& entry : (*vm)["set"].as<std::vector<std::string>>()) words.push_back(entry);
  } else if (verb == "stop") {
    if (words.size() != 1) return usage_error("stop takes --reason TEXT, not words", "ctl ");
    if (vm->count("reason")) words.push_back((*vm)["reason"].as<std::string>());
  } else if (verb == "status") {
    if (words.size() != 1) return usage_error("status takes no words", "ctl ");
    if (vm->count("watch")) {
      const double interval = (*vm)["interval"].as<double>();
      if (!(interval >= 0.1 && interval <= 3600))
        return usage_error("--interval is 0.1 to 3600 seconds", "ctl ");
      return watch(run_dir, std::chrono::milliseconds(static_cast<int64_t>(interval * 1000)),
                   timeout);
    }
  } else if (verb == "set") {
    if (vm->count("allow-widen")) words.insert(words.begin() + 1, "--allow-widen");
  } else if (verb != "detach" && verb != "checkpoint") {
    return usage_error(
        "unknown request '" + verb + "' (status, attach, detach, set, checkpoint or stop)", "ctl ");
  }
  try {
    return print_reply(control::send_request(run_dir, words, timeout));
  } catch (const std::exception& e) {
    std::cerr << "hookhost ctl: " << e.what() << "\n";
    return kExitFailed;
  }
}
