// A dispatcher that makes an observer's before_run and after_run of one step in one exchange: a
// sandboxed hook's runner gets one message and calls after_run without waiting for the host in
// between. An observer's worker (observer_lane.hpp) uses it when the hook's dispatcher offers it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hookhost/host/hook_dispatch.hpp"

namespace hookhost {

struct ObservedCalls {
  // before_run's context, or nullptr when its before_run ran already and asked for `asked`.
  const hh_run_context* before = nullptr;
  const std::vector<std::string>* asked = nullptr;
  hh_run_context after{};
  // Every value fetched for the hook at this step; after_run gets those before_run asked for.
  hh_run_values values{};
  hh_run_request* request = nullptr;  // before_run's
  // Runs on the calling thread once before_run has returned, before any host call of after_run is
  // served, with the names it asked for already added to `request` (checked as add_fetch checks).
  std::function<void(const CallResult&)> before_returned;
};

struct ObservedResults {
  bool before_called = false;
  CallResult before;
  // Not called after a failed before_run, or when a name before_run asked for is not among the
  // values (the caller knows which).
  bool after_called = false;
  CallResult after;
};

class ObservedExchange {
 public:
  virtual ObservedResults observe_step(const ObservedCalls& calls) = 0;
  // The runner process the hook lives in, shared by the members of an isolation group: their
  // observers share one worker, as their calls reach that runner one at a time anyway.
  virtual const void* runner() const = 0;

 protected:
  ~ObservedExchange() = default;
};

}  // namespace hookhost
