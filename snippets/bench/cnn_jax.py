"""Small CNN training step in JAX/Flax/Optax (NHWC): op-by-op and jax.jit."""

import jax
import jax.numpy as jnp
import optax
from benchdata import ADAM, CNN_CH
from flax import linen as nn

FRAMEWORK = "jax"
MODES = ("opbyop", "jit")


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        for ch in CNN_CH[1:]:
            x = nn.relu(nn.Conv(ch, (3, 3), padding="SAME")(x))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
        return nn.Dense(10)(x.reshape(x.shape[0], -1))


def build(mode, d):
    model = CNN()
    params = {f"Conv_{i}": {"kernel": jnp.asarray(w), "bias": jnp.asarray(b)} for i, (w, b) in enumerate(d["convs"])}
    params["Dense_0"] = {"kernel": jnp.asarray(d["dense"][0]), "bias": jnp.asarray(d["dense"][1])}
    tx = optax.adam(ADAM["lr"], b1=ADAM["b1"], b2=ADAM["b2"], eps=ADAM["eps"])
    state = {"params": params, "opt": tx.init(params)}
    x, y = jnp.asarray(d["x"]), jnp.asarray(d["y"], dtype=jnp.int32)

    def loss_fn(p, x, y):
        logits = model.apply({"params": p}, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    fn = jax.jit(train_step) if mode == "jit" else train_step

    def step():
        state["params"], state["opt"], loss = fn(state["params"], state["opt"], x, y)
        return {"loss": loss}

    return step
