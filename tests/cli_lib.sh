# Helpers of the tests/cli_*.sh scripts, sourced once each script has made
# its temporary folder $T (they write $T/out and $T/err).

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_exit CODE WHAT NEEDLE... -- COMMAND...: COMMAND exits with CODE
# within $EXPECT_TIMEOUT seconds (20), and every NEEDLE is in its stderr
# (in its stdout for exit 0).
expect_exit() { expect_run "$@"; }

# expect_error WHAT NEEDLE... -- COMMAND...: COMMAND fails (any non-zero
# exit) with every NEEDLE in its stderr.
expect_error() { expect_run any "$@"; }

# The two above: CODE "any" is any non-zero exit, with no time limit.
expect_run() {
  local code=$1 what=$2
  shift 2
  local needles=()
  while [ "$1" != "--" ]; do
    needles+=("$1")
    shift
  done
  shift
  local rc=0 where="$T/err"
  if [ "$code" = any ]; then
    "$@" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" -ne 0 ] || fail "$what: succeeded"
  else
    timeout "${EXPECT_TIMEOUT:-20}" "$@" >"$T/out" 2>"$T/err" || rc=$?
    [ "$rc" -eq "$code" ] || fail "$what: exit $rc, not $code: $(cat "$T/err")"
    [ "$code" -eq 0 ] && where="$T/out"
  fi
  for n in "${needles[@]}"; do
    grep -qF -- "$n" "$where" || fail "$what: '$n' not in: $(cat "$where")"
  done
  echo "ok: $what: $(head -c 300 "$T/err")"
}

# The epochs a `train --log` CSV file holds (0 where there is none yet).
log_rows() {
  local n
  n=$(grep -c '^[0-9]' "$1" 2>/dev/null || true)
  echo "${n:-0}"
}

# wait_rows CSV N PID: until the log CSV holds N epochs or PID has ended
# (at most about two minutes), looking every 10 ms.
wait_rows() {
  for _ in $(seq 12000); do
    [ "$(log_rows "$1")" -ge "$2" ] && return 0
    kill -0 "$3" 2>/dev/null || return 0
    sleep 0.01
  done
}

# The epoch a checkpoint (safetensors) says it was saved after.
ckpt_epoch() {
  python3 -c 'import json, struct, sys
f = open(sys.argv[1], "rb")
n = struct.unpack("<Q", f.read(8))[0]
print(json.loads(f.read(n))["__metadata__"]["epoch"])' "$1"
}
