#!/usr/bin/env python3
"""PyTorch's matrix product GFLOP/s, the reference for `cltrain bench gemm`
(fp32, TF32 off) and `cltrain bench gemm --precision mixed` (fp16 inputs:
torch.matmul on half tensors, which sums in fp32 on NVIDIA's tensor cores).

    python3 samples/bench/torch_gemm.py --device cuda --sizes 1024 2048 4096
    /usr/bin/python3 samples/bench/torch_gemm.py --sizes 512 1024

Prints one line per size and precision:

    torch gemm n=4096 dtype=fp16 device=cuda gflops=...
"""
import argparse
import time

import torch


def bench(n, dtype, device, seconds):
    a = torch.rand(n, n, dtype=dtype, device=device) * 2 - 1
    b = torch.rand(n, n, dtype=dtype, device=device) * 2 - 1
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for _ in range(2):  # untimed: library set-up, kernel choice
        torch.matmul(a, b)
    sync()
    reps, start = 0, time.perf_counter()
    while True:
        torch.matmul(a, b)
        reps += 1
        if reps % 4 == 0 or reps < 4:
            sync()
            elapsed = time.perf_counter() - start
            if elapsed >= seconds and reps >= 3:
                break
    return 2.0 * n ** 3 * reps / elapsed * 1e-9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048])
    ap.add_argument("--precision", choices=["fp32", "fp16", "both"],
                    default="both",
                    help="fp16 only where the device is cuda (default both)")
    ap.add_argument("--seconds", type=float, default=0.5,
                    help="time each product at least this long (0.5)")
    args = ap.parse_args()
    if args.device == "cuda":
        if not torch.cuda.is_available():
            ap.error("--device cuda: this PyTorch has no CUDA device")
        # fp32 means fp32: no TF32 (as torch_train.py --device cuda).
        torch.backends.cuda.matmul.allow_tf32 = False
    kinds = ["fp32", "fp16"] if args.precision == "both" else [args.precision]
    if args.device != "cuda" and "fp16" in kinds:
        if args.precision == "fp16":
            ap.error("fp16 products are measured on cuda only")
        kinds = ["fp32"]
    for n in args.sizes:
        for kind in kinds:
            dtype = torch.float16 if kind == "fp16" else torch.float32
            gf = bench(n, dtype, args.device, args.seconds)
            print("torch gemm n=%d dtype=%s device=%s gflops=%.1f"
                  % (n, kind, args.device, gf), flush=True)


if __name__ == "__main__":
    main()
