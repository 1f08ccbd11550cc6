#!/bin/bash
# The command under bad values and hostile conditions, as a new user meets
# them: empty and overflowing option values, a cache folder that is a file
# or that POCL cannot create, four runs at once on one empty kernel cache,
# kill -9 while checkpoints are written, and a checkpoint saved onto a full
# disk. Every bad value is an error naming its option, exit 2, before any
# work starts; nothing is ever lost or left half-written.
# usage: cli_robustness.sh CLTRAIN
set -euo pipefail
C=$1
T=$(mktemp -d /tmp/clt_robust_XXXXXX)
trap 'rm -rf "$T"' EXIT
# shellcheck source=cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
EXPECT_TIMEOUT=10

cat >"$T/tiny.model" <<'EOF'
input shape=1x28x28
flatten
dense name=fc1 units=16
relu
dense name=fc2 units=10
softmax_cross_entropy
EOF
M="$T/tiny.model"
D=(--data fashion-mnist)

# --- values the command line must refuse --------------------------------
big=999999999999999999999 # past int64
expect_exit 2 "empty --device" "--device" "empty" -- \
  "$C" train "$M" "${D[@]}" --device ''
expect_exit 2 "empty --device=" "--device" "empty" -- \
  "$C" selftest --device=
expect_exit 2 "empty --device (bench)" "--device" "empty" -- \
  "$C" bench train "$M" --device ''
for opt in --train-limit --test-limit --batch --epochs --save-every --seed \
  --pad-crop --step-epochs; do
  expect_exit 2 "$opt $big" "$opt" "$big" -- \
    "$C" train "$M" "${D[@]}" --save "$T/x.st" "$opt" "$big"
done
expect_exit 2 "--epochs past int" "--epochs" -- \
  "$C" train "$M" "${D[@]}" --epochs 4294967297
expect_exit 2 "--steps $big" "--steps" -- "$C" bench train "$M" --steps $big
expect_exit 2 "--batch past int (bench)" "--batch" -- \
  "$C" bench train "$M" --batch 2147483648
expect_exit 2 "--test-limit $big (eval)" "--test-limit" -- \
  "$C" eval "$M" --weights "$T/none.st" "${D[@]}" --test-limit $big
expect_exit 2 "--top $big (predict)" "--top" -- \
  "$C" predict "$M" --weights "$T/none.st" --top $big "$T/none.pgm"
expect_exit 2 "--lr 1e999" "--lr" -- "$C" train "$M" "${D[@]}" --lr 1e999
expect_exit 2 "--batch 12abc" "--batch" "12abc" -- \
  "$C" train "$M" "${D[@]}" --batch 12abc
expect_exit 2 "--batch ' 12'" "--batch" -- \
  "$C" train "$M" "${D[@]}" --batch ' 12'

# Output paths that cannot be written fail at once, not after training.
expect_exit 2 "--save into a missing folder" "--save" "$T/missing" -- \
  "$C" train "$M" "${D[@]}" --save "$T/missing/ck.st"
expect_exit 2 "--plot onto a folder" "--plot" "folder" -- \
  "$C" train "$M" "${D[@]}" --plot "$T"
expect_exit 2 "--log under a file" "--log" "$T/tiny.model" -- \
  "$C" train "$M" "${D[@]}" --log "$T/tiny.model/x.csv"

# --- cache folders -------------------------------------------------------
# POCL offers no device when it cannot create its cache folder; the message
# must say so and how to point it elsewhere (only where POCL is the one
# platform with devices: a GPU machine still has its GPU).
touch "$T/homefile"
rc=0
env -u RUSTICL_ENABLE -u POCL_CACHE_DIR -u XDG_CACHE_HOME -u CLT_CACHE_DIR \
  HOME="$T/homefile" "$C" devices >"$T/out" 2>"$T/err" || rc=$?
if [ "$rc" -eq 0 ]; then
  echo "skip: a device other than POCL's is present, so the no-device" \
    "message cannot be provoked here"
else
  for n in "no device" "POCL cannot create its kernel cache folder" \
    "$T/homefile is not a folder" POCL_CACHE_DIR CLT_CACHE_DIR; do
    grep -qF -- "$n" "$T/err" || fail "no-device hint: '$n' not in: $(cat "$T/err")"
  done
  echo "ok: POCL without a cache folder: $(head -c 300 "$T/err")"
fi

# Our own cache folder is a file: training still works, with one warning
# that says why nothing is cached and what to do.
CLT_CACHE_DIR="$T/homefile" "$C" train "$M" "${D[@]}" --epochs 1 \
  --train-limit 64 --test-limit 64 --quiet >"$T/out" 2>"$T/err" ||
  fail "CLT_CACHE_DIR as a file: training failed: $(cat "$T/err")"
[ "$(grep -c "warning: kernel cache" "$T/err")" -eq 1 ] ||
  fail "CLT_CACHE_DIR as a file: expected one warning, got: $(cat "$T/err")"
grep -qF CLT_CACHE_DIR "$T/err" || fail "warning does not name CLT_CACHE_DIR"
echo "ok: CLT_CACHE_DIR as a file: $(head -c 200 "$T/err")"

# POCL's work-group specialization: the command turns it off (POCL then
# compiles one generic work-group function per kernel instead of one more
# per launch size: a first run takes half the time), unless the user has
# set POCL_WORK_GROUP_SPECIALIZATION, which it then keeps. Seen in POCL's
# own cache folder: generic functions sit in folders named "0-0-0",
# specialized ones in folders named by their sizes ("64-1-1-goffs0",
# "4-4-1-goffs0-smallgrid"). Our kernel cache is off (CLT_CACHE=0) so that
# POCL compiles only what runs.
# Under the sanitizers (ASAN_OPTIONS set, as CI's ASan stage sets it) the
# two runs keep ASan's checks for bad accesses but take its fast unwinder
# and no leak check: POCL compiles every kernel afresh here, in its own
# LLVM, and the slow unwinder CI asks for (which the suppressions of POCL's
# leaks need) walks the stack at each of its allocations: 220 s a run
# against 33 s. What they check is POCL's cache folder; the same command's
# leaks are checked by cli_options' bench train, on POCL's warm cache.
fresh_pocl=()
if [ -n "${ASAN_OPTIONS:-}" ]; then
  fresh_pocl=("ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=1:detect_leaks=0")
fi
if "$C" devices 2>/dev/null | grep -q "Portable Computing Language"; then
  env -u POCL_WORK_GROUP_SPECIALIZATION "${fresh_pocl[@]}" \
    POCL_CACHE_DIR="$T/pocl-generic" \
    CLT_CACHE=0 "$C" bench train "$M" --device pocl --batch 8 --steps 1 \
    >"$T/out" 2>&1 || fail "bench train for POCL's cache failed: $(cat "$T/out")"
  env "${fresh_pocl[@]}" POCL_WORK_GROUP_SPECIALIZATION=1 \
    POCL_CACHE_DIR="$T/pocl-special" \
    CLT_CACHE=0 "$C" bench train "$M" --device pocl --batch 8 --steps 1 \
    >"$T/out" 2>&1 || fail "bench train for POCL's cache failed: $(cat "$T/out")"
  count_so() { find "$T/$1" -name '*.so' "${@:2}" | wc -l; }
  generic=$(count_so pocl-generic -path '*/0-0-0/*')
  special=$(count_so pocl-generic ! -path '*/0-0-0/*')
  [ "$generic" -gt 0 ] && [ "$special" -eq 0 ] ||
    fail "POCL compiled $generic generic and $special specialized work-group functions for the command (want some and none)"
  kept=$(count_so pocl-special ! -path '*/0-0-0/*')
  [ "$kept" -gt 0 ] ||
    fail "POCL_WORK_GROUP_SPECIALIZATION=1 was not kept: no specialized work-group functions in POCL's cache"
  echo "ok: POCL work-group functions: $generic generic and none specialized by default; $kept specialized with POCL_WORK_GROUP_SPECIALIZATION=1"
else
  echo "skip: no POCL device here, so POCL's work-group specialization cannot be seen"
fi

# Four runs at once on one empty cache folder: all succeed, and the folder
# ends with whole entries only: kernel binaries that all load (programs
# are built on first use, and which ones a run uses follows its plans, so
# the count is compared once `selftest` has built every program in both
# folders), and a plan for each product (a run that switched our own
# kernels or some ways off, as one timed among three others may, stores
# its plans apart from complete ones: up to two a product).
mkdir "$T/cache" "$T/cache1"
CLT_CACHE_DIR="$T/cache1" "$C" train "$M" "${D[@]}" --epochs 1 \
  --train-limit 64 --test-limit 64 --quiet >/dev/null
pids=()
for i in 1 2 3 4; do
  CLT_CACHE_DIR="$T/cache" "$C" train "$M" "${D[@]}" --epochs 1 \
    --train-limit 64 --test-limit 64 --quiet >"$T/c$i.out" 2>"$T/c$i.err" &
  pids+=($!)
done
for i in 0 1 2 3; do
  wait "${pids[$i]}" || fail "concurrent run $((i + 1)) failed: $(cat "$T/c$((i + 1)).err")"
done
[ -z "$(find "$T/cache" -type f ! -name '*.clbin')" ] ||
  fail "temporary files left in the cache: $(ls "$T/cache")"
entries=$(find "$T/cache" -maxdepth 1 -name '*.clbin' | wc -l)
[ "$entries" -gt 0 ] || fail "four runs at once left no kernel cache entries"
for dir in cache cache1; do
  CLT_CACHE_DIR="$T/$dir" "$C" selftest >"$T/$dir.selftest" 2>&1 ||
    fail "selftest on the $dir folder failed: $(cat "$T/$dir.selftest")"
done
grep -q ", 0 cache entries rebuilt)" "$T/cache.selftest" ||
  fail "entries left by four runs at once were rebuilt: $(grep '^kernels:' "$T/cache.selftest")"
entries=$(find "$T/cache" -maxdepth 1 -name '*.clbin' | wc -l)
alone=$(find "$T/cache1" -maxdepth 1 -name '*.clbin' | wc -l)
[ "$entries" -eq "$alone" ] ||
  fail "four runs at once and selftest left $entries kernel cache entries, one run alone and selftest $alone"
plans=$(find "$T/cache/plans" -name '*.clbin' | wc -l)
plans1=$(find "$T/cache1/plans" -name '*.clbin' | wc -l)
[ "$plans1" -gt 0 ] && [ "$plans" -ge "$plans1" ] &&
  [ "$plans" -le $((2 * plans1)) ] ||
  fail "four runs at once left $plans plans, one run alone $plans1"
echo "ok: four runs at once on one empty cache: $entries kernel entries, $plans plans ($plans1 alone), no temporaries"

# --- kill -9 while checkpoints are written -------------------------------
# Each kill leaves either no checkpoint yet or a whole one that loads. The
# new file has a name only between its linkat and its rename (O_TMPFILE);
# a kill that lands there leaves that one temporary, which the next save
# of the same path removes.
for delay in 0.4 0.8 1.2 1.6 2.0; do
  rm -f "$T/k/"* 2>/dev/null || true
  mkdir -p "$T/k"
  "$C" train "$M" "${D[@]}" --epochs 1000 --train-limit 256 --test-limit 64 \
    --batch 32 --save "$T/k/ck.st" --save-every 1 --quiet \
    >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  leftovers=$(find "$T/k" -type f ! -name ck.st)
  if [ -n "$leftovers" ]; then
    [ "$leftovers" = "$(find "$T/k" -type f -name "ck.st.tmp-$pid-*")" ] ||
      fail "kill -9 after ${delay}s left: $leftovers"
    "$C" train "$M" "${D[@]}" --epochs 1 --train-limit 64 --test-limit 64 \
      --batch 32 --save "$T/k/ck.st" --quiet >/dev/null 2>"$T/err" ||
      fail "the save after kill -9 at ${delay}s failed: $(cat "$T/err")"
    [ -z "$(find "$T/k" -type f ! -name ck.st)" ] ||
      fail "the next save left the killed run's temporary: $leftovers"
    echo "ok: kill -9 after ${delay}s: killed while renaming; the next save removed its temporary"
  fi
  if [ -f "$T/k/ck.st" ]; then
    "$C" eval "$M" --weights "$T/k/ck.st" "${D[@]}" --test-limit 64 \
      >"$T/out" 2>"$T/err" ||
      fail "checkpoint after kill -9 at ${delay}s does not load: $(cat "$T/err")"
    echo "ok: kill -9 after ${delay}s: checkpoint loads"
  else
    echo "ok: kill -9 after ${delay}s: no checkpoint yet, nothing left behind"
  fi
done

# --- a checkpoint saved onto a full disk ---------------------------------
# A small tmpfs in a private mount namespace (root only; gone when the
# subshell ends): the save fails with the system's reason and the
# checkpoint saved before stays byte for byte.
full_disk_check() {
  set -euo pipefail
  local dir=$T/full
  mkdir -p "$dir"
  mount -t tmpfs -o size=512k tmpfs "$dir"
  "$C" train "$M" "${D[@]}" --epochs 1 --train-limit 64 --test-limit 64 \
    --quiet --save "$dir/ck.st" >/dev/null
  cp "$dir/ck.st" "$T/ck.copy"
  # Fill what is left.
  dd if=/dev/zero of="$dir/filler" bs=4k 2>/dev/null || true
  local rc=0
  "$C" train "$M" "${D[@]}" --epochs 1 --train-limit 64 --test-limit 64 \
    --quiet --seed 2 --save "$dir/ck.st" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "save onto a full disk succeeded"
  grep -qF "No space left on device" "$T/err" ||
    fail "full disk: no 'No space left on device' in: $(cat "$T/err")"
  cmp "$dir/ck.st" "$T/ck.copy" || fail "full disk: the old checkpoint changed"
  [ -z "$(find "$dir" -type f ! -name ck.st ! -name filler)" ] ||
    fail "full disk: temporary file left: $(ls "$dir")"
  echo "ok: save onto a full disk: $(head -c 200 "$T/err"); old checkpoint intact"
}
if [ "$(id -u)" -ne 0 ]; then
  echo "skip: the full-disk check mounts a small tmpfs, which needs root"
elif ! unshare -m true 2>/dev/null; then
  echo "skip: no private mount namespace here (unshare -m), so no tmpfs to fill"
else
  export -f full_disk_check fail
  export C M T
  unshare -m bash -c "D=(--data fashion-mnist); full_disk_check" ||
    fail "full-disk check"
fi
echo "all robustness checks passed"
