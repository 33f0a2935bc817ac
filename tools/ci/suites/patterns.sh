#!/usr/bin/env bash
# Pattern fusion on the exact ONNX PyTorch exports: tools/zoo/export_patterns.py exports model fragments
# (LayerNorm, GELU erf/tanh, gelu_new, SiLU, Hardswish, RMSNorm, BERT / GPT-2 / nn.MultiheadAttention
# attention) with Debian's PyTorch 1.13 at opsets 13 and 17; each is compiled with ./agate (--fusion rule),
# must show the fused operator in the kernel list and none of the decomposed ones, and must match
# PyTorch's output (|agate - pytorch| <= 1e-4 * (1 + |pytorch|)) when run in the minimal runtime.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

if ! /usr/bin/python3 tools/zoo/export_patterns.py --out "$WORK" >"$WORK/list.txt" 2>"$WORK/export.log"; then
  echo "could not export the fragments"; tail -5 "$WORK/export.log"
  echo "0 1"
  exit 0
fi
bazel build --noshow_progress //tools/cli:agate >/dev/null 2>&1 || { echo "could not build the CLI"; echo "0 1"; exit 0; }
AGATE="$ROOT/bazel-bin/tools/cli/agate"
while read -r stem fused gone; do
  if ! "$AGATE" compile "$WORK/$stem.onnx" -o "$WORK/$stem.agm" >"$WORK/compile.log" 2>&1; then
    echo "FAIL $stem: compile failed"; tail -3 "$WORK/compile.log"; failed=$((failed + 1)); continue
  fi
  kernels="$(grep -E '^  k[0-9]+_' "$WORK/compile.log")"
  if ! grep -q "($fused)" <<<"$kernels"; then
    echo "FAIL $stem: no $fused in the kernels:"; echo "$kernels"; failed=$((failed + 1)); continue
  fi
  left=""
  for op in $gone; do grep -q "($op)" <<<"$kernels" && left="$left $op"; done
  if [ -n "$left" ]; then
    echo "FAIL $stem: still decomposed ($left ) in:"; echo "$kernels"; failed=$((failed + 1)); continue
  fi
  if ! "$AGATE" run "$WORK/$stem.agm" --inputs "$WORK/$stem.inputs.npz" --outputs "$WORK/out.npz" >"$WORK/run.log" 2>&1; then
    echo "FAIL $stem: run failed"; tail -3 "$WORK/run.log"; failed=$((failed + 1)); continue
  fi
  if /usr/bin/python3 - "$WORK/out.npz" "$WORK/$stem.reference.npz" "$stem" "$fused" <<'PY'
import sys
import numpy as np
got, want = np.load(sys.argv[1])["output"], np.load(sys.argv[2])["output"]
close = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4)
diff = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
print(f"{'ok  ' if close else 'FAIL'} {sys.argv[3]}: fused into {sys.argv[4]}, max |diff| {diff:.2e}")
sys.exit(0 if close else 1)
PY
  then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done <"$WORK/list.txt"
echo "$passed $failed"
