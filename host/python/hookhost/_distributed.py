"""MonitoredSession in a job of several processes, over torch.distributed (torchrun): which
processes the session runs on, and the part of the training state each process keeps for itself.

The host does the rest over a gloo group of its own (host/python/torch_communicator.cpp): one
global step, stops and failures agreed at every step boundary, chief-only hooks, and checkpoints
the chief writes with every rank's hook states.
"""

import os
import sys

__all__ = ["PerRank", "rank_and_size"]


class PerRank:
    """A state= object that differs between processes (a data iterator's position, a random
    generator of your own): each process saves its own into the job's checkpoint and gets its own
    back on resume. Objects with a true `hookhost_per_rank` attribute (TorchRandomState) are
    treated so without the wrapper; everything else in state= is saved once, from the chief, and
    restored on every process (DDP's replicated model and optimizer)."""

    hookhost_per_rank = True

    def __init__(self, obj):
        if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
            raise TypeError("PerRank: %s has no state_dict()/load_state_dict()" %
                            type(obj).__name__)
        self.obj = obj

    def state_dict(self):
        return self.obj.state_dict()

    def load_state_dict(self, state):
        self.obj.load_state_dict(state)


def is_per_rank(obj):
    return bool(getattr(obj, "hookhost_per_rank", False))


def resolve(distributed):
    """Whether the session is one process of a torch.distributed job. None: when the default
    process group is initialised; "torch": initialise it from torchrun's environment if needed
    (gloo, or NCCL when CUDA is available); "none" or False: one process whatever the group."""
    if distributed is None:
        dist = sys.modules.get("torch.distributed")
        return bool(dist is not None and dist.is_available() and dist.is_initialized())
    if distributed is False or distributed == "none":
        return False
    if distributed is True or distributed == "torch":
        import torch
        import torch.distributed as dist
        if not dist.is_available():
            raise ValueError("distributed=\"torch\": this PyTorch has no torch.distributed")
        if not dist.is_initialized():
            missing = [name for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
                       if name not in os.environ]
            if missing:
                raise ValueError(
                    "distributed=\"torch\": the process group is not initialised and %s %s not "
                    "set: start the program with torchrun (torchrun --nproc_per_node=2 "
                    "train.py), or call torch.distributed.init_process_group() first" % (
                        ", ".join(missing), "is" if len(missing) == 1 else "are"))
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        return True
    raise ValueError("distributed: None (when torch.distributed is initialised), \"torch\" or "
                     "\"none\", not %r" % (distributed,))


def rank_and_size():
    """(rank, world size) of this process: torch.distributed's when initialised, else (0, 1)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class RankState:
    """What the host asks a process for at an agreed checkpoint, and gives back on resume: its
    per-rank state= objects (is_per_rank), encoded as the chief's state is."""

    def __init__(self, objects, encode, decode):
        self._objects = objects
        self._encode = encode
        self._decode = decode

    def save_rank_state(self):
        if not self._objects:
            return None
        return self._encode({name: obj.state_dict() for name, obj in self._objects.items()})

    def restore_rank_state(self, data):
        saved = self._decode(data)
        for name, obj in self._objects.items():
            if name in saved:  # a rank the checkpoint's job did not have keeps its own state
                obj.load_state_dict(saved[name])
