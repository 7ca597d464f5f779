// Who may use the control socket: no hook's runner, nor anything one started. A runner granted
// the network can connect to the socket (Landlock governs no connect to a pathname socket), so
// the job refuses by the peer's pid as well as by the token.
#pragma once

#include <sys/types.h>

#include <string>

namespace hookhost {

// Why the control socket refuses process `peer` ("the peer (pid 12) is hook 'x''s runner",
// "the peer (pid 13) was started by hook 'x''s runner (pid 12)"), or "" when none of its
// ancestors up to this process is a runner of it, nor is its process group a runner's (a runner
// leads one, which what it starts stays in unless it leaves it). A peer whose parentage cannot
// be read is refused too.
std::string refuse_runner_peer(pid_t peer);

// The parent and the process group of `pid`, read from /proc/PID/stat; false when it cannot be
// read.
bool parent_and_group(pid_t pid, pid_t* parent, pid_t* group);

}  // namespace hookhost
