#!/usr/bin/env bash
# What one call on the GPU machine runs (issue 12), from the repository root there:
#   benchmarks/cuda/device_run.sh CARRY [conformance] [models] [sanitize] [-- run_on_gpu.py flags]
# Every step bounds its own runs (a kernel that never ends is a failure, not a hung call).
# CARRY holds agate-runtime, lib/ (its libzip and libsodium), conf.tar.xz (run_conformance
# --cuda-export's folder) and models.tar.xz (benchmarks/cuda/prepare.py's). Results go to $OUT:
# conf_results.tar.xz (outputs and errors, for run_conformance --gpu-results), results.json,
# profiles.txt and sanitizer.txt.
set -u
CARRY="$1"; shift
STEPS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do STEPS+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$CARRY/lib:${LD_LIBRARY_PATH:-}"
RUNTIME="$(pwd)/$CARRY/agate-runtime"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
"$RUNTIME" version
has() { for s in "${STEPS[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
if has conformance; then
  mkdir -p /tmp/conf && tar -C /tmp/conf -xJf "$CARRY/conf.tar.xz"
  start=$(date +%s)
  tests/onnx_conformance/run_on_gpu.sh "$RUNTIME" /tmp/conf 32
  echo "conformance: $(( $(date +%s) - start )) s"
  (cd /tmp/conf && find . -name '*.outputs.npz' -o -name '*.gpu_error' | tar -cJf "$OUT/conf_results.tar.xz" -T -)
  grep -h . /tmp/conf/*.gpu_error 2>/dev/null | sed 's/.*CUDA_ERROR/CUDA_ERROR/' | cut -c1-160 | sort | uniq -c | sort -rn | head -20
fi
if has models || has sanitize; then
  mkdir -p /tmp/m && tar -C /tmp/m -xJf "$CARRY/models.tar.xz"
fi
if has sanitize; then
  # SANITIZE="tool:module ..." (default: memcheck and racecheck of every module), each run at most 120 s.
  for job in ${SANITIZE:-$(for m in /tmp/m/*.agm; do echo memcheck:$(basename $m) racecheck:$(basename $m); done)}; do
    tool="${job%%:*}"; m="/tmp/m/${job#*:}"; stem="${m%.*.agm}"
    echo "== $tool $(basename "$m")" >>"$OUT/sanitizer.txt"
    timeout 120 compute-sanitizer --tool "$tool" --print-limit 20 "$RUNTIME" run "$m" --inputs "$stem.inputs.npz" \
      >>"$OUT/sanitizer.txt" 2>&1
    echo "exit $?" >>"$OUT/sanitizer.txt"
  done
  grep -E "^== |ERROR SUMMARY|RACECHECK SUMMARY|^exit" "$OUT/sanitizer.txt"
fi
if has models; then
  PYTHONUNBUFFERED=1 python3 benchmarks/cuda/run_on_gpu.py --runtime "$RUNTIME" --dir /tmp/m --out "$OUT" "$@"
fi
