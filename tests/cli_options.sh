#!/bin/bash
# The command line as other tools behave: -h and --help on every command
# (exit 0), "did you mean" for a mistyped command, option or choice, a bad
# value blamed on its option before any work, `--` ending the options, and
# --json on train, eval and predict giving one JSON object a script reads.
# usage: cli_options.sh CLTRAIN
set -euo pipefail
C=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
T=$(mktemp -d /tmp/clt_options_XXXXXX)
trap 'rm -rf "$T"' EXIT
# shellcheck source=cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"

# Help: every command, both spellings, on stdout, exit 0.
for cmd in devices selftest "bench gemm" "bench train" "bench infer" "bench conv" bench \
  train eval predict tune summary; do
  for h in -h --help; do
    # shellcheck disable=SC2086
    expect_exit 0 "$cmd $h" "usage: cltrain" -- "$C" $cmd $h
  done
done
expect_exit 0 "help" "usage: cltrain COMMAND" -- "$C" help
expect_exit 0 "--help" "usage: cltrain COMMAND" -- "$C" --help
# Every option the help lists is documented in the README.
for cmd in train eval predict "bench train" "bench infer" tune summary; do
  # shellcheck disable=SC2086
  "$C" $cmd --help | grep -o -- '^  --[a-z0-9-]*' | sed 's/^  //' |
    while read -r opt; do
      grep -qF -- "$opt" "$(dirname "$0")/../README.md" ||
        fail "README.md does not document $cmd $opt"
    done
done
echo "ok: README documents every option of train, eval, predict, bench train, bench infer, tune, summary"

# summary: the layers and parameters without training; its counts are
# the ones training prints.
"$C" summary "$(dirname "$0")/../samples/fashion_cnn.model" >"$T/summary" ||
  fail "summary: $(cat "$T/summary")"
grep -q "^conv2  *conv2d  *\[64, 11, 11\]  *18496$" "$T/summary" ||
  fail "summary's conv2 line: $(cat "$T/summary")"
grep -q "^total trainable parameters: 225034$" "$T/summary" ||
  fail "summary's total: $(cat "$T/summary")"
grep -q "^data: 784 values a sample, labels 0 to 9 (10 classes)$" \
  "$T/summary" || fail "summary's data line: $(cat "$T/summary")"
# Every sample model loads; the separable one's depthwise layers count
# KH KW weights a filter.
for m in "$(dirname "$0")"/../samples/*.model; do
  "$C" summary "$m" >"$T/summary" || fail "summary $m: $(cat "$T/summary")"
done
"$C" summary "$(dirname "$0")/../samples/fashion_separable.model" >"$T/summary"
grep -q "^dw2  *depthwise_conv2d  *\[64, 14, 14\]  *576$" "$T/summary" ||
  fail "summary's dw2 line: $(cat "$T/summary")"
# and the MobileNet one's of stride 2 halve the image
"$C" summary "$(dirname "$0")/../samples/fashion_mobilenet.model" >"$T/summary"
grep -q "^dw3  *depthwise_conv2d  *\[128, 7, 7\]  *1152$" "$T/summary" ||
  fail "summary's dw3 line: $(cat "$T/summary")"
printf 'input shape=3\nnormalize\ndense units=2\nbatchnorm\nmse\n' \
  >"$T/stats.model"
"$C" summary "$T/stats.model" >"$T/summary"
grep -q "^total parameters: 24 (12 trainable, 12 non-trainable)$" \
  "$T/summary" || fail "summary with statistics: $(cat "$T/summary")"
expect_exit 1 "summary of a missing model" "none.model" -- "$C" summary "$T/none.model"
echo "ok: summary"

# Mistakes get a suggestion, exit 2, and no work is done (the model file
# does not even exist).
expect_exit 2 "mistyped option" "unknown option '--epcohs'" \
  "did you mean '--epochs'?" -- "$C" train none.model --data x --epcohs 3
expect_exit 2 "one dash" "did you mean '--epochs'?" -- \
  "$C" train none.model --data x -epochs 3
expect_exit 2 "mistyped command" "did you mean 'train'?" -- "$C" trian
expect_exit 2 "mistyped bench" "did you mean 'train'?" -- "$C" bench trian
expect_exit 2 "mistyped choice" "--schedule must be constant, step, cosine, plateau or onecycle" \
  "did you mean 'plateau'?" -- "$C" train none.model --data x --schedule platau
expect_exit 2 "ambiguous prefix" "is ambiguous" "--epochs" "--early-stop" -- \
  "$C" train none.model --data x --e 3
expect_exit 2 "flag with a value" "--quiet takes no value" -- \
  "$C" train none.model --data x --quiet=yes
expect_exit 2 "eval option" "did you mean '--weights'?" -- \
  "$C" eval none.model --wieghts w --data x
expect_exit 2 "predict option" "did you mean '--labels'?" -- \
  "$C" predict none.model --weights w --lables l x.png

# tune --gemm --sets FILE: the file read and parsed before any search
# (a line that does not parse is named), and --sets alone refused.
expect_exit 2 "--sets alone" "--sets adds to the --gemm search" -- \
  "$C" tune --sets "$T/none.txt"
expect_exit 2 "--sets missing" "--sets: cannot open $T/none.txt: No such file" -- \
  "$C" tune --gemm --sets "$T/none.txt"
printf '# mine\n\nXgemm GEMMK=0 KREG=1\n' >"$T/sets.txt"
expect_exit 1 "--sets bad line" \
  "line 3: Xgemm needs all of its 16 parameters; KWG is missing" -- \
  "$C" tune --gemm --sets "$T/sets.txt"
grep -q "kernel  *parameters" "$T/out" && fail "--sets bad line: searched"
# samples/bench/clblast_sets.py: CLBlast tuners' JSON to sets, the
# fastest distinct configurations of each kernel first.
SETS=$(dirname "$0")/../samples/bench/clblast_sets.py
cat >"$T/tuner.json" <<'JSON'
{"kernel_family": "xgemm_1", "arg_m": "64", "arg_n": "64", "arg_k": "64",
 "results": [
  {"kernel": "Xgemm", "time": 0.5, "parameters": {"GEMMK": 0, "KREG": 1,
   "KWG": 32, "KWI": 2, "MDIMA": 8, "MDIMC": 8, "MWG": 64, "NDIMB": 8,
   "NDIMC": 8, "NWG": 64, "PRECISION": 32, "SA": 0, "SB": 0, "STRM": 0,
   "STRN": 0, "VWM": 4, "VWN": 4}},
  {"kernel": "Xgemm", "time": 0.25, "parameters": {"GEMMK": 0, "KREG": 1,
   "KWG": 16, "KWI": 2, "MDIMA": 8, "MDIMC": 8, "MWG": 64, "NDIMB": 8,
   "NDIMC": 8, "NWG": 64, "PRECISION": 32, "SA": 0, "SB": 0, "STRM": 0,
   "STRN": 0, "VWM": 4, "VWN": 4}},
  {"kernel": "XgemmDirectTN", "time": 0.125, "parameters": {"KWID": 2,
   "MDIMAD": 8, "MDIMCD": 8, "NDIMBD": 8, "NDIMCD": 8, "PADA": 1, "PADB": 1,
   "PRECISION": 32, "VWMD": 1, "VWND": 1, "WGD": 32}}]}
JSON
python3 "$SETS" --top 1 "$T/tuner.json" >"$T/sets.txt" ||
  fail "clblast_sets.py failed"
[ "$(wc -l <"$T/sets.txt")" -eq 2 ] || fail "clblast_sets.py: $(cat "$T/sets.txt")"
grep -q '^Xgemm GEMMK=0 KREG=1 KWG=16 KWI=2 .* VWN=4  # tuner 64^3: 0.250 ms$' \
  "$T/sets.txt" || fail "clblast_sets.py Xgemm: $(cat "$T/sets.txt")"
grep -q '^XgemmDirect KWID=2 MDIMAD=8 .* WGD=32  # tuner 64^3: 0.125 ms$' \
  "$T/sets.txt" || fail "clblast_sets.py XgemmDirect: $(cat "$T/sets.txt")"
grep -q PRECISION "$T/sets.txt" && fail "clblast_sets.py kept PRECISION"
# ... and from what a tuner prints (a phase cut off writes no JSON file):
# the rows whose results match, under their "Parameters explored" line.
E=$(printf '\033')
cat >"$T/tuner.log" <<LOG
    -m 256 
    -n 256 
    -k 256 
* Parameters explored: WGD MDIMCD NDIMCD MDIMAD NDIMBD KWID VWMD VWND PADA PADB 
|  ref |     - |                 - |       8       8 |      64      16 |  ${E}[32mOK${E}[0m |  0.16 ms |      - |  ${E}[32mreference OK${E}[0m |
|    1 |    46 |    8    8    8    8    8    2    1    1    1    1 |       8       8 |      64      16 |   OK    157 ms |      0.13 ms |    1.2 |     ${E}[32mresults match${E}[0m |
|    2 |    46 |   16    8    8    8    8    2    1    4    1    1 |       8       8 |      32       8 |   OK    199 ms |      0.09 ms |    1.8 |     ${E}[32mresults match${E}[0m |
|    3 |    46 |   32    8    8    8    8    2    1    1    1    1 |       8       8 |      32       8 |   OK    199 ms |      0.01 ms |   99.0 |     ${E}[31mL2 error${E}[0m |
LOG
python3 "$SETS" --top 1 "$T/tuner.log" >"$T/sets.txt" ||
  fail "clblast_sets.py on a tuner's output failed"
[ "$(cat "$T/sets.txt")" = "XgemmDirect KWID=2 MDIMAD=8 MDIMCD=8 NDIMBD=8 NDIMCD=8 PADA=1 PADB=1 VWMD=1 VWND=4 WGD=16  # tuner 256^3: 0.090 ms" ] ||
  fail "clblast_sets.py on a tuner's output: $(cat "$T/sets.txt")"
echo "ok: tune --sets refuses bad files before searching; clblast_sets.py"

# bench train --profile-by layer: each layer's passes and the update apart
# (a row per layer and op); a mistyped choice is refused before any work.
MLP=$(dirname "$0")/../samples/fashion_mlp.model
"$C" bench train "$MLP" --batch 4 --steps 2 --profile-by layer >"$T/prof" ||
  fail "bench train --profile-by layer"
grep -q '^layer  *op  *calls  *total ms' "$T/prof" ||
  fail "--profile-by layer: no header: $(cat "$T/prof")"
# A product's op is "gemm" (CLBlast) or its own kernel's, "gemm_dot_4x4".
for row in 'fc1 forward  *gemm[a-z0-9_]*' 'fc1 backward  *gemm[a-z0-9_]*' \
  'fc2 forward  *gemm[a-z0-9_]*' \
  'optimizer  *adam_step'; do
  grep -q "^$row  *2 " "$T/prof" ||
    fail "--profile-by layer: no row '$row' of 2 calls: $(cat "$T/prof")"
done
"$C" bench train "$MLP" --batch 4 --steps 2 --profile-by op >"$T/prof" ||
  fail "bench train --profile-by op"
grep -q '^op  *calls' "$T/prof" || fail "--profile-by op: $(cat "$T/prof")"
expect_exit 2 "--profile-by bad" "--profile-by must be op or layer" -- \
  "$C" bench train none.model --profile-by layers
echo "ok: bench train --profile-by layer and op"

# bench infer: forward passes only, in evaluation mode (batch norm's
# running statistics: folded into the convolution before it, bn_fold, once
# in the warm-up and not in the timed steps, where the weights stay; or
# with CLT_FUSE=0 on its own, bn_apply; not the training kernels), no
# optimizer; one process only.
RESNET=$(dirname "$0")/../samples/fashion_resnet.model
for fuse in 1 0; do
  CLT_FUSE=$fuse "$C" bench infer "$RESNET" --batch 3 --steps 2 \
    --profile-by layer >"$T/prof" || fail "bench infer --profile-by layer"
  grep -q '^cltrain model=.* batch=3 .*images_per_sec=[0-9.]* .*mode=infer$' \
    "$T/prof" || fail "bench infer: no result line: $(cat "$T/prof")"
  grep -q '^stem forward  ' "$T/prof" ||
    fail "bench infer: no stem forward row: $(cat "$T/prof")"
  if [ $fuse = 1 ]; then
    grep -q 'bn_fold' "$T/prof" &&
      fail "bench infer: folded the weights again in each step: $(cat "$T/prof")"
    grep -q '^b1_conv1 forward  ' "$T/prof" ||
      fail "bench infer: no b1_conv1 forward row: $(cat "$T/prof")"
    grep -q '^b1_bn1 forward' "$T/prof" &&
      fail "bench infer: a folded batch norm ran: $(cat "$T/prof")"
  else
    grep -q '^b1_bn1 forward  *bn_apply' "$T/prof" ||
      fail "bench infer: batch norm not in evaluation mode: $(cat "$T/prof")"
    grep -q 'bn_fold' "$T/prof" &&
      fail "bench infer: CLT_FUSE=0 folded: $(cat "$T/prof")"
  fi
  grep -q 'backward\|optimizer\|bn_train\|bn_stats' "$T/prof" &&
    fail "bench infer ran training work: $(cat "$T/prof")"
done
expect_exit 2 "bench infer under mpirun" "bench infer: runs in one process" -- \
  env OMPI_COMM_WORLD_SIZE=2 "$C" bench infer "$RESNET"
echo "ok: bench infer: forward passes in evaluation mode, nothing else"

# A value out of range is blamed on its option, never on the model file.
expect_exit 2 "--lr -1" "--lr must be above 0" -- \
  "$C" train none.model --data x --lr -1
grep -q "none.model" "$T/err" && fail "--lr -1 blamed the model file"
expect_exit 2 "--val-split 1" "--val-split must be at least 0 and at most 0.99" -- \
  "$C" train none.model --data x --val-split 1
expect_exit 2 "--early-stop 0" "--early-stop must be between 1" -- \
  "$C" train none.model --data x --early-stop 0
expect_exit 2 "--patience x" "--patience expects a whole number, got 'x'" -- \
  "$C" train none.model --data x --patience x
expect_exit 2 "--save-every with --early-stop" "exclude each other" -- \
  "$C" train none.model --data x --save a --save-every 1 --early-stop 2
expect_exit 2 "--top 0" "--top must be between 1" -- \
  "$C" predict none.model --weights w --top 0 x.png
expect_exit 2 "--split" "--split must be test or train" -- \
  "$C" eval none.model --weights w --data x --split val

# A small model trained for real: --json, then eval and predict on it.
cat >"$T/tiny.model" <<'EOF'
input shape=1x28x28
flatten
dense units=16 activation=relu
dense units=10
softmax_cross_entropy
EOF
if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  fail "Debian's dataset-fashion-mnist is missing (.ci/install-deps installs it)"
fi
# CLT_PLAN=remeasure: the products' plans are measured, as on a first run,
# and stderr says so.
CLT_PLAN=remeasure "$C" train "$T/tiny.model" --data fashion-mnist --train-limit 400 \
  --test-limit 100 --epochs 3 --batch 50 --val-split 0.25 --early-stop 5 \
  --schedule plateau --patience 1 --warmup-epochs 1 --save "$T/w.st" \
  --json >"$T/train.json" 2>"$T/train.err" || fail "train --json: $(cat "$T/train.err")"
python3 - "$T/train.json" <<'EOF' || fail "train --json output"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["training_samples"] == 300 and d["validation_samples"] == 100, d
assert d["test_samples"] == 100 and d["epochs"] == 3, d
assert d["monitor"] == "validation" and 1 <= d["best_epoch"] <= 3, d
assert len(d["history"]) == 3 and d["saved"].endswith("w.st"), d
assert 0 <= d["test_accuracy"] <= 1 and d["validation_loss"] > 0, d
assert d["history"][0]["lr"] < d["history"][1]["lr"], "warm-up"
print("ok: train --json:", d["test_accuracy"], d["best_epoch"])
EOF
grep -q "^epoch 3/3" "$T/train.err" || fail "train --json: the epoch lines are not on stderr"
grep -Eq "^cltrain: measured the plans of [0-9]+ products in [0-9.]+ s; later runs" \
  "$T/train.err" || fail "train: no line for the measured plans: $(cat "$T/train.err")"
CLT_PLAN=remeasure "$C" train "$T/tiny.model" --data fashion-mnist \
  --train-limit 100 --test-limit 50 --epochs 1 --batch 50 --quiet \
  >"$T/quiet.out" 2>"$T/quiet.err" || fail "train --quiet: $(cat "$T/quiet.err")"
if grep -q "measured the plans" "$T/quiet.err" "$T/quiet.out"; then
  fail "train --quiet reported the measured plans"
fi
echo "ok: train reports measured plans, and not under --quiet"

# --profile: after each epoch how busy the device was and how long the
# host waited; at the end the last epoch's device time by op (its 6
# batches' uploads, labels and bytes, and the bytes made floats among
# them). Under --json the figures are in the history, the lines on stderr.
# A device whose profiling clock does not run (Mesa's rusticl 22.3 gives
# every command 0 to 3 ns) has its device time said to be unknown,
# everywhere alike, and its calls still counted; POCL's clock runs.
"$C" train "$T/tiny.model" --data fashion-mnist --train-limit 300 \
  --test-limit 50 --epochs 2 --batch 50 --profile >"$T/prof.out" \
  2>"$T/prof.err" || fail "train --profile: $(cat "$T/prof.err")"
waits='; the host waited [0-9.]+ s for data, [0-9.]+ s for the device$'
if grep -q "device time unknown" "$T/prof.out"; then
  case "${CLT_DEVICE:-}" in
    pocl*) fail "train --profile: POCL's time unknown: $(cat "$T/prof.out")" ;;
  esac
  busy="device time unknown: this device's OpenCL driver gives no usable command times"
  total='device time unknown: .* \(the calls are counted\)'
  cell=' +- +-$'
  timed=no
else
  busy='device busy [0-9.]+ s of [0-9.]+ s \([0-9]+%\)'
  total='device time [0-9.]+ s of [0-9.]+ s wall'
  cell=' +[0-9.]+ +[0-9.]+%$'
  timed=yes
fi
[ "$(grep -Ec "^  profile: $busy$waits" "$T/prof.out")" = 2 ] ||
  fail "train --profile: not one profile line an epoch: $(cat "$T/prof.out")"
grep -q "^device time by op, epoch 2's training:$" "$T/prof.out" &&
  grep -Eq "^upload +12$cell" "$T/prof.out" &&
  grep -Eq "^unit_u8_f32 +6$cell" "$T/prof.out" &&
  grep -Eq "^$total$" "$T/prof.out" ||
  fail "train --profile: no table of the last epoch: $(cat "$T/prof.out")"
"$C" train "$T/tiny.model" --data fashion-mnist --train-limit 300 \
  --test-limit 50 --epochs 2 --batch 50 --profile --json >"$T/prof.json" \
  2>"$T/prof.err" || fail "train --profile --json: $(cat "$T/prof.err")"
grep -q "^device time by op, epoch 2's training:$" "$T/prof.err" ||
  fail "train --profile --json: the table is not on stderr"
python3 - "$T/prof.json" "$timed" <<'EOF' || fail "train --profile --json output"
import json, sys
d = json.load(open(sys.argv[1]))
timed = sys.argv[2] == "yes"
for h in d["history"]:
    if timed:
        assert 0 < h["device_seconds"] <= h["seconds"] + 0.01, h
    else:
        assert h["device_seconds"] is None, h  # unknown, not 0
    assert h["wait_data_seconds"] >= 0 and h["wait_device_seconds"] >= 0, h
    assert h["wait_data_seconds"] + h["wait_device_seconds"] <= h["seconds"], h
print("ok: train --profile --json, device time a second:",
      [timed and round(h["device_seconds"] / h["seconds"], 2) for h in d["history"]])
EOF
echo "ok: train --profile (device time $([ $timed = yes ] && echo measured || echo unknown))"

"$C" eval "$T/tiny.model" --weights "$T/w.st" --data fashion-mnist \
  --test-limit 100 --top-k 3 --json >"$T/eval.json" 2>"$T/eval.err" || fail "eval --json: $(cat "$T/eval.err")"
python3 - "$T/eval.json" <<'EOF' || fail "eval --json output"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["samples"] == 100 and len(d["confusion"]) == 10, d
assert sum(map(sum, d["confusion"])) == 100, d
assert abs(sum(d["confusion"][i][i] for i in range(10)) / 100 - d["accuracy"]) < 1e-6
# scikit-learn's classification_report, from the matrix: undefined scores
# null per class and 0 in the averages, over the classes that occur
cm, close = d["confusion"], lambda a, b: (a is None) == (b is None) and (
    a is None or abs(a - b) < 1e-6)
rows, used = [], []
for c in range(10):
    sup, pred, hit = sum(cm[c]), sum(r[c] for r in cm), cm[c][c]
    p = hit / pred if pred else None
    r = hit / sup if sup else None
    f = 2 * hit / (pred + sup) if pred + sup else None
    got = d["per_class"][c]
    assert got["support"] == sup and close(got["precision"], p) and \
        close(got["recall"], r) and close(got["f1"], f), (c, got, p, r, f)
    if pred + sup:
        used.append((p or 0, r or 0, f, sup))
for name, w in (("macro_avg", lambda s: 1), ("weighted_avg", lambda s: s)):
    total = sum(w(u[3]) for u in used)
    for k, key in enumerate(("precision", "recall", "f1")):
        want = sum(u[k] * w(u[3]) for u in used) / total
        assert close(d[name][key], want), (name, key, d[name], want)
print("ok: eval --json:", d["accuracy"], "macro F1", d["macro_avg"]["f1"],
      "classes never predicted:", sum(p["precision"] is None for p in d["per_class"]))
EOF
# Each class's ROC AUC (one against the rest), against the pairs counted
# on predict's probabilities of the same 100 test images.
"$C" predict "$T/tiny.model" --weights "$T/w.st" --top 10 --limit 100 --json \
  /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz \
  >"$T/pred100.json" 2>"$T/pred.err" || fail "predict --top 10: $(cat "$T/pred.err")"
python3 - "$T/eval.json" "$T/pred100.json" <<'EOF' || fail "eval's ROC AUC"
import gzip, json, sys
d, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["predictions"]
labels = gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz").read()[8:108]
prob = [{t["class"]: t["probability"] for t in s["top"]} for s in p]
assert len(prob) == 100 and all(len(q) == 10 for q in prob)
def auc(scores, present):
    pos = [s for s, y in zip(scores, present) if y]
    neg = [s for s, y in zip(scores, present) if not y]
    if not pos or not neg:
        return None
    won = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return won / (len(pos) * len(neg))
got, sup = [], []
for c in range(10):
    want = auc([q[c] for q in prob], [y == c for y in labels])
    have = d["per_class"][c]["roc_auc"]
    assert (want is None) == (have is None) and (want is None or abs(want - have) < 1e-6), (c, want, have)
    if want is not None:
        got.append(want)
        sup.append(labels.count(c))
assert abs(d["macro_avg"]["roc_auc"] - sum(got) / len(got)) < 1e-6, d["macro_avg"]
assert abs(d["weighted_avg"]["roc_auc"] - sum(a * s for a, s in zip(got, sup)) / sum(sup)) < 1e-6
print("ok: eval's ROC AUC per class against predict's probabilities: macro %.4f" % d["macro_avg"]["roc_auc"])
# --top-k 3: the label among the 3 likeliest (fewer than 3 classes above it)
hits = sum(sum(q[c] > q[y] for c in range(10)) < 3 for q, y in zip(prob, labels))
assert d["top_k"] == 3 and abs(d["top_k_accuracy"] - hits / 100) < 1e-9, (d["top_k_accuracy"], hits)
top1 = sum(sum(q[c] > q[y] for c in range(10)) < 1 for q, y in zip(prob, labels))
assert abs(d["accuracy"] - top1 / 100) < 1e-9, (d["accuracy"], top1)
print("ok: eval --top-k 3: %.2f against %.2f top-1, as counted on predict's probabilities"
      % (d["top_k_accuracy"], d["accuracy"]))
EOF
"$C" eval "$T/tiny.model" --weights "$T/w.st" --data fashion-mnist \
  --test-limit 100 --top-k 2 >"$T/eval.out" || fail "eval --top-k 2"
grep -Eq '^top-2 accuracy [01]\.[0-9]{4} \([0-9]+/100\)$' "$T/eval.out" ||
  fail "eval --top-k 2: $(cat "$T/eval.out")"
expect_error "eval --top-k past the classes" "k is 11; the model has 10 classes" \
  -- "$C" eval "$T/tiny.model" --weights "$T/w.st" --data fashion-mnist \
  --test-limit 10 --top-k 11

python3 - "$T" <<'EOF'
import gzip, sys
d = gzip.open('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz').read()
open(sys.argv[1] + '/--odd.pgm', 'wb').write(b'P5 28 28 255\n' + d[16:16 + 784])
EOF
# `--` ends the options: a file whose name starts with dashes is an input.
(cd "$T" && "$C" predict tiny.model --weights w.st --top 2 --json -- --odd.pgm) \
  >"$T/pred.json" 2>"$T/pred.err" || fail "predict -- --odd.pgm: $(cat "$T/pred.err")"
python3 - "$T/pred.json" <<'EOF' || fail "predict --json output"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["predictions"]
assert len(p) == 1 and p[0]["file"] == "--odd.pgm" and len(p[0]["top"]) == 2, d
assert p[0]["top"][0]["probability"] >= p[0]["top"][1]["probability"], d
print("ok: predict --json --:", p[0]["top"][0])
EOF
# Off a terminal, progress comes as plain lines every CLT_PROGRESS_SECONDS
# (default 60: none in a run this short); a bad value is refused.
CLT_PROGRESS_SECONDS=0.001 "$C" train "$T/tiny.model" --data fashion-mnist \
  --train-limit 640 --test-limit 100 --epochs 1 >"$T/p.out" 2>"$T/p.err" ||
  fail "train with CLT_PROGRESS_SECONDS: $(cat "$T/p.err")"
grep -qE '^epoch 1/1 train [0-9]+/20 .* ETA .* loss [0-9.]+ acc [0-9.]+ [0-9]+ img/s$' \
  "$T/p.err" || fail "no plain progress lines off a terminal: $(cat "$T/p.err")"
grep -q $'\r' "$T/p.err" && fail "progress off a terminal redraws with \\r"
grep -qE '^epoch 1/1  train .* [0-9]+ images/s  lr ' "$T/p.out" ||
  fail "an image model's epoch line counts images/s: $(cat "$T/p.out")"
"$C" train "$T/tiny.model" --data fashion-mnist --train-limit 640 \
  --test-limit 100 --epochs 1 >"$T/p.out" 2>"$T/p.err" || fail "train: $(cat "$T/p.err")"
grep -q 'ETA' "$T/p.err" && fail "progress lines in a short run by default"
CLT_PROGRESS_SECONDS=often expect_exit 1 "CLT_PROGRESS_SECONDS=often" \
  "CLT_PROGRESS_SECONDS=often: not a number of seconds" -- \
  "$C" train "$T/tiny.model" --data fashion-mnist --epochs 1
echo "ok: plain progress lines off a terminal, every CLT_PROGRESS_SECONDS"
echo "all cli option checks passed"
