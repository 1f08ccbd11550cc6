#!/usr/bin/env python3
"""Loads a cltrain checkpoint of samples/fashion_cnn.model into the same
network written in PyTorch, with a strict load_state_dict, and reports its
accuracy on the first N Fashion-MNIST test images. Needs only torch and
numpy (the safetensors file is parsed here: 8-byte header length, JSON
header, raw little-endian tensors).

  cltrain train samples/fashion_cnn.model --data fashion-mnist --save cnn.st
  python3 samples/pytorch_load.py cnn.st [N]
"""
import gzip
import json
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

def load(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8+n]); data = b[8+n:]
    meta = h.pop('__metadata__', {})
    dt = {'F32': np.float32, 'I64': np.int64, 'F64': np.float64, 'I32': np.int32}
    out = {}
    for k, v in h.items():
        s, e = v['data_offsets']
        out[k] = torch.from_numpy(np.frombuffer(data[s:e], dtype=dt[v['dtype']]).reshape(v['shape']).copy())
    return out, meta
sd, meta = load(sys.argv[1])
count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
print('metadata:', meta)
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.conv1 = nn.Conv2d(1, 32, 3); s.conv2 = nn.Conv2d(32, 64, 3)
        s.fc1 = nn.Linear(1600, 128); s.fc2 = nn.Linear(128, 10)
    def forward(s, x):
        x = F.max_pool2d(F.relu(s.conv1(x)), 2); x = F.max_pool2d(F.relu(s.conv2(x)), 2)
        return s.fc2(F.relu(s.fc1(x.flatten(1))))
net = Net()
# Training state (optimizer moments, RNG counters) lives under '__' names.
params = {k: v for k, v in sd.items() if not k.startswith('__')}
net.load_state_dict(params, strict=True)
with gzip.open('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz') as f:
    x = np.frombuffer(f.read()[16:], dtype=np.uint8).reshape(-1, 1, 28, 28)[:count] / 255.0
with gzip.open('/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz') as f:
    y = np.frombuffer(f.read()[8:], dtype=np.uint8)[:count]
with torch.no_grad():
    p = net(torch.tensor(x, dtype=torch.float32)).argmax(1).numpy()
print('pytorch accuracy on the first %d test images: %.4f' % (count, (p == y).mean()))
