"""Pre-LayerNorm transformer block, forward + backward + SGD update, in plain TensorFlow:
eager, tf.function, tf.function(jit_compile=True)."""

import math

import tensorflow as tf
from benchdata import LN_EPS, SGD_LR, TF_HEADS

FRAMEWORK = "tf"
MODES = ("eager", "function", "xla")


class Block(tf.Module):
    def __init__(self, p):
        super().__init__()
        self.p = {name: (tf.Variable(a), tf.Variable(b)) for name, (a, b) in sorted(p.items())}

    def dense(self, name, x):
        w, b = self.p[name]
        return tf.tensordot(x, w, 1) + b

    def layer_norm(self, name, x):
        g, b = self.p[name]
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + LN_EPS) * g + b

    def __call__(self, x):
        n, s, d = x.shape
        hd = d // TF_HEADS
        h = self.layer_norm("ln1", x)

        def heads(t):
            return tf.transpose(tf.reshape(t, (n, s, TF_HEADS, hd)), (0, 2, 1, 3))

        q, k, v = (heads(self.dense(name, h)) for name in ("q", "k", "v"))
        att = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / math.sqrt(hd), axis=-1)
        x = x + self.dense("o", tf.reshape(tf.transpose(tf.matmul(att, v), (0, 2, 1, 3)), (n, s, d)))
        h = self.dense("ff1", self.layer_norm("ln2", x))
        return x + self.dense("ff2", tf.nn.gelu(h, approximate=False))


def build(mode, d):
    model = Block(d["params"])
    x, target = tf.constant(d["x"]), tf.constant(d["target"])

    def train_step(x, target):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - target))
        variables = model.trainable_variables
        for g, var in zip(tape.gradient(loss, variables), variables):
            var.assign_sub(SGD_LR * g)
        return loss

    if mode == "function":
        train_step = tf.function(train_step)
    elif mode == "xla":
        train_step = tf.function(train_step, jit_compile=True)
    return lambda: {"loss": train_step(x, target)}
