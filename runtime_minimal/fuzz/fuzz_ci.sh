#!/bin/sh
# The fuzzer's short CI run: a few thousand inputs from the seed corpus.
# libFuzzer builds (clang: bazel test --config=asan) mutate with coverage
# feedback; gcc builds use the deterministic standalone driver. For the long run
# see benchmarks/runtime/run_fuzzer.sh.
set -eu
fuzzer="$1"
shift
corpus="${TEST_TMPDIR:-/tmp}/corpus"
mkdir -p "$corpus"
cp "$@" "$corpus/"
chmod u+w "$corpus"/*
"$fuzzer" -runs=3000 -seed=1 -max_len=65536 -rss_limit_mb=4096 "$corpus"
