// The user's step in a MonitoredSession of several processes (torch.distributed). Before a step
// runs, the processes agree that every one of them runs it: a step called off on one process (a
// hook's before_run failed there) is called off on all of them, since a DDP step would otherwise
// wait in its gradient allreduce for a process that never steps. And each process's own part of
// the training state (its random generators) goes to checkpoints per rank.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include <hookhost/host/communicator.hpp>
#include <hookhost/host/session.hpp>

namespace hookhost_python {

class AgreedStepSession final : public hookhost::Session {
 public:
  // `inner`: the step, which must outlive this. `rank_state`: an object with save_rank_state()
  // -> bytes or None and restore_rank_state(bytes), called with the GIL.
  AgreedStepSession(hookhost::Session& inner, std::shared_ptr<hookhost::Communicator> comm,
                    pybind11::object rank_state);
  ~AgreedStepSession() override;

  void create(int creation) override { inner_.create(creation); }
  int64_t global_step() const override { return inner_.global_step(); }
  std::vector<std::string> fetchable() const override { return inner_.fetchable(); }
  std::vector<std::string> feedable() const override { return inner_.feedable(); }
  std::optional<int64_t> last_step() const override { return inner_.last_step(); }
  std::string save_state() const override { return inner_.save_state(); }
  void restore_state(std::string_view bytes) override { inner_.restore_state(bytes); }

  hookhost::StepResult run(const std::vector<std::string>& fetches,
                           const hookhost::TensorMap& feeds) override;
  void cancel_step() override;
  std::optional<std::string> save_rank_state() const override;
  void restore_rank_state(std::string_view bytes) override;

 private:
  hookhost::Session& inner_;
  std::shared_ptr<hookhost::Communicator> comm_;
  pybind11::object rank_state_;
};

}  // namespace hookhost_python
