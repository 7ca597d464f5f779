#include <cstring>
#include <exception>

#include "hookhost/host/hook_dispatch.hpp"

namespace hookhost {
namespace {

class InProcessDispatch final : public HookDispatch {
 public:
  InProcessDispatch(hh_hook* hook, std::string plugin_id, std::string plugin_file)
      : hook_(hook), plugin_id_(std::move(plugin_id)), plugin_file_(std::move(plugin_file)) {}

  std::string plugin_id() const override { return plugin_id_; }
  std::string plugin_file() const override { return plugin_file_; }

  CallResult begin() override {
    return call([&](hh_error* err) { return hook_->begin(hook_, err); });
  }
  CallResult after_create_session(const hh_session_info& session) override {
    return call([&](hh_error* err) { return hook_->after_create_session(hook_, &session, err); });
  }
  CallResult before_run(const hh_run_context& context, hh_run_request& request) override {
    return call([&](hh_error* err) { return hook_->before_run(hook_, &context, &request, err); });
  }
  CallResult after_run(const hh_run_context& context, const hh_run_values& values) override {
    return call([&](hh_error* err) { return hook_->after_run(hook_, &context, &values, err); });
  }
  CallResult end(const hh_end_info& info) override {
    return call([&](hh_error* err) { return hook_->end(hook_, &info, err); });
  }
  void destroy() override {
    try {
      hook_->destroy(hook_);
    } catch (...) {
      // A plugin that throws from destroy() has nothing left to report to.
    }
  }

 private:
  template <typename Fn>
  CallResult call(Fn&& fn) {
    hh_error err;
    std::memset(&err, 0, sizeof err);
    err.struct_size = HH_STRUCT_SIZE(hh_error, message);
    CallResult result;
    // Second line of defence: the SDK never lets an exception escape, but a hand-written C++
    // plugin might. Catching across the C boundary works with g++ in practice.
    try {
      result.status = fn(&err);
    } catch (const std::exception& e) {
      result.status = HH_ERROR;
      result.message = std::string("exception escaped the plugin: ") + e.what();
      return result;
    } catch (...) {
      result.status = HH_ERROR;
      result.message = "unknown exception escaped the plugin";
      return result;
    }
    switch (result.status) {
      case HH_OK:
      case HH_STOP_REQUESTED: break;
      case HH_ERROR:
      case HH_ERROR_FATAL:
        err.message[HH_ERROR_MESSAGE_SIZE - 1] = '\0';
        result.message = err.message[0] ? err.message : "(the plugin gave no message)";
        break;
      default:
        result.message = "unknown status " + std::to_string(result.status) + " (treated as error)";
        result.status = HH_ERROR;
    }
    return result;
  }

  hh_hook* hook_;
  std::string plugin_id_;
  std::string plugin_file_;
};

}  // namespace

std::unique_ptr<HookDispatch> make_inprocess_dispatch(hh_hook* hook, std::string plugin_id,
                                                      std::string plugin_file) {
  return std::make_unique<InProcessDispatch>(hook, std::move(plugin_id), std::move(plugin_file));
}

}  // namespace hookhost
