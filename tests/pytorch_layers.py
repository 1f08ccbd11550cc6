#!/usr/bin/env python3
"""pytorch_layers.py CLTRAIN DIR

Layers checked against PyTorch end to end: a model with layer
normalisation (over a conv layer's whole [C, H, W] output, PyTorch's
nn.LayerNorm([C, H, W]), its ReLU fused into it, and over a dense layer's
features, with another eps, and over each pixel's channels, PyTorch's
nn.LayerNorm(C) on the image permuted to channels-last) and a depthwise
convolution (Conv2d with groups = channels, a multiplier of 2, stride 2)
and a global max pooling
(torch.amax over each plane) starts from random
weights written here (the LayerNorm scales and shifts random too, not
ones and zeros), trains one SGD step on 24 CSV rows in cltrain, and the
same step is taken in PyTorch: every weight after it, and predict's
probabilities from the trained checkpoint, must agree within float
rounding."""
import csv
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
from torch import nn

cltrain, work = sys.argv[1], sys.argv[2]
torch.manual_seed(7)
torch.set_default_dtype(torch.float32)

MODEL = """input shape=2x4x4
conv2d name=conv filters=3 kernel=3 padding=1
layernorm name=ln1
relu
depthwise_conv2d name=dw kernel=3 multiplier=2 stride=2 padding=1
layernorm name=ln3 over=channels eps=0.01
tanh
global_maxpool
dense name=fc1 units=8
layernorm name=ln2 eps=0.001
tanh
dense name=fc2 units=3
softmax_cross_entropy
"""


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.ln1 = nn.LayerNorm([3, 4, 4])
        self.dw = nn.Conv2d(3, 6, 3, stride=2, padding=1, groups=3)
        self.ln3 = nn.LayerNorm(6, eps=0.01)
        self.fc1 = nn.Linear(6, 8)
        self.ln2 = nn.LayerNorm(8, eps=0.001)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        x = torch.relu(self.ln1(self.conv(x)))
        x = self.ln3(self.dw(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = torch.amax(torch.tanh(x), dim=(2, 3))
        x = torch.tanh(self.ln2(self.fc1(x)))
        return self.fc2(x)


def save_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        b = t.detach().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(t["shape"])
    return out


net = Net()
with torch.no_grad():
    for ln in (net.ln1, net.ln2, net.ln3):
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)
init = {k: v.clone() for k, v in net.state_dict().items()}
save_safetensors(os.path.join(work, "init.safetensors"), init)
with open(os.path.join(work, "ln.model"), "w") as f:
    f.write(MODEL)

# 24 rows: a label and 32 values, each row with an offset of its own
# (what layer normalisation takes away).
x = torch.rand(24, 32) * 2 - 1 + torch.arange(24).reshape(24, 1) * 0.25
y = torch.arange(24) % 3
with open(os.path.join(work, "train.csv"), "w", newline="") as f:
    w = csv.writer(f)
    for i in range(24):
        w.writerow([int(y[i])] + ["%.9g" % v for v in x[i].tolist()])
with open(os.path.join(work, "rows.csv"), "w", newline="") as f:
    w = csv.writer(f)
    for i in range(24):
        w.writerow(["%.9g" % v for v in x[i].tolist()])
# the values as cltrain reads them (the text's float32)
x = torch.tensor([[float("%.9g" % v) for v in r] for r in x.tolist()])

lr = 0.1
run = [cltrain, "train", os.path.join(work, "ln.model"),
       "--data", os.path.join(work, "train.csv"), "--csv-values", "floats",
       "--holdout", "0", "--epochs", "1", "--batch", "24",
       "--optimizer", "sgd", "--lr", str(lr), "--no-shuffle",
       "--init", os.path.join(work, "init.safetensors"),
       "--save", os.path.join(work, "trained.safetensors"), "--quiet"]
subprocess.run(run, check=True)

opt = torch.optim.SGD(net.parameters(), lr=lr)
loss = nn.functional.cross_entropy(net(x.reshape(24, 2, 4, 4)), y)
opt.zero_grad()
loss.backward()
opt.step()

ours = load_safetensors(os.path.join(work, "trained.safetensors"))
worst = 0.0
for name, t in net.state_dict().items():
    theirs = t.detach().numpy()
    assert name in ours, "cltrain's checkpoint lacks " + name
    assert list(ours[name].shape) == list(theirs.shape), (
        name, ours[name].shape, theirs.shape)
    moved = np.abs(theirs - init[name].numpy()).max()
    assert moved > 1e-4, name + " did not move in PyTorch's step"
    d = np.abs(ours[name] - theirs).max() / max(np.abs(theirs).max(), 1e-3)
    print("%-10s %-10s moved %.3g, differs by %.2g of its largest" % (
        name, list(theirs.shape), moved, d))
    worst = max(worst, d)
assert worst < 2e-5, "weights differ from PyTorch's by %g" % worst

out = os.path.join(work, "pred.csv")
subprocess.run([cltrain, "predict", os.path.join(work, "ln.model"),
                "--weights", os.path.join(work, "trained.safetensors"),
                "--output", out, os.path.join(work, "rows.csv")],
               check=True, stdout=subprocess.DEVNULL)
rows = list(csv.reader(open(out)))[1:]
with torch.no_grad():
    p = torch.softmax(net(x.reshape(24, 2, 4, 4)), dim=1).numpy()
ours_p = np.array([[float(v) for v in r[3:]] for r in rows])
assert ours_p.shape == p.shape, (ours_p.shape, p.shape)
d = np.abs(ours_p - p).max()
print("predict: probabilities differ by at most %.2g" % d)
assert d < 1e-5, d
print("layernorm, depthwise_conv2d, global_maxpool: one SGD step and the "
      "predictions as PyTorch's")
