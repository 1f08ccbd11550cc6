#!/usr/bin/env bash
# A checkpoint of the sample CNN loads into the same network in PyTorch
# (strict load_state_dict) and gives the accuracy cltrain's eval gives,
# trained in fp32 and in mixed precision.
# Usage: pytorch_interop.sh CLTRAIN MODEL SCRIPT
set -euo pipefail
cltrain=$1 model=$2 script=$3
source "$(dirname "$0")/torch_python.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# fp32, and mixed precision (whose checkpoints hold the f32 master weights
# and the loss scaler's state under a '__' name). Plans off (the fixed
# defaults): measuring the CNN's convolutions at batch 32 twice took most
# of the test's 600 s on rusticl (9.7 minutes in all, 2026-12-06), and
# the plans are tested elsewhere (test_plans, cli_options).
export CLT_PLAN=off
for precision in fp32 mixed; do
  "$cltrain" train "$model" --data fashion-mnist --epochs 1 --train-limit 640 \
    --test-limit 100 --precision $precision --save "$dir/cnn.safetensors" --quiet
  # (--batch 32, train's.)
  ours=$("$cltrain" eval "$model" --weights "$dir/cnn.safetensors" \
    --data fashion-mnist --test-limit 100 --batch 32 | sed -n 's/.*accuracy \([0-9.]*\).*/\1/p' | head -1)
  theirs=$("$py" "$script" "$dir/cnn.safetensors" 100 | sed -n 's/.*images: \([0-9.]*\)$/\1/p')
  echo "$precision: cltrain eval accuracy $ours, PyTorch accuracy $theirs"
  [ -n "$ours" ] && [ "$ours" = "$theirs" ]
done
