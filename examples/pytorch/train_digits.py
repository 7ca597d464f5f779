"""A small convolutional network learns scikit-learn's 8x8 handwritten digits, on the CPU, with
hookhost's hooks around the loop: the built-ins from digits.ini, and one Python hook (the test
accuracy once an epoch).

    /usr/bin/python3 examples/pytorch/train_digits.py [--epochs 20] [--run-dir DIR] [--fresh]
                                                      [--set hook.NAME.KEY=VALUE ...]

Run it again with the same run directory and it resumes from the newest checkpoint; killed at any
moment (even kill -9), the resumed run ends with the same model as an uninterrupted one.
"""
import argparse
import os
import sys

import torch
from sklearn.datasets import load_digits

import hookhost

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 32


class TestAccuracy(hookhost.SessionRunHook):
    """The Python hook: the model's accuracy on the held-out digits, once an epoch and at the end.
    Its best accuracy is part of every checkpoint (state_dict), so a resumed run knows it."""

    def __init__(self, model, images, labels, every_n_steps):
        self.model, self.images, self.labels = model, images, labels
        self.every_n_steps = every_n_steps
        self.best = 0.0
        self.last = None

    def accuracy(self):
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            predicted = self.model(self.images).argmax(dim=1)
        self.model.train(was_training)
        return float((predicted == self.labels).float().mean())

    def after_run(self, run_context, run_values):
        step = hookhost.global_step()
        if step % self.every_n_steps == 0:
            self.last = self.accuracy()
            self.best = max(self.best, self.last)
            print("epoch %d: test accuracy %.4f" % (step // self.every_n_steps, self.last))

    def end(self, session):
        self.last = self.accuracy()
        print("final test accuracy %.4f (best %.4f) at global step %d" % (
            self.last, max(self.best, self.last), session.global_step))

    def state_dict(self):
        return {"best": self.best}

    def load_state_dict(self, state):
        self.best = state["best"]


class EpochLoss:
    """The mean loss of the epoch so far: what early stopping watches at each epoch's end. It is
    training state, checkpointed with the model, so a resumed run's means are the same."""

    def __init__(self):
        self.total, self.count = 0.0, 0

    def add(self, loss, first_of_epoch):
        if first_of_epoch:
            self.total, self.count = 0.0, 0
        self.total += float(loss)
        self.count += 1
        return self.total / self.count

    def state_dict(self):
        return {"total": self.total, "count": self.count}

    def load_state_dict(self, state):
        self.total, self.count = state["total"], state["count"]


def make_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 4 * 4, 64), torch.nn.ReLU(),
        torch.nn.Dropout(0.2), torch.nn.Linear(64, 10))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--config", default=os.path.join(HERE, "digits.ini"))
    parser.add_argument("--run-dir", default=None, help="default: the config's run_dir")
    parser.add_argument("--fresh", action="store_true", help="start over instead of resuming")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args(argv)

    # Deterministic CPU training: a resumed run repeats an uninterrupted one exactly.
    torch.manual_seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    test, train = order[:360], order[360:]
    steps_per_epoch = (len(train) + BATCH - 1) // BATCH
    last_step = args.epochs * steps_per_epoch

    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.002)
    loss_fn = torch.nn.CrossEntropyLoss()
    epoch_loss = EpochLoss()

    def train_step(feeds, step):
        # The batch follows from the global step alone, so a resumed run sees the same batches.
        epoch, index = divmod(step, steps_per_epoch)
        shuffled = train[torch.randperm(len(train),
                                        generator=torch.Generator().manual_seed(1000 + epoch))]
        batch = shuffled[index * BATCH:(index + 1) * BATCH]
        logits = model(images[batch])
        loss = loss_fn(logits, labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        accuracy = (logits.argmax(dim=1) == labels[batch]).float().mean()
        return {"loss": loss, "accuracy": accuracy,
                "epoch_loss": epoch_loss.add(loss.detach(), first_of_epoch=index == 0)}

    tester = TestAccuracy(model, images[test], labels[test], steps_per_epoch)
    with hookhost.MonitoredSession(
            args.config, hooks={"test_accuracy": tester},
            outputs=["loss", "accuracy", "epoch_loss"], parameters=model,
            state={"model": model, "optimizer": optimizer, "rng": hookhost.TorchRandomState(),
                   "epoch_loss": epoch_loss},
            run_dir=args.run_dir, fresh=args.fresh, last_step=last_step, set=args.set) as session:
        while not session.should_stop() and session.global_step < last_step:
            session.run(train_step, session.global_step)
    torch.save(model.state_dict(), os.path.join(session.run_dir, "final_model.pt"))
    print("%s at global step %d: %s; test accuracy %.4f" % (
        session.result["outcome"], session.global_step, session.result["reason"], tester.last))
    return 0 if session.result["outcome"] != "failed" else 1


if __name__ == "__main__":
    sys.exit(main())
