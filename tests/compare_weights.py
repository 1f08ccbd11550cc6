#!/usr/bin/env python3
"""compare_weights.py [--all] [--tensor-tol T] A.safetensors B.safetensors [TOLERANCE]

Compares the float32 tensors two checkpoints share (the model's weights;
optimizer state and metadata are left out unless --all): prints the largest relative
difference, max |a - b| / max(|a|, |b|, 1e-3), over every element, and
exits 1 when it is above TOLERANCE (default 0: bit-identical). Also prints
the largest difference in a tensor against that tensor's largest value;
with --tensor-tol T it exits 1 too when that is above T."""
import json
import struct
import sys
from array import array


ALL = "--all" in sys.argv
if ALL:
    sys.argv.remove("--all")
TENSOR_TOL = None
if "--tensor-tol" in sys.argv:
    i = sys.argv.index("--tensor-tol")
    TENSOR_TOL = float(sys.argv[i + 1])
    del sys.argv[i:i + 2]


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        if name.startswith("__") and not ALL:
            continue
        a, b = t["data_offsets"]
        v = array("f")
        v.frombytes(data[a:b])
        if sys.byteorder != "little":
            v.byteswap()
        out[name] = v
    return out


def main():
    a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    if sorted(a) != sorted(b):
        print("the checkpoints hold different tensors")
        return 1
    worst, where = 0.0, ""
    tensor_worst, tensor_where = 0.0, ""
    for name in sorted(a):
        diff, top = 0.0, 0.0
        for x, y in zip(a[name], b[name]):
            d = abs(x - y) / max(abs(x), abs(y), 1e-3)
            if d > worst:
                worst, where = d, name
            diff = max(diff, abs(x - y))
            top = max(top, abs(x), abs(y))
        # The largest difference against the tensor's largest value
        # (judged with --tensor-tol).
        if top > 0 and diff / top > tensor_worst:
            tensor_worst, tensor_where = diff / top, name
    print("max relative difference %.3g%s over %d tensors; per tensor, "
          "max |a - b| / max |a|: %.3g%s" %
          (worst, " (in %s)" % where if where else "", len(a), tensor_worst,
           " (in %s)" % tensor_where if tensor_where else ""))
    if TENSOR_TOL is not None and tensor_worst > TENSOR_TOL:
        return 1
    return 0 if worst <= tol else 1


sys.exit(main())
