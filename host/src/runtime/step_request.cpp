// hh_run_request: what a hook adds to a step in before_run. Every fetch name and fed view is
// checked here, and a request used outside its before_run is refused.
#include "runtime/step_request.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "runtime/step_engine.hpp"
#include "support/text.hpp"

namespace hookhost {
namespace {

// The builder behind a request pointer, when the call is legal: the request is open (its
// slot's before_run is the call running, on this thread).
RequestBuilder* open_builder(hh_run_request* request, const char* function) {
  if (!request) {
    spdlog::error("a plugin called hh_run_request.{} with a NULL request; call refused", function);
    return nullptr;
  }
  // Only the C struct's own host_data is read from the plugin's pointer: a copy of a request (or
  // a smaller object) must not make the host read past what the plugin handed over.
  auto* b = static_cast<RequestBuilder*>(request->host_data);
  if (!b || b->magic != RequestBuilder::kMagic || &b->c != request) {
    spdlog::error(
        "a plugin called hh_run_request.{} with a request this host never issued; call "
        "refused (plugin misbehaving)",
        function);
    return nullptr;
  }
  HostServices& services = b->slot->calls.services();
  const auto runs_before_run = [&](const RunningCall& call) {
    return call.instance() == &services &&
           call.callback() == static_cast<int>(Callback::before_run);
  };
  // An observer's before_run runs on its worker (after its first, on the training thread).
  const RunningCall* worker_call = b->slot->observer.worker_call();
  const bool running =
      runs_before_run(b->engine->running()) || (worker_call && runs_before_run(*worker_call));
  if (!running || t_current_call != &services) {
    services.misuse(function, running ? "from another thread than its before_run"
                                      : "on a request whose before_run has returned");
    return nullptr;
  }
  b->slot->calls.mark_request_touched();
  return b;
}

hh_status request_add_fetch(hh_run_request* request, const char* name) {
  RequestBuilder* b = open_builder(request, "add_fetch");
  if (!b) return HH_ERROR;
  StepRequest& req = b->slot->request;
  if (std::string error = check_name(name); !error.empty()) {
    req.refuse("before_run gave an invalid fetch name: " + error);
    return HH_ERROR;
  }
  const std::string_view wanted(name);
  if (!b->engine->can_fetch(wanted)) {
    req.refuse("before_run asked to fetch '" + bounded_text(name, 200) +
               "', which the workload does not provide (it provides: " +
               join_names({b->engine->fetchable().begin(), b->engine->fetchable().end()}) + ")");
    return HH_ERROR;
  }
  req.add_fetch(wanted);
  return HH_OK;
}

hh_status request_add_feed(hh_run_request* request, const hh_tensor* value) {
  RequestBuilder* b = open_builder(request, "add_feed");
  if (!b) return HH_ERROR;
  StepRequest& req = b->slot->request;
  const HookIdentity& hook = b->slot->hook;
  if (!value) {
    req.refuse("before_run gave a NULL feed");
    return HH_ERROR;
  }
  if (std::string error = check_view(*value); !error.empty()) {
    const std::string which =
        value->struct_size >= HH_TENSOR_SIZE_1_0 && check_name(value->name).empty()
            ? "'" + bounded_text(value->name, 200) + "'"
            : "a tensor";
    req.refuse("before_run gave an invalid feed of " + which + ": " + error);
    return HH_ERROR;
  }
  const std::string name = value->name;
  if (hook.is_observer()) {
    req.refuse("before_run tried to feed '" + bounded_text(name.c_str(), 200) +
               "', but an observer cannot feed: its before_run runs after the step it "
               "concerns (remove mode = observe from its section to let it feed)");
    return HH_ERROR;
  }
  if (!b->engine->can_feed(name)) {
    req.refuse("before_run asked to feed '" + bounded_text(name.c_str(), 200) +
               "', which the workload does not accept (it accepts: " +
               join_names({b->engine->feedable().begin(), b->engine->feedable().end()}) + ")");
    return HH_ERROR;
  }
  std::string other = b->engine->feeder_of(name);
  if (other.empty() && req.feeds(name)) other = "this hook itself";
  if (!other.empty()) {
    req.refuse("feed conflict: hook '" + hook.name() + "' and " + other + " both feed '" + name +
               "'");
    return HH_ERROR;
  }
  try {
    req.add_feed(name, Tensor::from_view(*value));
  } catch (const std::exception& e) {
    req.refuse("before_run gave an invalid feed of '" + name + "': " + e.what());
    return HH_ERROR;
  }
  return HH_OK;
}

}  // namespace

void StepRequest::add_fetch(std::string_view name) {
  if (std::find(fetches_.begin(), fetches_.end(), name) == fetches_.end())
    fetches_.emplace_back(name);
}

void StepRequest::issue(StepEngine* engine, Slot* slot) {
  RequestBuilder& builder = builder_;
  builder.c.struct_size = HH_RUN_REQUEST_SIZE;
  builder.c.host_data = &builder;
  builder.c.add_fetch = &request_add_fetch;
  builder.c.add_feed = &request_add_feed;
  builder.magic = RequestBuilder::kMagic;
  builder.engine = engine;
  builder.slot = slot;
}

}  // namespace hookhost
