#!/usr/bin/env bash
# Recurrent models end to end: a 2-layer LSTM tagger and a bidirectional GRU exported from PyTorch
# (tools/zoo/export_recurrent_models.py) at test time, compiled with ./agate for the host under every
# fusion policy, run in the minimal runtime and compared with PyTorch's outputs:
# |agate - pytorch| <= 1e-5 * (1 + |pytorch|) scaled by the output's magnitude (measured: 5e-7 for the
# tagger's log-probabilities, 6e-8 for the GRU).
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
models=(lstm_tagger gru_model)
passed=0
failed=0

if ! /usr/bin/python3 tools/zoo/export_recurrent_models.py --out "$WORK" "${models[@]}" >"$WORK/export.log" 2>&1; then
  echo "could not export the recurrent models"; tail -5 "$WORK/export.log"
  echo "0 1"
  exit 0
fi
bazel build --noshow_progress //tools/cli:agate >/dev/null 2>&1 || { echo "could not build the CLI"; echo "0 1"; exit 0; }
AGATE="$ROOT/bazel-bin/tools/cli/agate"
source tools/ci/suites/lib/compile_run_compare.sh
for model in "${models[@]}"; do
  for fusion in rule none all; do
    compile_run_compare "$model --fusion $fusion" "$WORK/$model.onnx" "$WORK/$model.inputs.npz" \
      "$WORK/$model.reference.npz" 1e-5 "$fusion"
  done
done
echo "$passed $failed"
