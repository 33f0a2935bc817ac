#!/usr/bin/env bash
# Selections whose output extents the values decide, end to end: torchvision's nms and PyTorch's
# boolean indexing (boxes[scores > t], boxes[torch.where(...)[0]] through a Linear, features[mask]
# and torch.nonzero(mask) with a 2-D mask) exported from
# PyTorch at test time (tools/zoo/export_selection_models.py), compiled once with ./agate for the
# host under every fusion policy, run in the minimal runtime on three input sets each (some, all
# and no rows selected; for nms random, overlapping and disjoint boxes) and compared with
# PyTorch's outputs, shapes included: |agate - pytorch| <= 1e-5 * (1 + |pytorch|) by magnitude.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

if ! /usr/bin/python3 tools/zoo/export_selection_models.py --out "$WORK" >"$WORK/export.log" 2>&1; then
  echo "could not export the selection models"; tail -5 "$WORK/export.log"
  echo "0 1"
  exit 0
fi
bazel build --noshow_progress //tools/cli:agate >/dev/null 2>&1 || { echo "could not build the CLI"; echo "0 1"; exit 0; }
AGATE="$ROOT/bazel-bin/tools/cli/agate"
for model in nms_select mask_select where_linear grid_select; do
  for fusion in rule none all; do
    if ! "$AGATE" compile "$WORK/$model.onnx" -o "$WORK/$model.agm" --fusion "$fusion" >"$WORK/compile.log" 2>&1; then
      echo "FAIL $model --fusion $fusion: compile failed"; tail -3 "$WORK/compile.log"; failed=$((failed + 1)); continue
    fi
    for inputs in "$WORK/$model".*.inputs.npz; do
      set_name="$(basename "$inputs" .inputs.npz)"
      if ! "$AGATE" run "$WORK/$model.agm" --inputs "$inputs" --outputs "$WORK/out.npz" >"$WORK/run.log" 2>&1; then
        echo "FAIL $set_name --fusion $fusion: run failed"; tail -3 "$WORK/run.log"; failed=$((failed + 1)); continue
      fi
      if /usr/bin/python3 tools/ci/suites/lib/compare_outputs.py "$WORK/out.npz" "${inputs%.inputs.npz}.reference.npz" \
          "$set_name --fusion $fusion" 1e-5; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1))
      fi
    done
  done
done
echo "$passed $failed"
