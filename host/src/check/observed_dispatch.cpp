#include "check/observed_dispatch.hpp"

#include <type_traits>

#include "hookhost/host/tensor.hpp"

namespace hookhost::check {

// The request the hook sees: the runtime's own, with every refusal noted on the way back.
struct ObservedRequest {
  hh_run_request c;  // first: the plugin's calls arrive with a pointer to it
  hh_run_request* real;
  const SyntheticSession* session;
  std::vector<RefusedRequest>* refused;

  static ObservedRequest* of(hh_run_request* request) {
    return reinterpret_cast<ObservedRequest*>(request);
  }

  void note(const char* function, const char* name, hh_status status) {
    if (status == HH_OK) return;
    RefusedRequest r{function, {}, false};
    if (check_name(name).empty()) {
      r.name = name;
      r.unserved = !session->serves(r.name);
    }
    refused->push_back(std::move(r));
  }

  static hh_status add_fetch(hh_run_request* request, const char* name) {
    ObservedRequest* self = of(request);
    const hh_status status = self->real->add_fetch(self->real, name);
    self->note("add_fetch", name, status);
    return status;
  }

  static hh_status add_feed(hh_run_request* request, const hh_tensor* value) {
    ObservedRequest* self = of(request);
    const hh_status status = self->real->add_feed(self->real, value);
    const bool named = value && value->struct_size >= HH_TENSOR_SIZE_1_0;
    self->note("add_feed", named ? value->name : nullptr, status);
    return status;
  }
};
static_assert(std::is_standard_layout_v<ObservedRequest>);

ObservedDispatch::ObservedDispatch(std::unique_ptr<HookDispatch> inner, CallRecord& record,
                                   const SyntheticSession& session)
    : inner_(std::move(inner)),
      process_(dynamic_cast<ProcessDispatch*>(inner_.get())),
      record_(record),
      session_(session) {
  refresh_runner();
}

void ObservedDispatch::refresh_runner() {
  if (!process_) return;
  record_.runner_pid = process_->runner_pid();
  record_.runner_lost = process_->runner_lost();
}

CallResult ObservedDispatch::observe(const char* callback, std::optional<int64_t> step,
                                     CallResult result, std::vector<RefusedRequest> refused) {
  refresh_runner();
  for (const auto& r : refused)
    if (r.unserved) record_.unserved_names.insert(r.name);
  if (!result.ok() || !refused.empty())
    record_.calls.push_back({callback, step, result, std::move(refused)});
  return result;
}

CallResult ObservedDispatch::begin() {
  return observe("begin", session_.global_step(), inner_->begin());
}

CallResult ObservedDispatch::after_create_session(const hh_session_info& session) {
  return observe("after_create_session", session.global_step,
                 inner_->after_create_session(session));
}

CallResult ObservedDispatch::before_run(const hh_run_context& context, hh_run_request& request) {
  std::vector<RefusedRequest> refused;
  ObservedRequest observed{{}, &request, &session_, &refused};
  observed.c.struct_size = HH_RUN_REQUEST_SIZE;
  observed.c.add_fetch = &ObservedRequest::add_fetch;
  observed.c.add_feed = &ObservedRequest::add_feed;
  CallResult result = inner_->before_run(context, observed.c);
  return observe("before_run", context.global_step, std::move(result), std::move(refused));
}

CallResult ObservedDispatch::after_run(const hh_run_context& context, const hh_run_values& values) {
  return observe("after_run", context.global_step, inner_->after_run(context, values));
}

CallResult ObservedDispatch::end(const hh_end_info& info) {
  return observe("end", info.global_step, inner_->end(info));
}

std::string ObservedDispatch::destroy() {
  std::string error = inner_->destroy();
  if (!error.empty()) record_.destroy_error = error;
  return error;
}

}  // namespace hookhost::check
