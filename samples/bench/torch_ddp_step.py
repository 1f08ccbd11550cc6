#!/usr/bin/python3
"""PyTorch's own figure for issue 12's one-step equivalence.

One optimizer step of the MLP sample (Flatten -> Linear(784,128) -> ReLU ->
Linear(128,10), cross-entropy) on the first 64 Fashion-MNIST training
images, taken two ways from the same initial weights:

  one:  the gradient of the mean loss over all 64 images (one process);
  two:  the gradients of the two halves of 32, averaged ((g0 + g1) / 2, what
        DistributedDataParallel's allreduce gives two ranks),

then compares the weights after the step with the figure
tests/compare_weights.py judges: max |a - b| / max(|a|, |b|, 1e-3) over every
element, and, for the record, max |a - b| / max |a| per tensor. Both ways are
exact in real arithmetic; what differs is the fp32 summation order, so this
is the floor any fp32 data-parallel implementation meets, cltrain's or
PyTorch's.

  /usr/bin/python3 samples/bench/torch_ddp_step.py [--data DIR] [--seeds N]

prints one line per optimizer (SGD lr 0.1, Adam lr 1e-3 eps 1e-8, as
tests/mpi_train.sh runs cltrain) with the worst, median and best figure
over N seeds of the initial weights (default 5).
"""

import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import DEFAULT_DATA_DIR, load_split  # noqa: E402


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def grads(model, x, y):
    model.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(model(x), y).backward()
    return [p.grad.detach().clone() for p in model.parameters()]


def stepped(model, start, g, make_opt):
    """The weights after one step from `start` with gradients `g`."""
    with torch.no_grad():
        for p, s in zip(model.parameters(), start):
            p.copy_(s)
    opt = make_opt(model.parameters())
    for p, gi in zip(model.parameters(), g):
        p.grad = gi.clone()
    opt.step()
    return [p.detach().clone() for p in model.parameters()]


def compare(a, b):
    worst, tensor_worst = 0.0, 0.0
    for x, y in zip(a, b):
        floor = torch.maximum(torch.maximum(x.abs(), y.abs()), torch.tensor(1e-3))
        worst = max(worst, ((x - y).abs() / floor).max().item())
        top = torch.maximum(x.abs(), y.abs()).max().item()
        if top > 0:
            tensor_worst = max(tensor_worst, (x - y).abs().max().item() / top)
    return worst, tensor_worst


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA_DIR, help="Fashion-MNIST IDX folder")
    p.add_argument("--seeds", type=int, default=5, help="initial weights tried")
    args = p.parse_args()
    torch.set_num_threads(1)
    x, y = load_split(args.data, "train", 64)
    optimizers = {
        "sgd lr 0.1": lambda ps: torch.optim.SGD(ps, lr=0.1),
        "adam lr 1e-3 eps 1e-8": lambda ps: torch.optim.Adam(ps, lr=1e-3, eps=1e-8),
    }
    for name, make_opt in optimizers.items():
        per_seed, tensor_worst = [], 0.0
        for seed in range(args.seeds):
            torch.manual_seed(seed)
            model = mlp()
            start = [p.detach().clone() for p in model.parameters()]
            one = grads(model, x, y)
            g0, g1 = grads(model, x[:32], y[:32]), grads(model, x[32:], y[32:])
            two = [(a + b) / 2 for a, b in zip(g0, g1)]
            w, t = compare(stepped(model, start, one, make_opt),
                           stepped(model, start, two, make_opt))
            per_seed.append(w)
            tensor_worst = max(tensor_worst, t)
        per_seed.sort()
        print(f"torch one step, 1 x 64 against 2 x 32 averaged, {name}: per element "
              f"{per_seed[-1]:.3g} at worst (median {per_seed[len(per_seed) // 2]:.3g}, "
              f"best {per_seed[0]:.3g}), per tensor {tensor_worst:.3g} at worst, "
              f"over {args.seeds} seeds")


if __name__ == "__main__":
    main()
