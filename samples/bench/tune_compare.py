#!/usr/bin/env python3
"""Two `cltrain tune` outputs side by side: for every product and
candidate timed in both, the milliseconds of each, their ratio (A's time
over B's: above 1, B is faster) and which one each chose (*). Made for
comparing two builds on one device in one session (`gpu_session.sh ab`),
or one build under two settings.

    python3 samples/bench/tune_compare.py A.txt B.txt [--only implicit] [--changed]

Only the candidates whose name contains --only's text are shown (every one
by default); with --changed, only products whose choice differs. The last
line sums, over the products, the chosen candidate's time in each file:
a rough figure, not a step's time (a step runs some products more than
once, and none of those that a layout's choice leaves out: `bench train
--profile` of both builds says what a step costs).
"""
import argparse
import re
import sys

HEADER = re.compile(r"^(\S.*) \((.*)\), (measured|stored|default.*?)(;.*)?$")
TIMED = re.compile(r"^  (\S.*?)\s+([0-9.]+) ms\s+[0-9.]+(  <- chosen)?$")


def parse(path):
    """{product: {candidate: (ms, chosen)}}, products in file order."""
    plans = {}
    product = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = HEADER.match(line)
            if m:
                product = f"{m.group(1)} ({m.group(2)})"
                # A product met twice (two tune runs in one file): the
                # last one counts.
                plans[product] = {}
                continue
            m = TIMED.match(line)
            if m and product is not None:
                plans[product][m.group(1)] = (float(m.group(2)), bool(m.group(3)))
            elif not line.startswith("  "):
                product = None
    return plans


def chosen(cands):
    for name, (ms, is_chosen) in cands.items():
        if is_chosen:
            return name, ms
    return None, 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="the first tune output (the reference)")
    ap.add_argument("b", help="the second tune output")
    ap.add_argument("--only", default="", help="candidates whose name has this text")
    ap.add_argument("--changed", action="store_true",
                    help="only products whose chosen candidate differs")
    args = ap.parse_args()
    a, b = parse(args.a), parse(args.b)
    common = [p for p in a if p in b]
    if not common:
        print(f"tune_compare.py: no product appears in both {args.a} and {args.b}",
              file=sys.stderr)
        return 1
    width = max(len(n) for p in common for n in a[p]) if common else 10
    total_a = total_b = 0.0
    for p in common:
        ca, cb = chosen(a[p]), chosen(b[p])
        total_a += ca[1]
        total_b += cb[1]
        if args.changed and ca[0] == cb[0]:
            continue
        rows = []
        for name, (ms_a, ch_a) in a[p].items():
            if args.only not in name or name not in b[p]:
                continue
            ms_b, ch_b = b[p][name]
            ratio = ms_a / ms_b if ms_b > 0 else float("inf")
            rows.append(f"  {name:<{width}} {ms_a:9.3f}{'*' if ch_a else ' '} "
                        f"{ms_b:9.3f}{'*' if ch_b else ' '}  {ratio:5.2f}")
        if rows:
            print(p)
            print("\n".join(rows))
    print(f"chosen, summed over {len(common)} products: {total_a:.3f} ms "
          f"({args.a}) and {total_b:.3f} ms ({args.b}), "
          f"ratio {total_a / total_b if total_b else float('inf'):.3f}")
    only_a = [p for p in a if p not in b]
    only_b = [p for p in b if p not in a]
    if only_a or only_b:
        print(f"in one file only: {len(only_a)} products of {args.a}, "
              f"{len(only_b)} of {args.b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
