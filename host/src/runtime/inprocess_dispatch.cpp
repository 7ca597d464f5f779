#include <cstring>
#include <exception>

#include <hookhost/ext/device_values.h>

#include "hookhost/host/hook_dispatch.hpp"
#include "runtime/call_result.hpp"

namespace hookhost {
namespace {

class InProcessDispatch final : public HookDispatch {
 public:
  InProcessDispatch(hh_hook* hook, std::string plugin_id, std::string plugin_file,
                    uint32_t abi_minor)
      : hook_(hook),
        begin_(hook->begin),
        after_create_session_(hook->after_create_session),
        before_run_(hook->before_run),
        after_run_(hook->after_run),
        end_(hook->end),
        destroy_(hook->destroy),
        get_extension_(hook->get_extension),
        plugin_id_(std::move(plugin_id)),
        plugin_file_(std::move(plugin_file)),
        abi_minor_(abi_minor) {}

  std::string plugin_id() const override { return plugin_id_; }
  std::string plugin_file() const override { return plugin_file_; }
  uint32_t plugin_abi_minor() const override { return abi_minor_; }

  bool implements(Callback callback) const override {
    switch (callback) {
      case Callback::begin: return begin_ != nullptr;
      case Callback::after_create_session: return after_create_session_ != nullptr;
      case Callback::before_run: return before_run_ != nullptr;
      case Callback::after_run: return after_run_ != nullptr;
      case Callback::end: return end_ != nullptr;
    }
    return false;
  }

  // Asks for the extensions this host uses; returns why an offered table was ignored.
  std::string query_extensions() {
    const void* table = extension(HH_EXTENSION_DEVICE_VALUES);
    if (!table) return {};
    const auto* ext = static_cast<const hh_device_values_extension*>(table);
    if (ext->struct_size < HH_DEVICE_VALUES_EXTENSION_SIZE_1_0 || !ext->accepts)
      return std::string("the hook offers ") + HH_EXTENSION_DEVICE_VALUES + " with struct_size " +
             std::to_string(ext->struct_size) + " or without accepts(); ignoring it";
    device_accepts_ = ext->accepts;
    return {};
  }

  bool accepts_device(hh_device device) override {
    if (device.type == HH_DEVICE_CPU) return true;
    if (!device_accepts_) return false;
    try {
      return device_accepts_(hook_, device) != 0;
    } catch (...) {
      return false;
    }
  }

  CallResult begin() override {
    return call([&](hh_error* err) { return begin_(hook_, err); });
  }
  CallResult after_create_session(const hh_session_info& session) override {
    return call([&](hh_error* err) { return after_create_session_(hook_, &session, err); });
  }
  CallResult before_run(const hh_run_context& context, hh_run_request& request) override {
    return call([&](hh_error* err) { return before_run_(hook_, &context, &request, err); });
  }
  CallResult after_run(const hh_run_context& context, const hh_run_values& values) override {
    return call([&](hh_error* err) { return after_run_(hook_, &context, &values, err); });
  }
  CallResult end(const hh_end_info& info) override {
    return call([&](hh_error* err) { return end_(hook_, &info, err); });
  }
  std::string destroy() override {
    try {
      destroy_(hook_);
      return {};
    } catch (...) {
      return describe_current_exception("destroy()");
    }
  }

 private:
  template <typename Fn>
  CallResult call(Fn&& fn) {
    std::optional<CallResult> failure = call_inprocess(fn, err_);
    return failure ? std::move(*failure) : CallResult{};
  }

  hh_hook* hook_;
  decltype(hh_hook::begin) begin_;
  decltype(hh_hook::after_create_session) after_create_session_;
  decltype(hh_hook::before_run) before_run_;
  decltype(hh_hook::after_run) after_run_;
  decltype(hh_hook::end) end_;
  decltype(hh_hook::destroy) destroy_;
  decltype(hh_hook::get_extension) get_extension_;
  const void* extension(const char* id) {
    if (!get_extension_) return nullptr;
    try {
      return get_extension_(hook_, id);
    } catch (...) {
      return nullptr;
    }
  }

  decltype(hh_device_values_extension::accepts) device_accepts_ = nullptr;
  hh_error err_{};  // reused: only its first byte is cleared per call
  std::string plugin_id_;
  std::string plugin_file_;
  uint32_t abi_minor_;
};

}  // namespace

std::unique_ptr<HookDispatch> make_inprocess_dispatch(hh_hook* hook, std::string plugin_id,
                                                      std::string plugin_file, uint32_t abi_minor,
                                                      std::string* warn) {
  auto dispatch = std::make_unique<InProcessDispatch>(hook, std::move(plugin_id),
                                                      std::move(plugin_file), abi_minor);
  std::string problem = dispatch->query_extensions();
  if (warn) *warn = std::move(problem);
  return dispatch;
}

}  // namespace hookhost
