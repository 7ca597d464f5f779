// hookhost's Communicator over torch.distributed, for a MonitoredSession in a PyTorch job of
// several processes (torchrun, or a program that called init_process_group): the same agreement,
// chief-only hooks, checkpoints and hh.dist/1 as `hookhost run` over MPI.
#pragma once

#include <chrono>
#include <memory>

#include <hookhost/host/communicator.hpp>

namespace hookhost_python {

// A Communicator over torch.distributed's default process group, which must be initialised.
// hookhost's own traffic goes over a gloo group of its own (a CPU group beside NCCL's or the
// training's gloo group), so it never meets the training's collectives; each split (a hook's
// hh.dist/1 group) is another. Collective: every process of the default group calls it, in the
// same order as its other new_group calls. The operations take the GIL. abort() exits the
// process, which torchrun answers by ending the other processes. `split_timeout`: gloo's own
// timeout for the splits' groups (hooks' hh.dist/1 collectives, [run] collective_timeout_ms), so
// an operation a timeout left pending ends in gloo too instead of holding its worker thread.
std::shared_ptr<hookhost::Communicator> torch_communicator(std::chrono::milliseconds split_timeout);

}  // namespace hookhost_python
