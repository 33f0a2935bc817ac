#!/bin/sh
# A fuzzer's short CI run: a few thousand inputs from the seed corpus.
# Usage: fuzz_ci.sh FUZZER [-flag=value ...] CORPUS_FILE... (flags after the fuzzer override
# the defaults below: libFuzzer takes the last of a repeated flag).
# libFuzzer builds (clang: bazel test --config=asan) mutate with coverage
# feedback; gcc builds use the deterministic standalone driver. For the long run
# see benchmarks/runtime/run_fuzzer.sh.
set -eu
fuzzer="$1"
shift
flags=""
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
  flags="$flags $1"
  shift
done
corpus="${TEST_TMPDIR:-/tmp}/corpus"
mkdir -p "$corpus"
cp "$@" "$corpus/"
chmod u+w "$corpus"/*
# shellcheck disable=SC2086
"$fuzzer" -runs=3000 -seed=1 -max_len=65536 -rss_limit_mb=4096 $flags "$corpus"
