// What the benchmarks share: a workload whose step costs almost nothing, so the hooks' share
// shows, and the no-op plugin built for them.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/session.hpp>

namespace hookhost::bench {

class CountingSession : public Session {
 public:
  void create(int) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {"loss"}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>& fetches, const TensorMap&) override {
    ++step_;
    StepResult r;
    for (const auto& name : fetches) r.values.emplace(name, Tensor::scalar_f32(1.0f));
    return r;
  }

 private:
  int64_t step_ = 0;
};

inline std::shared_ptr<const LoadedPlugin> noop_plugin() {
  static std::shared_ptr<const LoadedPlugin> plugin = [] {
    DiscoveryResult found = discover_plugins({HOOKHOST_BENCH_PLUGIN_DIR});
    const DiscoveredPlugin* p = found.find("bench_noop");
    if (!p) throw std::runtime_error("bench_noop plugin not found");
    return load_plugin(*p);
  }();
  return plugin;
}

}  // namespace hookhost::bench
