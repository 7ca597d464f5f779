#include "job/control_peer.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "sandbox/runner_registry.hpp"

namespace hookhost {

bool parent_and_group(pid_t pid, pid_t* parent, pid_t* group) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so read after the last ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  long p = -1, g = -1;
  if (!(rest >> state >> p >> g)) return false;
  *parent = static_cast<pid_t>(p);
  *group = static_cast<pid_t>(g);
  return true;
}

std::string refuse_runner_peer(pid_t peer) {
  const std::string who = "the peer (pid " + std::to_string(peer) + ")";
  if (peer <= 0) return who + " has no pid this job can see";
  const pid_t self = ::getpid();
  pid_t pid = peer;
  // A runner's descendant has the runner among its ancestors, unless it was orphaned (then
  // the token it cannot read refuses it).
  for (int depth = 0; depth < 1024 && pid > 1 && pid != self; ++depth) {
    if (const auto runner = sandbox::runner_of(pid)) {
      if (pid == peer) return who + " is " + *runner;
      return who + " was started by " + *runner + " (pid " + std::to_string(pid) + ")";
    }
    pid_t parent = -1, group = -1;
    if (!parent_and_group(pid, &parent, &group)) {
      if (pid == peer) return who + " cannot be checked: its /proc entry does not read";
      break;  // an ancestor ended meanwhile: its children were handed on, not to a runner
    }
    if (pid == peer && group != peer)
      if (const auto runner = sandbox::runner_of(group))
        return who + " is in the process group of " + *runner + " (pid " + std::to_string(group) +
               ")";
    pid = parent;
  }
  return {};
}

}  // namespace hookhost
