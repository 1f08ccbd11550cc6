#!/bin/bash
# Runs every libFuzzer harness for a bounded time; fails on any crash,
# leak, timeout or out-of-memory, leaving the input that caused it under
# tests/fuzz_regressions/<harness>/ (commit it: `meson test` replays it
# from then on, in every build).
#
#   CC=clang meson setup build-fuzz -Dfuzz=true
#   fuzz/run.sh build-fuzz [SECONDS_EACH] [HARNESS...]
#
# SECONDS_EACH defaults to 60; the harnesses to all of them.
set -u
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS_EACH] [HARNESS...]" >&2
  exit 2
fi
build=$1
secs=${2:-60}
shift $(($# >= 2 ? 2 : 1))
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(safetensors idx model_file image csv)
root=$(cd "$(dirname "$0")/.." && pwd)

targets=()
for h in "${harnesses[@]}"; do targets+=("fuzz/fuzz_$h"); done
if ! ninja -C "$build" "${targets[@]}"; then
  echo "fuzz/run.sh: cannot build the harnesses; configure with:" >&2
  echo "  CC=clang meson setup $build -Dfuzz=true" >&2
  exit 2
fi

status=0
for h in "${harnesses[@]}"; do
  artifacts="$root/tests/fuzz_regressions/$h"
  mkdir -p "$artifacts"
  work=$(mktemp -d)
  before=$(ls -A "$artifacts" | wc -l)
  echo "== fuzz_$h for ${secs}s"
  # The first folder collects new inputs (thrown away); the seed corpus is
  # only read. Artifacts (crash-*, leak-*, timeout-*, oom-*) go to the
  # regression folder.
  "$build/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "$root/fuzz/corpus/$h" \
    >"$work.log" 2>&1
  rc=$?
  tail -n 12 "$work.log"
  after=$(ls -A "$artifacts" | wc -l)
  if [ $rc -ne 0 ] || [ "$after" -ne "$before" ]; then
    echo "fuzz_$h FAILED (exit $rc): new inputs in $artifacts:" >&2
    ls -t "$artifacts" | head -n $((after - before)) >&2
    grep -m 20 -E "ERROR|SUMMARY|broken promise|==[0-9]+==" "$work.log" >&2
    status=1
  else
    echo "fuzz_$h: no crash in ${secs}s"
  fi
  rm -rf "$work" "$work.log"
done
exit $status
