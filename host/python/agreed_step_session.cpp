#include "agreed_step_session.hpp"

#include <string>
#include <utility>

namespace py = pybind11;

namespace hookhost_python {

AgreedStepSession::AgreedStepSession(hookhost::Session& inner,
                                     std::shared_ptr<hookhost::Communicator> comm,
                                     py::object rank_state)
    : inner_(inner), comm_(std::move(comm)), rank_state_(std::move(rank_state)) {}

AgreedStepSession::~AgreedStepSession() {
  if (!Py_IsInitialized()) {
    rank_state_.release();
    return;
  }
  py::gil_scoped_acquire gil;
  rank_state_ = py::object();
}

hookhost::StepResult AgreedStepSession::run(const std::vector<std::string>& fetches,
                                            const hookhost::TensorMap& feeds) {
  // One 8-byte allreduce: 1 when every process runs the step, 0 when one called it off.
  int64_t go = 1;
  comm_->allreduce(&go, 1, hookhost::ReduceOp::min);
  if (go == 0) {
    hookhost::StepResult called_off;
    called_off.status = hookhost::StepStatus::cancelled;
    called_off.message = "another process called the step off";
    return called_off;
  }
  return inner_.run(fetches, feeds);
}

void AgreedStepSession::cancel_step() {
  int64_t go = 0;
  comm_->allreduce(&go, 1, hookhost::ReduceOp::min);
}

std::optional<std::string> AgreedStepSession::save_rank_state() const {
  py::gil_scoped_acquire gil;
  if (rank_state_.is_none()) return std::nullopt;
  py::object bytes = rank_state_.attr("save_rank_state")();
  if (bytes.is_none()) return std::nullopt;
  return bytes.cast<std::string>();
}

void AgreedStepSession::restore_rank_state(std::string_view bytes) {
  py::gil_scoped_acquire gil;
  if (rank_state_.is_none()) return;
  rank_state_.attr("restore_rank_state")(py::bytes(bytes.data(), bytes.size()));
}

}  // namespace hookhost_python
