#!/bin/sh
# Fails when libagate_runtime.so exports a symbol set other than the committed
# list: an accidental ABI change fails CI. To change the ABI on purpose, follow
# the growth rules in agate/runtime.h and update runtime_symbols.txt.
set -eu
lib="$1"
expected="$2"
actual="${TEST_TMPDIR:-/tmp}/actual_symbols.txt"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWi]$/ { print $3 }' | grep -v '^AGATE_RUNTIME_' | sort > "$actual"
if ! diff -u "$expected" "$actual"; then
  echo "libagate_runtime.so exports a different symbol list than c_api/runtime_symbols.txt (diff above)." >&2
  exit 1
fi
echo "exported symbols match ($(wc -l < "$actual") symbols)"
