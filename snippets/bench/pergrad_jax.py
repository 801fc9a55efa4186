"""Per-example gradients in JAX: jax.vmap(jax.value_and_grad(loss of one example)), clipped and summed as in
DP-SGD; op-by-op and jax.jit."""

import jax
import jax.numpy as jnp
import optax
from benchdata import PG_CLIP

FRAMEWORK = "jax"
MODES = ("opbyop", "jit")


def build(mode, d):
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in d["params"]]
    x, y = jnp.asarray(d["x"]), jnp.asarray(d["y"], dtype=jnp.int32)

    def loss_one(params, x, y):
        (w1, b1), (w2, b2) = params
        logits = jax.nn.relu(x @ w1 + b1) @ w2 + b2
        return optax.softmax_cross_entropy_with_integer_labels(logits, y)

    per_example = jax.vmap(jax.value_and_grad(loss_one), in_axes=(None, 0, 0))

    def step_fn(params, x, y):
        losses, grads = per_example(params, x, y)  # leaves of shape (batch, *param.shape)
        leaves = jax.tree_util.tree_leaves(grads)
        norms = jnp.sqrt(sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in leaves))
        scale = jnp.minimum(1.0, PG_CLIP / norms)
        summed = [jnp.tensordot(scale, g, axes=1) for g in leaves]
        return losses.mean(), sum(jnp.sum(g * g) for g in summed)

    fn = jax.jit(step_fn) if mode == "jit" else step_fn

    def step():
        loss, gsq = fn(params, x, y)
        return {"loss": loss, "gsq": gsq}

    return step
