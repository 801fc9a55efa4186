"""Per-example gradients in PyTorch with torch.func (vmap over grad_and_value of a functional_call), clipped and summed
as in DP-SGD: eager and torch.compile."""

import torch
import torch.nn.functional as F
from benchdata import PG_CLIP
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

FRAMEWORK = "torch"
MODES = ("eager", "compile")


def build(mode, d):
    (w1, b1), (w2, b2) = d["params"]
    model = nn.Sequential(nn.Linear(*w1.shape), nn.ReLU(), nn.Linear(*w2.shape))
    with torch.no_grad():
        for lin, (w, b) in zip((model[0], model[2]), d["params"]):
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])

    def loss_one(params, x, y):
        logits = functional_call(model, params, (x.unsqueeze(0),))
        return F.cross_entropy(logits, y.unsqueeze(0))

    per_example = vmap(grad_and_value(loss_one), in_dims=(None, 0, 0))

    def step_fn(params, x, y):
        grads, losses = per_example(params, x, y)  # grads: each of shape (batch, *param.shape)
        norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads.values()))
        scale = torch.clamp(PG_CLIP / norms, max=1.0)
        summed = [torch.einsum("b,b...->...", scale, g) for g in grads.values()]
        return losses.mean(), sum((g * g).sum() for g in summed)

    fn = torch.compile(step_fn) if mode == "compile" else step_fn

    def step():
        loss, gsq = fn(params, x, y)
        return {"loss": loss, "gsq": gsq}

    return step
