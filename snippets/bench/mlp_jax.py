"""MLP training step in JAX/Flax/Optax: op-by-op (no jit) and under jax.jit."""

from typing import Sequence

import jax
import jax.numpy as jnp
import optax
from benchdata import ADAM
from flax import linen as nn

FRAMEWORK = "jax"
MODES = ("opbyop", "jit")


class MLP(nn.Module):
    hidden_sizes: Sequence[int]
    num_classes: int

    @nn.compact
    def __call__(self, x):
        for h in self.hidden_sizes:
            x = nn.relu(nn.Dense(h)(x))
        return nn.Dense(self.num_classes)(x)


def build(mode, d):
    ws = d["params"]
    model = MLP(hidden_sizes=tuple(w.shape[1] for w, _ in ws[:-1]), num_classes=ws[-1][0].shape[1])
    params = {f"Dense_{i}": {"kernel": jnp.asarray(w), "bias": jnp.asarray(b)} for i, (w, b) in enumerate(ws)}
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
