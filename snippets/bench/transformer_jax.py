"""Pre-LayerNorm transformer block, forward + backward + SGD update, in JAX/Flax/Optax: op-by-op and jax.jit."""

import math

import jax
import jax.numpy as jnp
import optax
from benchdata import LN_EPS, SGD_LR, TF_D, TF_FF, TF_HEADS
from flax import linen as nn

FRAMEWORK = "jax"
MODES = ("opbyop", "jit")


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        n, s, d = x.shape
        hd = d // TF_HEADS
        h = nn.LayerNorm(epsilon=LN_EPS, name="ln1")(x)

        def heads(t):
            return t.reshape(n, s, TF_HEADS, hd).transpose(0, 2, 1, 3)

        q, k, v = (heads(nn.Dense(TF_D, name=name)(h)) for name in ("q", "k", "v"))
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd), axis=-1)
        x = x + nn.Dense(TF_D, name="o")((att @ v).transpose(0, 2, 1, 3).reshape(n, s, d))
        h = nn.Dense(TF_FF, name="ff1")(nn.LayerNorm(epsilon=LN_EPS, name="ln2")(x))
        return x + nn.Dense(TF_D, name="ff2")(jax.nn.gelu(h, approximate=False))  # jax's default is the tanh form


def build(mode, d):
    model = Block()
    p = d["params"]
    params = {name: {"kernel": jnp.asarray(p[name][0]), "bias": jnp.asarray(p[name][1])} for name in ("q", "k", "v", "o", "ff1", "ff2")}
    params.update({name: {"scale": jnp.asarray(p[name][0]), "bias": jnp.asarray(p[name][1])} for name in ("ln1", "ln2")})
    tx = optax.sgd(SGD_LR)
    state = {"params": params, "opt": tx.init(params)}
    x, target = jnp.asarray(d["x"]), jnp.asarray(d["target"])

    def loss_fn(p, x, target):
        return jnp.mean((model.apply({"params": p}, x) - target) ** 2)

    def train_step(params, opt_state, x, target):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, target)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    fn = jax.jit(train_step) if mode == "jit" else train_step

    def step():
        state["params"], state["opt"], loss = fn(state["params"], state["opt"], x, target)
        return {"loss": loss}

    return step
