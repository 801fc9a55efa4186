"""Per-example gradients in TensorFlow: GradientTape.jacobian of the vector of per-example losses, which
vectorises with pfor; clipped and summed as in DP-SGD. Modes: eager (jacobian's pfor still builds a graph internally), tf.function,
tf.function(jit_compile=True)."""

import tensorflow as tf
from benchdata import PG_CLIP

FRAMEWORK = "tf"
MODES = ("eager", "function", "xla")
NOTES = {"eager": "tape.jacobian vectorises with pfor, which traces a graph even when called eagerly"}


def build(mode, d):
    variables = [tf.Variable(a) for pair in d["params"] for a in pair]
    x, y = tf.constant(d["x"]), tf.constant(d["y"])

    def step_fn(x, y):
        w1, b1, w2, b2 = variables
        with tf.GradientTape() as tape:
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        grads = tape.jacobian(losses, variables)  # each of shape (batch, *var.shape)
        batch = tf.shape(x)[0]
        norms = tf.sqrt(tf.add_n([tf.reduce_sum(tf.reshape(g, (batch, -1)) ** 2, axis=1) for g in grads]))
        scale = tf.minimum(1.0, PG_CLIP / norms)
        summed = [tf.tensordot(scale, g, axes=1) for g in grads]
        return tf.reduce_mean(losses), tf.add_n([tf.reduce_sum(g * g) for g in summed])

    if mode == "function":
        step_fn = tf.function(step_fn)
    elif mode == "xla":
        step_fn = tf.function(step_fn, jit_compile=True)

    def step():
        loss, gsq = step_fn(x, y)
        return {"loss": loss, "gsq": gsq}

    return step
