# A hook that fetches a dict of tensors: run_values.results has the same structure, with a NumPy
# array for each name (0-d for a scalar). Every `every` steps it prints the loss and the model.
import hookhost


class ModelLogger(hookhost.SessionRunHook):
    def __init__(self, every=50):
        self.every = every

    def before_run(self, run_context):
        return hookhost.SessionRunArgs(
            {"loss": "loss", "step": "global_step", "model": {"weights": "weights", "bias": "bias"}})

    def after_run(self, run_context, run_values):
        r = run_values.results
        step = int(r["step"])
        if step % self.every == 0:
            weights = ", ".join(f"{w:.3f}" for w in r["model"]["weights"].reshape(-1))
            print(f"step {step}: loss {float(r['loss']):.4f}, weights [{weights}], "
                  f"bias {float(r['model']['bias']):.3f}")
