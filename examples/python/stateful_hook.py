# A stateful hook: stops the job once the loss has not improved by more than `min_delta` for
# `patience` steps (Keras's EarlyStopping). Its best loss and patience count are its state:
# state_dict() is saved as JSON with every checkpoint and load_state_dict() gets it back when the
# job resumes, so a resumed job keeps counting where it stopped.
import hookhost


class PatienceStop(hookhost.SessionRunHook):
    def __init__(self, patience=5, min_delta=0.0, tensor="loss"):
        self.patience = patience
        self.min_delta = min_delta
        self.tensor = tensor
        self.best = None
        self.waited = 0

    def before_run(self, run_context):
        return hookhost.SessionRunArgs(self.tensor)

    def after_run(self, run_context, run_values):
        loss = float(run_values.results)
        if self.best is None or loss < self.best - self.min_delta:
            self.best, self.waited = loss, 0
            return
        self.waited += 1
        if self.waited >= self.patience:
            print(f"no improvement for {self.waited} steps (best {self.best:.4f})")
            run_context.request_stop()

    def state_dict(self):
        return {"best": self.best, "waited": self.waited}

    def load_state_dict(self, state):
        self.best, self.waited = state["best"], state["waited"]
