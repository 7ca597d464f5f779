// The runners this process started and has not reaped yet, by pid, with whose they are: the
// control socket refuses a connection from one of them, or from anything one of them started.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace hookhost::sandbox {

// `whose`: "hook 'x''s runner", "isolation group 'g''s runner". [thread-safe]
void register_runner(pid_t pid, std::string whose);
void forget_runner(pid_t pid);
std::optional<std::string> runner_of(pid_t pid);

}  // namespace hookhost::sandbox
