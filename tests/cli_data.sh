#!/bin/bash
# End-to-end checks of your own data through the command, as a user runs
# it: CSV (a folder of train.csv and test.csv, --test-data, a held-out
# split, bad rows), regression (mse, mae, huber; the mean absolute error,
# eval's RMSE and R^2 against the model's outputs; outliers), multi-label
# (sigmoid_cross_entropy) from CSV,
# tabular float
# values (--csv-values floats, kept by eval and --resume), predict on CSV
# rows, and image
# folders (PNG and JPEG, grey and colour; with train/ and test/, or one
# folder of class folders split by --val-split) made here: training, the packed
# cache on the second run and after a change, --resize, a corrupt file,
# class names in eval and predict.
# usage: cli_data.sh CLTRAIN MAKE_IMAGE_FOLDER
set -euo pipefail
C=$1
MK=$2
T=$(mktemp -d /tmp/clt_cli_data_XXXXXX)
trap 'rm -rf "$T"' EXIT
# shellcheck source=cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
# The packed cache of this test's images goes to its own folder; kernels
# keep using the usual cache.
export CLT_DATA_CACHE_DIR=$T/datacache

must_say() {
  local what=$1 needle=$2 file=$3
  grep -qF -- "$needle" "$file" || fail "$what: '$needle' not in: $(cat "$file")"
}

# ---- CSV ------------------------------------------------------------------
cat >"$T/tiny.model" <<'EOF2'
input shape=1x4x4
flatten
dense name=fc1 units=8 activation=relu
dense name=fc2 units=3
softmax_cross_entropy
EOF2
# Class k lights row k of a 4x4 image.
csv_rows() { # first count
  local i r k
  for ((i = $1; i < $1 + $2; i++)); do
    k=$((i % 3))
    r="$k"
    for ((p = 0; p < 16; p++)); do
      if ((p / 4 == k)); then r+=",$((200 + i % 50))"; else r+=",$(((i * p) % 40))"; fi
    done
    echo "$r"
  done
}
mkdir -p "$T/csv"
{ printf 'label'; for ((p = 1; p <= 16; p++)); do printf ',pixel%d' $p; done; echo
  csv_rows 0 300; } >"$T/csv/train.csv"
csv_rows 300 60 >"$T/csv/test.csv"
"$C" train "$T/tiny.model" --data "$T/csv" --epochs 8 --batch 20 --lr 0.01 \
  --save "$T/csv.st" >"$T/out"
must_say "csv folder" "/csv/train.csv (CSV, 300 rows after a header line)" "$T/out"
must_say "csv folder" "/csv/test.csv (CSV, 60 rows)" "$T/out"
acc=$(sed -n 's/^final: test accuracy \([0-9.]*\).*/\1/p' "$T/out")
awk -v a="$acc" 'BEGIN { exit !(a > 0.8) }' || fail "csv accuracy $acc"
echo "ok: train on a folder of train.csv and test.csv (accuracy $acc)"

# Label smoothing 0.1 over 3 classes: the accuracy as before, and a loss
# that cannot fall below the smoothed target's entropy (0.2911).
sed 's/^softmax_cross_entropy$/softmax_cross_entropy label_smoothing=0.1/' \
  "$T/tiny.model" >"$T/smooth.model"
"$C" train "$T/smooth.model" --data "$T/csv" --epochs 8 --batch 20 --lr 0.01 \
  >"$T/out"
acc=$(sed -n 's/^final: test accuracy \([0-9.]*\).*/\1/p' "$T/out")
loss=$(sed -n 's/^final: .*test loss \([0-9.]*\).*/\1/p' "$T/out")
train=$(sed -n 's/^epoch 8\/8  train loss \([0-9.]*\).*/\1/p' "$T/out")
awk -v a="$acc" -v l="$loss" -v t="$train" \
  'BEGIN { exit !(a > 0.8 && l > 0.2911 && t > 0.2911 && t < 0.6) }' ||
  fail "label smoothing: accuracy $acc, test loss $loss, train loss $train"
echo "ok: label_smoothing=0.1 (accuracy $acc, train loss $train above the entropy 0.2911)"

"$C" train "$T/tiny.model" --data "$T/csv/train.csv" --epochs 1 --batch 20 \
  >"$T/out"
must_say "held out" "the last 10% (30 samples) of $T/csv/train.csv" "$T/out"
echo "ok: a single CSV file: 10% held out, said so"
"$C" train "$T/tiny.model" --data "$T/csv/train.csv" --holdout 0 --epochs 1 \
  --batch 20 >"$T/out"
must_say "no test set" "(no test set)" "$T/out"
grep '^final:' "$T/out" | grep -qw nan &&
  fail "no test set: a nan printed: $(cat "$T/out")"
echo "ok: --holdout 0 and no test data: the train figures, no nan"
"$C" train "$T/tiny.model" --data "$T/csv/train.csv" \
  --test-data "$T/csv/test.csv" --epochs 1 --batch 20 --quiet >"$T/out"
"$C" eval "$T/tiny.model" --weights "$T/csv.st" --test-data "$T/csv/test.csv" \
  >"$T/out"
must_say "eval csv" "60 test samples: $T/csv/test.csv" "$T/out"
echo "ok: --test-data in train and eval"

{ head -3 "$T/csv/test.csv"; head -4 "$T/csv/test.csv" | tail -1 | cut -d, -f1-12; } \
  >"$T/short.csv"
expect_error "short CSV row" "short.csv:4:" "the row has 12 values, it needs 17" \
  "1x4x4" -- "$C" train "$T/tiny.model" --data "$T/short.csv" --quiet
{ head -2 "$T/csv/test.csv"; head -3 "$T/csv/test.csv" | tail -1 | sed 's/^[0-9]*,/7,/'; } \
  >"$T/label.csv"
expect_error "CSV label out of range" "label.csv:3:" "the label is 7, out of range" \
  "3 classes" -- "$C" train "$T/tiny.model" --data "$T/label.csv" --quiet

# ---- regression (mse) from CSV ---------------------------------------------
cat >"$T/reg.model" <<'EOF2'
input shape=4
dense name=fc units=2
mse
EOF2
{ echo "y1,y2,a,b,c,d"
  for ((i = 0; i < 200; i++)); do
    a=$(((i * 37) % 256)) b=$(((i * 91) % 256)) c=$(((i * 53) % 256)) d=$(((i * 17) % 256))
    awk -v a=$a -v b=$b -v c=$c -v d=$d 'BEGIN { printf "%.5f,%.5f,%d,%d,%d,%d\n",
      (2*a - b)/255 + 0.3, (c - 1.5*d)/255, a, b, c, d }'
  done; } >"$T/reg.csv"
"$C" train "$T/reg.model" --data "$T/reg.csv" --epochs 30 --batch 20 \
  --lr 0.05 --save "$T/reg.st" --log "$T/reg.log" >"$T/out"
grep -q "acc" <(grep '^epoch' "$T/out") && fail "regression prints an accuracy"
grep -q '^epoch 30/30  train loss [0-9.e-]* mae [0-9.e-]*  test loss [0-9.e-]* mae [0-9.e-]*  ' \
  "$T/out" || fail "regression epoch line without the mean absolute errors: $(grep '^epoch 30' "$T/out")"
[ "$(head -1 "$T/reg.log")" = \
  "epoch,train_loss,train_mae,test_loss,test_mae,val_loss,val_mae,seconds,images_per_sec,lr" ] ||
  fail "regression log header: $(head -1 "$T/reg.log")"
first=$(sed -n 's/^epoch 1\/30  train loss \([^ ]*\).*/\1/p' "$T/out")
last=$(sed -n 's/^final: test loss \([^,]*\),.*/\1/p' "$T/out")
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f / 5) }' ||
  fail "mse did not fall: $first -> $last"
echo "ok: mse trains through train (loss $first -> $last)"
# eval's errors and R^2, per output, against Python's on the model's own
# outputs (predict) for the held-out rows (the last 10%: 20 of 200), of a
# model two epochs in (far from a perfect fit: R^2 well below 1).
"$C" eval "$T/reg.model" --weights "$T/reg.st" --data "$T/reg.csv" >"$T/eval"
grep -q '^mae [0-9.e-]*  rmse [0-9.e-]*  r2 [01]\.[0-9]*$' "$T/eval" &&
  grep -q '^output  *mae  *mse  *rmse  *r2$' "$T/eval" &&
  grep -q '^1   y2  ' "$T/eval" ||
  fail "regression eval (outputs named by the header line): $(cat "$T/eval")"
"$C" train "$T/reg.model" --data "$T/reg.csv" --epochs 2 --batch 20 \
  --lr 0.05 --save "$T/reg.st" --log "$T/reg.log" >"$T/out"
"$C" eval "$T/reg.model" --weights "$T/reg.st" --data "$T/reg.csv" --json \
  >"$T/eval.json"
python3 - "$C" "$T" "$(sed -n 's/^final: .*, test mae \([^,]*\),.*/\1/p' "$T/out")" \
  "$(tail -1 "$T/reg.log" | cut -d, -f5)" <<'PY' || fail "regression scores"
import json, math, subprocess, sys
C, T, final_mae, log_mae = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = [[float(v) for v in line.split(",")]
        for line in open(T + "/reg.csv").read().split("\n")[1:] if line][-20:]
with open(T + "/reg_values.csv", "w") as f:
    for r in rows:
        f.write(",".join("%d" % v for v in r[2:]) + "\n")
pred = json.loads(subprocess.check_output(
    [C, "predict", T + "/reg.model", "--weights", T + "/reg.st", "--json",
     "--limit", "20", T + "/reg_values.csv"]))
out = [p["outputs"] for p in pred["predictions"]]
assert len(out) == 20 and all(len(o) == 2 for o in out), out
ev = json.load(open(T + "/eval.json"))
assert ev["samples"] == 20 and ev["accuracy"] is None, ev
n = 20.0
err = [[out[i][k] - rows[i][k] for k in range(2)] for i in range(20)]
mae = [sum(abs(e[k]) for e in err) / n for k in range(2)]
mse = [sum(e[k] ** 2 for e in err) / n for k in range(2)]
mean = [sum(r[k] for r in rows) / n for k in range(2)]
r2 = [1 - mse[k] * n / sum((r[k] - mean[k]) ** 2 for r in rows)
      for k in range(2)]
def near(a, b, what):
    assert abs(a - b) <= 2e-4 * (1 + abs(b)), (what, a, b)
for k in range(2):
    o = ev["per_output"][k]
    near(o["mae"], mae[k], "mae %d" % k)
    near(o["mse"], mse[k], "mse %d" % k)
    near(o["rmse"], math.sqrt(mse[k]), "rmse %d" % k)
    near(o["r2"], r2[k], "r2 %d" % k)
near(ev["mae"], sum(mae) / 2, "mae")
near(ev["mse"], sum(mse) / 2, "mse")
near(ev["rmse"], math.sqrt(sum(mse) / 2), "rmse")
near(ev["r2"], sum(r2) / 2, "r2")
near(ev["loss"], sum(mse) / 2, "loss")
# training's last test evaluation: the same model, the device's float sums
near(final_mae, ev["mae"], "train's final test mae")
near(log_mae, ev["mae"], "the log's test_mae")
print("ok: eval's mae %.5f, rmse %.5f, r2 %.4f (%.4f, %.4f) match the "
      "model's outputs" % (ev["mae"], ev["rmse"], ev["r2"], r2[0], r2[1]))
PY
# mae and huber: the same table, the loss named where it is said
for loss in mae "huber delta=0.5"; do
  { head -2 "$T/reg.model"; echo "$loss"; } >"$T/reg_l.model"
  "$C" summary "$T/reg_l.model" >"$T/sum"
  must_say "summary names the loss" "2 targets (${loss%% *})" "$T/sum"
  "$C" train "$T/reg_l.model" --data "$T/reg.csv" --epochs 30 --batch 20 \
    --lr 0.05 --save "$T/reg_l.st" >"$T/out"
  first=$(sed -n 's/^epoch 1\/30  train loss \([^ ]*\).*/\1/p' "$T/out")
  last=$(sed -n 's/^final: test loss \([^,]*\),.*/\1/p' "$T/out")
  awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f / 5) }' ||
    fail "$loss did not fall: $first -> $last"
  "$C" eval "$T/reg_l.model" --weights "$T/reg_l.st" --data "$T/reg.csv" \
    >"$T/eval"
  must_say "eval names the loss" "(${loss%% *}, 2 outputs)" "$T/eval"
  echo "ok: $loss trains through train (loss $first -> $last)"
done
# Outliers: a tenth of the training targets 20 too high (the test set
# clean). The mean squared error follows them (the mean moves by 2); the
# mean absolute error and Huber's loss keep to the other nine tenths.
awk 'BEGIN { print "y,a,b"; for (i = 0; i < 600; i++) {
  a = ((i * 37) % 200) / 100 - 1; b = ((i * 91) % 200) / 100 - 1
  y = 3 * a - 2 * b + 0.5 + ((i * 53) % 21 - 10) / 100
  if (i % 10 == 3) y += 20
  printf "%.4f,%.2f,%.2f\n", y, a, b } }' >"$T/o_train.csv"
awk 'BEGIN { print "y,a,b"; for (i = 0; i < 200; i++) {
  a = ((i * 41 + 7) % 200) / 100 - 1; b = ((i * 83 + 3) % 200) / 100 - 1
  printf "%.4f,%.2f,%.2f\n", 3 * a - 2 * b + 0.5, a, b } }' >"$T/o_test.csv"
declare -A robust
for loss in mse mae huber; do
  printf 'input shape=2\ndense name=h units=16 activation=relu\ndense name=out units=1\n%s\n' \
    "$loss" >"$T/o.model"
  "$C" train "$T/o.model" --data "$T/o_train.csv" --test-data "$T/o_test.csv" \
    --csv-values floats --epochs 30 --batch 20 --quiet >"$T/out"
  robust[$loss]=$(sed -n 's/^final: .*, test mae \([^,]*\),.*/\1/p' "$T/out")
done
awk -v s="${robust[mse]}" -v a="${robust[mae]}" -v h="${robust[huber]}" \
  'BEGIN { exit !(s > 1 && a < s / 5 && h < s / 5) }' ||
  fail "outliers: test mae ${robust[mse]} (mse), ${robust[mae]} (mae), ${robust[huber]} (huber)"
echo "ok: outliers: test mae ${robust[mse]} (mse), ${robust[mae]} (mae), ${robust[huber]} (huber)"

# ---- multi-label (sigmoid_cross_entropy) from CSV -------------------------
# Three labels, each present or not, from four features: eval's per-label
# report against Python's counts on predict's probabilities.
awk 'BEGIN { print "cat,dog,bird,a,b,c,d"; for (i = 0; i < 600; i++) {
  a = ((i * 37) % 100) / 100; b = ((i * 91) % 100) / 100
  c = ((i * 53) % 100) / 100; d = ((i * 17 + 5) % 100) / 100
  printf "%d,%d,%d,%.2f,%.2f,%.2f,%.2f\n", (a > 0.5), (b + c > 1), (d < 0.3), a, b, c, d } }' \
  >"$T/ml.csv"
printf 'input shape=4\ndense name=h units=16 activation=relu\ndense name=out units=3\nsigmoid_cross_entropy\n' \
  >"$T/ml.model"
"$C" summary "$T/ml.model" >"$T/sum"
must_say "summary: multi-label" "3 targets of 0 to 1 (sigmoid_cross_entropy" "$T/sum"
"$C" train "$T/ml.model" --data "$T/ml.csv" --csv-values floats --epochs 40 \
  --batch 20 --lr 0.01 --save "$T/ml.st" >"$T/out"
grep -q '^final: test accuracy 0\.9[0-9]*, ' "$T/out" ||
  fail "multi-label training: $(tail -2 "$T/out")"
grep -qE '^epoch 40/40  train .* [0-9]+ samples/s  lr ' "$T/out" ||
  fail "flat data's epoch line counts samples/s: $(tail -2 "$T/out")"
printf 'CAT\nDOG\nBIRD\n' >"$T/ml_names.txt"
"$C" eval "$T/ml.model" --weights "$T/ml.st" --data "$T/ml.csv" >"$T/eval"
must_say "eval: multi-label" "(per label)  exact match" "$T/eval"
must_say "eval: a label's row, named by the header" "  2 bird" "$T/eval"
"$C" eval "$T/ml.model" --weights "$T/ml.st" --data "$T/ml.csv" \
  --labels "$T/ml_names.txt" >"$T/eval"
must_say "eval: --labels names them" "  2 BIRD" "$T/eval"
must_say "eval: the micro average" "micro avg" "$T/eval"
"$C" eval "$T/ml.model" --weights "$T/ml.st" --data "$T/ml.csv" --json \
  >"$T/eval.json"
python3 - "$C" "$T" <<'PY' || fail "multi-label scores"
import json, subprocess, sys
C, T = sys.argv[1], sys.argv[2]
rows = [[float(v) for v in line.split(",")]
        for line in open(T + "/ml.csv").read().split("\n")[1:] if line][-60:]
with open(T + "/ml_values.csv", "w") as f:
    for r in rows:
        f.write(",".join("%.2f" % v for v in r[3:]) + "\n")
pred = json.loads(subprocess.check_output(
    [C, "predict", T + "/ml.model", "--weights", T + "/ml.st", "--json",
     "--limit", "60", "--top", "3", T + "/ml_values.csv"]))["predictions"]
assert len(pred) == 60
ev = json.load(open(T + "/eval.json"))
tp, fp, fn = [0] * 3, [0] * 3, [0] * 3
right = exact = 0
for r, p in zip(rows, pred):
    prob = {t["class"]: t["probability"] for t in p["top"]}
    # "present": the labels at 0.5 or more, likeliest first (the text's)
    said = sorted((k for k in range(3) if prob[k] >= 0.5), key=lambda k: -prob[k])
    assert [t["class"] for t in p["present"]] == said, p
    all_right = True
    for k in range(3):
        said, is_ = prob[k] >= 0.5, r[k] >= 0.5
        tp[k] += said and is_
        fp[k] += said and not is_
        fn[k] += is_ and not said
        right += said == is_
        all_right = all_right and said == is_
    exact += all_right
def near(a, b, what):
    assert abs(a - b) <= 1e-6, (what, a, b)
near(ev["accuracy"], right / 180.0, "accuracy")
near(ev["exact_match"], exact / 60.0, "exact match")
for k in range(3):
    o = ev["per_label"][k]
    assert o["support"] == tp[k] + fn[k], (k, o)
    if tp[k] + fp[k]:
        near(o["precision"], tp[k] / (tp[k] + fp[k]), "precision %d" % k)
    near(o["recall"], tp[k] / (tp[k] + fn[k]), "recall %d" % k)
    near(o["f1"], 2 * tp[k] / (2 * tp[k] + fp[k] + fn[k]), "f1 %d" % k)
TP, FP, FN = sum(tp), sum(fp), sum(fn)
near(ev["micro_avg"]["f1"], 2 * TP / (2 * TP + FP + FN), "micro f1")
# ROC AUC: each label's, and every (row, label) pooled, counted pair by pair
def auc(pairs):
    pos = [s for s, y in pairs if y]
    neg = [s for s, y in pairs if not y]
    won = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return won / (len(pos) * len(neg))
probs = [{t["class"]: t["probability"] for t in p["top"]} for p in pred]
each = [auc([(q[k], r[k] >= 0.5) for q, r in zip(probs, rows)]) for k in range(3)]
for k in range(3):
    near(ev["per_label"][k]["roc_auc"], each[k], "roc auc %d" % k)
near(ev["macro_avg"]["roc_auc"], sum(each) / 3, "macro roc auc")
near(ev["micro_avg"]["roc_auc"],
     auc([(q[k], r[k] >= 0.5) for q, r in zip(probs, rows) for k in range(3)]),
     "micro roc auc")
print("ok: multi-label eval: accuracy %.4f per label, exact match %.4f, "
      "micro f1 %.4f, macro roc auc %.4f, as counted on predict's probabilities"
      % (ev["accuracy"], ev["exact_match"], ev["micro_avg"]["f1"],
         ev["macro_avg"]["roc_auc"]))
PY
# predict: the labels said present (0.5 or more), named by the header
printf '0.10,0.20,0.20,0.90\n0.90,0.80,0.70,0.10\n' >"$T/ml_rows.csv"
"$C" predict "$T/ml.model" --weights "$T/ml.st" "$T/ml_rows.csv" >"$T/out"
must_say "predict: no label present" \
  "ml_rows.csv[0]:  no label at 0.5 or more (the likeliest: " "$T/out"
grep -q 'ml_rows.csv\[1\]:  1\. .*  3\. ' "$T/out" &&
  grep 'ml_rows.csv\[1\]' "$T/out" | grep -q 'cat' ||
  fail "predict: the three labels present: $(cat "$T/out")"
# predict --output: the labels present (none; all three) and each one's
# probability, as the text said them.
"$C" predict "$T/ml.model" --weights "$T/ml.st" "$T/ml_rows.csv" \
  --output "$T/ml_pred.csv" >"$T/out"
must_say "predict --output" "wrote 2 predictions to $T/ml_pred.csv" "$T/out"
python3 - "$T/ml_pred.csv" <<'PY' || fail "predict --output of a multi-label model"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0][:3] == ["file", "index", "present"] and len(rows[0]) == 6, rows[0]
assert rows[1][1:3] == ["0", ""], rows[1]
assert sorted(rows[2][2].split(";")) == sorted(rows[0][3:]), rows[2]
assert all(float(p) < 0.5 for p in rows[1][3:]), rows[1]
assert all(float(p) >= 0.5 for p in rows[2][3:]), rows[2]
PY
sed '5s/^0,/2,/' "$T/ml.csv" >"$T/ml_bad.csv"
expect_error "a multi-label target past 1" "sample 4's target 1 is 2" \
  "targets are 0 (the label is absent) to 1 (present)" -- \
  "$C" train "$T/ml.model" --data "$T/ml_bad.csv" --csv-values floats --quiet

# ---- tabular floats from CSV (--csv-values floats) --------------------------
# Features beyond 0..255, negative and in exponent form: read as floats, as
# they are; eval and --resume take the checkpoint's choice.
cat >"$T/tab.model" <<'EOF2'
input shape=3
dense name=h units=8 activation=relu
dense name=out units=1
mse
EOF2
awk 'BEGIN { print "y,a,b,c"
  for (i = 0; i < 300; i++) {
    a = (i * 37) % 600; b = ((i * 13) % 100) / 10 - 5; c = ((i * 7) % 50) / 1000
    printf "%.5f,%d,%.1f,%.1fe-2\n", a / 300 - b / 5 + 10 * c + 1, a, b, c * 100
  } }' >"$T/tab.csv"
expect_error "a float CSV read as bytes" "tab.csv:2:" "is -5.0; pixels must" \
  "--csv-values floats" -- "$C" train "$T/tab.model" --data "$T/tab.csv" --quiet
"$C" train "$T/tab.model" --data "$T/tab.csv" --csv-values floats --epochs 30 \
  --batch 20 --lr 0.01 --save "$T/tab.st" >"$T/out"
must_say "floats" "tab.csv (CSV, 300 rows after a header line, values as floats)" \
  "$T/out"
first=$(sed -n 's/^epoch 1\/30  train loss \([^ ]*\).*/\1/p' "$T/out")
last=$(sed -n 's/^final: test loss \([^,]*\),.*/\1/p' "$T/out")
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f / 5) }' ||
  fail "float CSV: mse did not fall: $first -> $last"
"$C" eval "$T/tab.model" --weights "$T/tab.st" --data "$T/tab.csv" >"$T/eval"
must_say "eval takes floats from the checkpoint" "values as floats" "$T/eval"
# Training's test loss, but for the summation order (eval's batch is 100).
got=$(sed -n 's/^loss \([^ ]*\) (mse.*/\1/p' "$T/eval")
awk -v a="$got" -v b="$last" 'BEGIN { d = a - b; exit !(d * d <= 1e-8 * b * b) }' ||
  fail "eval's loss $got is not training's $last"
expect_error "eval --csv-values bytes" "tab.csv:2:" "--csv-values floats" -- \
  "$C" eval "$T/tab.model" --weights "$T/tab.st" --data "$T/tab.csv" \
  --csv-values bytes
"$C" train "$T/tab.model" --data "$T/tab.csv" --epochs 31 --batch 20 \
  --lr 0.01 --resume "$T/tab.st" >"$T/out"
must_say "--resume takes floats from the checkpoint" "values as floats" "$T/out"
echo "ok: tabular floats from CSV (loss $first -> $last, eval $got; --resume agrees)"

# The same rows with the target last, found by its header name: the same
# run, bit for bit; eval and --resume find it again from the checkpoint.
awk -F, -v OFS=, '{ y = $1; for (i = 1; i < NF; i++) $i = $(i + 1); $NF = y; print }' \
  "$T/tab.csv" >"$T/tab_last.csv"
"$C" train "$T/tab.model" --data "$T/tab_last.csv" --csv-values floats \
  --label-column y --epochs 30 --batch 20 --lr 0.01 --save "$T/tab_last.st" \
  >"$T/out"
must_say "--label-column" \
  "tab_last.csv (CSV, 300 rows after a header line, target in column 4 ('y'), values as floats)" \
  "$T/out"
got_last=$(sed -n 's/^final: test loss \([^,]*\),.*/\1/p' "$T/out")
[ "$got_last" = "$last" ] ||
  fail "--label-column y: final loss $got_last, label-first $last"
"$C" eval "$T/tab.model" --weights "$T/tab_last.st" --data "$T/tab_last.csv" \
  >"$T/eval"
must_say "eval takes the label column from the checkpoint" "column 4 ('y')" \
  "$T/eval"
must_say "eval's loss with the label column" "loss $got (mse" "$T/eval"
"$C" train "$T/tab.model" --data "$T/tab_last.csv" --epochs 31 --batch 20 \
  --lr 0.01 --resume "$T/tab_last.st" >"$T/out"
must_say "--resume takes the label column" "column 4 ('y'), values as floats" \
  "$T/out"
expect_error "--label-column not in the header" "tab_last.csv:1:" \
  "no column of the header line is named 'z' (the target column); it has 4: 'a', 'b', 'c', 'y'" \
  -- "$C" train "$T/tab.model" --data "$T/tab_last.csv" --csv-values floats \
  --label-column z --quiet
expect_error "--label-column past the row" "tab_last.csv:" \
  "the target column cannot start at column 5: a row has 4 columns" -- \
  "$C" eval "$T/tab.model" --weights "$T/tab_last.st" \
  --data "$T/tab_last.csv" --label-column 5
echo "ok: --label-column y (the same loss, $got_last; eval and --resume find it)"

# Other separators: the same rows with tabs train the same run, bit for
# bit; eval reads them with semicolons, found or as asked; predict reads
# tab-separated rows of values.
tr , '\t' <"$T/tab.csv" >"$T/tab.tsv"
"$C" train "$T/tab.model" --data "$T/tab.tsv" --csv-values floats --epochs 30 \
  --batch 20 --lr 0.01 >"$T/out"
must_say "a TSV file" "tab.tsv (CSV, 300 rows after a header line, separated by tabs, values as floats)" \
  "$T/out"
got_tsv=$(sed -n 's/^final: test loss \([^,]*\),.*/\1/p' "$T/out")
[ "$got_tsv" = "$last" ] || fail "tabs: final loss $got_tsv, commas $last"
tr , ';' <"$T/tab.csv" >"$T/tab_semi.csv"
for sep in auto semicolon; do
  "$C" eval "$T/tab.model" --weights "$T/tab.st" --data "$T/tab_semi.csv" \
    --csv-separator $sep >"$T/eval"
  must_say "eval --csv-separator $sep" "loss $got (mse" "$T/eval"
done
expect_error "--csv-separator tab on commas" "tab.csv:2:" \
  "the row has 1 value separated by tabs, it needs 4" -- \
  "$C" eval "$T/tab.model" --weights "$T/tab.st" --data "$T/tab.csv" \
  --csv-separator tab
tail -n 30 "$T/tab.tsv" | cut -f2- >"$T/tab_rows.tsv"
"$C" predict "$T/tab.model" --weights "$T/tab.st" --limit 1 \
  "$T/tab_rows.tsv" >"$T/out" || fail "predict on a TSV file"
must_say "predict on a TSV file" "tab_rows.tsv[0]: " "$T/out"
echo "ok: tabs and semicolons (the same loss, $got_tsv; eval $got)"

# Labels that are class names, last, no header line (UCI's iris.data
# layout): the classes sorted, saved in the checkpoint, printed by eval
# and predict; --resume on data lacking a class keeps the run's classes.
cat >"$T/iris.model" <<'EOF2'
input shape=2
normalize
dense units=8 activation=relu
dense units=3
softmax_cross_entropy
EOF2
awk 'BEGIN { split("virginica setosa versicolor", name, " ")
  for (i = 0; i < 240; i++) { c = i % 3
    printf "%.2f,%.2f,Iris-%s\n", c * 2 + (i % 7) / 10, 5 - c + (i % 5) / 10, name[c + 1] } }' \
  >"$T/iris.data"
"$C" train "$T/iris.model" --data "$T/iris.data" --csv-values floats \
  --label-column last --epochs 30 --batch 16 --lr 0.01 \
  --save "$T/iris.st" >"$T/out"
must_say "class names" "iris.data (CSV, 240 rows, label in column 3, 3 classes by name, values as floats)" \
  "$T/out"
acc=$(sed -n 's/^final: test accuracy \([0-9.]*\).*/\1/p' "$T/out")
awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "iris by name: accuracy $acc"
"$C" eval "$T/iris.model" --weights "$T/iris.st" --data "$T/iris.data" >"$T/eval"
for n in "0 Iris-setosa" "1 Iris-versicolor" "2 Iris-virginica"; do
  must_say "eval names the classes" "$n" "$T/eval"
done
printf '4.00,3.00\n0.00,5.00\n' >"$T/iris_rows.csv"
"$C" predict "$T/iris.model" --weights "$T/iris.st" --top 1 \
  "$T/iris_rows.csv" >"$T/out"
must_say "predict by name" "iris_rows.csv[0]:  1. Iris-versicolor" "$T/out"
must_say "predict by name" "iris_rows.csv[1]:  1. Iris-virginica" "$T/out"
grep -v setosa "$T/iris.data" >"$T/iris_two.data"
"$C" train "$T/iris.model" --data "$T/iris_two.data" --epochs 31 --batch 16 \
  --lr 0.01 --resume "$T/iris.st" --save "$T/iris2.st" >"$T/out"
must_say "--resume keeps the classes" "3 classes by name" "$T/out"
"$C" eval "$T/iris.model" --weights "$T/iris2.st" --data "$T/iris.data" \
  --json >"$T/eval.json"
python3 - "$T/eval.json" <<'PY' || fail "classes after --resume on two"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["classes"] == ["Iris-setosa", "Iris-versicolor", "Iris-virginica"], d
# setosa was never seen by the resumed epoch; the others are still right
assert d["per_class"][1]["recall"] > 0.8 and d["per_class"][2]["recall"] > 0.8, d
PY
echo "ok: labels by name (accuracy $acc; eval, predict and --resume by name)"
# --val-data: a validation file of two of the three classes, by name:
# they map to the training data's classes (1 and 2), as test data's do.
tail -n 30 "$T/iris_two.data" >"$T/iris_val.data"
"$C" train "$T/iris.model" --data "$T/iris.data" --csv-values floats \
  --label-column last --epochs 1 --batch 16 --lr 0.001 --init "$T/iris.st" \
  --val-data "$T/iris_val.data" --json >"$T/val.json" 2>"$T/val.err" ||
  fail "--val-data: $(cat "$T/val.err")"
must_say "--val-data is the validation set" \
  "validation data: $T/iris_val.data (CSV, 30 rows" "$T/val.err"
grep -qE '^epoch 1/1  train .*  val loss [0-9.]+ acc 1\.0000  test ' "$T/val.err" ||
  fail "--val-data: the epoch line: $(grep '^epoch' "$T/val.err")"
python3 - "$T/val.json" <<'PY' || fail "--val-data: the result"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["validation_samples"] == 30 and d["validation_accuracy"] == 1.0, d
assert d["monitor"] == "validation", d
PY
printf '1.00,2.00,Iris-rose\n' >"$T/iris_bad.data"
expect_error "--val-data: a class the training data lacks" "'Iris-rose'" \
  -- "$C" train "$T/iris.model" --data "$T/iris.data" --csv-values floats \
  --label-column last --epochs 1 --val-data "$T/iris_bad.data"
expect_error "--val-data with --val-split" "exclude each other" \
  -- "$C" train "$T/iris.model" --data "$T/iris.data" --val-split 0.1 \
  --val-data "$T/iris_val.data"
echo "ok: --val-data maps its class names to the training data's"

# Imbalanced classes: one row in ten of class 1 (both features shifted by
# 1.2, normal noise from a fixed generator); class_weights=balanced learns
# 5 and 0.556 and raises class 1's recall on the held-out rows well above
# the unweighted model's, where eval's loss stays unweighted.
awk 'BEGIN { s = 12345
  for (i = 0; i < 1000; i++) { c = (i % 10 == 0) ? 1 : 0
    for (k = 0; k < 4; k++) {
      s = (s * 1103515245 + 12345) % 2147483648; u[k] = (s + 0.5) / 2147483648 }
    printf "%d,%.4f,%.4f\n", c, sqrt(-2 * log(u[0])) * cos(6.283185307 * u[1]) + 1.2 * c,
      sqrt(-2 * log(u[2])) * cos(6.283185307 * u[3]) + 1.2 * c } }' >"$T/imb.csv"
for cw in none balanced; do
  { echo "input shape=2"; echo "dense units=8 activation=relu"; echo "dense units=2"
    if [ $cw = none ]; then echo softmax_cross_entropy
    else echo "softmax_cross_entropy name=loss class_weights=balanced"; fi
  } >"$T/imb_$cw.model"
  "$C" train "$T/imb_$cw.model" --data "$T/imb.csv" --csv-values floats \
    --epochs 20 --batch 32 --lr 0.01 --holdout 0.3 --save "$T/imb_$cw.st" \
    >"$T/out" || fail "imbalanced, $cw: $(cat "$T/out")"
  [ $cw = none ] || must_say "the weights learnt" \
    "class weights (balanced, from 700 training samples): 0: 0.5556, 1: 5" \
    "$T/out"
  test_loss=$(sed -n 's/^final: test accuracy [0-9.]*, test loss \([0-9.]*\).*/\1/p' "$T/out")
  "$C" eval "$T/imb_$cw.model" --weights "$T/imb_$cw.st" --data "$T/imb.csv" \
    --holdout 0.3 --json >"$T/imb_$cw.json"
  python3 - "$T/imb_$cw.json" "$test_loss" <<'PY' || fail "eval's loss, $cw"
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["loss"] - float(sys.argv[2])) <= 1e-3 * d["loss"], (d["loss"], sys.argv[2])
PY
done
python3 - "$T/imb_none.json" "$T/imb_balanced.json" "$T/imb_balanced.st" <<'PY' ||
import json, struct, sys
plain, weighted = (json.load(open(p))["per_class"][1]["recall"] for p in sys.argv[1:3])
assert weighted >= 0.7 and weighted >= plain + 0.2, (plain, weighted)
raw = open(sys.argv[3], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
def tensor(name):
    lo, hi = head[name]["data_offsets"]
    data = raw[8 + n + lo:8 + n + hi]
    return struct.unpack("<%df" % (len(data) // 4), data)
w, count = tensor("loss.class_weights"), tensor("loss.count")
# the 700 rows trained on: 70 of class 1, 630 of class 0
assert abs(w[0] - 700 / (2 * 630)) < 1e-6 and abs(w[1] - 5) < 1e-6, w
assert count == (700.0,), count
print("class 1's recall: %.3f unweighted, %.3f balanced; weights %s" % (plain, weighted, w))
PY
  fail "class_weights=balanced"
echo "ok: class_weights=balanced"

# A normalize layer first: statistics learnt from the training rows, kept
# in the checkpoint for eval; the same 30 epochs reach a loss well below
# the raw features' ($last).
sed 's/^input shape=3$/input shape=3\nnormalize name=norm/' "$T/tab.model" \
  >"$T/tabn.model"
"$C" train "$T/tabn.model" --data "$T/tab.csv" --csv-values floats \
  --epochs 30 --batch 20 --lr 0.01 --save "$T/tabn.st" >"$T/out"
normed=$(sed -n 's/^final: test loss \([^,]*\),.*/\1/p' "$T/out")
awk -v n="$normed" -v l="$last" 'BEGIN { exit !(n < l / 2) }' ||
  fail "normalize: loss $normed, raw features $last"
"$C" eval "$T/tabn.model" --weights "$T/tabn.st" --data "$T/tab.csv" \
  >"$T/eval"
must_say "eval with the checkpoint's statistics" "loss $normed (mse" "$T/eval"
python3 - "$T/tabn.st" "$T/tab.csv" <<'PY' || fail "normalize's statistics"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
def tensor(name):
    s, e = h[name]["data_offsets"]
    raw = b[8 + n + s:8 + n + e]
    return struct.unpack("<%df" % (len(raw) // 4), raw)
rows = [[float(v) for v in l.split(",")[1:]] for l in open(sys.argv[2]).read().split()[1:271]]
for k in range(3):
    col = [r[k] for r in rows]
    m = sum(col) / len(col)
    v = sum((c - m) ** 2 for c in col) / len(col)
    got_m, got_v = tensor("norm.mean")[k], tensor("norm.var")[k]
    assert abs(got_m - m) <= 1e-5 * max(1, abs(m)), (k, got_m, m)
    assert abs(got_v - v) <= 1e-5 * max(1e-6, v), (k, got_v, v)
assert tensor("norm.count") == (270.0,), tensor("norm.count")
PY
echo "ok: normalize (loss $normed against $last; the 270 training rows' statistics, kept for eval)"

# predict on rows of values (no label): the held-out 30 rows' outputs give
# eval's loss against their targets; a row with its target is refused.
tail -n 30 "$T/tab.csv" | cut -d, -f2- >"$T/tab_rows.csv"
"$C" predict "$T/tab.model" --weights "$T/tab.st" --json --limit 30 \
  "$T/tab_rows.csv" >"$T/pred.json" || fail "predict on CSV rows"
python3 - "$T/pred.json" "$T/tab.csv" "$got" <<'PY' || fail "predict on CSV rows"
import json, sys
preds = json.load(open(sys.argv[1]))["predictions"]
ys = [float(l.split(",")[0]) for l in open(sys.argv[2]).read().split()[-30:]]
assert [p["index"] for p in preds] == list(range(30)), preds
mse = sum((p["outputs"][0] - y) ** 2 for p, y in zip(preds, ys)) / 30
assert abs(mse - float(sys.argv[3])) <= 1e-4 * mse, (mse, sys.argv[3])
print("predict: mse %.6g over the held-out rows, eval's %s" % (mse, sys.argv[3]))
PY
"$C" predict "$T/tab.model" --weights "$T/tab.st" --limit 2 "$T/tab_rows.csv" \
  >"$T/out"
must_say "predict prints outputs" "tab_rows.csv[1]: " "$T/out"
must_say "predict --limit" "(28 more rows in $T/tab_rows.csv" "$T/out"
expect_error "predict on a row with its target" "tab.csv:2:" \
  "the row has 4 values, it needs 3: no label" -- \
  "$C" predict "$T/tab.model" --weights "$T/tab.st" "$T/tab.csv"
# An image given to a model trained on floats: predicted, with a warning
# (pixels are scaled to [0, 1]); a model trained on bytes gets none.
printf 'P5\n3 1\n255\n\001\002\003' >"$T/row.pgm"
"$C" predict "$T/tab.model" --weights "$T/tab.st" "$T/row.pgm" >"$T/out" \
  2>"$T/err" || fail "predict an image on a float model: $(cat "$T/err")"
must_say "the warning for an image" "warning: $T/tab.st was trained on values used as they are" \
  "$T/err"
must_say "the image's output" "row.pgm: " "$T/out"
printf 'P5\n4 4\n255\n0123456789abcdef' >"$T/tiny.pgm"
"$C" predict "$T/tiny.model" --weights "$T/csv.st" "$T/tiny.pgm" >"$T/out" \
  2>"$T/err" || fail "predict an image on a byte model: $(cat "$T/err")"
grep -q warning "$T/err" && fail "a warning for a byte model: $(cat "$T/err")"
# A classifier on rows of bytes: each row's class is its label's.
cut -d, -f2- "$T/csv/test.csv" >"$T/rows.csv"
"$C" predict "$T/tiny.model" --weights "$T/csv.st" --top 1 --limit 60 --json \
  "$T/rows.csv" >"$T/pred.json" || fail "predict a classifier on CSV rows"
python3 - "$T/pred.json" "$T/csv/test.csv" <<'PY' || fail "predict a classifier on CSV rows"
import json, sys
preds = json.load(open(sys.argv[1]))["predictions"]
labels = [int(l.split(",")[0]) for l in open(sys.argv[2]).read().split()]
assert len(preds) == len(labels) == 60, (len(preds), len(labels))
right = sum(p["top"][0]["class"] == y for p, y in zip(preds, labels))
assert right >= 54, right
print("predict: %d of 60 rows in their label's class" % right)
PY
# predict --output: every row (5,000 here: past the 4,096 read at a
# time), each class's probability and the likeliest, as --json gives them;
# class names with a comma and quotes are quoted as CSV wants.
python3 - "$T/rows.csv" "$T/many.csv" <<'PY'
import sys
rows = open(sys.argv[1]).read().split()
open(sys.argv[2], "w").write("\n".join(rows[i % len(rows)] for i in range(5000)) + "\n")
PY
printf 'top, row\nsay "middle"\nbottom\n' >"$T/odd_labels.txt"
"$C" predict "$T/tiny.model" --weights "$T/csv.st" --labels "$T/odd_labels.txt" \
  --output "$T/pred.csv" "$T/many.csv" >"$T/out" || fail "predict --output"
must_say "predict --output" "wrote 5000 predictions to $T/pred.csv" "$T/out"
python3 - "$T/pred.csv" "$T/pred.json" "$T/many.csv" <<'PY' || fail "predict --output"
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1])))
names = ["top, row", 'say "middle"', "bottom"]
assert rows[0] == ["file", "index", "predicted"] + names, rows[0]
assert len(rows) == 5001, len(rows)
preds = json.load(open(sys.argv[2]))["predictions"]
for i, r in enumerate(rows[1:]):
    assert r[0] == sys.argv[3] and int(r[1]) == i, r
    p = [float(v) for v in r[3:]]
    assert abs(sum(p) - 1) < 1e-5, r
    assert r[2] == names[max(range(3), key=lambda k: p[k])], r
    top = preds[i % 60]["top"][0]
    assert r[2] == names[top["class"]], (r, top)
    assert abs(p[top["class"]] - top["probability"]) <= 1e-6, (r, top)
print("predict --output: 5000 rows, as --json's")
PY
expect_error "predict --output with --json" "exclude each other" \
  -- "$C" predict "$T/tiny.model" --weights "$T/csv.st" --json \
  --output "$T/x.csv" "$T/rows.csv"
expect_error "predict --output into a missing folder" "$T/no/x.csv" \
  -- "$C" predict "$T/tiny.model" --weights "$T/csv.st" \
  --output "$T/no/x.csv" "$T/rows.csv"
echo "ok: predict on CSV rows (regression outputs, classes)"

# ---- image folders ---------------------------------------------------------
mkdir -p "$T/img"
if ! "$MK" "$T/probe" 1 1 2 2 2>/dev/null; then
  echo "image folders: skipped (this build has no libpng)"
  exit 0
fi
"$MK" "$T/img/train" 4 12 16 16 jpeg
"$MK" "$T/img/test" 4 3 16 16 jpeg
cat >"$T/img.model" <<'EOF2'
input shape=1x16x16
conv2d name=c1 filters=4 kernel=3 activation=relu
maxpool kernel=2
flatten
dense name=fc units=4
softmax_cross_entropy
EOF2
"$C" train "$T/img.model" --data "$T/img" --epochs 2 --batch 8 \
  --save "$T/img.st" >"$T/out"
must_say "images" "$T/img/train (image folders: 48 images in 4 classes, decoded" "$T/out"
must_say "images" "packed into the cache" "$T/out"
"$C" train "$T/img.model" --data "$T/img" --epochs 1 --batch 8 >"$T/out"
must_say "cache" "48 images in 4 classes, read from the packed cache" "$T/out"
echo "ok: image folders train; the second run reads the packed cache"
touch -d '2001-01-01' "$T/img/train/class_b/img03.png"
"$C" train "$T/img.model" --data "$T/img" --epochs 1 --batch 8 >"$T/out"
must_say "cache rebuilt" "train (image folders: 48 images in 4 classes, decoded" "$T/out"
echo "ok: a changed file: decoded again"

"$C" eval "$T/img.model" --weights "$T/img.st" --data "$T/img" >"$T/out"
must_say "eval names" "class_c" "$T/out"
"$C" predict "$T/img.model" --weights "$T/img.st" \
  "$T/img/test/class_a/img00.png" >"$T/out"
must_say "predict names" "class_" "$T/out"
echo "ok: eval and predict print the class names saved in the checkpoint"

# A colour model predicts on grey and colour PNGs and on JPEGs (each made
# what the model takes), and on another size only with --resize.
sed 's/input shape=1x16x16/input shape=3x16x16/' "$T/img.model" >"$T/rgb.model"
"$C" train "$T/rgb.model" --data "$T/img" --epochs 1 --batch 8 \
  --save "$T/rgb.st" >/dev/null
for f in img00.png img01.png img02.jpg; do
  "$C" predict "$T/rgb.model" --weights "$T/rgb.st" \
    "$T/img/test/class_a/$f" >"$T/out" 2>"$T/err" ||
    fail "colour predict on $f: $(cat "$T/err")"
  must_say "colour predict $f" "class_" "$T/out"
done
sed 's/input shape=3x16x16/input shape=3x12x12/; s/units=4/units=4/' \
  "$T/rgb.model" >"$T/small.model"
"$C" train "$T/small.model" --data "$T/img" --resize --epochs 1 --batch 8 \
  --save "$T/small.st" >/dev/null
expect_error "predict on another size" "16x16" "12x12" -- \
  "$C" predict "$T/small.model" --weights "$T/small.st" \
  "$T/img/test/class_a/img01.png"
"$C" predict "$T/small.model" --weights "$T/small.st" --resize \
  "$T/img/test/class_a/img01.png" >"$T/out" || fail "predict --resize"
must_say "predict --resize" "class_" "$T/out"
echo "ok: predict on a colour model: grey and colour PNG, JPEG, --resize"

mv "$T/img/test" "$T/img_test"
"$C" train "$T/img.model" --data "$T/img" --epochs 1 --batch 8 --holdout 0.25 \
  >"$T/out"
must_say "holdout" "the last 25% (12 samples) of $T/img/train" "$T/out"
echo "ok: no test/ folder: a held-out quarter, said so"

# One folder of class folders (no train/): split by --val-split (seeded:
# the same samples again with the same --seed) and held out for the test.
"$C" train "$T/img.model" --data "$T/img/train" --epochs 1 --batch 8 \
  --val-split 0.25 --holdout 0.1 --seed 3 --json >"$T/a.json" 2>"$T/a.err" ||
  fail "class folders with --val-split: $(cat "$T/a.err")"
must_say "flat class folders" "validation data: $T/img/train" "$T/a.err"
"$C" train "$T/img.model" --data "$T/img/train" --epochs 1 --batch 8 \
  --val-split 0.25 --holdout 0.1 --seed 3 --json >"$T/b.json" 2>/dev/null
python3 - "$T/a.json" "$T/b.json" <<'PYEOF' || fail "--val-split on class folders"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
total = a["training_samples"] + a["validation_samples"] + a["test_samples"]
assert a["validation_samples"] == round(0.25 * (total - a["test_samples"])), a
assert a["validation_loss"] == b["validation_loss"], (a, b)  # same seed, same split
PYEOF
echo "ok: one folder of class folders, split by --val-split and --holdout"

"$MK" "$T/big" 1 1 20 12
cp "$T/big/class_a/img00.png" "$T/img/train/class_d/wide.png"
expect_error "wrong-size image" "class_d/wide.png" "20x12 pixels" "16x16" \
  "--resize" -- "$C" train "$T/img.model" --data "$T/img" --quiet
"$C" train "$T/img.model" --data "$T/img" --epochs 1 --batch 8 --resize --quiet
echo "ok: --resize trains with it"
printf '\377\330\377\340 not a jpeg' >"$T/img/train/class_a/broken.jpg"
expect_error "corrupt image" "class_a/broken.jpg" "JPEG" -- \
  "$C" train "$T/img.model" --data "$T/img" --resize --quiet
echo "all data checks passed"
