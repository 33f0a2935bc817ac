# The check helpers of the command-line tests (sourced by cli_test.sh and cli_cuda_test.sh).
# Each prints one "ok"/"FAIL" line and counts failures; the caller ends with `finish`.
# Expects TMP (a scratch folder) to be set.
failures=0
check() {  # check NAME EXPECTED_RC COMMAND...: COMMAND's stdout/stderr land in $TMP/out.txt, err.txt
  local name="$1" want="$2"
  shift 2
  "$@" >"$TMP/out.txt" 2>"$TMP/err.txt"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then
    echo "ok   $name"
  else
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/     /' "$TMP/out.txt" "$TMP/err.txt" | head -20
    failures=$((failures + 1))
  fi
}
expect() {  # expect NAME COMMAND...: ok when COMMAND succeeds (one if/else: no `a && b || c` chains,
            # whose `c` also runs when `b` fails and whose `b` hides a failing `a`)
  local name="$1"
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
no_file_like() {  # no_file_like DIR NAME: neither DIR/NAME nor a temporary DIR/NAME.tmp.* exists
  [ ! -e "$1/$2" ] && ! ls -a "$1" | grep -qF "$2.tmp"
}
expect_in() {  # expect_in NAME FILE TEXT
  if grep -q -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: '$3' not in output"; sed 's/^/     /' "$2" | head -20; failures=$((failures + 1)); fi
}
finish() {  # the summary line; the exit status is non-zero when any check failed
  echo "$failures failure(s)"
  [ "$failures" -eq 0 ]
}
