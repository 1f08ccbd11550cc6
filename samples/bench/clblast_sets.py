#!/usr/bin/env python3
"""clblast_sets.py [--top N] FILE ...

Turns the JSON files that CLBlast's own tuners write (clblast_tuner_xgemm:
clblast_xgemm_1_32.json, clblast_xgemm_2_32.json, ...;
clblast_tuner_xgemm_direct: clblast_xgemm_direct_1_32.json, ...), or what
they print (a phase cut off before its end writes no JSON file, but its
printed table holds every configuration it timed), into the
parameter sets `cltrain tune --gemm --sets FILE` adds to its search: the N
fastest distinct configurations of each kernel (Xgemm, XgemmDirect) over
all the files given, one a line, with the tuner's time as the label:

  Xgemm GEMMK=0 KREG=1 KWG=32 ... VWN=4  # tuner 1024^3: 0.071 ms

The tuners time one size (their -m -n -k) on the kernel alone; cltrain's
search then times the sets on the products the models train with, as
CLBlast runs them (copies included), and keeps the fastest. Typical use,
on the device to tune:

  clblast_tuner_xgemm -m 1024 -n 1024 -k 1024 -fraction 0.05
  clblast_tuner_xgemm_direct -m 256 -n 256 -k 256
  python3 samples/bench/clblast_sets.py clblast_xgemm*_32.json > sets.txt
  cltrain tune --gemm --sets sets.txt
"""
import argparse
import json
import re
import sys

KERNELS = ("Xgemm", "XgemmDirect")


def size_name(dims):
    """The tuned size, "1024^3" for a cube, else "MxNxK"."""
    return dims[0] + "^3" if len(set(dims)) == 1 else "x".join(dims)


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def log_configurations(text):
    """The same from a tuner's printed table (its standard output): every
    row whose results match, under the last "Parameters explored" line. A
    tuner cut off by a time limit writes no JSON file for the phase it was
    in, but its table has every configuration timed so far."""
    names, dims = [], {}
    for line in ANSI.sub("", text).splitlines():
        m = re.match(r"\s+-([mnk]) (\d+)", line)
        if m:
            dims[m.group(1)] = m.group(2)
        if line.startswith("* Parameters explored:"):
            names = line.split(":", 1)[1].split()
            continue
        if not names or not line.startswith("|") or "results match" not in line:
            continue
        fields = line.split("|")
        try:
            values = [int(v) for v in fields[3].split()]
            time = float(fields[7].split()[0])
        except (IndexError, ValueError):
            continue
        if len(values) != len(names) or time <= 0:
            continue
        kernel = "XgemmDirect" if "WGD" in names else "Xgemm"
        size = size_name([dims.get(k, "?") for k in "mnk"])
        yield kernel, time, dict(zip(names, values)), size


def configurations(path):
    """(kernel, time in ms, parameters, size) of every result in a file: a
    tuner's JSON file, or its printed output."""
    with open(path) as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        yield from log_configurations(text)
        return
    size = size_name([str(data.get(k, "?")) for k in ("arg_m", "arg_n", "arg_k")])
    for r in data.get("results", []):
        kernel = str(r.get("kernel"))
        # The direct tuner names the variant it ran (XgemmDirectTN): the
        # parameters are XgemmDirect's whatever the transposes.
        if kernel.startswith("XgemmDirect"):
            kernel = "XgemmDirect"
        params = {k: v for k, v in r.get("parameters", {}).items() if k != "PRECISION"}
        time = r.get("time")
        if kernel in KERNELS and params and isinstance(time, (int, float)) and time > 0:
            yield kernel, float(time), params, size


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--top", type=int, default=3, help="sets per kernel (default 3)")
    p.add_argument("files", nargs="+", help="the tuners' JSON files or printed output")
    args = p.parse_args()
    if args.top < 1:
        p.error("--top must be at least 1")
    best = {k: {} for k in KERNELS}
    for path in args.files:
        try:
            for kernel, time, params, size in configurations(path):
                key = tuple(sorted(params.items()))
                old = best[kernel].get(key)
                if old is None or time < old[0]:
                    best[kernel][key] = (time, size)
        except (OSError, ValueError) as e:
            print(f"clblast_sets.py: {path}: {e}", file=sys.stderr)
            return 1
    lines = 0
    for kernel in KERNELS:
        ranked = sorted(best[kernel].items(), key=lambda kv: kv[1][0])[: args.top]
        for key, (time, size) in ranked:
            values = " ".join(f"{name}={int(value)}" for name, value in key)
            print(f"{kernel} {values}  # tuner {size}: {time:.3f} ms")
            lines += 1
    if lines == 0:
        print("clblast_sets.py: no Xgemm or XgemmDirect results in the files given",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
