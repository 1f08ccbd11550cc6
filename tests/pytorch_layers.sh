#!/usr/bin/env bash
# Layers against PyTorch, end to end (tests/pytorch_layers.py): weights
# after a training step and predictions. Skipped, saying so, where no
# python3 has torch and numpy.
# Usage: pytorch_layers.sh CLTRAIN SCRIPT
set -euo pipefail
cltrain=$1 script=$2
py=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null &&
     "$candidate" -c 'import torch, numpy' 2>/dev/null; then
    py=$candidate
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with torch and numpy (Debian: apt-get install python3-torch)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$py" "$script" "$cltrain" "$dir"
