// hh_run_request: what a hook adds to a step in before_run. Every fetch name and fed view is
// checked here, and a request used outside its before_run is refused.
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
  const auto runs_before_run = [&](const RunningCall& call) {
    return call.instance() == b->slot->services.get() &&
           call.callback() == static_cast<int>(Callback::before_run);
  };
  // An observer's before_run runs on its worker (after its first, on the training thread).
  const bool running = runs_before_run(b->engine->running()) ||
                       (b->slot->worker_running && runs_before_run(*b->slot->worker_running));
  if (!running || t_current_call != b->slot->services.get()) {
    b->slot->services->misuse(function, running ? "from another thread than its before_run"
                                                : "on a request whose before_run has returned");
    return nullptr;
  }
  b->slot->request_touched = true;
  return b;
}

hh_status add_fetch(hh_run_request* request, const char* name) {
  RequestBuilder* b = open_builder(request, "add_fetch");
  if (!b) return HH_ERROR;
  Slot& slot = *b->slot;
  if (std::string error = check_name(name); !error.empty()) {
    slot.request_error = "before_run gave an invalid fetch name: " + error;
    return HH_ERROR;
  }
  const std::string_view wanted(name);
  if (!b->engine->can_fetch(wanted)) {
    slot.request_error =
        "before_run asked to fetch '" + bounded_text(name, 200) +
        "', which the workload does not provide (it provides: " +
        join_names({b->engine->fetchable().begin(), b->engine->fetchable().end()}) + ")";
    return HH_ERROR;
  }
  if (std::find(slot.fetches.begin(), slot.fetches.end(), wanted) == slot.fetches.end())
    slot.fetches.emplace_back(wanted);
  return HH_OK;
}

hh_status add_feed(hh_run_request* request, const hh_tensor* value) {
  RequestBuilder* b = open_builder(request, "add_feed");
  if (!b) return HH_ERROR;
  Slot& slot = *b->slot;
  if (!value) {
    slot.request_error = "before_run gave a NULL feed";
    return HH_ERROR;
  }
  if (std::string error = check_view(*value); !error.empty()) {
    const std::string which =
        value->struct_size >= HH_TENSOR_SIZE_1_0 && check_name(value->name).empty()
            ? "'" + bounded_text(value->name, 200) + "'"
            : "a tensor";
    slot.request_error = "before_run gave an invalid feed of " + which + ": " + error;
    return HH_ERROR;
  }
  const std::string name = value->name;
  if (slot.settings.observer.enabled) {
    slot.request_error = "before_run tried to feed '" + bounded_text(name.c_str(), 200) +
                         "', but an observer cannot feed: its before_run runs after the step it "
                         "concerns (remove mode = observe from its section to let it feed)";
    return HH_ERROR;
  }
  if (!b->engine->can_feed(name)) {
    slot.request_error = "before_run asked to feed '" + bounded_text(name.c_str(), 200) +
                         "', which the workload does not accept (it accepts: " +
                         join_names({b->engine->feedable().begin(), b->engine->feedable().end()}) +
                         ")";
    return HH_ERROR;
  }
  std::string other = b->engine->feeder_of(name);
  if (other.empty() && slot.feeds.count(name)) other = "this hook itself";
  if (!other.empty()) {
    slot.request_error = "feed conflict: hook '" + slot.settings.instance_name + "' and " + other +
                         " both feed '" + name + "'";
    return HH_ERROR;
  }
  try {
    slot.feeds.emplace(name, Tensor::from_view(*value));
  } catch (const std::exception& e) {
    slot.request_error = "before_run gave an invalid feed of '" + name + "': " + e.what();
    return HH_ERROR;
  }
  return HH_OK;
}

}  // namespace

void init_request(RequestBuilder& builder, StepEngine* engine, Slot* slot) {
  builder.c.struct_size = HH_RUN_REQUEST_SIZE;
  builder.c.host_data = &builder;
  builder.c.add_fetch = &add_fetch;
  builder.c.add_feed = &add_feed;
  builder.magic = RequestBuilder::kMagic;
  builder.engine = engine;
  builder.slot = slot;
}

}  // namespace hookhost
