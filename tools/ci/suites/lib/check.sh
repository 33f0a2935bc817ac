# Sourced by the suites that run one command per check (dynamic_batch.sh, dynamic_sequence.sh):
# check NAME COMMAND... runs the command, prints "ok   NAME" or "FAIL NAME" with the tail of its
# output, and counts it in the caller's `passed` / `failed`; the caller sets WORK (a scratch folder).
check() {
  local name="$1"; shift
  if "$@" >"$WORK/check.log" 2>&1; then
    echo "ok   $name"; passed=$((passed + 1))
  else
    echo "FAIL $name"; tail -5 "$WORK/check.log"; failed=$((failed + 1))
  fi
}
