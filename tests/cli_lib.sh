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
