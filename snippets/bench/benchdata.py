"""Shared inputs of the benchmark workloads: weights, data and reference results, made once with NumPy.

Every framework variant of a workload loads exactly these arrays (converting layouts where its
convention differs), so they all do the same work from the same starting point. The reference
first-step results are computed here in float64 NumPy; a variant whose first step does not match
them within the stated tolerance is reported as failed and is not timed.

Array layouts here follow Keras/Flax/TensorFlow: dense kernels are (in, out), convolution kernels
are (height, width, in, out) and images are NHWC. PyTorch variants transpose on load.
"""

from __future__ import annotations

import numpy as np

SEED = 20240601

# rtol on the first-step loss (float32 against a float64 reference) and on the per-example gradient
# checksum (a sum over ~3 million float32 squares, so a looser bound).
LOSS_RTOL = 1e-4
GRAD_RTOL = 1e-3
# after one update, every variant's loss must agree with the median of the workload's variants
UPDATE_RTOL = 1e-3

# Adam as torch.optim.Adam / optax.adam default it (Keras's default epsilon is 1e-7: set to 1e-8).
ADAM = {"lr": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8}
SGD_LR = 1e-2
LN_EPS = 1e-5

WORKLOADS = {
    "mlp-train-step": {
        "module": "mlp",
        "title": "MLP training step",
        "description": "The MLP of the PyTorch-vs-JAX slides (784-1024-512-10, ReLU), one training step with "
        "Adam (lr 1e-3) on a batch of 128: forward, softmax cross-entropy, backward, update.",
    },
    "cnn-train-step": {
        "module": "cnn",
        "title": "Small CNN training step",
        "description": "Two 3x3 convolutions (3-16-32 channels, same padding, ReLU, 2x2 max-pool each) and a dense "
        "layer to 10 classes, on 32x32x3 images in a batch of 32; one Adam step.",
    },
    "transformer-block": {
        "module": "transformer",
        "title": "Transformer block, forward and backward",
        "description": "One pre-LayerNorm transformer block (d_model 128, 4 heads, MLP 512 with exact GELU) on a batch "
        "of 8 sequences of 64 tokens: forward, mean-squared-error loss, backward, and a plain SGD update "
        "(so Keras's train_on_batch does the same work as the others).",
    },
    "per-example-grads": {
        "module": "pergrad",
        "title": "Per-example gradients",
        "description": "The gradient of each example's loss separately (not their mean) for a 784-128-10 MLP on a "
        "batch of 32, with the framework's vectorising transform: torch.func.vmap(grad), jax.vmap(jax.grad), "
        "GradientTape.jacobian (pfor). As in differentially private SGD, each example's gradient is then clipped "
        "to norm 10 and the clipped gradients are summed, so the per-example gradients must really be computed.",
    },
}


def _uniform(rng, shape, fan_in):
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def _dense(rng, n_in, n_out):
    return _uniform(rng, (n_in, n_out), n_in), _uniform(rng, (n_out,), n_in)


def _rng(workload: str):
    return np.random.default_rng([SEED, sum(map(ord, workload))])


# --- MLP -------------------------------------------------------------------------------------------
MLP_SIZES = (784, 1024, 512, 10)
MLP_BATCH = 128


def mlp_data() -> dict:
    rng = _rng("mlp")
    params = []
    for n_in, n_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        params.append(_dense(rng, n_in, n_out))
    x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)
    y = rng.integers(0, MLP_SIZES[-1], size=MLP_BATCH).astype(np.int64)
    return {"params": params, "x": x, "y": y}


def _xent(logits, y):
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y]


def mlp_reference(d: dict) -> dict:
    h = d["x"].astype(np.float64)
    for i, (w, b) in enumerate(d["params"]):
        h = h @ w.astype(np.float64) + b
        if i < len(d["params"]) - 1:
            h = np.maximum(h, 0.0)
    return {"loss": float(_xent(h, d["y"]).mean())}


# --- CNN -------------------------------------------------------------------------------------------
CNN_BATCH, CNN_HW, CNN_CH = 32, 32, (3, 16, 32)
CNN_FLAT = (CNN_HW // 4) * (CNN_HW // 4) * CNN_CH[-1]


def cnn_data() -> dict:
    rng = _rng("cnn")
    convs = []
    for c_in, c_out in zip(CNN_CH[:-1], CNN_CH[1:]):
        fan_in = 9 * c_in
        convs.append((_uniform(rng, (3, 3, c_in, c_out), fan_in), _uniform(rng, (c_out,), fan_in)))
    dense = _dense(rng, CNN_FLAT, 10)
    x = rng.standard_normal((CNN_BATCH, CNN_HW, CNN_HW, CNN_CH[0])).astype(np.float32)
    y = rng.integers(0, 10, size=CNN_BATCH).astype(np.int64)
    return {"convs": convs, "dense": dense, "x": x, "y": y}


def dense_kernel_nhwc_to_nchw(w: np.ndarray, hw: int, ch: int) -> np.ndarray:
    """Reorder the rows of a dense kernel that follows an NHWC flatten so it follows an NCHW flatten."""
    n_out = w.shape[1]
    return w.reshape(hw, hw, ch, n_out).transpose(2, 0, 1, 3).reshape(hw * hw * ch, n_out)


def _conv_same(x, w, b):
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # n, h, w, c, 3, 3
    return np.einsum("nhwcij,ijco->nhwo", win, w, optimize=True) + b


def _maxpool2(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def cnn_reference(d: dict) -> dict:
    h = d["x"].astype(np.float64)
    for w, b in d["convs"]:
        h = _maxpool2(np.maximum(_conv_same(h, w.astype(np.float64), b), 0.0))
    w, b = d["dense"]
    logits = h.reshape(len(h), -1) @ w.astype(np.float64) + b
    return {"loss": float(_xent(logits, d["y"]).mean())}


# --- transformer block -------------------------------------------------------------------------------
TF_BATCH, TF_SEQ, TF_D, TF_HEADS, TF_FF = 8, 64, 128, 4, 512


def transformer_data() -> dict:
    rng = _rng("transformer")
    p = {}
    for name in ("q", "k", "v", "o"):
        p[name] = _dense(rng, TF_D, TF_D)
    p["ff1"] = _dense(rng, TF_D, TF_FF)
    p["ff2"] = _dense(rng, TF_FF, TF_D)
    for name in ("ln1", "ln2"):
        p[name] = (
            (1.0 + 0.1 * rng.standard_normal(TF_D)).astype(np.float32),
            (0.1 * rng.standard_normal(TF_D)).astype(np.float32),
        )
    x = rng.standard_normal((TF_BATCH, TF_SEQ, TF_D)).astype(np.float32)
    target = rng.standard_normal((TF_BATCH, TF_SEQ, TF_D)).astype(np.float32)
    return {"params": p, "x": x, "target": target}


def _layer_norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + LN_EPS) * g + b


def transformer_reference(d: dict) -> dict:
    from scipy.special import erf

    p = {k: tuple(a.astype(np.float64) for a in v) for k, v in d["params"].items()}
    x = d["x"].astype(np.float64)
    n, s, dm = x.shape
    hd = dm // TF_HEADS
    h = _layer_norm(x, *p["ln1"])

    def heads(t):
        return t.reshape(n, s, TF_HEADS, hd).transpose(0, 2, 1, 3)

    q, k, v = (heads(h @ p[name][0] + p[name][1]) for name in ("q", "k", "v"))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    att = scores / scores.sum(-1, keepdims=True)
    ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, s, dm)
    x = x + ctx @ p["o"][0] + p["o"][1]
    h = _layer_norm(x, *p["ln2"]) @ p["ff1"][0] + p["ff1"][1]
    h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
    out = x + h @ p["ff2"][0] + p["ff2"][1]
    return {"loss": float(((out - d["target"]) ** 2).mean())}


# --- per-example gradients ---------------------------------------------------------------------------
PG_SIZES = (784, 128, 10)
PG_BATCH = 32
PG_CLIP = 10.0


def pergrad_data() -> dict:
    rng = _rng("pergrad")
    params = [_dense(rng, a, b) for a, b in zip(PG_SIZES[:-1], PG_SIZES[1:])]
    x = rng.standard_normal((PG_BATCH, PG_SIZES[0])).astype(np.float32)
    y = rng.integers(0, PG_SIZES[-1], size=PG_BATCH).astype(np.int64)
    return {"params": params, "x": x, "y": y}


def pergrad_reference(d: dict) -> dict:
    """Mean per-example loss, and gsq: the squared norm of the sum of the per-example gradients, each first
    clipped to norm PG_CLIP."""
    (w1, b1), (w2, b2) = [(w.astype(np.float64), b.astype(np.float64)) for w, b in d["params"]]
    x = d["x"].astype(np.float64)
    z1 = x @ w1 + b1
    a1 = np.maximum(z1, 0.0)
    logits = a1 @ w2 + b2
    losses = _xent(logits, d["y"])
    e = np.exp(logits - logits.max(1, keepdims=True))
    dlogits = e / e.sum(1, keepdims=True)
    dlogits[np.arange(len(x)), d["y"]] -= 1.0
    dz1 = (dlogits @ w2.T) * (z1 > 0)
    sq = lambda a: (a * a).sum(1)  # noqa: E731
    # per-example squared norms; |outer(a, b)|^2 = |a|^2 |b|^2
    n2 = sq(a1) * sq(dlogits) + sq(dlogits) + sq(x) * sq(dz1) + sq(dz1)
    scale = np.minimum(1.0, PG_CLIP / np.sqrt(n2))[:, None]
    # sum_i scale_i * outer(a_i, b_i) = a^T (scale * b)
    summed = [x.T @ (scale * dz1), (scale * dz1).sum(0), a1.T @ (scale * dlogits), (scale * dlogits).sum(0)]
    return {"loss": float(losses.mean()), "gsq": float(sum((g * g).sum() for g in summed))}


DATA = {"mlp": mlp_data, "cnn": cnn_data, "transformer": transformer_data, "pergrad": pergrad_data}
REFERENCE = {"mlp": mlp_reference, "cnn": cnn_reference, "transformer": transformer_reference, "pergrad": pergrad_reference}
TOLERANCE = {"loss": LOSS_RTOL, "gsq": GRAD_RTOL}
