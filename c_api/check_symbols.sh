#!/bin/sh
# Fails when a library (libagate_runtime.so, libagate_compiler.so) exports a symbol set
# other than its committed list: an accidental ABI change fails CI. To change an ABI on
# purpose, follow the growth rules in agate/runtime.h and update the list.
set -eu
lib="$1"
expected="$2"
actual="${TEST_TMPDIR:-/tmp}/actual_symbols.txt"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWi]$/ { print $3 }' | grep -v '^AGATE_RUNTIME_\|^AGATE_COMPILER_' | sort > "$actual"
if ! diff -u "$expected" "$actual"; then
  echo "$(basename "$lib") exports a different symbol list than $(basename "$expected") (diff above)." >&2
  exit 1
fi
echo "exported symbols match ($(wc -l < "$actual") symbols)"
