"""Small CNN training step in PyTorch (NCHW): eager and torch.compile."""

import numpy as np
import torch
import torch.nn.functional as F
from benchdata import ADAM, CNN_CH, CNN_HW, dense_kernel_nhwc_to_nchw
from torch import nn

FRAMEWORK = "torch"
MODES = ("eager", "compile")


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(CNN_CH[0], CNN_CH[1], 3, padding="same")
        self.conv2 = nn.Conv2d(CNN_CH[1], CNN_CH[2], 3, padding="same")
        self.fc = nn.Linear((CNN_HW // 4) ** 2 * CNN_CH[2], 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def build(mode, d):
    model = CNN()
    with torch.no_grad():
        for conv, (w, b) in zip((model.conv1, model.conv2), d["convs"]):
            conv.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.transpose(3, 2, 0, 1))))  # HWIO -> OIHW
            conv.bias.copy_(torch.from_numpy(b))
        w, b = d["dense"]
        # the shared kernel follows an NHWC flatten; torch flattens NCHW
        w = dense_kernel_nhwc_to_nchw(w, CNN_HW // 4, CNN_CH[2])
        model.fc.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
        model.fc.bias.copy_(torch.from_numpy(b))
    opt = torch.optim.Adam(model.parameters(), lr=ADAM["lr"], betas=(ADAM["b1"], ADAM["b2"]), eps=ADAM["eps"])
    x = torch.from_numpy(np.ascontiguousarray(d["x"].transpose(0, 3, 1, 2)))  # NHWC -> NCHW
    y = torch.from_numpy(d["y"])

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = torch.compile(train_step) if mode == "compile" else train_step
    return lambda: {"loss": fn(x, y)}
