# A function-based hook, as R tfestimators' session_run_hook(): a factory returns the hook, and the
# config's `class = make_hook` calls it with `args`. Every `every` steps it prints the loss.
import hookhost


def make_hook(every=10):
    def before_run(run_context):
        return hookhost.SessionRunArgs("loss")

    def after_run(run_context, run_values):
        step = hookhost.global_step()  # already counts the step that just ran
        if step % every == 0:
            print(f"step {step}: loss {float(run_values.results):.4f}")

    return hookhost.session_run_hook(before_run=before_run, after_run=after_run)
