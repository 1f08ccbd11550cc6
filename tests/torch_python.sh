# Sourced by the suites that compare with PyTorch (pytorch_interop.sh,
# pytorch_layers.sh): sets py to a python3 that has torch and numpy, or
# exits 77 (meson's "skipped"), saying so.
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
