"""Pre-LayerNorm transformer block, forward + backward + SGD update, in PyTorch: eager and torch.compile."""

import math

import torch
import torch.nn.functional as F
from benchdata import LN_EPS, SGD_LR, TF_D, TF_FF, TF_HEADS
from torch import nn

FRAMEWORK = "torch"
MODES = ("eager", "compile")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(TF_D, eps=LN_EPS)
        self.ln2 = nn.LayerNorm(TF_D, eps=LN_EPS)
        self.q, self.k, self.v, self.o = (nn.Linear(TF_D, TF_D) for _ in range(4))
        self.ff1 = nn.Linear(TF_D, TF_FF)
        self.ff2 = nn.Linear(TF_FF, TF_D)

    def forward(self, x):
        n, s, d = x.shape
        hd = d // TF_HEADS
        h = self.ln1(x)

        def heads(t):
            return t.view(n, s, TF_HEADS, hd).transpose(1, 2)

        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(hd), dim=-1)
        x = x + self.o((att @ v).transpose(1, 2).reshape(n, s, d))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))  # exact (erf) GELU


def build(mode, d):
    model = Block()
    p = d["params"]
    with torch.no_grad():
        for name in ("q", "k", "v", "o", "ff1", "ff2"):
            lin = getattr(model, name)
            lin.weight.copy_(torch.from_numpy(p[name][0].T.copy()))
            lin.bias.copy_(torch.from_numpy(p[name][1]))
        for name in ("ln1", "ln2"):
            ln = getattr(model, name)
            ln.weight.copy_(torch.from_numpy(p[name][0]))
            ln.bias.copy_(torch.from_numpy(p[name][1]))
    opt = torch.optim.SGD(model.parameters(), lr=SGD_LR)
    x, target = torch.from_numpy(d["x"]), torch.from_numpy(d["target"])

    def train_step(x, target):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = torch.compile(train_step) if mode == "compile" else train_step
    return lambda: {"loss": fn(x, target)}
