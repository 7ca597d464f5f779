// Every host function described in services/host_functions.hpp, walked row by row: each one is
// reachable in process and from a hookhost-runner, and answers the same in both (valid arguments,
// NULL pointers, texts and counts over the limits, a handle the host never issued, a call after
// end()). A function added to one binding only fails here. Also: an embedder's own services are
// refused at start for a sandboxed hook, with what to do instead.
#include <gtest/gtest.h>

#include <hookhost/ext/steps.h>

#include <map>
#include <string>
#include <vector>

#include "plugin_harness.hpp"
#include "sandbox/process_dispatch.hpp"
#include "sandbox/protocol.hpp"
#include "services/host_functions.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

template <class... F>
std::vector<std::string> names_of(FunctionList<F...>) {
  return {F::name.text...};
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

void add_sandboxed(PluginHarness& h, const std::string& instance,
                   const std::multimap<std::string, std::string>& raw) {
  auto plugin = h.plugin("host_function_probe");
  const ResolvedParams params = resolve_params(plugin->metadata(), instance, raw);
  HookSettings settings;
  settings.instance_name = instance;
  h.runtime().add_hook(plugin->metadata().id, 1, settings, [&](const hh_host& host) {
    return make_process_dispatch(*plugin, instance, params, host, SandboxOptions{});
  });
}

// "function -> answer" of one job whose probe calls every described function in `mode`.
std::map<std::string, std::string> answers(const std::string& mode, bool sandboxed) {
  PluginHarness h({}, {"host_function_probe"});
  h.workload.script().end_of_data_step = 4;
  const fs::path report = h.root() / "report.txt";
  const std::multimap<std::string, std::string> params = {
      {"functions", joined(names_of(AllHostFunctions{}))},
      {"mode", mode},
      {"report", report.string()}};
  if (sandboxed)
    add_sandboxed(h, "probe", params);
  else
    h.add("probe", "host_function_probe", params);
  h.run();
  h.finish();
  std::map<std::string, std::string> out;
  for (std::string line : lines_of(report)) {
    replace_all(line, h.run_dir().string(), "<run dir>");
    const size_t colon = line.find(": ");
    if (colon != std::string::npos) out[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return out;
}

class HostFunctionBindings : public ::testing::TestWithParam<const char*> {};

TEST_P(HostFunctionBindings, EveryFunctionAnswersTheSameInProcessAndFromARunner) {
  const auto in_process = answers(GetParam(), false);
  const auto sandboxed = answers(GetParam(), true);
  for (const std::string& name : names_of(AllHostFunctions{})) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(in_process.count(name)) << "the in-process probe never reported";
    ASSERT_TRUE(sandboxed.count(name)) << "the sandboxed probe never reported";
    EXPECT_NE(in_process.at(name), "no probe")
        << "tests/fixtures/host_function_probe has no call for this function";
    EXPECT_EQ(sandboxed.at(name), in_process.at(name));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, HostFunctionBindings,
                         ::testing::Values("normal", "null_pointer", "too_long", "foreign_handle",
                                           "after_end"));

template <class... F>
void expect_forwarded_ops_named(FunctionList<F...>) {
  (([] {
     if constexpr (F::op != HostOp::none) {
       EXPECT_STREQ(sandbox::service_op_name(F::op), F::name.text);
     }
   }()),
   ...);
}

TEST(HostFunctionTable, EveryForwardedFunctionIsNamedByItsOp) {
  expect_forwarded_ops_named(AllHostFunctions{});
  EXPECT_STREQ(sandbox::service_op_name(HostOp::none), "unknown");
  EXPECT_STREQ(sandbox::service_op_name(static_cast<HostOp>(18)), "unknown");
}

// ---- embedder services ------------------------------------------------------------------------

int32_t embedder_answer(const hh_host*) {
  return 42;
}
struct EmbedderService {
  uint32_t struct_size;
  int32_t (*answer)(const hh_host*);
};
const EmbedderService kEmbedderService = {sizeof(EmbedderService), &embedder_answer};

int64_t embedder_last_step(const hh_host*) {
  return 9;
}
hh_status embedder_publish(const hh_host*, int64_t) {
  return HH_OK;
}
const hh_steps_service kEmbedderSteps = {HH_STEPS_SERVICE_SIZE_1_0, &embedder_publish,
                                         &embedder_last_step, nullptr};

TEST(EmbedderServices, ASandboxedHookIsRefusedAtStartNamingTheServicesAndWhatToDo) {
  PluginHarness h({}, {"host_function_probe"});
  h.options.services["hh.embedder/1"] = &kEmbedderService;
  h.options.services["hh.other/2"] = &kEmbedderService;
  const std::multimap<std::string, std::string> params = {
      {"functions", "instance_name"}, {"report", (h.root() / "report.txt").string()}};
  std::string error;
  try {
    add_sandboxed(h, "boxed", params);
  } catch (const ConfigError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("hook 'boxed'"), std::string::npos) << error;
  EXPECT_NE(error.find("hh.embedder/1, hh.other/2"), std::string::npos) << error;
  EXPECT_NE(error.find("isolation = in_process"), std::string::npos) << error;
  // The same hook in process gets them.
  EXPECT_NO_THROW(h.add("inside", "host_function_probe", params));
}

TEST(EmbedderServices, AnEmbeddersTableForABuiltInIdReachesASandboxedHook) {
  PluginHarness h({}, {"host_function_probe"});
  h.options.services[HH_SERVICE_STEPS] = &kEmbedderSteps;
  h.workload.script().end_of_data_step = 3;
  const fs::path report = h.root() / "report.txt";
  add_sandboxed(h, "boxed", {{"functions", "hh.steps/1 last_step"}, {"report", report.string()}});
  h.run();
  h.finish();
  EXPECT_EQ(lines_of(report), std::vector<std::string>{"hh.steps/1 last_step: 9"});
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
