#!/usr/bin/env python3
"""Count the results of a .ci/run.

usage: count_results.py RESULTS_DIR

RESULTS_DIR holds what .ci/run saved for each stage:
  STAGE.testlog.json  meson's testlog.json of a `meson test` run, one JSON
                      object per line and per test;
  STAGE.result        a stage that is one result of its own (oclgrind):
                      "pass" or "fail" on the first line, then a reason; or a
                      step that is not a test (install, build): "ok" (not
                      counted) or "fail" (counted as one failure, so that a
                      broken build can never look green).
  STAGE.expect        for a stage that ran meson test: one line, how many
                      tests `meson test --list` named, so that a test that
                      never got to write its result is still counted as failed.

Each meson test counts once per stage it ran in: OK and EXPECTEDFAIL pass;
SKIP is counted as skipped; everything else (FAIL, ERROR, TIMEOUT,
UNEXPECTEDPASS) fails. Prints one line per stage, the failed tests by name,
and last, alone on its line, "N passed, N failed" (", N skipped" when some
were). Exits 1 when anything failed or nothing ran at all, else 0.
"""

import json
import os
import sys

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}


def stage_of(filename, suffix):
    return filename[: -len(suffix)]


def read_testlog(path):
    """Returns a list of (name, result) from one testlog.json."""
    results = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                results.append((f"{os.path.basename(path)}:{lineno} (unreadable: {e})", "ERROR"))
                continue
            results.append((obj.get("name", "?"), str(obj.get("result", "ERROR")).upper()))
    return results


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    outdir = argv[1]
    names = sorted(os.listdir(outdir)) if os.path.isdir(outdir) else []

    passed = failed = skipped = 0
    failures = []
    lines = []

    stages = []
    for n in names:
        for suffix in (".testlog.json", ".result"):
            if n.endswith(suffix):
                stages.append((stage_of(n, suffix), suffix, n))
    # Stages in the order .ci/run wrote them (files carry a numeric prefix).
    stages.sort()

    for stage, suffix, n in stages:
        path = os.path.join(outdir, n)
        if suffix == ".result":
            with open(path, encoding="utf-8", errors="replace") as f:
                first = f.readline().strip()
                reason = f.read().strip()
            if first == "pass":
                passed += 1
                lines.append(f"{stage}: passed")
            elif first == "ok":
                lines.append(f"{stage}: ok ({reason}; a step, not counted)")
            else:
                failed += 1
                failures.append(f"{stage}: {reason or 'failed'}")
                lines.append(f"{stage}: FAILED")
            continue

        results = read_testlog(path)
        p = sum(1 for _, r in results if r in PASS)
        s = sum(1 for _, r in results if r in SKIP)
        bad = [(name, r) for name, r in results if r not in PASS and r not in SKIP]
        f = len(bad)
        # Tests that meson listed but that left no result (the run was killed).
        expect_path = os.path.join(outdir, stage + ".expect")
        missing = 0
        if os.path.exists(expect_path):
            try:
                with open(expect_path, encoding="utf-8") as ef:
                    expected = int(ef.readline().strip() or "0")
                missing = max(0, expected - len(results))
            except ValueError:
                pass
        if missing:
            f += missing
            failures.append(f"{stage}: {missing} test(s) left no result")
        passed += p
        failed += f
        skipped += s
        for name, r in bad:
            failures.append(f"{stage}: {name} {r}")
        extra = f", {s} skipped" if s else ""
        lines.append(f"{stage}: {p} passed, {f} failed{extra}")

    print("results by stage:")
    for l in lines:
        print("  " + l)
    if failures:
        print("failed:")
        for l in failures:
            print("  " + l)
    total = f"{passed} passed, {failed} failed"
    if skipped:
        total += f", {skipped} skipped"
    print(total)
    if failed or passed == 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
