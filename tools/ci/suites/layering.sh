#!/usr/bin/env bash
# One-way layering (tools/layering): the tree's includes and Bazel dependencies against the
# declared layer order, then the checker's own tests (each kind of planted violation must fail).
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
passed=0
failed=0

if /usr/bin/python3 tools/layering/check_layers.py; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

log="$(/usr/bin/python3 tools/layering/check_layers_test.py -v 2>&1)"
echo "$log"
ran=$(echo "$log" | sed -n 's/^Ran \([0-9]*\) tests\? .*/\1/p')
bad=$(echo "$log" | grep -cE ' \.\.\. (FAIL|ERROR)$')
if [ -z "$ran" ]; then
  failed=$((failed + 1))
else
  passed=$((passed + ran - bad))
  failed=$((failed + bad))
fi
echo "$passed $failed"
