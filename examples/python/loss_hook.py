# The LossHook of the TensorFlow 1.x SessionRunHook article, with only its import changed:
# hookhost.train holds tf.train's hook names, so the class body is TensorFlow's unchanged.
# Run it with: hookhost run --config examples/python/loss_hook.ini (or scripts/demo-python.sh).
import hookhost as tf

class LossHook(tf.train.SessionRunHook):
    def __init__(self, loss_tensor, threshold=0.01):
        self.loss_tensor = loss_tensor
        self.threshold = threshold
        self.step = 0

    def begin(self):
        print("begin")

    def after_create_session(self, session, coord):
        print("session created")

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self.loss_tensor)

    def after_run(self, run_context, run_values):
        self.step += 1
        loss_value = run_values.results
        print(f"step={self.step} loss={loss_value:.4f}")
        if loss_value < self.threshold:
            run_context.request_stop()

    def end(self, session):
        print("end")
