"""Small CNN training step in Keras 3 (channels_last on every backend) with model.train_on_batch."""

import keras
from benchdata import ADAM, CNN_CH, CNN_HW

FRAMEWORK = "keras"
MODES = ("fit",)


def build(mode, d):
    layers = [keras.Input((CNN_HW, CNN_HW, CNN_CH[0]))]
    for ch in CNN_CH[1:]:
        layers += [keras.layers.Conv2D(ch, 3, padding="same", activation="relu"), keras.layers.MaxPooling2D(2)]
    layers += [keras.layers.Flatten(), keras.layers.Dense(10)]
    model = keras.Sequential(layers)
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    for layer, (w, b) in zip(convs, d["convs"]):
        layer.set_weights([w, b])  # Keras conv kernels are (h, w, in, out), like the shared arrays
    model.layers[-1].set_weights(list(d["dense"]))
    model.compile(
        optimizer=keras.optimizers.Adam(ADAM["lr"], beta_1=ADAM["b1"], beta_2=ADAM["b2"], epsilon=ADAM["eps"]),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x, y = d["x"], d["y"]

    def step():
        return {"loss": model.train_on_batch(x, y)}

    step.note = f"jit_compile={model.jit_compile}"
    return step
