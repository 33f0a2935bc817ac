#!/usr/bin/env bash
# The whole test suite: every Bazel test target, then the language-binding and cross-target
# suites that live outside Bazel. Prints the time of each phase and ends with one line
# "N passed, N failed" summing every suite. Exit status: non-zero when anything failed.
#
# Called by `./agate test` (which installs the packages first) and so by .ci/run.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

PASSED=0
FAILED=0
LOG_DIR="${AGATE_TEST_LOG_DIR:-$ROOT/bazel-agate-test-logs}"
mkdir -p "$LOG_DIR"

phase_start() {
  PHASE_NAME="$1"
  PHASE_T0=$(date +%s)
  echo "== $PHASE_NAME"
}
phase_end() {
  echo "== $PHASE_NAME: $(( $(date +%s) - PHASE_T0 )) s"
}
# add_counts "<passed> <failed>"
add_counts() {
  local p f
  read -r p f <<<"$1"
  PASSED=$((PASSED + p))
  FAILED=$((FAILED + f))
}

T_START=$(date +%s)

phase_start "bazel test //..."
RUN_MARK="$LOG_DIR/bazel-run-mark"
touch "$RUN_MARK"
bazel test --keep_going --test_summary=short //... 2>&1 | tee "$LOG_DIR/bazel-test.log" | grep -vE "linux-sandbox|^\[|^Loading|^Analyzing|^INFO: From"
add_counts "$(/usr/bin/python3 tools/ci/count_bazel_tests.py "$LOG_DIR/bazel-test.log" "$RUN_MARK")"
phase_end

for suite in tools/ci/suites/*.sh; do
  [ -e "$suite" ] || continue
  phase_start "suite $(basename "$suite" .sh)"
  # Each suite prints its own log and, as its last line, "<passed> <failed>".
  out="$("$suite" 2>&1 | tee "$LOG_DIR/$(basename "$suite" .sh).log" | tail -n 1)"
  if [[ "$out" =~ ^[0-9]+\ [0-9]+$ ]]; then
    add_counts "$out"
    echo "   $(echo "$out" | awk '{print $1" passed, "$2" failed"}')"
  else
    echo "   suite did not report counts (last line: '$out'): counted as 1 failure; log in $LOG_DIR"
    add_counts "0 1"
  fi
  phase_end
done

echo "== total: $(( $(date +%s) - T_START )) s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
