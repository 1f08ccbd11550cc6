#!/bin/bash
# End-to-end checks of checkpoints through the command, as a user runs it:
#   train --save / --save-every / --resume / --init / --plot, eval, predict,
#   bad files, and the embed_predict sample.
# usage: cli_checkpoint.sh CLTRAIN EMBED_PREDICT SOURCE_ROOT
set -euo pipefail
C=$1
E=$2
ROOT=$3
T=$(mktemp -d /tmp/clt_cli_XXXXXX)
trap 'rm -rf "$T"' EXIT
# shellcheck source=cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"

cat >"$T/tiny.model" <<'EOF'
input shape=1x28x28
flatten
dense name=fc1 units=16
batchnorm name=bn1
relu
dropout name=drop1 rate=0.3
dense name=fc2 units=10
softmax_cross_entropy
EOF
A=("$T/tiny.model" --data fashion-mnist --train-limit 300 --test-limit 100
  --batch 50 --quiet)

# 3 epochs straight, against 1 epoch, then a resume for 2 more (the log
# goes on in the same file): the same file, byte for byte.
"$C" train "${A[@]}" --epochs 3 --save "$T/straight.st" --log "$T/s.csv" \
  --plot "$T/s.svg"
"$C" train "${A[@]}" --epochs 1 --save "$T/run.st" --save-every 1 \
  --log "$T/r.csv"
"$C" train "${A[@]}" --epochs 3 --resume "$T/run.st" --save "$T/run.st" \
  --log "$T/r.csv" --plot "$T/r.svg"
cmp "$T/straight.st" "$T/run.st" || fail "resumed checkpoint differs"
echo "ok: 1 epoch + resume to 3 == 3 epochs straight (identical files)"
# RMSprop with every buffer it keeps (the mean square, the momentum
# buffer, the mean gradient): the same.
R=(--optimizer rmsprop --centered --momentum 0.5 --alpha 0.9)
"$C" train "${A[@]}" "${R[@]}" --epochs 2 --save "$T/rstraight.st"
"$C" train "${A[@]}" "${R[@]}" --epochs 1 --save "$T/rrun.st"
"$C" train "${A[@]}" "${R[@]}" --epochs 2 --resume "$T/rrun.st" \
  --save "$T/rrun.st"
cmp "$T/rstraight.st" "$T/rrun.st" || fail "rmsprop: resumed checkpoint differs"
grep -aq '"optimizer":"rmsprop"' "$T/rrun.st" ||
  fail "rmsprop: the checkpoint's metadata does not name it"
grep -aq '__optim__.grad_avg' "$T/rrun.st" ||
  fail "rmsprop: no mean gradient saved"
echo "ok: rmsprop centered with momentum: 1 epoch + resume == 2 straight"
expect_error "--pct-start without onecycle" "--pct-start is for --schedule onecycle" \
  -- "$C" train "${A[@]}" --pct-start 0.2
expect_error "resume: rmsprop without --centered" "__optim__.grad_avg" \
  "centered changed?" -- "$C" train "${A[@]}" --optimizer rmsprop \
  --momentum 0.5 --epochs 3 --resume "$T/rrun.st"
expect_error "adam with --momentum" "--momentum is for sgd and rmsprop" \
  -- "$C" train "${A[@]}" --momentum 0.9
expect_error "sgd with --alpha" "--alpha and --centered are for --optimizer rmsprop" \
  -- "$C" train "${A[@]}" --optimizer sgd --alpha 0.9
expect_error "rmsprop --alpha 1" "--alpha must be under 1" \
  -- "$C" train "${A[@]}" --optimizer rmsprop --alpha 1
expect_error "rmsprop --nesterov" "--nesterov is for --optimizer sgd" \
  -- "$C" train "${A[@]}" --optimizer rmsprop --momentum 0.9 --nesterov
# Fine-tuning: --init, then --train-only the head. The frozen layers
# keep their values; the checkpoint names them, and --resume goes on with
# them unless told otherwise (the same bytes as the run straight).
F=("${A[@]}" --init "$T/straight.st" --train-only fc2)
"$C" train "${F[@]}" --epochs 2 --save "$T/ft.st"
"$C" train "${F[@]}" --epochs 1 --save "$T/ft1.st"
"$C" train "${A[@]}" --epochs 2 --resume "$T/ft1.st" --save "$T/ft1.st"
cmp "$T/ft.st" "$T/ft1.st" || fail "fine-tuning: resumed checkpoint differs"
python3 - "$T/straight.st" "$T/ft.st" <<'PYEOF' || fail "fine-tuning: see above"
import json, struct, sys
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return h, {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
               for k, v in h.items() if k != "__metadata__"}
(_, before), (head, after) = load(sys.argv[1]), load(sys.argv[2])
frozen = json.loads(head["__metadata__"]["frozen_layers"])
assert frozen == ["fc1", "bn1"], frozen
for name in ("fc1.weight", "fc1.bias", "bn1.weight", "bn1.bias"):
    assert before[name] == after[name], name + " changed"
for name in ("fc2.weight", "fc2.bias", "bn1.running_mean"):
    assert before[name] != after[name], name + " did not change"
PYEOF
out=$("$C" train "$T/tiny.model" --data fashion-mnist --train-limit 100 \
  --test-limit 50 --init "$T/straight.st" --freeze fc1 --epochs 1 2>&1)
echo "$out" | grep -qE '^fc1 .* 12560  frozen$' ||
  fail "fine-tuning: the summary does not mark fc1 frozen: $out"
echo "$out" | grep -qF "total parameters: 12795 (202 trainable, 12593 non-trainable)" ||
  fail "fine-tuning: the summary's counts: $out"
echo "ok: --init + --train-only fc2: fc1 and bn1 unchanged, resumed == straight"
expect_error "resume: other frozen layers" \
  "trained with fc1, bn1 frozen, resuming with fc2 frozen" \
  -- "$C" train "${A[@]}" --epochs 3 --resume "$T/ft.st" --freeze fc2
expect_error "--freeze: unknown layer" "no layer has that name" \
  "fc1, bn1, fc2" -- "$C" train "${A[@]}" --freeze fc3
expect_error "--freeze: no weights" "a relu layer has no weights" \
  -- "$C" train "${A[@]}" --freeze relu1
expect_error "--freeze: everything" "nothing is left to train" \
  -- "$C" train "${A[@]}" --freeze fc1,bn1,fc2
expect_error "--freeze with --train-only" "exclude each other" \
  -- "$C" train "${A[@]}" --freeze fc1 --train-only fc2
# bench train and tune freeze as train does: a frozen middle layer
# (bn1, between the trained fc1 and fc2) said on bench's line; tune
# plans as such a run compiles (fc1 frozen: no weight gradient planned);
# the same errors.
out=$("$C" bench train "$T/tiny.model" --batch 16 --steps 2 --freeze bn1)
case $out in
*"frozen_layers=1 trainable_params=12730"*) ;;
*) fail "bench train --freeze bn1: $out" ;;
esac
out=$("$C" bench train "$T/tiny.model" --batch 16 --steps 2 --train-only fc2)
case $out in
*"frozen_layers=2 trainable_params=170"*) ;;
*) fail "bench train --train-only fc2: $out" ;;
esac
out=$("$C" tune "$T/tiny.model" --batch 16 --freeze fc1,bn1)
case $out in
*"fc1 weight gradient"*) fail "tune --freeze fc1: its weight gradient planned" ;;
*"fc2 weight gradient"*) ;;
*) fail "tune --freeze fc1,bn1: $out" ;;
esac
expect_error "bench train --freeze: unknown layer" \
  "cltrain bench train: --freeze" "no layer has that name" \
  -- "$C" bench train "$T/tiny.model" --steps 1 --freeze fc3
expect_error "bench train: --freeze with --train-only" "exclude each other" \
  -- "$C" bench train "$T/tiny.model" --freeze fc1 --train-only fc2
expect_error "tune --train-only: no weights" \
  "cltrain tune: --train-only: train layer 'relu1'" \
  -- "$C" tune "$T/tiny.model" --batch 4 --train-only relu1
expect_error "tune --freeze: everything" "nothing is left to train" \
  -- "$C" tune "$T/tiny.model" --batch 4 --freeze fc1,bn1,fc2
expect_error "bench infer --freeze" "unknown option '--freeze'" \
  -- "$C" bench infer "$T/tiny.model" --freeze fc1
echo "ok: bench train and tune take --freeze and --train-only"
# The same in mixed precision: the loss scaler's state (its scale, the
# steps it has seen and skipped) is saved and restored, so the resumed run
# skips no step a straight run would not.
# A scale of 2^20 that overflows, grown again after 4 clean steps: the
# scale moves within the first epoch.
M=(--precision mixed --loss-scale 1048576 --scale-growth 4)
"$C" train "${A[@]}" "${M[@]}" --epochs 3 --save "$T/mstraight.st" \
  --log "$T/m.csv"
"$C" train "${A[@]}" "${M[@]}" --epochs 1 --save "$T/mrun.st"
"$C" train "${A[@]}" "${M[@]}" --epochs 3 --resume "$T/mrun.st" \
  --save "$T/mrun.st"
cmp "$T/mstraight.st" "$T/mrun.st" || fail "mixed: resumed checkpoint differs"
python3 - "$T/mrun.st" <<'PY' || fail "mixed: scaler state"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
t = h["__scaler__.state"]
s, e = t["data_offsets"]
scale, clean, steps, skipped = struct.unpack("<4d", b[8 + n + s:8 + n + e])
# 300 images in batches of 50: 6 steps an epoch.
assert t["dtype"] == "F64" and t["shape"] == [4], t
assert steps == 18 and 0 < skipped < steps and scale > 0, (scale, steps, skipped)
assert 0 <= clean < 4, clean
print("scaler state: scale %g, %d steps, %d skipped" % (scale, steps, skipped))
PY
echo "ok: mixed precision: 1 epoch + resume to 3 == 3 straight (scaler restored)"
expect_error "--loss-scale without mixed precision" "need --precision mixed" \
  -- "$C" train "${A[@]}" --loss-scale 8
# A mixed run resumed in fp32 goes on (the scaler's state is not needed).
"$C" train "${A[@]}" --epochs 4 --resume "$T/mrun.st" >/dev/null ||
  fail "a mixed checkpoint resumed in fp32"
diff <(cut -d, -f1-5 "$T/s.csv") <(cut -d, -f1-5 "$T/r.csv") ||
  fail "logs differ"
head -1 "$T/s.csv" | grep -qx \
  'epoch,train_loss,train_acc,test_loss,test_acc,val_loss,val_acc,seconds,images_per_sec,lr' ||
  fail "CSV header"
[ "$(wc -l <"$T/r.csv")" = 4 ] || fail "resumed log has $(wc -l <"$T/r.csv") lines"

# The header is JSON whose offsets cover the data exactly; the charts are
# XML with both panels, the resumed one with every epoch.
python3 - "$T/straight.st" "$T/s.svg" "$T/r.svg" <<'EOF'
import json, struct, sys, xml.dom.minidom
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n].decode('utf-8'))
meta = h.pop('__metadata__')
assert meta['format'] == 'pt' and len(meta['model_sha256']) == 64, meta
size = {'F32': 4, 'I64': 8, 'F64': 8}
spans = sorted(v['data_offsets'] for v in h.values())
pos = 0
for (a, e) in spans:
    assert a == pos, (a, pos)
    pos = e
assert pos == len(b) - 8 - n, (pos, len(b) - 8 - n)
for k, v in h.items():
    numel = 1
    for d in v['shape']:
        numel *= d
    assert v['data_offsets'][1] - v['data_offsets'][0] == numel * size[v['dtype']], k
assert h['fc1.weight']['shape'] == [16, 784]
assert h['bn1.num_batches_tracked'] == dict(h['bn1.num_batches_tracked'], dtype='I64', shape=[])
for svg in sys.argv[2:]:
    d = xml.dom.minidom.parse(svg)
    assert d.documentElement.tagName == 'svg'
    circles = d.getElementsByTagName('circle')
    assert len(circles) == 3 * 4, (svg, len(circles))
print('ok: header JSON tiles the data; SVG charts parse')
EOF

# What a browser shows: every element of the chart, legend included, lies
# inside its canvas (rendered by rsvg-convert, from librsvg2-bin).
if command -v rsvg-convert >/dev/null; then
  for svg in "$T/s.svg" "$T/r.svg"; do
    python3 "$ROOT/tests/svg_inside.py" "$svg" || fail "$svg draws outside"
  done
  grep -q 'class="legend"' "$T/s.svg" || fail "the chart has no legend"
else
  echo "skip: rsvg-convert (librsvg2-bin) is not installed, so the chart is" \
    "not rendered"
fi

# Nothing left to do.
"$C" train "${A[@]}" --epochs 3 --resume "$T/run.st" | grep -q "nothing to do" ||
  fail "resume past the end"

# eval: loss, accuracy and the confusion matrix with class names; the
# accuracy is the one training reported on the same 100 images.
"$C" eval "$T/tiny.model" --weights "$T/straight.st" --data fashion-mnist \
  --test-limit 100 --batch 50 --labels "$ROOT/samples/fashion_labels.txt" \
  >"$T/eval.txt"
cat "$T/eval.txt"
grep -q "confusion matrix" "$T/eval.txt" || fail "no confusion matrix"
grep -q "Ankle boot" "$T/eval.txt" || fail "no class names"
acc=$(tail -1 "$T/s.csv" | cut -d, -f5)
want=$(printf 'accuracy %.4f' "$acc")
grep -q "$want" "$T/eval.txt" || fail "eval says $(grep accuracy "$T/eval.txt"), training said $acc"
# The matrix's rows (between its title and the per-class report): ten
# counts before the recall.
total=$(awk '/^confusion matrix/ {m = 1; next} /^class / {m = 0}
  m && /^ *[0-9]+ .*([0-9]\.[0-9]+|-)$/ {for (i = NF - 10; i < NF; i++) s += $i}
  END {print s}' "$T/eval.txt")
[ "$total" = 100 ] || fail "confusion matrix sums to $total"

# eval --precision mixed: the forward passes in fp16 values, as mixed
# training evaluated; its accuracy is training's on the same 100 images
# (within one image: the two graphs' plans may round a sum to the next
# fp16 value), and the JSON says the precision.
"$C" eval "$T/tiny.model" --weights "$T/mstraight.st" --data fashion-mnist \
  --test-limit 100 --batch 50 --precision mixed --json >"$T/meval.json"
python3 - "$T/meval.json" "$(tail -1 "$T/m.csv" | cut -d, -f5)" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
want = float(sys.argv[2])
assert d["precision"] == "mixed", d["precision"]
assert abs(d["accuracy"] - want) <= 0.01 + 1e-9, (d["accuracy"], want)
print("eval mixed: accuracy %.4f, training said %.4f" % (d["accuracy"], want))
PY
  fail "eval --precision mixed"
"$C" eval "$T/tiny.model" --weights "$T/mstraight.st" --data fashion-mnist \
  --test-limit 100 --batch 50 --precision mixed | grep -q "precision: mixed" ||
  fail "eval --precision mixed does not say so"
expect_error "eval --precision half" "--precision" "fp32" "mixed" \
  -- "$C" eval "$T/tiny.model" --weights "$T/mstraight.st" --data fashion-mnist \
  --precision half

# predict: the first test image as PGM (binary and ASCII), PNG (gray and
# RGB) and inside the IDX file: the same answer every way.
python3 - "$T" <<'EOF'
import gzip, struct, sys, zlib
t = sys.argv[1]
d = gzip.open('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz').read()
img = d[16:16 + 784]
open(t + '/a.pgm', 'wb').write(b'P5\n# first test image\n28 28\n255\n' + img)
open(t + '/b.pgm', 'w').write('P2 28 28 255\n' + ' '.join(map(str, img)) + '\n')
def chunk(k, data):
    return struct.pack('>I', len(data)) + k + data + struct.pack('>I', zlib.crc32(k + data))
def png(ctype, rows):
    raw = b''.join(b'\0' + r for r in rows)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 28, 28, 8, ctype, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
rows = [img[r * 28:(r + 1) * 28] for r in range(28)]
open(t + '/c.png', 'wb').write(png(0, rows))
open(t + '/d.png', 'wb').write(png(2, [bytes(v for p in r for v in (p, p, p)) for r in rows]))
open(t + '/big.pgm', 'wb').write(b'P5 32 32 255\n' + bytes(1024))
open(t + '/bad.png', 'wb').write(png(0, rows)[:60])
EOF
IDX=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
INPUTS=("$T/a.pgm" "$T/b.pgm" "$T/c.png" "$T/d.png")
"$C" predict "$T/tiny.model" --weights "$T/straight.st" --top 2 \
  --labels "$ROOT/samples/fashion_labels.txt" "${INPUTS[@]}" "$IDX" \
  --limit 1 | tee "$T/pred.txt"
[ "$(grep ' 1\. ' "$T/pred.txt" | wc -l)" = 5 ] || fail "5 predictions"
[ "$(grep ' 1\. ' "$T/pred.txt" | sed 's/^[^:]*://' | sort -u | wc -l)" = 1 ] ||
  fail "the same image got different predictions"
grep -q "1\. " "$T/pred.txt" && grep -q "2\. " "$T/pred.txt" || fail "top 2"
# predict --precision mixed: the forward pass in fp16 values (as eval's),
# so each probability moves by a few fp16 roundings and no more; the JSON
# says the precision.
for p in fp32 mixed; do
  "$C" predict "$T/tiny.model" --weights "$T/straight.st" --top 10 --limit 8 \
    --precision $p --json "$IDX" >"$T/pred_$p.json"
done
python3 - "$T/pred_fp32.json" "$T/pred_mixed.json" <<'PY' ||
import json, sys
f, m = (json.load(open(p)) for p in sys.argv[1:3])
assert f["precision"] == "fp32" and m["precision"] == "mixed", (f["precision"], m["precision"])
assert len(f["predictions"]) == len(m["predictions"]) == 8
worst = 0.0
for a, b in zip(f["predictions"], m["predictions"]):
    pa = {t["class"]: t["probability"] for t in a["top"]}
    pb = {t["class"]: t["probability"] for t in b["top"]}
    assert sorted(pa) == sorted(pb) == list(range(10)), (pa, pb)
    worst = max(worst, max(abs(pa[c] - pb[c]) for c in pa))
assert 0 < worst <= 0.01, "mixed moved a probability by %g" % worst
print("predict mixed: probabilities within %.2g of fp32's" % worst)
PY
  fail "predict --precision mixed"
# A labels file's lines are read whole, however long: a 1,500-character
# first name, and every class keeps its own name.
{
  head -c 1500 /dev/zero | tr '\0' L
  echo
  tail -n +2 "$ROOT/samples/fashion_labels.txt"
} >"$T/long_labels.txt"
"$C" predict "$T/tiny.model" --weights "$T/straight.st" --top 10 --limit 1 \
  --labels "$T/long_labels.txt" --json "$IDX" >"$T/pred_long.json" ||
  fail "predict --labels with a long line"
python3 - "$T/pred_long.json" <<'PY' || fail "predict --labels with a long line"
import json, sys
top = json.load(open(sys.argv[1]))["predictions"][0]["top"]
names = {t["class"]: t["label"] for t in top}
assert names[0] == "L" * 1500, len(names[0])
assert names[1] == "Trouser" and names[9] == "Ankle boot", names
PY
expect_error "predict --precision half" "--precision" "fp32" "mixed" \
  -- "$C" predict "$T/tiny.model" --weights "$T/straight.st" --precision half \
  "$T/a.pgm"
expect_error "predict: wrong image size" "big.pgm" "32x32" "1x28x28" "resize" \
  -- "$C" predict "$T/tiny.model" --weights "$T/straight.st" "$T/big.pgm"
expect_error "predict: broken PNG" "bad.png" \
  -- "$C" predict "$T/tiny.model" --weights "$T/straight.st" "$T/bad.png"
expect_error "predict: not an image" "not an IDX, PGM" \
  -- "$C" predict "$T/tiny.model" --weights "$T/straight.st" "$T/tiny.model"

# The embedding sample predicts what the command predicts.
"$E" "$T/tiny.model" "$T/straight.st" | tee "$T/embed.txt"
[ "$(wc -l <"$T/embed.txt")" = 8 ] || fail "embed_predict printed $(wc -l <"$T/embed.txt") lines"
"$C" predict "$T/tiny.model" --weights "$T/straight.st" --top 1 "$IDX" \
  --limit 8 | head -8 >"$T/pred8.txt"
for i in 0 1 2 3 4 5 6 7; do
  c=$(sed -n "$((i + 1))p" "$T/embed.txt" | sed 's/.*class \([0-9]*\).*/\1/')
  sed -n "$((i + 1))p" "$T/pred8.txt" | grep -q "class $c " ||
    fail "image $i: embed_predict says class $c, predict: $(sed -n "$((i + 1))p" "$T/pred8.txt")"
done
echo "ok: embed_predict agrees with cltrain predict"

# Ctrl-C (README "Stopping a run"), exit 130 either way. Once: the run
# ends when the epoch in progress has ended, saved as a last epoch, and
# `--resume` goes on from it as the uninterrupted run does (the same
# file). Twice: it ends after the batch in progress; that epoch is not
# saved. The first signal comes as the log gets its first epoch (the
# second epoch begins), the second once the first is told; where that
# epoch ended in between (rarely), the run ends after it, as it says.
I=("$T/tiny.model" --data fashion-mnist --train-limit 8000 --test-limit 500
  --batch 32 --log "$T/i.csv")
interrupt() { # COUNT: Ctrl-C COUNT times into `train` of 1000 epochs
  rm -f "$T/i.csv" "$T/i.st"
  "$C" train "${I[@]}" --epochs 1000 --save "$T/i.st" >"$T/out" 2>"$T/err" &
  local pid=$! i rc=0
  wait_rows "$T/i.csv" 1 "$pid"
  for i in $(seq "$1"); do
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 400); do
      [ "$(grep -c 'cltrain: interrupted' "$T/err")" -ge "$i" ] && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.01
    done
  done
  wait "$pid" || rc=$?
  [ "$rc" -eq 130 ] || fail "Ctrl-C x $1: exit $rc, not 130: $(cat "$T/err")"
  grep -qF "cltrain: interrupted: the run ends when this epoch has ended" \
    "$T/err" || fail "Ctrl-C x $1: not told: $(cat "$T/err")"
}
interrupt 1
rows=$(log_rows "$T/i.csv")
grep -qF "interrupted: stopped after epoch $rows of 1000" "$T/out" ||
  fail "Ctrl-C: $rows epochs logged, but: $(cat "$T/out")"
[ "$(ckpt_epoch "$T/i.st")" = "$rows" ] ||
  fail "Ctrl-C: the checkpoint holds epoch $(ckpt_epoch "$T/i.st"), not $rows"
"$C" train "${I[@]}" --epochs $((rows + 1)) --resume "$T/i.st" \
  --save "$T/i.st" --quiet >/dev/null
"$C" train "${I[@]}" --epochs $((rows + 1)) --save "$T/i2.st" --quiet \
  >/dev/null
cmp "$T/i.st" "$T/i2.st" || fail "Ctrl-C after epoch $rows, then --resume: differs from $((rows + 1)) epochs straight"
echo "ok: Ctrl-C ends the run after epoch $rows, saved; --resume to $((rows + 1)) == $((rows + 1)) epochs straight"
interrupt 2
rows=$(log_rows "$T/i.csv")
if grep -qF "interrupted: stopped during epoch $((rows + 1)) of 1000" \
  "$T/out"; then
  grep -qF "cltrain: interrupted again: stopping after this batch" \
    "$T/err" || fail "Ctrl-C twice: not told: $(cat "$T/err")"
  grep -qF "nothing saved to $T/i.st by this run" "$T/out" ||
    fail "Ctrl-C twice: $(cat "$T/out")"
  [ ! -e "$T/i.st" ] || fail "Ctrl-C twice: a checkpoint was written"
  echo "ok: Ctrl-C twice ends the run during epoch $((rows + 1)), nothing saved"
else
  grep -qF "interrupted: stopped after epoch $rows of 1000" "$T/out" ||
    fail "Ctrl-C twice: $(cat "$T/out")"
  echo "ok: Ctrl-C twice: the epoch ended before the second (epoch $rows, saved)"
fi

# Bad checkpoints: clear errors naming the file, nothing overwritten.
head -c 200 "$T/straight.st" >"$T/trunc.st"
expect_error "eval: truncated checkpoint" "trunc.st" \
  -- "$C" eval "$T/tiny.model" --weights "$T/trunc.st" --data fashion-mnist \
  --test-limit 10
cp "$T/straight.st" "$T/keep.st"
expect_error "resume: truncated checkpoint" "trunc.st" \
  -- "$C" train "${A[@]}" --epochs 4 --resume "$T/trunc.st" --save "$T/keep.st"
cmp "$T/straight.st" "$T/keep.st" || fail "a failed resume touched --save's file"
sed 's/units=16/units=12/' "$T/tiny.model" >"$T/other.model"
expect_error "init: shape mismatch" "'fc1.weight' has shape [16, 784]" \
  "expects [12, 784]" -- "$C" train "$T/other.model" --data fashion-mnist \
  --train-limit 100 --epochs 1 --init "$T/straight.st"
(echo "# a changed file"; cat "$T/tiny.model") >"$T/changed.model"
hash=$(sha256sum "$T/tiny.model" | cut -d' ' -f1)
hash2=$(sha256sum "$T/changed.model" | cut -d' ' -f1)
expect_error "resume: other model file" "$hash" "$hash2" \
  -- "$C" train "$T/changed.model" --data fashion-mnist --train-limit 100 \
  --epochs 5 --resume "$T/straight.st"
expect_error "resume: other optimizer" "adam" "sgd" \
  -- "$C" train "${A[@]}" --epochs 5 --optimizer sgd --resume "$T/straight.st"
# --init into the changed file works: weights only.
"$C" train "$T/changed.model" --data fashion-mnist --train-limit 100 \
  --test-limit 50 --epochs 1 --init "$T/straight.st" --quiet >/dev/null
echo "all cli checkpoint checks passed"
