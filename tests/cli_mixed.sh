#!/bin/bash
# Mixed precision through the command (issue 11): a short training run in
# mixed precision reaches the fp32 run's test accuracy on a slice of
# Fashion-MNIST; --json reports the precision, the loss scale and the
# skipped steps; bench train runs it; the loss-scaler options are checked;
# the fp16 route in devices, bench gemm, tune and CLT_MMA.
# usage: cli_mixed.sh CLTRAIN SAMPLES_DIR
set -euo pipefail
C=$1
SAMPLES=$2
T=$(mktemp -d /tmp/clt_mixed_XXXXXX)
trap 'rm -rf "$T"' EXIT
# shellcheck source=cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"

A=("$SAMPLES/fashion_mlp.model" --data fashion-mnist --train-limit 6000
   --test-limit 2000 --epochs 2 --batch 32 --seed 5 --json)
"$C" train "${A[@]}" >"$T/fp32.json" 2>/dev/null
"$C" train "${A[@]}" --precision mixed >"$T/mixed.json" 2>"$T/mixed.err"
grep -q "loss scale" "$T/mixed.err" || fail "no loss scale on the epoch lines"
python3 - "$T/fp32.json" "$T/mixed.json" <<'PY' || fail "mixed precision accuracy"
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
assert a["precision"] == "fp32" and "loss_scale" not in a, a
assert b["precision"] == "mixed", b
assert b["loss_scale"] > 0 and b["skipped_steps"] >= 0, b
# 2000 test images: one image is 0.05 points; the issue's 0.3 points hold
# for the whole test set, a slice of this size moves by about a point.
d = abs(a["test_accuracy"] - b["test_accuracy"])
print("test accuracy fp32 %.4f, mixed %.4f (loss scale %g, %d skipped)" %
      (a["test_accuracy"], b["test_accuracy"], b["loss_scale"],
       b["skipped_steps"]))
assert a["test_accuracy"] > 0.75 and d <= 0.015, d
PY
echo "ok: mixed precision reaches fp32's accuracy on a slice"

"$C" bench train "$SAMPLES/fashion_cnn.model" --batch 8 --steps 3 \
  --precision mixed >"$T/bench" || fail "bench train --precision mixed"
grep -q "precision=mixed" "$T/bench" || fail "bench line: $(cat "$T/bench")"
echo "ok: bench train --precision mixed"

# Option values: a scale below 1, a growth interval of 0, a choice typo.
for bad in "--loss-scale 0.5" "--scale-growth 0" "--precision mixd"; do
  # shellcheck disable=SC2086
  if "$C" train "${A[@]}" --precision mixed $bad >/dev/null 2>"$T/err"; then
    fail "$bad accepted"
  fi
  head -1 "$T/err"
done
grep -q "did you mean 'mixed'" "$T/err" || fail "no suggestion: $(cat "$T/err")"
echo "ok: bad mixed-precision options refused"

# The fp16 route (README "Mixed precision"): devices shows it, bench gemm
# and tune take --precision mixed, CLT_MMA is checked. On a device without
# the route (every CI machine), CLT_MMA=emulate stands in for it.
expect_exit 0 "devices shows the mixed route" "mixed" "sgemm" -- \
  "$C" devices
expect_exit 0 "bench gemm --precision mixed says the route and the floor" \
  "fp16 products:" "launch floor: " "square 128" -- \
  "$C" bench gemm --precision mixed --only "square 128"
EXPECT_TIMEOUT=300 expect_exit 0 "bench gemm --precision mixed, emulated" \
  "CLT_MMA=emulate" "vs fp32" "tiles" "3xtf32" -- \
  env CLT_MMA=emulate "$C" bench gemm --precision mixed --only "square 128"
EXPECT_TIMEOUT=300 expect_exit 0 "tune --precision mixed, emulated" \
  "fp16 64x64 one gemm" "fp16 128x128 one gemm" "fp16 64x64 split-k" -- \
  env CLT_MMA=emulate "$C" tune "$SAMPLES/fashion_cnn.model" --batch 2 \
  --precision mixed
expect_error "a bad CLT_MMA" "CLT_MMA=fast" "auto, off, ptx or emulate" -- \
  env CLT_MMA=fast "$C" train "${A[@]}" --precision mixed
expect_error "a bad tune --precision" "did you mean 'mixed'" -- \
  "$C" tune "$SAMPLES/fashion_cnn.model" --batch 2 --precision mixd
