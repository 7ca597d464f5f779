// The C example (examples/c_hook, lr_warmup) loaded from its built file through discovery, the
// loader and the runtime, like any third-party plugin: the learning rate the workload received
// each step, a resumed job, and its parameter checks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <hookhost/host/discovery.hpp>
#include <hookhost/host/loader.hpp>
#include <hookhost/host/runtime.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "testing/scripted_workload.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const fs::path kExample = fs::path(HOOKHOST_BINARY_DIR) / "examples" / "lr_warmup.so";

class LrWarmupExample : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kExample))
        << kExample << " was not built: the top-level CMakeLists.txt must add examples/c_hook";
    fs::create_directory(dir_ / "plugins");
    copy_plugin(kExample, dir_ / "plugins");
    DiscoveryResult found = discover_plugins({dir_ / "plugins"});
    ASSERT_TRUE(found.rejected.empty()) << found.rejected[0].reason;
    ASSERT_NE(found.find("lr_warmup"), nullptr);
    plugin_ = load_plugin(*found.find("lr_warmup"));
    session_.script().end_of_data_step = 7;  // steps 1..6
    RuntimeOptions options;
    options.run_dir = dir_.path();
    options.logger = std::make_shared<spdlog::logger>(
        "hookhost", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    runtime_.emplace(session_, options);
  }

  void add(const std::multimap<std::string, std::string>& params) {
    runtime_->add_hook(plugin_, HookSettings{"warmup"},
                       resolve_params(plugin_->metadata(), "warmup", params));
  }

  std::string config_error(const std::multimap<std::string, std::string>& params) {
    try {
      add(params);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }

  // The learning rate fed to each session call, or nullopt when nothing was fed.
  std::vector<std::optional<float>> fed_rates() const {
    std::vector<std::optional<float>> out;
    for (const SessionRun& run : runs_) {
      auto it = run.fed.find("learning_rate");
      out.push_back(it == run.fed.end()
                        ? std::nullopt
                        : std::optional<float>(static_cast<float>(it->second.as_double())));
    }
    return out;
  }

  TempDir dir_;
  std::ostringstream log_;
  std::vector<SessionRun> runs_;  // one per run() call of session_
  ScriptedWorkload session_{detail::Script{}, &runs_};
  std::shared_ptr<const LoadedPlugin> plugin_;
  std::optional<Runtime> runtime_;
};

TEST_F(LrWarmupExample, IsAPlainCPluginWithItsSchema) {
  const PluginMetadata& meta = plugin_->metadata();
  EXPECT_EQ(meta.id, "lr_warmup");
  std::vector<std::string> names;
  for (const auto& p : meta.params) names.push_back(p.name);
  EXPECT_THAT(names, ElementsAre("target_lr", "warmup_steps", "start_lr", "tensor"));
}

TEST_F(LrWarmupExample, FeedsALinearlyRisingLearningRateThenLetsTheWorkloadDecide) {
  add({{"target_lr", "0.8"}, {"warmup_steps", "4"}});
  EXPECT_EQ(runtime_->run_to_end().outcome, Outcome::completed);
  // Steps 1 to 4 get 0.2, 0.4, 0.6, 0.8; steps 5 and 6 (and the end-of-data call) get no feed.
  EXPECT_THAT(fed_rates(),
              ElementsAre(0.2f, 0.4f, 0.6f, 0.8f, std::nullopt, std::nullopt, std::nullopt));
  EXPECT_THAT(log_.str(), HasSubstr("warmup done at global step 4"));
}

TEST_F(LrWarmupExample, ResumedJobContinuesTheRampFromTheGlobalStep) {
  session_.set_global_step(2);
  add({{"target_lr", "1.0"}, {"start_lr", "0.2"}, {"warmup_steps", "4"}});
  runtime_->run_to_end();
  // Steps 3 and 4 of the ramp from 0.2 to 1.0: 0.2 + 0.8 * 3/4 and 0.2 + 0.8 * 4/4.
  EXPECT_THAT(fed_rates(), ElementsAre(0.8f, 1.0f, std::nullopt, std::nullopt, std::nullopt));
  EXPECT_THAT(log_.str(), HasSubstr("warming learning_rate up from step 2 until step 4"));
}

TEST_F(LrWarmupExample, FeedOfATensorTheWorkloadDoesNotAcceptDisablesTheHook) {
  add({{"target_lr", "0.5"}, {"tensor", "momentum"}});
  EXPECT_EQ(runtime_->run_to_end().outcome, Outcome::completed);
  EXPECT_THAT(log_.str(), HasSubstr("before_run asked to feed 'momentum', which the workload "
                                    "does not accept"));
  EXPECT_THAT(fed_rates(), ::testing::Each(std::nullopt));
}

TEST_F(LrWarmupExample, InvalidParametersAreConfigurationErrorsNamingTheKey) {
  const std::string where = "hook 'warmup' (plugin 'lr_warmup'";
  EXPECT_THAT(config_error({{"target_lr", "0.1"}, {"warmup_steps", "0"}}),
              AllOf(HasSubstr(where), HasSubstr("'warmup_steps' must be > 0, got 0")));
  EXPECT_THAT(config_error({{"target_lr", "-0.1"}}),
              AllOf(HasSubstr(where), HasSubstr("'target_lr' must be > 0")));
  EXPECT_THAT(config_error({{"target_lr", "0.1"}, {"start_lr", "0.5"}}),
              AllOf(HasSubstr(where), HasSubstr("'start_lr' must be between 0 and 'target_lr'")));
  EXPECT_THAT(config_error({}), HasSubstr("target_lr"));  // required: the host refuses
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
