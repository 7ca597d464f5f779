// Embedding hookhost: your own training loop, your own Session, hooks loaded from a folder.
//
//   embed_example [PLUGIN_DIR]
//
// Fits y = 3x + 1 by gradient descent on one parameter pair, logs the loss every 5 steps with the
// logging_tensor plugin and stops at step 25 with the stop_at_step plugin.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <hookhost/host/discovery.hpp>
#include <hookhost/host/job.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>

namespace {

// The workload: any training loop can sit behind these few functions.
class LineFit : public hookhost::Session {
 public:
  void create(int /*creation*/) override {}
  int64_t global_step() const override { return step_; }
  std::vector<std::string> fetchable() const override { return {"loss", "w", "b"}; }
  std::vector<std::string> feedable() const override { return {}; }

  hookhost::StepResult run(const std::vector<std::string>& fetches,
                           const hookhost::TensorMap& /*feeds*/) override {
    // One full-batch gradient step on x = 0..9, y = 3x + 1.
    double loss = 0, dw = 0, db = 0;
    for (int x = 0; x < 10; ++x) {
      const double err = (w_ * x + b_) - (3.0 * x + 1.0);
      loss += err * err / 10;
      dw += 2 * err * x / 10;
      db += 2 * err / 10;
    }
    w_ -= 0.02 * dw;
    b_ -= 0.02 * db;
    ++step_;
    hookhost::StepResult result;
    for (const auto& name : fetches) {
      if (name == "loss") result.values.emplace(name, hookhost::Tensor::scalar_f32(float(loss)));
      if (name == "w") result.values.emplace(name, hookhost::Tensor::scalar_f32(float(w_)));
      if (name == "b") result.values.emplace(name, hookhost::Tensor::scalar_f32(float(b_)));
    }
    return result;
  }

 private:
  int64_t step_ = 0;
  double w_ = 0, b_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace hookhost;
  const std::filesystem::path plugins = argc > 1 ? argv[1] : builtin_plugin_dir();
  DiscoveryResult found = discover_plugins({plugins});

  LineFit session;
  RuntimeOptions options;
  options.run_dir = std::filesystem::temp_directory_path();
  Runtime runtime(session, options);

  // Hooks are configured with the same text values a config file would hold.
  auto add = [&](const std::string& name, const std::string& id,
                 const std::multimap<std::string, std::string>& params) {
    const DiscoveredPlugin* p = found.find(id);
    if (!p) throw std::runtime_error("plugin '" + id + "' not found in " + plugins.string());
    auto plugin = load_plugin(*p);
    runtime.add_hook(plugin, {name, 0, FailurePolicy::disable},
                     resolve_params(plugin->metadata(), name, params));
  };
  try {
    add("log", "logging_tensor", {{"tensors", "loss,w,b"}, {"every_n_iter", "5"}});
    add("stop", "stop_at_step", {{"last_step", "25"}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed_example: %s\n", e.what());
    return 2;
  }

  // Your loop: the runtime calls the hooks around each step.
  if (runtime.start()) {
    while (!runtime.should_stop()) {
      RunOutput out = runtime.run({"loss"});
      if (out.ran && session.global_step() % 10 == 0)
        std::printf("step %lld: loss %.4f\n", static_cast<long long>(session.global_step()),
                    out.values.at("loss").as_double());
    }
  }
  JobResult result = runtime.close();
  std::printf("%s at global step %lld: %s\n", outcome_name(result.outcome),
              static_cast<long long>(result.global_step), result.reason.c_str());
  return result.outcome == Outcome::failed ? 1 : 0;
}
