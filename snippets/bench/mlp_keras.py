"""MLP training step in Keras 3 with model.train_on_batch, on whichever backend KERAS_BACKEND names."""

import keras
from benchdata import ADAM

FRAMEWORK = "keras"
MODES = ("fit",)


def build(mode, d):
    ws = d["params"]
    model = keras.Sequential(
        [keras.Input((ws[0][0].shape[0],))]
        + [keras.layers.Dense(w.shape[1], activation="relu") for w, _ in ws[:-1]]
        + [keras.layers.Dense(ws[-1][0].shape[1])]
    )
    for layer, (w, b) in zip(model.layers, ws):
        layer.set_weights([w, b])  # Keras kernels are (in, out), like the shared arrays
    model.compile(
        optimizer=keras.optimizers.Adam(ADAM["lr"], beta_1=ADAM["b1"], beta_2=ADAM["b2"], epsilon=ADAM["eps"]),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = d["x"], d["y"]

    def step():
        return {"loss": model.train_on_batch(x, y)}

    step.note = f"jit_compile={model.jit_compile}"
    return step
