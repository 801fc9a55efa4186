"""MLP training step in PyTorch: eager, and the same step under torch.compile."""

import torch
import torch.nn.functional as F
from benchdata import ADAM
from torch import nn

FRAMEWORK = "torch"
MODES = ("eager", "compile")


class MLP(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(n_in, n_out), nn.ReLU()]
        self.net = nn.Sequential(*layers[:-1])

    def forward(self, x):
        return self.net(x)


def build(mode, d):
    sizes = [d["params"][0][0].shape[0]] + [w.shape[1] for w, _ in d["params"]]
    model = MLP(sizes)
    linears = [m for m in model.net if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for lin, (w, b) in zip(linears, d["params"]):
            lin.weight.copy_(torch.from_numpy(w.T))  # torch stores (out, in)
            lin.bias.copy_(torch.from_numpy(b))
    opt = torch.optim.Adam(model.parameters(), lr=ADAM["lr"], betas=(ADAM["b1"], ADAM["b2"]), eps=ADAM["eps"])
    x, y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = torch.compile(train_step) if mode == "compile" else train_step
    return lambda: {"loss": fn(x, y)}
