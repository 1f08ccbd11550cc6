#!/usr/bin/env bash
# Adds CLBlast's own GEMM tuners (Debian's clblast-utils) to the GPU
# machine's bundle, for `gpu_session.sh clbtune`: they search hundreds of
# Xgemm and XgemmDirect configurations on the device, and their best go
# into `cltrain tune --gemm --sets` (issue 8: CLBlast has no tuning entry
# for Hopper). Run from the project's root after ../shared/tools/gpu-bundle:
#     ../shared/tools/gpu-bundle && bash samples/bench/gpu_tuner_bundle.sh
# The tuners link only the OpenCL ICD loader (in .gpu/lib) and the C++
# runtime, which that machine has.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -d .gpu/bin ] || {
  echo "gpu_tuner_bundle.sh: no .gpu/bin: run ../shared/tools/gpu-bundle first" >&2
  exit 1
}
for t in clblast_tuner_xgemm clblast_tuner_xgemm_direct; do
  path=$(command -v "$t") || {
    echo "gpu_tuner_bundle.sh: no $t (apt-get install clblast-utils)" >&2
    exit 1
  }
  cp "$path" .gpu/bin/
done
du -sh .gpu | awk '{print ".gpu holds " $1 " (at most 64 MiB may travel with the tree)"}'
