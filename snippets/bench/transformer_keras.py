"""Pre-LayerNorm transformer block in Keras 3 (layers + keras.ops), one train_on_batch with SGD and MSE."""

import math

import keras
from benchdata import LN_EPS, SGD_LR, TF_D, TF_FF, TF_HEADS, TF_SEQ
from keras import layers, ops


class Block(keras.Model):
    def __init__(self):
        super().__init__()
        self.ln1 = layers.LayerNormalization(epsilon=LN_EPS)
        self.ln2 = layers.LayerNormalization(epsilon=LN_EPS)
        self.q, self.k, self.v, self.o = (layers.Dense(TF_D) for _ in range(4))
        self.ff1 = layers.Dense(TF_FF)
        self.ff2 = layers.Dense(TF_D)

    def call(self, x):
        s, d = TF_SEQ, TF_D
        hd = d // TF_HEADS
        h = self.ln1(x)

        def heads(t):
            return ops.transpose(ops.reshape(t, (-1, s, TF_HEADS, hd)), (0, 2, 1, 3))

        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        att = ops.softmax(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / math.sqrt(hd), axis=-1)
        x = x + self.o(ops.reshape(ops.transpose(ops.matmul(att, v), (0, 2, 1, 3)), (-1, s, d)))
        return x + self.ff2(ops.gelu(self.ff1(self.ln2(x)), approximate=False))  # ops.gelu defaults to tanh


FRAMEWORK = "keras"
MODES = ("fit",)


def build(mode, d):
    model = Block()
    model(d["x"][:1])  # builds every layer (model.build on a subclassed model leaves some unbuilt)
    p = d["params"]
    for name in ("q", "k", "v", "o", "ff1", "ff2", "ln1", "ln2"):
        getattr(model, name).set_weights(list(p[name]))
    model.compile(optimizer=keras.optimizers.SGD(SGD_LR), loss="mean_squared_error")
    x, target = d["x"], d["target"]

    def step():
        return {"loss": model.train_on_batch(x, target)}

    step.note = f"jit_compile={model.jit_compile}"
    return step
