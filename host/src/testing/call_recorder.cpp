#include "testing/call_recorder.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <hookhost/ext/device_values.h>

#include "hookhost/host/tensor.hpp"
#include "sandbox/process_dispatch.hpp"

namespace hookhost::testing {

namespace {

// `step`: Call::step, as testing.hpp reports it; `global_step`: what the call was given.
RecordedCall make_call(Callback callback, int64_t step, int64_t global_step) {
  RecordedCall r;
  r.call.callback = callback;
  r.call.step = step;
  r.global_step = global_step;
  return r;
}

RecordedCall begin_call(int64_t start_step) {
  return make_call(Callback::begin, start_step, start_step);
}

RecordedCall session_call(const hh_session_info& session) {
  RecordedCall r =
      make_call(Callback::after_create_session, session.global_step, session.global_step);
  r.call.creation = session.creation;
  return r;
}

// before_run and after_run name the step they surround: one past the context's global step.
RecordedCall step_call(Callback callback, const hh_run_context& context) {
  RecordedCall r = make_call(callback, context.global_step + 1, context.global_step);
  r.call.stop_requested = context.stop_requested != 0;
  return r;
}

RecordedCall end_call(const hh_end_info& info) {
  RecordedCall r = make_call(Callback::end, info.global_step, info.global_step);
  r.call.outcome = info.outcome;
  r.call.reason = info.reason ? info.reason : "";
  return r;
}

// --- In process: an hh_hook around the plugin's. ---

bool failed(hh_status status) {
  return status != HH_OK && status != HH_STOP_REQUESTED;
}

// Appends `call`, makes it, and fills in what it returned; an escaping exception is recorded and
// passed on to the runtime, which handles it as for any plugin.
template <typename Fn>
hh_status record(CallLog& log, RecordedCall call, hh_error* err, Fn&& make_call) {
  const size_t index = log.calls.size();
  log.calls.push_back(std::move(call));
  try {
    const hh_status status = make_call();
    RecordedCall& r = log.calls[index];
    r.call.status = status;
    if (failed(status) && err) {
      r.call.message = std::string(err->message, ::strnlen(err->message, HH_ERROR_MESSAGE_SIZE));
      r.code = err->code;
    }
    return status;
  } catch (...) {
    log.calls[index].call.status = HH_ERROR;
    log.calls[index].call.message = "an exception escaped the plugin";
    throw;
  }
}

struct RecordedHook {
  hh_hook outer;        // first: the hh_hook* the runtime passes back converts to this object
  hh_hook* inner;       // the plugin's
  hh_hook inner_calls;  // its callback pointers, copied once as the host copies them
  CallLog* log;
  int64_t start_step;
  decltype(hh_device_values_extension::accepts) inner_accepts;
  hh_device_values_extension device_values;
};
static_assert(std::is_standard_layout_v<RecordedHook>);

RecordedHook& recorded(const hh_hook* hook) {
  return *reinterpret_cast<RecordedHook*>(const_cast<hh_hook*>(hook));
}

hh_status recorded_begin(hh_hook* hook, hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.log, begin_call(r.start_step), err,
                [&] { return r.inner_calls.begin(r.inner, err); });
}

hh_status recorded_after_create_session(hh_hook* hook, const hh_session_info* session,
                                        hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.log, session_call(*session), err,
                [&] { return r.inner_calls.after_create_session(r.inner, session, err); });
}

hh_status recorded_before_run(hh_hook* hook, const hh_run_context* context, hh_run_request* request,
                              hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.log, step_call(Callback::before_run, *context), err,
                [&] { return r.inner_calls.before_run(r.inner, context, request, err); });
}

hh_status recorded_after_run(hh_hook* hook, const hh_run_context* context,
                             const hh_run_values* values, hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.log, step_call(Callback::after_run, *context), err,
                [&] { return r.inner_calls.after_run(r.inner, context, values, err); });
}

hh_status recorded_end(hh_hook* hook, const hh_end_info* info, hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.log, end_call(*info), err,
                [&] { return r.inner_calls.end(r.inner, info, err); });
}

void recorded_destroy(hh_hook* hook) {
  std::unique_ptr<RecordedHook> owned(&recorded(hook));
  owned->inner_calls.destroy(owned->inner);
}

int32_t recorded_accepts(const hh_hook* hook, hh_device device) {
  RecordedHook& r = recorded(hook);
  return r.inner_accepts(r.inner, device);
}

// The extension tables the host asks for take the hh_hook it knows: the device-values table is
// given one that passes the plugin its own hh_hook. Other tables are passed on unchanged.
const void* recorded_get_extension(const hh_hook* hook, const char* id) {
  RecordedHook& r = recorded(hook);
  const void* table = r.inner_calls.get_extension(r.inner, id);
  if (!table || !id || std::strcmp(id, HH_EXTENSION_DEVICE_VALUES) != 0) return table;
  const auto* ext = static_cast<const hh_device_values_extension*>(table);
  if (ext->struct_size < HH_DEVICE_VALUES_EXTENSION_SIZE_1_0 || !ext->accepts)
    return table;  // the host refuses it, naming why, as it would the plugin's
  r.inner_accepts = ext->accepts;
  r.device_values = {HH_DEVICE_VALUES_EXTENSION_SIZE, &recorded_accepts};
  return &r.device_values;
}

hh_hook* wrap_hook(hh_hook* inner, CallLog& log, int64_t start_step) {
  auto r = std::make_unique<RecordedHook>();
  r->inner = inner;
  r->inner_calls = hh_hook{};
  std::memcpy(&r->inner_calls, inner, std::min<size_t>(inner->struct_size, sizeof(hh_hook)));
  r->log = &log;
  r->start_step = start_step;
  r->inner_accepts = nullptr;
  r->device_values = {};
  hh_hook& outer = r->outer;
  outer = hh_hook{};
  outer.struct_size = HH_HOOK_SIZE;
  outer.hook_data = inner->hook_data;  // "reserved for the plugin": an extension may read it
  const hh_hook& in = r->inner_calls;
  if (in.begin) outer.begin = &recorded_begin;
  if (in.after_create_session) outer.after_create_session = &recorded_after_create_session;
  if (in.before_run) outer.before_run = &recorded_before_run;
  if (in.after_run) outer.after_run = &recorded_after_run;
  if (in.end) outer.end = &recorded_end;
  outer.destroy = &recorded_destroy;
  if (in.get_extension) outer.get_extension = &recorded_get_extension;
  return &r.release()->outer;
}

thread_local const RecordingScope* t_scope = nullptr;

hh_status recording_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                           hh_error* err) {
  const RecordingScope* scope = t_scope;
  if (!scope) return hh_fail(err, HH_ERROR, "hookhost::testing: create() outside a HookTest");
  const hh_status status = scope->real.create(host, args, out, err);
  // Only a hook the runtime accepts is wrapped; a refused one reaches the runtime as it is.
  if (status == HH_OK && out && *out && (*out)->struct_size >= HH_HOOK_SIZE_1_0 && (*out)->destroy)
    *out = wrap_hook(*out, scope->log, scope->start_step);
  return status;
}

// --- Any tier: a HookDispatch around the hook's. ---

// The request the hook sees: the runtime's own, with every refusal noted on the way back.
struct RecordedRequest {
  hh_run_request c;  // first: the plugin's calls arrive with a pointer to it
  hh_run_request* real;
  std::vector<RefusedRequest>* refused;

  static RecordedRequest* of(hh_run_request* request) {
    return reinterpret_cast<RecordedRequest*>(request);
  }

  void note(const char* function, const char* name, hh_status status) {
    if (status == HH_OK) return;
    RefusedRequest r{function, std::nullopt};
    if (check_name(name).empty()) r.name = name;
    refused->push_back(std::move(r));
  }

  static hh_status add_fetch(hh_run_request* request, const char* name) {
    RecordedRequest* self = of(request);
    const hh_status status = self->real->add_fetch(self->real, name);
    self->note("add_fetch", name, status);
    return status;
  }

  static hh_status add_feed(hh_run_request* request, const hh_tensor* value) {
    RecordedRequest* self = of(request);
    const hh_status status = self->real->add_feed(self->real, value);
    const bool named = value && value->struct_size >= HH_TENSOR_SIZE_1_0;
    self->note("add_feed", named ? value->name : nullptr, status);
    return status;
  }
};
static_assert(std::is_standard_layout_v<RecordedRequest>);

class RecordingDispatch final : public HookDispatch {
 public:
  RecordingDispatch(std::unique_ptr<HookDispatch> inner, CallLog& log, int64_t start_step)
      : inner_(std::move(inner)),
        process_(dynamic_cast<ProcessDispatch*>(inner_.get())),
        log_(log),
        start_step_(start_step) {
    refresh_runner();
  }

  std::string plugin_id() const override { return inner_->plugin_id(); }
  std::string plugin_file() const override { return inner_->plugin_file(); }
  uint32_t state_version() const override { return inner_->state_version(); }
  bool implements(Callback callback) const override { return inner_->implements(callback); }
  bool accepts_device(hh_device device) override { return inner_->accepts_device(device); }
  std::string device_limit(hh_device device) const override { return inner_->device_limit(device); }
  CallResult begin() override {
    return record(begin_call(start_step_), [&] { return inner_->begin(); });
  }
  CallResult after_create_session(const hh_session_info& session) override {
    return record(session_call(session), [&] { return inner_->after_create_session(session); });
  }
  CallResult before_run(const hh_run_context& context, hh_run_request& request) override {
    RecordedCall call = step_call(Callback::before_run, context);
    std::vector<RefusedRequest> refused;
    RecordedRequest recorded{{}, &request, &refused};
    recorded.c.struct_size = HH_RUN_REQUEST_SIZE;
    recorded.c.add_fetch = &RecordedRequest::add_fetch;
    recorded.c.add_feed = &RecordedRequest::add_feed;
    CallResult result =
        record(std::move(call), [&] { return inner_->before_run(context, recorded.c); });
    log_.calls.back().refused = std::move(refused);
    return result;
  }
  CallResult after_run(const hh_run_context& context, const hh_run_values& values) override {
    return record(step_call(Callback::after_run, context),
                  [&] { return inner_->after_run(context, values); });
  }
  CallResult end(const hh_end_info& info) override {
    return record(end_call(info), [&] { return inner_->end(info); });
  }
  std::string destroy() override {
    std::string error = inner_->destroy();
    if (!error.empty()) log_.destroy_error = error;
    return error;
  }
  bool restart(std::string* why) override { return inner_->restart(why); }

 private:
  template <typename Fn>
  CallResult record(RecordedCall call, Fn&& make_call) {
    CallResult result = make_call();
    refresh_runner();
    call.call.status = result.status;
    if (!result.ok()) call.call.message = result.message;
    call.code = result.code;
    call.runner_lost = result.runner_lost;
    log_.calls.push_back(std::move(call));
    return result;
  }

  void refresh_runner() {
    if (!process_) return;
    log_.runner_pid = process_->runner_pid();
    log_.runner_lost = process_->runner_lost();
  }

  std::unique_ptr<HookDispatch> inner_;
  ProcessDispatch* process_;  // inner_, when it is a sandboxed one
  CallLog& log_;
  int64_t start_step_;
};

}  // namespace

std::shared_ptr<hh_plugin_entry> recording_entry(const hh_plugin_entry& real) {
  auto entry = std::make_shared<hh_plugin_entry>();
  const size_t size = std::min<size_t>(real.struct_size, sizeof(hh_plugin_entry));
  std::memcpy(entry.get(), &real, size);
  entry->struct_size = static_cast<uint32_t>(size);
  entry->create = &recording_create;
  return entry;
}

RecordingScope::RecordingScope(const hh_plugin_entry& real_entry, CallLog& call_log,
                               int64_t first_step)
    : real(real_entry), log(call_log), start_step(first_step) {
  t_scope = this;
}

RecordingScope::~RecordingScope() {
  t_scope = nullptr;
}

std::unique_ptr<HookDispatch> recording_dispatch(std::unique_ptr<HookDispatch> inner, CallLog& log,
                                                 int64_t start_step) {
  return std::make_unique<RecordingDispatch>(std::move(inner), log, start_step);
}

}  // namespace hookhost::testing
