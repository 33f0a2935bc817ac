#!/bin/sh
# A fuzzer's long run (the CI smoke runs are the *_fuzz_test targets beside each fuzzer).
# Builds the libFuzzer target with clang 14, ASan and coverage of everything it links,
# then fuzzes from its seed corpus for SECONDS (default 600) with the allocation cap below.
# Usage: benchmarks/runtime/run_fuzzer.sh [loader|importer|npz|compiler|compiler_c] [SECONDS] [extra libFuzzer flags]
#   loader    the module loader (runtime_minimal/fuzz), the default
#   importer  the ONNX importer: protobuf bytes and structured edits of valid models
#   npz       the .npz/.npy reader (tools/npz)
#   compiler  the compiler C ABI: load an ONNX model from memory and compile it (LLVM, host)
#   compiler_c  the same, compiling for the portable C target (no LLVM; many more inputs per second)
set -eu
name=loader
case "${1:-}" in loader|importer|npz|compiler|compiler_c) name="$1"; shift ;; esac
seconds="${1:-600}"
[ $# -gt 0 ] && shift
case "$name" in
  loader) package=runtime_minimal/fuzz; corpus="$package/corpus"; limit=4096 ;;
  importer) package=frontends/onnx/fuzz; corpus="$package/corpus"; limit=1024 ;;
  npz) package=tools/npz/fuzz; corpus="$package/corpus tools/npz/testdata"; limit=256 ;;
  compiler|compiler_c) package=c_api/fuzz; corpus="frontends/onnx/fuzz/corpus c_api/fuzz/regressions"; limit=2048 ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
corpus_target="//$package:seed_corpus"
case "$name" in compiler*) corpus_target=//frontends/onnx/fuzz:seed_corpus ;; esac
bazel build --jobs=2 --config=asan --copt=-fsanitize=fuzzer-no-link "//$package:${name}_fuzzer" "$corpus_target"
work=$(mktemp -d)
mkdir -p "$work/corpus"
for dir in $corpus; do
  if [ -d "bazel-bin/$dir" ]; then cp bazel-bin/"$dir"/* "$work/corpus/"; else cp "$dir"/* "$work/corpus/"; fi
done
chmod u+w "$work/corpus"/*
# A private copy of the binary: a later build (another config of the same targets) cannot
# replace it under a long run.
cp "bazel-bin/$package/${name}_fuzzer" "$work/${name}_fuzzer"
cd "bazel-bin/$package/${name}_fuzzer.runfiles/agate"
# ASan's 256 MiB default quarantine made every input touch fresh pages (page faults and
# ASan's malloc fill were over half the time): each input is independent and frees far less
# than 16 MiB, so a 16 MiB quarantine still holds every freed chunk of the execution that
# freed it, and use-after-free within an input is still reported. Twice the executions per
# CPU second (npz 4,050 -> 8,600; importer 780 -> 1,500). A caller's ASAN_OPTIONS win (later).
export ASAN_OPTIONS="quarantine_size_mb=16:${ASAN_OPTIONS:-}"
# -malloc_limit_mb: a single allocation above the cap is a crash; -rss_limit_mb: the process's total.
"$work/${name}_fuzzer" -max_total_time="$seconds" -max_len=65536 \
  -rss_limit_mb=$((limit * 2)) -malloc_limit_mb="$limit" -print_final_stats=1 "$@" "$work/corpus"
echo "corpus grew to $(ls "$work/corpus" | wc -l) inputs in $work/corpus"
