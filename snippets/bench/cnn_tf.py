"""Small CNN training step in plain TensorFlow (NHWC): eager, tf.function, tf.function(jit_compile=True)."""

import tensorflow as tf
from benchdata import ADAM
from mlp_tf import Adam

FRAMEWORK = "tf"
MODES = ("eager", "function", "xla")


class CNN(tf.Module):
    def __init__(self, convs, dense):
        super().__init__()
        self.convs = [(tf.Variable(w), tf.Variable(b)) for w, b in convs]
        self.dense = (tf.Variable(dense[0]), tf.Variable(dense[1]))

    def __call__(self, x):
        for w, b in self.convs:
            x = tf.nn.relu(tf.nn.conv2d(x, w, strides=1, padding="SAME") + b)
            x = tf.nn.max_pool2d(x, 2, 2, "VALID")
        x = tf.reshape(x, (tf.shape(x)[0], -1))
        return tf.matmul(x, self.dense[0]) + self.dense[1]


def build(mode, d):
    model = CNN(d["convs"], d["dense"])
    opt = Adam(model.trainable_variables, **ADAM)
    x, y = tf.constant(d["x"]), tf.constant(d["y"])

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x)))
        variables = model.trainable_variables
        opt.apply(tape.gradient(loss, variables), variables)
        return loss

    if mode == "function":
        train_step = tf.function(train_step)
    elif mode == "xla":
        train_step = tf.function(train_step, jit_compile=True)
    return lambda: {"loss": train_step(x, y)}
