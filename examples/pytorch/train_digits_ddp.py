"""The digits CNN of train_digits.py, data-parallel over several processes with PyTorch's
DistributedDataParallel, and the same hooks around the loop (digits.ini). Start it with torchrun:

    torchrun --standalone --nproc_per_node=2 examples/pytorch/train_digits_ddp.py \
        [--epochs 20] [--run-dir DIR] [--fresh] [--set hook.NAME.KEY=VALUE ...]

Every process runs the loop on its share of each global batch of 32; hookhost keeps one global
step, stops every process after the same step when a hook on any of them asks, and runs the
output hooks (progress, log, TensorBoard, a history.csv, checkpoints, the test accuracy) on
rank 0 only. Run it again with the same run directory and every rank resumes from the newest
checkpoint; a process killed at any moment (even kill -9) ends the job, and the resumed job ends
with the same model as an uninterrupted one.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits

import hookhost
from train_digits import BATCH, EpochLoss, TestAccuracy, make_model

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--config", default=os.path.join(HERE, "digits.ini"))
    parser.add_argument("--run-dir", default=None, help="default: the config's run_dir")
    parser.add_argument("--fresh", action="store_true", help="start over instead of resuming")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args(argv)

    dist.init_process_group("gloo")  # torchrun's environment says where the others are
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same initial model on every process
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    test, train = order[:360], order[360:]
    steps_per_epoch = (len(train) + BATCH - 1) // BATCH
    last_step = args.epochs * steps_per_epoch

    module = make_model()
    model = torch.nn.parallel.DistributedDataParallel(module)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.002)
    loss_fn = torch.nn.CrossEntropyLoss()
    epoch_loss = EpochLoss()
    torch.manual_seed(1 + rank)  # dropout: each process its own generator

    def train_step(feeds, step):
        # The global batch follows from the global step; this process takes every world-th row.
        epoch, index = divmod(step, steps_per_epoch)
        shuffled = train[torch.randperm(len(train),
                                        generator=torch.Generator().manual_seed(1000 + epoch))]
        batch = shuffled[index * BATCH:(index + 1) * BATCH][rank::world]
        logits = model(images[batch])
        loss = loss_fn(logits, labels[batch])
        optimizer.zero_grad()
        loss.backward()  # DDP averages the gradients over the processes
        optimizer.step()
        # The global batch's loss and accuracy, the same on every process: hooks anywhere (the
        # NaN guard, early stopping) see the job's numbers.
        sums = torch.stack([loss.detach() * len(batch),
                            (logits.argmax(dim=1) == labels[batch]).sum().float(),
                            torch.tensor(float(len(batch)))])
        dist.all_reduce(sums)
        global_loss, accuracy = sums[0] / sums[2], sums[1] / sums[2]
        return {"loss": global_loss, "accuracy": accuracy,
                "epoch_loss": epoch_loss.add(global_loss, first_of_epoch=index == 0)}

    tester = TestAccuracy(module, images[test], labels[test], steps_per_epoch)
    tester.ranks = "chief"  # Lightning's rank_zero_only: one process measures and prints
    with hookhost.MonitoredSession(
            args.config, hooks={"test_accuracy": tester},
            outputs=["loss", "accuracy", "epoch_loss"], parameters=module,
            # The replicated model and optimizer are saved once (the chief's); each process's
            # random generator per rank.
            state={"model": module, "optimizer": optimizer, "rng": hookhost.TorchRandomState(),
                   "epoch_loss": epoch_loss},
            run_dir=args.run_dir, fresh=args.fresh, last_step=last_step,
            # One history of the job's loss and accuracy, once an epoch: the chief's, as every
            # output hook's (history_saver declares placement = chief).
            set=["hook.history.plugin=history_saver", "hook.history.tensors=loss,accuracy",
                 "hook.history.every_n_steps=%d" % steps_per_epoch] + args.set) as session:
        while not session.should_stop() and session.global_step < last_step:
            session.run(train_step, session.global_step)
    if session.is_chief:
        torch.save(module.state_dict(), os.path.join(session.run_dir, "final_model.pt"))
        print("%s at global step %d on %d processes: %s; test accuracy %.4f" % (
            session.result["outcome"], session.global_step, world, session.result["reason"],
            tester.last))
    dist.destroy_process_group()
    return 0 if session.result["outcome"] != "failed" else 1


if __name__ == "__main__":
    sys.exit(main())
