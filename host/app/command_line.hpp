// What every hookhost command shares: its exit statuses and how it reports a usage mistake.
#pragma once

#include <cstdio>
#include <string>

namespace hookhost::app {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // the job failed; for check, a violation was found
constexpr int kExitUsage = 2;   // usage or configuration error: nothing ran

// Prints "hookhost: MESSAGE" and where the command's help is; returns kExitUsage. `command` is
// the command with a trailing space ("run ", "plugins ") or "" for the main help.
inline int usage_error(const std::string& message, const std::string& command) {
  std::fprintf(stderr, "hookhost: %s\nRun 'hookhost %s--help' for usage.\n", message.c_str(),
               command.c_str());
  return kExitUsage;
}

}  // namespace hookhost::app
