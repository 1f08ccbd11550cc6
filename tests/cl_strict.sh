#!/usr/bin/env bash
# Every kernel program, as the runtime builds it (cl/prelude.cl in front of
# cl/NAME.cl), checked by clang as strict OpenCL C 1.2: the language
# NVIDIA's compiler takes, which refuses what POCL and rusticl accept as
# clang extensions (a variadic macro in the prelude broke every program on
# an H200 on 2026-11-26 while every CPU test passed). Clang's
# "-pedantic-errors" turns each such extension into an error. Each
# program is checked with the -D options the runtime passes
# (src/runtime/program.c), its round16 program too, and the tile programs
# in the configurations they are built in (fp32 and the fp16 route's
# emulated instruction: clang has no PTX `asm`).
#     cl_strict.sh CLANG CL_DIR
set -uo pipefail
clang=$1 dir=$2
base=(-x cl -cl-std=CL1.2 -fsyntax-only -pedantic-errors -Wno-unused-function
      -DCLT_LOCAL_MEM=49152 -DCLT_WG=256)
failed=0 checked=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { # NAME OPTION...
  local name=$1 src="$tmp/$1.cl"
  shift
  cat "$dir/prelude.cl" "$dir/$name.cl" >"$src"
  checked=$((checked + 1))
  if ! "$clang" "${base[@]}" "$@" "$src" 2>"$tmp/log"; then
    echo "FAIL cl/$name.cl with $*:"
    sed "s|$tmp/||" "$tmp/log" | head -20
    failed=$((failed + 1))
  fi
}
for f in "$dir"/*.cl; do
  name=$(basename "$f" .cl)
  # mma.cl is only built with its configuration's options (below).
  [ "$name" = prelude ] || [ "$name" = mma ] && continue
  for fp in "-DCLT_HAS_FP16=0 -DCLT_HAS_FP64=1" "-DCLT_HAS_FP16=1 -DCLT_HAS_FP64=0"; do
    # shellcheck disable=SC2086
    check "$name" $fp
  done
  # its round16 program (mixed precision's rounding variants)
  check "$name" -DCLT_HAS_FP16=0 -DCLT_HAS_FP64=1 -DCLT_ROUND16_PROGRAM=1
done
# The configurations of src/ops/conv_implicit.c and src/ops/gemm_mma.c.
plain=(-DCLT_HAS_FP16=0 -DCLT_HAS_FP64=1)
fp16=("${plain[@]}" -DCLT_MMA_PTX=0 -DCLT_MMA_ASM=0)
for c in "64 64 4 4" "16 64 2 4" "128 128 8 8"; do
  read -r bm bn tm tn <<<"$c"
  check igemm "${plain[@]}" -DIG_BM="$bm" -DIG_BN="$bn" -DIG_TM="$tm" -DIG_TN="$tn"
done
for c in "64 64 2 2" "128 64 2 2" "128 128 2 4"; do
  read -r bm bn wm wn <<<"$c"
  check igemm "${fp16[@]}" -DIG_BK=32 -DIG_BM="$bm" -DIG_BN="$bn" -DIG_WM="$wm" -DIG_WN="$wn"
  check mma "${fp16[@]}" -DMMA_BM="$bm" -DMMA_BN="$bn" -DMMA_WM="$wm" -DMMA_WN="$wn" -DMMA_STAGES=0 -DCLT_MMA_ASYNC=0
done
# The ring configurations (gemm_mma.c's with stages > 0; the stage count
# is cut to what fits the device's local memory, so 2 and 3 both occur).
for c in "64 128 2 2" "128 128 2 2" "128 128 2 4" "128 256 2 4"; do
  read -r bm bn wm wn <<<"$c"
  for stages in 2 3; do
    check mma "${fp16[@]}" -DMMA_BM="$bm" -DMMA_BN="$bn" -DMMA_WM="$wm" -DMMA_WN="$wn" -DMMA_STAGES="$stages" -DCLT_MMA_ASYNC=0
  done
done
# The warpgroup (wgmma) configurations: instruction width, k-block, depth,
# swizzle, blocks a multiprocessor.
for c in "64 128 128 32 4 1 1 0" "128 128 128 32 3 0 0 0" "128 128 64 16 6 1 1 2" "128 256 256 16 4 1 1 0" "64 128 128 64 2 0 1 0"; do
  read -r bm bn wn bk stages depth swizzle ctas <<<"$c"
  check mma "${fp16[@]}" -DMMA_BM="$bm" -DMMA_BN="$bn" -DMMA_WM=2 -DMMA_WN=2 -DMMA_STAGES="$stages" -DCLT_MMA_ASYNC=0 \
    -DMMA_WGMMA=1 -DMMA_WG_N="$wn" -DMMA_WG_BK="$bk" -DMMA_WG_DEPTH="$depth" -DMMA_WG_SWIZZLE="$swizzle" -DMMA_WG_CTAS="$ctas"
done
# 3xTF32 (k-blocks of tf32): the 32-byte swizzle, the 64-byte one, no
# swizzle, the widest instruction.
for c in "128 128 128 8 3 0 1" "64 128 128 16 2 0 1" "64 64 64 8 6 1 0" "128 256 256 8 2 0 1"; do
  read -r bm bn wn bk stages depth swizzle <<<"$c"
  check mma "${fp16[@]}" -DMMA_BM="$bm" -DMMA_BN="$bn" -DMMA_WM=2 -DMMA_WN=2 -DMMA_STAGES="$stages" -DCLT_MMA_ASYNC=0 \
    -DMMA_WGMMA=1 -DMMA_WG_N="$wn" -DMMA_WG_BK="$bk" -DMMA_WG_DEPTH="$depth" -DMMA_WG_SWIZZLE="$swizzle" -DMMA_WG_TF32=1
done
echo "cl_strict: $checked builds checked, $failed failed"
[ "$failed" = 0 ]
