"""MLP training step in plain TensorFlow (tf.Module, GradientTape, Adam written out): eager,
tf.function, and tf.function(jit_compile=True) (XLA)."""

import tensorflow as tf
from benchdata import ADAM

FRAMEWORK = "tf"
MODES = ("eager", "function", "xla")


class Adam:
    """torch.optim.Adam's update rule, on tf.Variables."""

    def __init__(self, variables, lr, b1, b2, eps):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.t = tf.Variable(0.0)
        self.m = [tf.Variable(tf.zeros_like(v)) for v in variables]
        self.v = [tf.Variable(tf.zeros_like(v)) for v in variables]

    def apply(self, grads, variables):
        self.t.assign_add(1.0)
        c1 = 1.0 - tf.pow(self.b1, self.t)
        c2 = 1.0 - tf.pow(self.b2, self.t)
        for g, var, m, v in zip(grads, variables, self.m, self.v):
            m.assign(self.b1 * m + (1.0 - self.b1) * g)
            v.assign(self.b2 * v + (1.0 - self.b2) * g * g)
            var.assign_sub(self.lr * (m / c1) / (tf.sqrt(v / c2) + self.eps))


class MLP(tf.Module):
    def __init__(self, params):
        super().__init__()
        self.layers = [(tf.Variable(w), tf.Variable(b)) for w, b in params]

    def __call__(self, x):
        for i, (w, b) in enumerate(self.layers):
            x = tf.matmul(x, w) + b
            if i < len(self.layers) - 1:
                x = tf.nn.relu(x)
        return x


def build(mode, d):
    model = MLP(d["params"])
    opt = Adam(model.trainable_variables, **ADAM)
    x, y = tf.constant(d["x"]), tf.constant(d["y"])

    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        variables = model.trainable_variables
        opt.apply(tape.gradient(loss, variables), variables)
        return loss

    if mode == "function":
        train_step = tf.function(train_step)
    elif mode == "xla":
        train_step = tf.function(train_step, jit_compile=True)
    return lambda: {"loss": train_step(x, y)}
