// What happens to the job, told to RuntimeOptions::on_event for its run record: the job's state
// reports stops and failures, the engine disabled and restarted hooks, the runtime checkpoints on
// disk and the end.
#include "runtime_impl.hpp"

namespace hookhost {

const char* run_event_kind_name(RunEvent::Kind kind) {
  switch (kind) {
    case RunEvent::Kind::start: return "start";
    case RunEvent::Kind::resume: return "resume";
    case RunEvent::Kind::checkpoint: return "checkpoint";
    case RunEvent::Kind::stop: return "stop";
    case RunEvent::Kind::failure: return "failure";
    case RunEvent::Kind::disable: return "disable";
    case RunEvent::Kind::restart: return "restart";
    case RunEvent::Kind::attach: return "attach";
    case RunEvent::Kind::detach: return "detach";
    case RunEvent::Kind::set: return "set";
    case RunEvent::Kind::end: return "end";
  }
  return "?";
}

void Runtime::Impl::emit(RunEvent::Kind kind, int64_t global_step, std::string hook,
                         std::string text, std::chrono::system_clock::time_point at) {
  if (!options.on_event) return;
  try {
    options.on_event(RunEvent{kind, global_step, std::move(hook), std::move(text), at});
  } catch (const std::exception& e) {
    log->warn("the run record missed a '{}' event: {}", run_event_kind_name(kind), e.what());
  } catch (...) {
    log->warn("the run record missed a '{}' event: unknown error", run_event_kind_name(kind));
  }
}

void Runtime::Impl::connect_run_events() {
  if (!options.on_event) return;
  job.set_event_sink([this](RunEvent::Kind kind, const std::string& text) {
    emit(kind, job.global_step(), "", text);
  });
  engine.set_event_sink([this](RunEvent::Kind kind, int64_t step, const std::string& hook,
                               const std::string& text) { emit(kind, step, hook, text); });
}

}  // namespace hookhost
