// my_hook: watches one scalar tensor. Every `log_every` steps it logs the value and the best
// value so far; after the first step whose value falls below `stop_below` it asks the job to stop.
// The best value is the hook's state: saved with every checkpoint, so a resumed job remembers it,
// and read again after a session recovery, which puts every state back to its checkpoint.
//
// Confined (isolation = process), a hook reads only the system's runtime and writes only its run
// folder unless it declares more, before the first #include (docs/writing-a-plugin.md, "Declaring
// what your hook needs when confined"). This one needs nothing more; one that writes the file a
// `path` parameter names and talks to a server would say:
// #define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path) HH_NEEDS_NETWORK
#include <cmath>
#include <cstdio>
#include <hookhost/hook.hpp>
#include <hookhost/sdk/text.hpp>
#include <string>

namespace {

using hookhost::format_number;

class MyHook : public hookhost::Hook {
 public:
  explicit MyHook(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        tensor_(params().get_string("tensor")),
        log_every_(params().get_int("log_every")),
        stop_below_(params().has("stop_below") ? params().get_float("stop_below") : NAN) {
    // The host has checked types and required parameters; ranges are the hook's to check. An
    // error thrown here is a configuration error: the job does not start.
    if (tensor_.empty()) throw hookhost::Error("'tensor' must name a tensor");
    if (log_every_ < 1) throw hookhost::Error("'log_every' must be at least 1");
  }

  // The state pattern: read it in begin (a resumed job's state, from its checkpoint) and again
  // in after_create_session after each recovery (creation > 1), when the host has put it back to
  // the checkpoint the job recovers from. Reading it only once would keep what the failed steps
  // left behind.
  void begin() override { load_state(); }
  void after_create_session(const hh_session_info& session) override {
    if (session.creation > 1) load_state();
  }

  void before_run(const hh_run_context&, hookhost::RunRequest& request) override {
    request.fetch(tensor_);
  }

  void after_run(const hh_run_context&, const hookhost::RunValues& values) override {
    const double value = values.scalar(tensor_);
    const int64_t step = host().global_step();
    if (value < best_) {
      best_ = value;
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", best_);  // every digit, so it restores exactly
      host().save_state(text);
    }
    if (step % log_every_ == 0)
      host().info(tensor_ + " = " + format_number(value) + " at step " + std::to_string(step) +
                  " (best " + format_number(best_) + ")");
    // A NaN never compares below: a diverging job is another hook's business (nan_tensor).
    if (value < stop_below_) {
      host().request_stop(tensor_ + " " + format_number(value) + " fell below stop_below " +
                          format_number(stop_below_));
    }
  }

 private:
  void load_state() {
    const std::string saved = host().load_state();
    best_ = saved.empty() ? INFINITY : std::stod(saved);
  }

  std::string tensor_;
  int64_t log_every_;
  double stop_below_;
  double best_ = INFINITY;
};

}  // namespace

// The parameters, read by `hookhost plugins describe` without loading the plugin:
// P(name, type, flag, default, help) with type BOOL, INT, FLOAT, STRING or STRING_LIST and flag
// DEFAULT (the default applies), REQUIRED or OPTIONAL (may be absent: params().has()).
#define MY_HOOK_PARAMS(P)                                                        \
  P(tensor, STRING, DEFAULT, "loss", "the scalar tensor to watch")               \
  P(log_every, INT, DEFAULT, "10", "log the value every this many global steps") \
  P(stop_below, FLOAT, OPTIONAL, "", "stop the job once the value falls below this")

HOOKHOST_PLUGIN(MyHook, "my_hook", "0.1.0",
                "Logs a scalar tensor with its best value and stops below a threshold",
                MY_HOOK_PARAMS)
