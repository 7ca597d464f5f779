// A value on a device that the workload also copied to the host (Tensor::with_host_copy, what
// the Python package does for a CUDA tensor): a hook that declares it takes device values gets the
// device's view, every other hook the host copy, on the step and as an observer, instead of
// being refused. Without a copy, the other hook is refused as before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/host/runtime.hpp>
#include <vector>

#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

const float kDeviceBytes[2] = {-1.0f, -1.0f};  // stands for device memory: never read on the host

Tensor device_value(bool with_copy) {
  static const int64_t shape[1] = {2};
  hh_tensor view;
  hh_tensor_init(&view);
  view.name = "w";
  view.dtype = HH_DTYPE_F32;
  view.rank = 1;
  view.shape = shape;
  view.data = kDeviceBytes;
  view.byte_size = sizeof kDeviceBytes;
  view.device = {HH_DEVICE_CUDA, 0};
  Tensor on_device = Tensor::borrow(view, nullptr);
  if (!with_copy) return on_device;
  return Tensor::with_host_copy(std::move(on_device), Tensor::vector_f32({1.5f, 2.5f}));
}

class DeviceSession final : public Session {
 public:
  explicit DeviceSession(bool with_copy) : with_copy_(with_copy) {}
  void create(int) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {"w"}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap&) override {
    StepResult out;
    for (const auto& name : fetches) out.values.emplace(name, device_value(with_copy_));
    ++step_;
    return out;
  }

 private:
  bool with_copy_;
  int64_t step_ = 0;
};

// Fetches "w" and keeps what each after_run saw: the device and the first element when on the
// host.
class Fetcher final : public HookDispatch {
 public:
  Fetcher(bool takes_device, std::vector<std::pair<int32_t, float>>* seen)
      : takes_device_(takes_device), seen_(seen) {}
  std::string plugin_id() const override { return "fetcher"; }
  std::string plugin_file() const override { return "(test)"; }
  bool implements(Callback) const override { return true; }
  bool accepts_device(hh_device device) override {
    return takes_device_ && device.type == HH_DEVICE_CUDA;
  }
  CallResult begin() override { return {}; }
  CallResult after_create_session(const hh_session_info&) override { return {}; }
  CallResult before_run(const hh_run_context&, hh_run_request& request) override {
    CallResult result;
    result.status = request.add_fetch(&request, "w");
    return result;
  }
  CallResult after_run(const hh_run_context&, const hh_run_values& values) override {
    const hh_tensor& t = values.tensors[0];
    seen_->emplace_back(t.device.type, t.device.type == HH_DEVICE_CPU
                                           ? static_cast<const float*>(t.data)[0]
                                           : 0.0f);
    return {};
  }
  CallResult end(const hh_end_info&) override { return {}; }
  std::string destroy() override { return {}; }

 private:
  bool takes_device_;
  std::vector<std::pair<int32_t, float>>* seen_;
};

struct Seen {
  std::vector<std::pair<int32_t, float>> device_hook, host_hook, host_observer;
};

JobResult run_three_steps(bool with_copy, Seen& seen, std::vector<HookReport>* reports) {
  DeviceSession session(with_copy);
  TempDir dir;
  RuntimeOptions options;
  options.run_dir = dir.path();
  Runtime runtime(session, options);
  HookSettings device_hook;
  device_hook.instance_name = "device";
  runtime.add_hook(std::make_unique<Fetcher>(true, &seen.device_hook), device_hook);
  HookSettings host_hook;
  host_hook.instance_name = "host";
  runtime.add_hook(std::make_unique<Fetcher>(false, &seen.host_hook), host_hook);
  HookSettings observer;
  observer.instance_name = "observer";
  observer.observer.enabled = true;
  runtime.add_hook(std::make_unique<Fetcher>(false, &seen.host_observer), observer);
  runtime.start();
  for (int i = 0; i < 3 && !runtime.should_stop(); ++i) runtime.run();
  JobResult result = runtime.close();
  *reports = runtime.reports();
  return result;
}

TEST(DeviceValues, HooksThatDoNotTakeDeviceValuesGetTheHostCopy) {
  Seen seen;
  std::vector<HookReport> reports;
  run_three_steps(true, seen, &reports);
  using P = std::pair<int32_t, float>;
  EXPECT_EQ(seen.device_hook, (std::vector<P>(3, P{HH_DEVICE_CUDA, 0.0f})));
  EXPECT_EQ(seen.host_hook, (std::vector<P>(3, P{HH_DEVICE_CPU, 1.5f})));
  // The observer's first before_run runs on the step to learn its fetches: two steps delivered
  // with the value.
  EXPECT_THAT(seen.host_observer, ::testing::Each(P{HH_DEVICE_CPU, 1.5f}));
  EXPECT_GE(seen.host_observer.size(), 2u);
  for (const auto& r : reports) EXPECT_FALSE(r.disabled) << r.instance_name << ": " << r.failure;
}

TEST(DeviceValues, WithoutAHostCopyTheOtherHookIsRefusedAsBefore) {
  Seen seen;
  std::vector<HookReport> reports;
  run_three_steps(false, seen, &reports);
  EXPECT_EQ(seen.device_hook.size(), 3u);
  EXPECT_TRUE(seen.host_hook.empty());
  for (const auto& r : reports)
    if (r.instance_name == "host") {
      EXPECT_TRUE(r.disabled);
      EXPECT_THAT(r.failure, ::testing::HasSubstr("does not declare that it takes device values"));
    }
}

TEST(DeviceValues, AHostCopyMustBeOnTheHostWithTheSameDtypeAndShape) {
  EXPECT_THROW(Tensor::with_host_copy(device_value(false), device_value(false)),
               std::invalid_argument);
  EXPECT_THROW(Tensor::with_host_copy(device_value(false), Tensor::vector_f32({1.0f})),
               std::invalid_argument);
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
