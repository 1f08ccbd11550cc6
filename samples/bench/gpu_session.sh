#!/usr/bin/env bash
# Every GPU figure the open issues ask for, in one call on the GPU machine
# (an NVIDIA H100: see ../shared/tools/gpu-bundle, whose .gpu/ must travel
# with the tree). From the project's root there:
#     source .gpu/env && bash samples/bench/gpu_session.sh [PART...]
# PARTs (default: all, in the order check train mixed plans gemm mpi).
# Times seen on an H200 on 2026-11-26, the plans measured in the same
# call: check about 50 s (selftest's first run compiles every kernel, 19
# s), train about 130 s (a PyTorch run costs 8-12 s, most of it start-up),
# mixed about 90 s; the mpi part about 345 s with MPI_RUNS="mlp 256,cnn
# 64" (most of it the POCL rank's compile and plans; give it a call of
# its own). With DEADLINE=480 CMD_LIMIT=120 the
# first parts fit one call of 10 minutes, each part's log kept:
#   check  devices, selftest (the fp16 route's probe and kernel checks),
#          test_ops, test_layers, test_mixed on the GPU, and test_runtime's
#          error and profiling cases (the profiling clock's check)
#   gemm   bench gemm fp32 and --precision mixed to 4096, next to
#          torch_gemm.py (fp32 with TF32 off, fp16); test_gemm on the GPU
#   clbtune  (not in the default list: about 8 minutes, a call of its
#          own) CLBlast's own tuners on the GPU (needs
#          samples/bench/gpu_tuner_bundle.sh after gpu-bundle): Xgemm at
#          1024^3 and XgemmDirect at 256^3, their JSON files and output
#          and their best sets (clblast_sets.py) into $OUT and into $SETS
#          (.gpu/clblast_sets.txt), then tune --gemm --sets $SETS and bench
#          gemm to 4096. Fetch $OUT/clblast_sets.txt into .gpu/ here so that
#          a later call's `plans` takes the sets too.
#   plans  tune --gemm (CLBlast's parameter search, with --sets $SETS
#          where that file exists; stored: the parts after it run with its
#          choice; `gemm` before it shows CLBlast's database), then tune of
#          the CNN and the ResNet at batch 64 and of the wide ResNet at
#          batch 256, fp32 and mixed (the conv layouts: the implicit
#          GEMMs' ways, fp16 ones under mixed, against the unfolds)
#   train  bench train MLP, CNN, ResNet at batches 32, 64, 256 next to
#          torch_train.py --device cuda; real train epochs of the MLP
#          (b256; again with CLT_FIT_AHEAD=1 and CLT_PINNED=0, the fit
#          loop's two choices of 2026-12-04 apart; with CLT_FIT_AHEAD=4,
#          a deeper queue; with CLT_FIT_FLUSH=0, no flush after each
#          step; once more with --profile: the device's busy share and
#          the host's waits, then bench train of the same) and the CNN
#          (b64); CNN b64 and ResNet b256 with
#          --profile-by layer (each layer's passes apart)
#   infer  (not in the default list; about 2 minutes) inference: bench
#          infer of the MLP, CNN and ResNet at batches 1, 64 and 256 next
#          to torch_train.py --infer --device cuda (model.eval() under
#          torch.no_grad()), then the CNN and the ResNet at 64 with
#          --profile-by layer, then both ResNets at 256 in mixed
#          precision next to --infer --amp (autocast)
#   layers (not in the default list; about a minute) the layers of
#          2026-12-05 on the GPU: test_ops' depthwise and layernorm cases,
#          then tune of the separable sample (the depthwise layouts chosen:
#          a work-item per value, per 4 rows, or per 4 rows, eights: the
#          rows eight columns at a time, private row buffers of 1,024
#          floats a work-item, to be measured there) and bench train of it at 64 and
#          256 next to torch_train.py --model separable (Conv2d groups=C);
#          then the same for the MobileNet sample (stride-2 depthwise
#          layers) and for the ConvNeXt sample of 2026-12-06 (7x7
#          depthwise, layernorm over=channels, gelu with our own erf;
#          its tune shows which of the layer norms' three backward
#          layouts of 2026-12-07 the GPU takes: a pixel per item, runs
#          of 16, or runs of 16 with the parameter sums in one pass)
#          next to torch_train.py --model convnext, and test_ops'
#          activation cases (gelu_accuracy: our erf within 1e-6); and
#          (2026-12-06) test_ops' pool cases and test_infer's (global
#          pooling's own kernels; batch norms folded into depthwise
#          layers), bench infer of the separable sample at 64 and 256
#          next to torch_train.py --infer; the depthwise cases and tune
#          also show whether NVIDIA's compiler takes the rows kernels'
#          eight-column paths of 2026-12-06 (private arrays of 1,024 and
#          256 floats an item) and which layout tune chooses there now
#   mixed  the wide ResNet, bench train --precision mixed next to --amp,
#          and fp32 next to PyTorch fp32
#   ab     (not in the default list) this tree against an earlier
#          revision in one call (samples/bench/gpu_ab_bundle.sh REV after
#          gpu-bundle): tune tables compared (tune_compare.py), bench train
#          interleaved, PyTorch before and after; AB_MODEL (the wide
#          ResNet), AB_BATCH (256), AB_PRECISIONS ("mixed fp32"). About
#          200 s for the wide ResNet's two precisions on an H200.
#   wgmma  (not in the default list; about 180 s on an H200 before the
#          3xTF32 configurations, which add perhaps 40 s) the fp16 GEMM's
#          tile configurations and 3xTF32's (the fp32 ones on the same
#          instruction): selftest with the wgmma programs' PTX and build
#          logs kept (CLT_PTX_DUMP), PyTorch's fp32 (TF32 off) and fp16
#          matmul, bench gemm --precision mixed --all-tiles --profile on
#          the squares to 4096 (its 3xtf32 column against PyTorch fp32 is
#          issue 8's SGEMM target, its fp16 one issue 11's)
#   pack   (not in the default list; about 3 minutes on a fresh
#          machine, most of it compiling) issue 11's fp16 GEMM target
#          alone: the squares of 4096 (every tile configuration, with
#          the operands' packing apart in the profile) and 2048 between
#          two runs of PyTorch's matmul, then test_gemm's fp16 products
#          (every configuration, padded operands, and 3xTF32 on TN
#          16x9x200704, the k the fp32 plans found wrong) on the GPU
#   accuracy (not in the default list; about a minute) issue 11's
#          "mixed within 0.3 points of fp32" on the GPU, by the protocol
#          of the POCL figures (README, Mixed precision): the wide ResNet,
#          batch 32, 3 epochs of a cosine schedule on the first 30,000
#          images, seeds 5 and 7, fp32 then mixed
#   probe  (not in the default list; seconds) ptx_probe (see
#          samples/bench/ptx_probe.c): whether OpenCL reaches Hopper's
#          wgmma, by build options or by patching the program's PTX; needs
#          `cp build-gpu/ptx_probe .gpu/bin/` after gpu-bundle. With $OUT
#          set, the PTX before and after the patch comes back.
#   threads (not in the default list; about a minute) test_threads on the
#          GPU (contexts on three threads at once), then five runs on
#          that machine's POCL 5 with CLT_POCL_TURNS=0: none aborting on
#          `found->ref_count > 0' would be the first evidence that POCL 5
#          no longer needs the turns (README, "From C", Threads)
#   mpi    (issue 12) the GPU alone against one GPU rank plus one POCL
#          rank on the machine's CPU cores, MLP b256, CNN b64 and b256
#          (MPI_RUNS chooses);
#          needs .gpu/mpi (samples/bench/gpu_mpi_bundle.sh after
#          gpu-bundle): that machine has no MPI of its own
# Each part's output goes to stdout and to $OUT/PART.log where $OUT is set
# (the device tool brings $OUT back). Run it twice to see the stored plans
# at work (the first run measures them).
# Every command's wall time is printed after it ("- 12 s"). For a short
# lease: DEADLINE=S skips every command that would start S seconds or more
# after the script's start (printed as skipped), and CMD_LIMIT=S (default
# 300) ends any one command after S seconds, so that one slow command
# cannot take the whole call.
set -uo pipefail
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(check train mixed plans gemm mpi)
out=${OUT:-}
torch=(python3 samples/bench/torch_train.py --device cuda)
dev=(--device nvidia)
SETS=${SETS:-.gpu/clblast_sets.txt}

DEADLINE=${DEADLINE:-}
CMD_LIMIT=${CMD_LIMIT:-300}

# Line-buffered, so that a line printed before a crash is not lost in a
# pipe's buffer (NVIDIA's driver once crashed at every ResNet's exit).
run() {
  if [ -n "$DEADLINE" ] && [ "$SECONDS" -ge "$DEADLINE" ]; then
    echo "+ $* (skipped: past DEADLINE=$DEADLINE s)"
    return 0
  fi
  echo "+ $*"
  local start=$SECONDS rc=0
  timeout "$CMD_LIMIT" stdbuf -oL -eL "$@" || rc=$?
  [ "$rc" = 124 ] && echo "(ended after CMD_LIMIT=$CMD_LIMIT s)"
  echo "- $((SECONDS - start)) s, exit $rc"
  return "$rc"
}

part_check() {
  run cltrain devices
  run cltrain selftest "${dev[@]}"
  local t
  for t in test_ops test_layers test_mixed; do
    CLT_DEVICE=nvidia run "$t"
  done
  # Profiling there: whether the profiling clock runs (it should; rusticl
  # 22.3's does not), by the library's check and the test's own.
  CK_RUN_CASE=errors CLT_DEVICE=nvidia run test_runtime
}

part_threads() {
  CLT_DEVICE=nvidia run test_threads
  local i
  for i in 1 2 3 4 5; do
    CLT_POCL_TURNS=0 CLT_DEVICE=pocl run test_threads
  done
}

part_gemm() {
  run python3 samples/bench/torch_gemm.py --device cuda --sizes 1024 2048 4096
  run cltrain bench gemm "${dev[@]}" --max-size 4096 --precision mixed --all-tiles
  CLT_DEVICE=nvidia run test_gemm
}

# run_tuner DIR LIMIT LOG TUNER ARGS...: a CLBlast tuner in DIR (where it
# writes its JSON files) for at most LIMIT seconds, its output into
# DIR/LOG, its last lines shown.
run_tuner() {
  local dir=$1 limit=$2 log=$3
  shift 3
  echo "+ $*"
  (cd "$dir" && timeout "$limit" "$@" >"$log" 2>&1)
  # sed ends a last line that the limit cut off mid-way.
  tail -n 4 "$dir/$log" | sed '$a\'
}

part_clbtune() {
  if ! command -v clblast_tuner_xgemm >/dev/null; then
    echo "no clblast_tuner_xgemm: run samples/bench/gpu_tuner_bundle.sh after gpu-bundle"
    return 1
  fi
  # The tuners take platform and device indices: the NVIDIA device's, as
  # `cltrain devices` lists it (the same ICD loader and vendors).
  local id
  id=$(cltrain devices | grep -i nvidia | grep -o -m1 '[0-9][0-9]*:[0-9][0-9]*' | head -1)
  if [ -z "$id" ]; then
    echo "clbtune: no NVIDIA device in cltrain devices"
    return 1
  fi
  local dir=${out:-/tmp}/clbtune here=$PWD
  mkdir -p "$dir"
  local at=(-platform "${id%%:*}" -device "${id##*:}")
  # Each phase writes its JSON file when it ends; what they print (kept in
  # a log) has every configuration timed, so a phase cut off by the time
  # limit still counts (clblast_sets.py reads both).
  run_tuner "$dir" 330 xgemm.log "$here/.gpu/bin/clblast_tuner_xgemm" \
    "${at[@]}" -m 1024 -n 1024 -k 1024 -fraction 0.02 -runs 2
  run_tuner "$dir" 90 xgemm_direct.log \
    "$here/.gpu/bin/clblast_tuner_xgemm_direct" "${at[@]}" -m 256 -n 256 \
    -k 256 -fraction 0.1 -runs 2
  local files=("$dir"/xgemm.log "$dir"/xgemm_direct.log)
  shopt -s nullglob
  files+=("$dir"/clblast_xgemm*_32.json)
  shopt -u nullglob
  echo "+ clblast_sets.py --top 4 ${files[*]} > $SETS"
  python3 samples/bench/clblast_sets.py --top 4 "${files[@]}" >"$SETS" || return 1
  cat "$SETS"
  [ -n "$out" ] && cp "$SETS" "$out/clblast_sets.txt"
  run cltrain tune --gemm --sets "$SETS" "${dev[@]}"
  run cltrain bench gemm "${dev[@]}" --max-size 4096
}

part_plans() {
  if [ -s "$SETS" ]; then
    run cltrain tune --gemm --sets "$SETS" "${dev[@]}"
  else
    run cltrain tune --gemm "${dev[@]}"
  fi
  run cltrain bench gemm "${dev[@]}" --max-size 4096
  for model in cnn resnet; do
    for p in fp32 mixed; do
      run cltrain tune "samples/fashion_$model.model" --batch 64 --precision "$p" "${dev[@]}"
    done
  done
  for p in fp32 mixed; do
    run cltrain tune samples/fashion_resnet_wide.model --batch 256 --precision "$p" "${dev[@]}"
  done
}

part_train() {
  for model in mlp cnn resnet; do
    for b in 32 64 256; do
      run "${torch[@]}" --model "$model" --batch "$b" --steps 100
      run cltrain bench train "samples/fashion_$model.model" --batch "$b" --steps 100 "${dev[@]}"
    done
  done
  # Issue 8's "one train epoch vs bench train": real epochs, the loader in.
  run cltrain train samples/fashion_mlp.model --data fashion-mnist --batch 256 --epochs 3 "${dev[@]}"
  # The fit loop's two choices apart: one step ahead (as before
  # 2026-12-04's change), and the loader's ring in malloc'd memory.
  run env CLT_FIT_AHEAD=1 cltrain train samples/fashion_mlp.model --data fashion-mnist --batch 256 --epochs 3 "${dev[@]}"
  # Deeper: if 4 steps ahead beats 2 here, the depth becomes a measured
  # choice (issue 8's note of 2026-12-04), not a new constant.
  run env CLT_FIT_AHEAD=4 cltrain train samples/fashion_mlp.model --data fashion-mnist --batch 256 --epochs 3 "${dev[@]}"
  run env CLT_PINNED=0 cltrain train samples/fashion_mlp.model --data fashion-mnist --batch 256 --epochs 3 "${dev[@]}"
  # Without the clFlush after each step (bench train's loop has none).
  run env CLT_FIT_FLUSH=0 cltrain train samples/fashion_mlp.model --data fashion-mnist --batch 256 --epochs 3 "${dev[@]}"
  # Where the epoch's time goes: the device's busy share, the host's waits
  # for data and for the device, the device time by op (uploads included).
  run cltrain train samples/fashion_mlp.model --data fashion-mnist --batch 256 --epochs 3 --profile "${dev[@]}"
  # (1000 steps: 100 of this model take 15 ms on an H200.)
  run cltrain bench train samples/fashion_mlp.model --batch 256 --steps 1000 "${dev[@]}"
  run cltrain train samples/fashion_cnn.model --data fashion-mnist --batch 64 --epochs 2 "${dev[@]}"
  run cltrain bench train samples/fashion_cnn.model --batch 64 --steps 100 --profile-by layer "${dev[@]}"
  run cltrain bench train samples/fashion_resnet.model --batch 256 --steps 50 --profile-by layer "${dev[@]}"
}

part_infer() {
  local model b steps
  for model in mlp cnn resnet; do
    for b in 1 64 256; do
      steps=100
      [ "$b" = 1 ] && steps=1000
      run "${torch[@]}" --model "$model" --batch "$b" --steps "$steps" --infer
      run cltrain bench infer "samples/fashion_$model.model" --batch "$b" --steps "$steps" "${dev[@]}"
    done
  done
  run cltrain bench infer samples/fashion_cnn.model --batch 64 --steps 100 --profile-by layer "${dev[@]}"
  run cltrain bench infer samples/fashion_resnet.model --batch 64 --steps 100 --profile-by layer "${dev[@]}"
  # Mixed precision (batch norms folded in since 2026-12-04) against
  # PyTorch's autocast, the ResNets at 256.
  for model in resnet resnet_wide; do
    run "${torch[@]}" --model "$model" --batch 256 --steps 100 --infer --amp
    run cltrain bench infer "samples/fashion_$model.model" --batch 256 --steps 100 --precision mixed "${dev[@]}"
  done
}

part_layers() {
  CK_RUN_CASE=depthwise CLT_DEVICE=nvidia run test_ops
  CK_RUN_CASE=layernorm CLT_DEVICE=nvidia run test_ops
  CK_RUN_CASE=activation CLT_DEVICE=nvidia run test_ops
  CK_RUN_CASE=pool CLT_DEVICE=nvidia run test_ops
  CK_RUN_CASE="inference API" CLT_DEVICE=nvidia run test_infer
  local b m
  # inference with the batch norms folded into the depthwise layers
  # (2026-12-06), next to PyTorch's model.eval() under no_grad
  for b in 64 256; do
    run "${torch[@]}" --model separable --infer --batch "$b" --steps 50
    run cltrain bench infer samples/fashion_separable.model --batch "$b" --steps 50 --profile "${dev[@]}"
  done
  # (2026-12-06: the MobileNet sample's stride-2 depthwise layers)
  for m in separable mobilenet convnext; do
    run cltrain tune "samples/fashion_$m.model" --batch 64 "${dev[@]}"
    for b in 64 256; do
      run "${torch[@]}" --model "$m" --batch "$b" --steps 50
      run cltrain bench train "samples/fashion_$m.model" --batch "$b" --steps 50 --profile "${dev[@]}"
    done
  done
}

# The fp16 GEMM's tile configurations and 3xTF32's on their own (issue
# 11's and issue 8's GEMM targets): selftest (every configuration against the host; the rewritten
# wgmma programs' PTX and verbose build logs kept by CLT_PTX_DUMP, their
# register counts and the assembler's warnings summed up, and with $OUT
# the whole dump as $OUT/ptx_dump.tar.gz), PyTorch's matmul at 1024 to
# 4096, and bench gemm --all-tiles on the squares.
part_wgmma() {
  local dump=/tmp/clt-ptx-dump
  rm -rf "$dump"
  mkdir -p "$dump"
  CLT_PTX_DUMP=$dump run cltrain selftest "${dev[@]}"
  grep -h -i 'registers\|serializ\|warning' "$dump"/*.log 2>/dev/null |
    sort | uniq -c | head -40
  [ -n "$out" ] && tar -czf "$out/ptx_dump.tar.gz" -C "$dump" .
  run python3 samples/bench/torch_gemm.py --device cuda --sizes 1024 2048 4096
  run cltrain bench gemm "${dev[@]}" --max-size 4096 --precision mixed --only square --all-tiles --profile
}

part_pack() {
  local t=(python3 samples/bench/torch_gemm.py --device cuda --sizes 2048 4096)
  local g=(cltrain bench gemm "${dev[@]}" --precision mixed --max-size 4096 --profile)
  run "${t[@]}"
  run "${g[@]}" --only "square 4096" --all-tiles
  run "${g[@]}" --only "square 2048"
  run "${t[@]}"
  CK_RUN_CASE="fp16 products" CLT_DEVICE=nvidia run test_gemm
}

part_accuracy() {
  local seed p
  for seed in 5 7; do
    for p in fp32 mixed; do
      run cltrain train samples/fashion_resnet_wide.model --data fashion-mnist \
        --batch 32 --epochs 3 --schedule cosine --train-limit 30000 \
        --seed "$seed" --precision "$p" "${dev[@]}"
    done
  done
}

part_mixed() {
  for b in 256 64; do
    run "${torch[@]}" --model resnet_wide --batch "$b" --steps 50 --amp
    run cltrain bench train samples/fashion_resnet_wide.model --batch "$b" --steps 50 --precision mixed --profile-by layer "${dev[@]}"
    run "${torch[@]}" --model resnet_wide --batch "$b" --steps 50
    run cltrain bench train samples/fashion_resnet_wide.model --batch "$b" --steps 50 "${dev[@]}"
  done
}

# A/B: this tree's cltrain against .gpu/bin/cltrain-ab (an
# earlier revision, samples/bench/gpu_ab_bundle.sh REV), each with a cache
# of its own, in one call: tune of AB_MODEL at AB_BATCH for each precision
# of AB_PRECISIONS (their tables into $OUT/ab_tune_{this,rev}_P.txt, for
# tune_compare.py), then bench train this, rev, this, rev with --profile on
# the first pair, PyTorch (--amp for mixed) before and after.
part_ab() {
  if [ ! -x .gpu/bin/cltrain-ab ]; then
    echo "no .gpu/bin/cltrain-ab: run samples/bench/gpu_ab_bundle.sh REV after gpu-bundle"
    return 1
  fi
  local model=${AB_MODEL:-samples/fashion_resnet_wide.model}
  local b=${AB_BATCH:-256} tmodel p amp dir=${out:-/tmp}
  tmodel=$(basename "$model" .model)
  tmodel=${tmodel#fashion_}
  echo "rev: $(cat .gpu/ab_rev 2>/dev/null || echo unknown)"
  local this=(env CLT_CACHE_DIR=/tmp/clt-cache-this cltrain)
  local rev=(env CLT_CACHE_DIR=/tmp/clt-cache-rev cltrain-ab)
  for p in ${AB_PRECISIONS:-mixed fp32}; do
    amp=()
    [ "$p" = mixed ] && amp=(--amp)
    run sh -c 'exec "$@" >"$0"' "$dir/ab_tune_this_$p.txt" "${this[@]}" tune "$model" --batch "$b" --precision "$p" "${dev[@]}"
    run sh -c 'exec "$@" >"$0"' "$dir/ab_tune_rev_$p.txt" "${rev[@]}" tune "$model" --batch "$b" --precision "$p" "${dev[@]}"
    run python3 samples/bench/tune_compare.py "$dir/ab_tune_rev_$p.txt" "$dir/ab_tune_this_$p.txt" --changed
    run "${torch[@]}" --model "$tmodel" --batch "$b" --steps 50 "${amp[@]}"
    local round prof
    for round in 1 2; do
      prof=()
      [ "$round" = 1 ] && prof=(--profile)
      run "${this[@]}" bench train "$model" --batch "$b" --steps 50 --precision "$p" "${prof[@]}" "${dev[@]}"
      run "${rev[@]}" bench train "$model" --batch "$b" --steps 50 --precision "$p" "${prof[@]}" "${dev[@]}"
    done
    run "${torch[@]}" --model "$tmodel" --batch "$b" --steps 50 "${amp[@]}"
  done
}

part_mpi() {
  # shellcheck source=/dev/null
  [ -f .gpu/mpi/env ] && source .gpu/mpi/env
  if ! command -v mpirun >/dev/null; then
    echo "no mpirun: run samples/bench/gpu_mpi_bundle.sh after gpu-bundle"
    return 1
  fi
  # --bind-to none: with two ranks Open MPI binds each to one core, and
  # the POCL rank's 16 threads would share it (likely why, on 2026-11-26,
  # a GPU rank and a POCL rank had printed nothing after 75 s).
  local mr=(mpirun --oversubscribe --allow-run-as-root --bind-to none)
  # MPI_RUNS="mlp 256,cnn 64" picks the model/batch pairs (default all
  # three) when a lease is short.
  local mb model b m runs
  IFS=, read -r -a runs <<<"${MPI_RUNS:-mlp 256,cnn 64,cnn 256}"
  for mb in "${runs[@]}"; do
    read -r model b <<<"$mb"
    m=samples/fashion_$model.model
    # The CPU rank's first run compiles its kernels and measures its plans
    # (more than 90 s for the CNN on that machine's POCL): done here, apart.
    # (Its table goes to /dev/null: `run` prints the command and its time.)
    run sh -c 'exec "$@" >/dev/null' tune cltrain tune "$m" --batch "$b" --device pocl
    run cltrain bench train "$m" --batch "$b" --steps 50 "${dev[@]}"
    run "${mr[@]}" -np 1 cltrain bench train "$m" --batch "$b" --steps 50 \
      "${dev[@]}" : -np 1 cltrain bench train "$m" --batch "$b" --steps 50 \
      --device pocl
  done
}

part_probe() {
  if ! command -v ptx_probe >/dev/null; then
    echo "no ptx_probe: cp build-gpu/ptx_probe .gpu/bin/ after gpu-bundle"
    return 1
  fi
  run ptx_probe
}

status=0
for p in "${parts[@]}"; do
  if ! declare -F "part_$p" >/dev/null; then
    echo "gpu_session.sh: no part '$p' (check gemm clbtune plans train infer layers mixed mpi ab probe wgmma pack accuracy threads)" >&2
    exit 2
  fi
  echo "=== $p ($(date -u +%H:%M:%S))"
  if [ -n "$out" ]; then
    "part_$p" 2>&1 | tee "$out/$p.log" || status=1
  else
    "part_$p" || status=1
  fi
done
exit $status
