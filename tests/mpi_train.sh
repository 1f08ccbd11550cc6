#!/bin/bash
# Data-parallel training under mpirun (issue 12), two ranks on this
# machine's device ($CLT_DEVICE, POCL by default):
#   - one step of 2 ranks x batch 32 gives the weights of one process x
#     batch 64 (fp32 reduction order aside), and one rank under mpirun
#     exactly those of a plain run;
#   - a rank that fails on bad data ends both ranks, with its message and
#     a non-zero exit, within seconds; ranks whose data differ are told so;
#     an infinite loss stops every rank together;
#   - --resume under MPI continues bit-identically to an uninterrupted
#     MPI run;
#   - Ctrl-C to the ranks ends every rank after the same epoch, saved;
#     twice, after the same step.
# (That the shards of an epoch cover every image once is test_data's
# test_loader_shards_cover_epoch_once.)
# usage: mpi_train.sh CLTRAIN MPIRUN COMPARE_WEIGHTS.py SAMPLES_DIR
set -euo pipefail
C=$1
MPIRUN=$2
CMP=$3
SAMPLES=$4
T=$(mktemp -d /tmp/clt_mpi_XXXXXX)
trap 'rm -rf "$T"' EXIT
# --oversubscribe: CI machines have 2 cores and POCL threads besides;
# --allow-run-as-root: CI runs as root.
MR=("$MPIRUN" --oversubscribe --allow-run-as-root)
# shellcheck source=cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"

MLP=$SAMPLES/fashion_mlp.model
ONE=(--data fashion-mnist --train-limit 64 --holdout 0 --test-limit 100
     --epochs 1 --seed 3 --quiet)

# ---- one step: 2 x 32 = 1 x 64 -------------------------------------------
# One GEMM per product (CLT_PLAN=off) in both runs: the figure then depends
# on the data-parallel split alone, not on which split-K or per-image plan
# a measurement on a busy machine chose for batch 64 and for batch 32.
for opt in "sgd --lr 0.1" "adam"; do
  # Adam divides each gradient by its own magnitude: where a gradient's
  # terms cancel to near eps, its fp32 rounding moves the step by a fair
  # part of lr (PyTorch's own figure: samples/bench/torch_ddp_step.py), so
  # its per-element bound is 1e-4; against each tensor's largest weight
  # both optimizers stay within issue 12's 1e-5.
  tol=1e-5
  [ "$opt" = adam ] && tol=1e-4
  # shellcheck disable=SC2086
  CLT_PLAN=off "$C" train "$MLP" "${ONE[@]}" --batch 64 --optimizer $opt \
    --save "$T/one.st" >/dev/null
  # shellcheck disable=SC2086
  CLT_PLAN=off "${MR[@]}" -np 2 "$C" train "$MLP" "${ONE[@]}" --batch 32 \
    --optimizer $opt --save "$T/two.st" >"$T/out" 2>&1 ||
    fail "2 ranks: $(cat "$T/out")"
  python3 "$CMP" --tensor-tol 1e-5 "$T/one.st" "$T/two.st" "$tol" ||
    fail "$opt: 2 ranks x 32 differ from 1 x 64 by more than $tol (per element) or 1e-5 (per tensor)"
  echo "ok: one $opt step of 2 ranks x 32 = 1 x 64 (tolerance $tol per element, 1e-5 per tensor)"
done
# A normalize layer and balanced class weights: every rank learns the same
# statistics and weights from its whole copy of the data, so the step is
# the single process's too.
sed -e 's/^input shape=1x28x28$/&\nnormalize name=norm/' \
  -e 's/^softmax_cross_entropy$/& class_weights=balanced/' "$MLP" \
  >"$T/mlpn.model"
CLT_PLAN=off "$C" train "$T/mlpn.model" "${ONE[@]}" --batch 64 \
  --optimizer sgd --lr 0.1 --save "$T/one_norm.st" >/dev/null
CLT_PLAN=off "${MR[@]}" -np 2 "$C" train "$T/mlpn.model" "${ONE[@]}" \
  --batch 32 --optimizer sgd --lr 0.1 --save "$T/two_norm.st" >"$T/out" 2>&1 ||
  fail "2 ranks, normalize and class weights: $(cat "$T/out")"
python3 "$CMP" --tensor-tol 1e-5 "$T/one_norm.st" "$T/two_norm.st" 1e-5 ||
  fail "normalize and class weights: 2 ranks x 32 differ from 1 x 64"
echo "ok: a normalize layer and balanced class weights under 2 ranks: the same statistics, weights and step as 1 x 64"
# A frozen layer between trained ones: only the trained weights'
# gradients are shared (the allreduce covers the trainable prefix); the
# step is still one process's, the frozen layer unchanged. Ranks that
# froze different layers are told so.
sed -e 's/^dense name=fc2 /dense name=mid units=32 activation=relu\n&/' \
  "$MLP" >"$T/mlpf.model"
CLT_PLAN=off "$C" train "$T/mlpf.model" "${ONE[@]}" --batch 64 \
  --optimizer sgd --lr 0.1 --freeze mid --save "$T/one_frozen.st" >/dev/null
CLT_PLAN=off "${MR[@]}" -np 2 "$C" train "$T/mlpf.model" "${ONE[@]}" \
  --batch 32 --optimizer sgd --lr 0.1 --freeze mid --save "$T/two_frozen.st" \
  >"$T/out" 2>&1 || fail "2 ranks, a frozen layer: $(cat "$T/out")"
python3 "$CMP" --tensor-tol 1e-5 "$T/one_frozen.st" "$T/two_frozen.st" 1e-5 ||
  fail "a frozen layer: 2 ranks x 32 differ from 1 x 64"
if timeout 60 "${MR[@]}" -np 1 "$C" train "$T/mlpf.model" "${ONE[@]}" --batch 32 \
  --freeze mid : -np 1 "$C" train "$T/mlpf.model" "${ONE[@]}" --batch 32 \
  >"$T/out" 2>&1; then
  fail "ranks with different frozen layers trained"
fi
grep -qF "trainable 100810 to 104938" "$T/out" ||
  fail "different frozen layers: $(cat "$T/out")"
echo "ok: a frozen layer under 2 ranks: the trainable gradients shared, the step of 1 x 64; ranks freezing differently told so"
# A partial last batch is averaged by sample counts: 65 images, global
# batch 64, so the second step's one image is rank 3's and ranks 0-2
# contribute nothing. Three epochs: the fit loop once kept an idle rank's
# empty batch (its loader slot never given back), and with one slot lost
# an epoch the third hung (before 2026-12-04).
PART=(--data fashion-mnist --train-limit 65 --holdout 0 --test-limit 100
      --epochs 3 --optimizer sgd --lr 0.1 --seed 2 --quiet)
"$C" train "$MLP" "${PART[@]}" --batch 64 --save "$T/p1.st" >/dev/null
"${MR[@]}" -np 4 "$C" train "$MLP" "${PART[@]}" --batch 16 \
  --save "$T/p4.st" >"$T/out" 2>&1 || fail "4 ranks: $(cat "$T/out")"
python3 "$CMP" "$T/p1.st" "$T/p4.st" 1e-5 ||
  fail "a partial last batch over 4 ranks differs from one process"
echo "ok: a partial last batch over 4 ranks (3 of them idle) = 1 process, 3 epochs"
# Mixed precision: each rank rounds its own gradients to fp16 before the
# allreduce, so four steps differ from one process's by fp16 rounding, not
# more. A rank's gradients are its share of the global mean (the loss
# averages over the global batch), on one process's scale, so they
# overflow where one process's would: from 2^20 the loss scalers skip the
# same steps (every rank together: the allreduce carries an infinity to
# all) and end in the same state.
MIX=(--data fashion-mnist --train-limit 256 --holdout 0 --test-limit 100
     --epochs 1 --seed 3 --quiet --optimizer sgd --lr 0.1 --precision mixed
     --loss-scale 1048576 --no-shuffle)
"$C" train "$MLP" "${MIX[@]}" --batch 64 --save "$T/m1.st" >/dev/null
"${MR[@]}" -np 2 "$C" train "$MLP" "${MIX[@]}" --batch 32 --save "$T/m2.st" \
  >"$T/out" 2>&1 || fail "2 ranks, mixed: $(cat "$T/out")"
python3 "$CMP" "$T/m1.st" "$T/m2.st" 1e-2 ||
  fail "mixed: 2 ranks x 32 differ from 1 x 64 by more than fp16 rounding"
python3 - "$T/m1.st" "$T/m2.st" <<'PY' || fail "mixed: the loss scalers differ"
import json, struct, sys
def state(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    t = json.loads(b[8:8 + n])["__scaler__.state"]
    s, e = t["data_offsets"]
    return struct.unpack("<4d", b[8 + n + s:8 + n + e])
a, b = state(sys.argv[1]), state(sys.argv[2])
print("scaler (scale, clean, steps, skipped): one process %s, 2 ranks %s" % (a, b))
assert a == b and a[2] == 4 and 1 <= a[3] < 4, (a, b)
PY
echo "ok: mixed precision over 2 ranks = 1 process within fp16 rounding, same scaler"
# One rank under mpirun goes through the allreduce, and changes nothing
# (one GEMM per product, as the plain run it is compared with: a plan
# measured now could split a product the plain run did not).
CLT_PLAN=off "${MR[@]}" -np 1 "$C" train "$MLP" "${ONE[@]}" --batch 64 \
  --optimizer adam --save "$T/mpi1.st" >/dev/null
python3 "$CMP" --all "$T/one.st" "$T/mpi1.st" 0 ||
  fail "one rank under mpirun differs from a plain run"
echo "ok: one rank under mpirun = a plain run, bit for bit"
# The reports: each rank's images/s, allreduce wait and device, the total.
# expect_reports WHAT RANK TOTAL: $T/out has a line "rank R: RANK" for
# ranks 0 and 1 and a line TOTAL (extended regular expressions, whole
# lines).
expect_reports() {
  for r in 0 1; do
    grep -qE "^rank $r: $2\$" "$T/out" ||
      fail "$1: no report of rank $r in: $(cat "$T/out")"
  done
  grep -qE "^$3\$" "$T/out" || fail "$1: no total in: $(cat "$T/out")"
}
"${MR[@]}" -np 2 "$C" train "$MLP" --data fashion-mnist --train-limit 128 \
  --holdout 0 --test-limit 100 --epochs 2 --batch 32 --profile >"$T/out" 2>&1 ||
  fail "2 ranks: $(cat "$T/out")"
expect_reports train \
  "[0-9.]+ images/s, 4 steps, allreduce wait [0-9.]+% of the step \(.+\)" \
  "ranks: 2, total [0-9.]+ images/s"
# With --profile, each rank's device time and waits over its epochs: some
# device time, within the rank's training time; or, where the driver's
# profiling clock does not run (Mesa's rusticl 22.3), unknown (POCL's
# runs).
waits="; the host waited [0-9.]+ s for data, [0-9.]+ s for the device"
if grep -q "^rank 0: profile: device time unknown" "$T/out"; then
  case "${CLT_DEVICE:-}" in
    pocl*) fail "2 ranks on POCL: device time unknown: $(cat "$T/out")" ;;
  esac
  expect_reports "train --profile" \
    "profile: device time unknown: this device's OpenCL driver gives no usable command times$waits" \
    "ranks: 2, total [0-9.]+ images/s"
else
  expect_reports "train --profile" \
    "profile: device busy [0-9.]+ s of [0-9.]+ s \([0-9]+%\)$waits" \
    "ranks: 2, total [0-9.]+ images/s"
  for r in 0 1; do
    sed -nE "s/^rank $r: profile: device busy ([0-9.]+) s of ([0-9.]+) s.*/\1 \2/p" "$T/out" |
      awk '{ exit !($1 > 0 && $1 <= $2 + 0.01) }' ||
      fail "rank $r's device time: $(cat "$T/out")"
  done
fi
"${MR[@]}" -np 2 "$C" bench train "$MLP" --batch 16 --steps 3 >"$T/out" 2>&1 ||
  fail "bench train, 2 ranks: $(cat "$T/out")"
expect_reports "bench train" \
  "images_per_sec=[0-9.]+ allreduce_wait=[0-9.]+% of the step device=\".+\"" \
  "ranks=2 total_images_per_sec=[0-9.]+ step_ms=[0-9.]+"
# Fine-tuning's steps over the ranks: the first line says what one
# process's would (fc1 frozen: fc2's 1,290 trained, mixed precision).
"${MR[@]}" -np 2 "$C" bench train "$MLP" --batch 16 --steps 3 --freeze fc1 \
  --precision mixed >"$T/out" 2>&1 ||
  fail "bench train --freeze, 2 ranks: $(cat "$T/out")"
grep -qE "^cltrain model=.* ranks=2 .* precision=mixed frozen_layers=1 trainable_params=1290$" \
  "$T/out" || fail "bench train --freeze, 2 ranks: $(cat "$T/out")"
echo "ok: train and bench train report every rank (images/s, wait, device; --profile; frozen layers)"

# A rank on a CPU device bound to fewer cores than the device has compute
# units is told so, and how to give it its cores; a rank with them is
# not. (Open MPI binds each of two ranks to one core; POCL reports a
# compute unit per core it may use, unless POCL_MAX_PTHREAD_COUNT says
# fewer.)
units=$("$C" devices --json | python3 -c '
import json, sys
d = [x for x in json.load(sys.stdin)["devices"] if "Portable" in x["platform"]]
print(d[0]["compute_units"] if d else 0)')
if [ "$units" -ge 2 ]; then
  "${MR[@]}" -np 2 --bind-to core "$C" bench train "$MLP" --batch 16 \
    --steps 2 --device pocl >"$T/out" 2>&1 || fail "bound: $(cat "$T/out")"
  grep -qE "^cltrain: warning: rank 1 runs on .* \($units compute units\) but may use only 1 core: .*--bind-to none" \
    "$T/out" || fail "bound to a core, no warning: $(cat "$T/out")"
  "${MR[@]}" -np 2 --bind-to none "$C" bench train "$MLP" --batch 16 \
    --steps 2 --device pocl >"$T/out" 2>&1 || fail "unbound: $(cat "$T/out")"
  ! grep -q "may use only" "$T/out" ||
    fail "unbound ranks warned: $(cat "$T/out")"
  echo "ok: a CPU rank bound to one core is told about --bind-to none"
else
  echo "skipped: the warning about bound CPU ranks (POCL has $units compute units here)"
fi

# ---- a rank that fails ----------------------------------------------------
cat >"$T/tiny.model" <<'EOF2'
input shape=1x4x4
flatten
dense name=fc1 units=8 activation=relu
dense name=fc2 units=3
softmax_cross_entropy
EOF2
python3 - "$T" <<'EOF2'
import sys
t = sys.argv[1]
rows = []
for i in range(300):
    k = i % 3
    rows.append(",".join([str(k)] + [str(200 + i % 50) if p // 4 == k
                                     else str((i * p) % 40)
                                     for p in range(16)]))
open(t + "/good.csv", "w").write("\n".join(rows) + "\n")
bad = list(rows)
bad[150] = bad[150].replace(",", ",x", 1)
open(t + "/bad.csv", "w").write("\n".join(bad) + "\n")
open(t + "/short.csv", "w").write("\n".join(rows[:200]) + "\n")
EOF2
TINY=(--epochs 50 --batch 8 --quiet)
# Rank 1 reads a file with a bad cell; rank 0 has good data and would
# train for a while.
t0=$SECONDS
if timeout 60 "${MR[@]}" -np 1 "$C" train "$T/tiny.model" --data "$T/good.csv" \
  "${TINY[@]}" : -np 1 "$C" train "$T/tiny.model" --data "$T/bad.csv" \
  "${TINY[@]}" >"$T/out" 2>&1; then
  fail "a rank with bad data: the job succeeded"
fi
grep -qF "bad.csv:151: column 2 is 'x200', not a number" "$T/out" ||
  fail "bad data: no clear message in: $(cat "$T/out")"
grep -qF "rank 1 of 2 failed" "$T/out" || fail "bad data: $(cat "$T/out")"
[ $((SECONDS - t0)) -lt 30 ] || fail "bad data: took $((SECONDS - t0)) s"
echo "ok: a rank with bad data ends the job in $((SECONDS - t0)) s"
# Ranks whose data differ in size: every rank stops, rank 0 says why.
if timeout 60 "${MR[@]}" -np 1 "$C" train "$T/tiny.model" --data "$T/good.csv" \
  "${TINY[@]}" : -np 1 "$C" train "$T/tiny.model" --data "$T/short.csv" \
  "${TINY[@]}" >"$T/out" 2>&1; then
  fail "ranks with different data: the job succeeded"
fi
grep -qF "the ranks differ" "$T/out" || fail "different data: $(cat "$T/out")"
echo "ok: ranks with different data stop together"

# A loss that becomes infinite on one rank's shard stops every rank at the
# same step, and rank 0 alone says so.
printf 'input shape=4\ndense name=fc units=2\nmse\n' >"$T/reg.model"
{ echo "y1,y2,a,b,c,d"
  for ((i = 0; i < 200; i++)); do
    y=1
    [ $i = 123 ] && y=1e30
    echo "$y,0.5,$((i % 256)),$((i * 7 % 256)),3,4"
  done; } >"$T/reg.csv"
if timeout 60 "${MR[@]}" -np 2 "$C" train "$T/reg.model" --data "$T/reg.csv" \
  --epochs 3 --batch 8 --quiet >"$T/out" 2>&1; then
  fail "an infinite loss: the job succeeded"
fi
grep -qF "rank 0: the training loss became infinite" "$T/out" ||
  fail "infinite loss: $(cat "$T/out")"
[ "$(grep -c "training loss became" "$T/out")" = 1 ] ||
  fail "infinite loss: said more than once: $(cat "$T/out")"
echo "ok: an infinite loss stops every rank, reported once"

# ---- evaluation split across the ranks -------------------------------------
# Three ranks evaluate a shard each of 201 test images (the last batch has
# fewer images than ranks) with rank 0's batch-norm statistics: the
# accuracy reported is what `cltrain eval` gives for the checkpoint rank 0
# saves, image for image. Plans off (the defaults, as above): measuring
# the ResNet's convolutions took three ranks sharing two cores most of the
# test's 600 s on rusticl, and the plans are not what is checked here.
RESNET=$SAMPLES/fashion_resnet.model
CLT_PLAN=off "${MR[@]}" -np 3 "$C" train "$RESNET" --data fashion-mnist \
  --train-limit 192 --test-limit 201 --holdout 0 --epochs 1 --batch 16 \
  --seed 4 --save "$T/ev.st" >"$T/out" 2>&1 ||
  fail "3 ranks, eval: $(cat "$T/out")"
acc=$(sed -n 's/^final: test accuracy \([0-9.]*\),.*/\1/p' "$T/out")
[ -n "$acc" ] || fail "3 ranks: no final test accuracy in: $(cat "$T/out")"
CLT_PLAN=off "$C" eval "$RESNET" --weights "$T/ev.st" --data fashion-mnist \
  --test-limit 201 >"$T/eval" 2>&1 || fail "eval: $(cat "$T/eval")"
grep -qE "accuracy $acc \(" "$T/eval" ||
  fail "3 ranks reported test accuracy $acc, eval of rank 0's checkpoint: $(grep accuracy "$T/eval")"
echo "ok: 3 ranks evaluate a shard each, as eval of rank 0's checkpoint"
# A regression (huber) under 2 ranks: the mean absolute errors, summed
# across the ranks' shards, are what eval gives for rank 0's checkpoint.
printf 'input shape=4\ndense name=fc units=2\nhuber\n' >"$T/hub.model"
{ echo "y1,y2,a,b,c,d"
  for ((i = 0; i < 203; i++)); do
    echo "$((i % 7)).5,$((i % 5 - 2)),$((i % 256)),$((i * 7 % 256)),$((i * 3 % 256)),4"
  done; } >"$T/hub.csv"
"${MR[@]}" -np 2 "$C" train "$T/hub.model" --data "$T/hub.csv" --epochs 2 \
  --batch 8 --save "$T/hub.st" >"$T/out" 2>&1 || fail "2 ranks, huber: $(cat "$T/out")"
mae=$(sed -n 's/^final: .*, test mae \([^,]*\),.*/\1/p' "$T/out")
"$C" eval "$T/hub.model" --weights "$T/hub.st" --data "$T/hub.csv" \
  >"$T/eval" 2>&1 || fail "eval: $(cat "$T/eval")"
got=$(sed -n 's/^mae \([^ ]*\) .*/\1/p' "$T/eval")
awk -v a="$mae" -v b="$got" 'BEGIN { d = a - b; exit !(a > 0 && d * d <= 1e-10 * b * b) }' ||
  fail "2 ranks: test mae $mae, eval of rank 0's checkpoint: $got"
echo "ok: a regression under 2 ranks: test mae $mae, as eval of rank 0's checkpoint"

# ---- Ctrl-C under MPI -----------------------------------------------------
# A SIGINT to every rank (as a scheduler sends it; mpirun itself ends the
# job on one): rank 0's request ends the run on every rank after the same
# epoch, saved, and each exits 130.
"${MR[@]}" -np 2 "$C" train "$MLP" --data fashion-mnist --train-limit 2000 \
  --holdout 0 --test-limit 200 --epochs 1000 --save "$T/int.st" \
  --log "$T/int.csv" >"$T/out" 2>&1 &
mp=$!
wait_rows "$T/int.csv" 1 "$mp"
pkill -INT -P "$mp" || true
rc=0
wait "$mp" || rc=$?
[ "$rc" -eq 130 ] || fail "Ctrl-C under MPI: exit $rc, not 130: $(cat "$T/out")"
rows=$(log_rows "$T/int.csv")
grep -qF "interrupted: stopped after epoch $rows of 1000" "$T/out" ||
  fail "Ctrl-C under MPI: $rows epochs logged, but: $(cat "$T/out")"
saved=$(ckpt_epoch "$T/int.st")
[ "$saved" = "$rows" ] ||
  fail "Ctrl-C under MPI: the checkpoint holds epoch $saved, not $rows"
echo "ok: Ctrl-C to the ranks ends every rank after epoch $rows, saved"
# Twice, early in an epoch: every rank stops after the same step, that
# epoch unfinished (not logged), and exits 130.
"${MR[@]}" -np 2 "$C" train "$MLP" --data fashion-mnist --holdout 0 \
  --test-limit 200 --epochs 1000 --log "$T/now.csv" >"$T/out" 2>&1 &
mp=$!
wait_rows "$T/now.csv" 1 "$mp"
pkill -INT -P "$mp" || true
pkill -INT -P "$mp" || true
rc=0
wait "$mp" || rc=$?
[ "$rc" -eq 130 ] || fail "Ctrl-C twice under MPI: exit $rc, not 130: $(cat "$T/out")"
rows=$(log_rows "$T/now.csv")
grep -qF "interrupted: stopped during epoch $((rows + 1)) of 1000" "$T/out" ||
  fail "Ctrl-C twice under MPI: $rows epochs logged, but: $(cat "$T/out")"
steps=$(grep -oE '^rank [01]: .* images/s, [0-9]+ steps' "$T/out" |
  grep -oE '[0-9]+ steps' | sort -u)
[ "$(echo "$steps" | wc -l)" -eq 1 ] && [ -n "$steps" ] ||
  fail "Ctrl-C twice under MPI: the ranks stopped after different steps: $(cat "$T/out")"
echo "ok: Ctrl-C twice to the ranks stops every rank after the same step ($steps, in epoch $((rows + 1)))"

# ---- resume under MPI -----------------------------------------------------
RES=(--data fashion-mnist --train-limit 1000 --test-limit 200 --batch 32
     --seed 5 --pad-crop 2 --hflip --quiet)
"${MR[@]}" -np 2 "$C" train "$MLP" "${RES[@]}" --epochs 3 \
  --save "$T/full.st" >/dev/null
"${MR[@]}" -np 2 "$C" train "$MLP" "${RES[@]}" --epochs 1 \
  --save "$T/part.st" >/dev/null
"${MR[@]}" -np 2 "$C" train "$MLP" "${RES[@]}" --epochs 3 \
  --resume "$T/part.st" --save "$T/resumed.st" >/dev/null
python3 "$CMP" --all "$T/full.st" "$T/resumed.st" 0 ||
  fail "resumed under MPI: not bit-identical to an uninterrupted run"
echo "ok: resume under MPI is bit-identical"
echo "all MPI checks passed"
