#!/usr/bin/env bash
# Sampling operators against PyTorch: tests/onnx_opsets/torch_sampling.py draws random inputs
# (grids reaching beyond [-1, 1]) and computes torch.nn.functional.grid_sample / affine_grid / fold
# and torchvision.ops.deform_conv2d
# with Debian's PyTorch 1.13 / torchvision 0.14; tests/onnx_opsets:torch_compare builds each case as an ONNX model
# (GridSample-16/20, AffineGrid-20, Col2Im-18, DeformConv-19) and runs it on the reference interpreter and the
# compiled path. Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
if ! /usr/bin/python3 tests/onnx_opsets/torch_sampling.py "$WORK" >"$WORK/gen.log" 2>&1; then
  echo "could not generate the cases"; tail -5 "$WORK/gen.log"; echo "0 1"; exit 0
fi
bazel build --noshow_progress //tests/onnx_opsets:torch_compare >"$WORK/build.log" 2>&1 ||
  { echo "could not build torch_compare"; tail -5 "$WORK/build.log"; echo "0 1"; exit 0; }
"$ROOT/bazel-bin/tests/onnx_opsets/torch_compare" "$WORK" 2>&1 | grep -v "^\[agate W" || { echo "0 1"; exit 0; }
