#!/usr/bin/env bash
# Layers against PyTorch, end to end (tests/pytorch_layers.py): weights
# after a training step and predictions. Skipped, saying so, where no
# python3 has torch and numpy.
# Usage: pytorch_layers.sh CLTRAIN SCRIPT
set -euo pipefail
cltrain=$1 script=$2
source "$(dirname "$0")/torch_python.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$py" "$script" "$cltrain" "$dir"
