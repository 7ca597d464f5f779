// What a Python hook costs on the step path through the python_hook bridge, next to its floors:
// - a no-op Python hook (before_run and after_run do nothing) in the whole runtime, against the
//   runtime with no hook and against the same two methods of the same class called from a Python
//   `for` loop in the same embedded interpreter (the least any bridge could cost);
// - a Python hook fetching 4 B against one fetching 64 MiB (each value is copied once into NumPy:
//   docs/python-hooks.md says why not zero-copy).
//
// The floor embeds nothing of its own: it runs in the interpreter the plugin started, with the
// hook class the plugin imported, taking the GIL as the plugin does. So both figures share one
// interpreter, one class and the benchmark's own CPU timer.
#include <benchmark/benchmark.h>
#include <pybind11/embed.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <hookhost/host/runtime.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

namespace fs = std::filesystem;
namespace py = pybind11;
using namespace hookhost;
using hookhost::bench::CountingSession;
using hookhost::bench::ValuesSession;

// The hooks under test and the floor's loop, in one module the plugin imports by `script`.
constexpr const char* kHookModule = "hookhost_python_bench";
constexpr const char* kHookSource = R"py(
import hookhost


class NoopHook(hookhost.SessionRunHook):
    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        return None


class FetchHook(hookhost.SessionRunHook):
    def __init__(self, tensor):
        self._args = hookhost.SessionRunArgs([tensor])

    def before_run(self, run_context):
        return self._args

    def after_run(self, run_context, run_values):
        return None


def floor_loop(hook, steps):
    """The floor: the hook's two calls from a Python loop, with the objects TF would pass."""
    context = hookhost.SessionRunContext(hookhost.SessionRunArgs(None), None)
    values = hookhost.SessionRunValues(None, None, None)
    for _ in range(steps):
        hook.before_run(context)
        hook.after_run(context, values)
)py";

// Steps per call of floor_loop: enough that entering it from C++ is noise.
constexpr int kFloorSteps = 1000;

// A scratch folder holding the hooks' module, removed at exit.
class ScriptFolder {
 public:
  ScriptFolder() : folder_("hookhost-python-bench") { std::ofstream(script()) << kHookSource; }
  const fs::path& path() const { return folder_.path(); }
  fs::path script() const { return path() / (std::string(kHookModule) + ".py"); }

 private:
  hookhost::bench::ScratchFolder folder_;
};

const ScriptFolder& script_folder() {
  static const ScriptFolder folder;
  return folder;
}

std::shared_ptr<const LoadedPlugin> python_plugin() {
  // The built-in plugins sit in lib/hookhost/plugins of the same build as the bench plugins.
  static const std::shared_ptr<const LoadedPlugin> plugin = [] {
    const fs::path dir = fs::path(HOOKHOST_BENCH_PLUGIN_DIR).parent_path() / "lib/hookhost/plugins";
    DiscoveryResult found = discover_plugins({dir});
    const DiscoveredPlugin* p = found.find("python_hook");
    if (!p) throw std::runtime_error("python_hook plugin not found in " + dir.string());
    return load_plugin(*p);
  }();
  return plugin;
}

RuntimeOptions quiet_options() {
  RuntimeOptions options;
  options.run_dir = script_folder().path();
  options.logger =
      std::make_shared<spdlog::logger>("bench", std::make_shared<spdlog::sinks::null_sink_mt>());
  return options;
}

// A started runtime around `session` with one python_hook instance of `class_name` (none when
// empty); a failing hook fails the step, so a broken hook is not measured as a fast one.
std::unique_ptr<Runtime> make_runtime(Session& session, const std::string& class_name,
                                      const std::string& args_json = "{}") {
  auto rt = std::make_unique<Runtime>(session, quiet_options());
  if (!class_name.empty()) {
    auto plugin = python_plugin();
    const std::multimap<std::string, std::string> raw{
        {"script", script_folder().script().string()}, {"class", class_name}, {"args", args_json}};
    rt->add_hook(plugin, {"py", 0, FailurePolicy::fail},
                 resolve_params(plugin->metadata(), "py", raw));
  }
  if (!rt->start()) throw std::runtime_error("the runtime did not start");
  return rt;
}

const std::vector<std::string> kCallerFetches;

// Runs `step` in the benchmark loop; an exception (a failed hook) ends the benchmark with its text.
template <typename Step>
void run_or_skip(benchmark::State& state, Step&& step) {
  try {
    for (auto _ : state) step();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// ---- the no-op hook against its floors --------------------------------------------------------

// The runtime's step with no hook.
void BM_RuntimeStepNoHook(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, "");
  run_or_skip(state, [&] { benchmark::DoNotOptimize(rt->run(kCallerFetches)); });
}
BENCHMARK(BM_RuntimeStepNoHook);

// The runtime's step with one no-op Python hook through the bridge.
void BM_RuntimeStepPythonNoop(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, "NoopHook");
  run_or_skip(state, [&] { benchmark::DoNotOptimize(rt->run(kCallerFetches)); });
}
BENCHMARK(BM_RuntimeStepPythonNoop);

// The floor: kFloorSteps steps of the same class's before_run and after_run from a Python loop, in
// the interpreter the plugin started (a runtime with the hook is made first, so it is running).
void BM_PythonLoopFloor(benchmark::State& state) {
  CountingSession session;
  auto rt = make_runtime(session, "NoopHook");
  py::gil_scoped_acquire gil;
  py::module_ hooks = py::module_::import("sys").attr("modules")[kHookModule];
  py::object hook = hooks.attr("NoopHook")();
  py::object floor_loop = hooks.attr("floor_loop");
  for (auto _ : state) floor_loop(hook, kFloorSteps);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kFloorSteps);
}
BENCHMARK(BM_PythonLoopFloor)->ArgName("steps")->Arg(kFloorSteps);

// ---- values of growing size ----------------------------------------------------------------

// A Python hook fetching a value of `bytes` the workload holds; the caller fetches nothing.
void BM_RuntimeStepPythonFetch(benchmark::State& state) {
  ValuesSession session(static_cast<size_t>(state.range(0)));
  auto rt = make_runtime(session, "FetchHook", R"({"tensor": "values"})");
  run_or_skip(state, [&] { benchmark::DoNotOptimize(rt->run(kCallerFetches)); });
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_RuntimeStepPythonFetch)->ArgName("bytes")->Arg(4)->Arg(64 << 20);

// ---- the goals -------------------------------------------------------------------------------

void report_goals(const hookhost::bench::TimesReporter& t) {
  std::printf("\n");
  const double empty = t.ns("BM_RuntimeStepNoHook");
  const double bridge = t.ns("BM_RuntimeStepPythonNoop");
  const double floor_loop = t.ns("BM_PythonLoopFloor/steps:" + std::to_string(kFloorSteps));
  if (empty >= 0 && bridge >= 0 && floor_loop > 0) {
    const double floor = floor_loop / kFloorSteps;
    std::printf(
        "python: a no-op Python hook's step takes %.1f ns (%.1f ns over the step with no hook, "
        "%.1f ns); its two calls from a Python loop take %.1f ns\n",
        bridge, bridge - empty, empty, floor);
    hookhost::bench::report_goal("python_call", (bridge - empty) / floor, 2.0);
  }
  hookhost::bench::report_values_goal(t, "python values", "BM_RuntimeStepPythonFetch", "",
                                      "python_values");
}

}  // namespace

int main(int argc, char** argv) {
  return hookhost::bench::run_and_report(argc, argv, report_goals);
}
