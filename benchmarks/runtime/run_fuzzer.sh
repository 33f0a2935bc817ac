#!/bin/sh
# The loader fuzzer's long run (the CI run is //runtime_minimal/fuzz:loader_fuzz_test).
# Builds the libFuzzer target with clang 14, ASan and coverage of the whole
# runtime, then fuzzes from the seed corpus for SECONDS (default 600).
# Usage: benchmarks/runtime/run_fuzzer.sh [SECONDS] [extra libFuzzer flags]
set -eu
seconds="${1:-600}"
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bazel build --jobs=2 --config=asan --copt=-fsanitize=fuzzer-no-link \
  //runtime_minimal/fuzz:loader_fuzzer //runtime_minimal/fuzz:seed_corpus
work=$(mktemp -d)
mkdir -p "$work/corpus"
cp bazel-bin/runtime_minimal/fuzz/corpus/*.agm "$work/corpus/"
chmod u+w "$work/corpus"/*
cd bazel-bin/runtime_minimal/fuzz/loader_fuzzer.runfiles/agate
"$root/bazel-bin/runtime_minimal/fuzz/loader_fuzzer" -max_total_time="$seconds" -max_len=65536 \
  -rss_limit_mb=4096 -print_final_stats=1 "$@" "$work/corpus"
echo "corpus grew to $(ls "$work/corpus" | wc -l) inputs in $work/corpus"
