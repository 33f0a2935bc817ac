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
for model in "${models[@]}"; do
  for fusion in rule none all; do
    name="$model --fusion $fusion"
    if ! "$AGATE" compile "$WORK/$model.onnx" -o "$WORK/$model.agm" --fusion "$fusion" >"$WORK/compile.log" 2>&1; then
      echo "FAIL $name: compile failed"; tail -3 "$WORK/compile.log"; failed=$((failed + 1)); continue
    fi
    if ! "$AGATE" run "$WORK/$model.agm" --inputs "$WORK/$model.inputs.npz" --outputs "$WORK/out.npz" \
        >"$WORK/run.log" 2>&1; then
      echo "FAIL $name: run failed"; tail -3 "$WORK/run.log"; failed=$((failed + 1)); continue
    fi
    if /usr/bin/python3 - "$WORK/out.npz" "$WORK/$model.reference.npz" "$name" <<'PY'
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = True
for key in want.files:
    same_shape = got[key].shape == want[key].shape
    diff = float(np.abs(got[key] - want[key]).max()) if same_shape else float("inf")
    scale = max(1.0, float(np.abs(want[key]).max()))
    close = same_shape and np.allclose(got[key], want[key], rtol=1e-5, atol=1e-5 * scale)
    ok = ok and close
    print(f"{'ok  ' if close else 'FAIL'} {sys.argv[3]}: {key} {got[key].shape} max |diff| {diff:.2e} "
          f"(max |pytorch| {scale:.2e})")
sys.exit(0 if ok else 1)
PY
    then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
done
echo "$passed $failed"
