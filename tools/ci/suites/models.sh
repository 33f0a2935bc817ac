#!/usr/bin/env bash
# End-to-end models: torchvision models exported to ONNX with PyTorch's outputs (tools/zoo),
# compiled with ./agate for the host under every fusion policy, run in the minimal runtime,
# and compared with PyTorch: |agate - pytorch| <= 1e-4 * (1 + |pytorch|) scaled by the output's
# magnitude (atol = 1e-4 * max(1, max|pytorch|)): untrained networks reach logits of 1e3 (ResNet-50)
# to 1e13 (Inception-v3), where fp32 sums in another order differ by more than an absolute 1e-4.
# ResNet-18, the CI-sized transformers and modern CNN of issue 19 (vit_ci: torchvision's ViT with 4 layers of
# d=192 at 224x224, convnext_ci: ConvNeXt blocks at ConvNeXt-Atto's widths, bert_small: the 4-layer d=128
# BERT-like encoder with a padding mask; the full-size ViT-B/16, ConvNeXt-T, Swin-T, BERT-base and GPT-2
# run in benchmarks/models, where a compile of each takes minutes) and the four seed models (ResNet-50,
# VGG-16, Inception-v3, MobileNetV2); AGATE_SEED_MODELS=0 skips the seed models.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
ZOO="${AGATE_ZOO:-$HOME/.cache/agate/zoo}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
models=(resnet18 vit_ci convnext_ci bert_small)
[ "${AGATE_SEED_MODELS:-1}" = 1 ] && models+=(resnet50 vgg16 inception_v3 mobilenet_v2)
passed=0
failed=0

if ! /usr/bin/python3 tools/zoo/export_models.py --out "$ZOO" "${models[@]}"; then
  echo "could not export the models"
  echo "0 1"
  exit 0
fi
bazel build --noshow_progress //tools/cli:agate >/dev/null 2>&1 || { echo "could not build the CLI"; echo "0 1"; exit 0; }
AGATE="$ROOT/bazel-bin/tools/cli/agate"
for model in "${models[@]}"; do
  for fusion in rule none all; do
    name="$model --fusion $fusion"
    if ! "$AGATE" compile "$ZOO/$model.onnx" -o "$WORK/$model.agm" --fusion "$fusion" >"$WORK/compile.log" 2>&1; then
      echo "FAIL $name: compile failed"; tail -3 "$WORK/compile.log"; failed=$((failed + 1)); continue
    fi
    if ! "$AGATE" run "$WORK/$model.agm" --inputs "$ZOO/$model.inputs.npz" --outputs "$WORK/out.npz" \
        --print-time --repeat 5 >"$WORK/run.log" 2>&1; then
      echo "FAIL $name: run failed"; tail -3 "$WORK/run.log"; failed=$((failed + 1)); continue
    fi
    if /usr/bin/python3 - "$WORK/out.npz" "$ZOO/$model.reference.npz" "$name" "$(tail -1 "$WORK/run.log" | awk '{print $2}')" <<'PY'
import sys
import numpy as np
got, want = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = True
for key in want.files:
    diff = float(np.abs(got[key] - want[key]).max())
    scale = max(1.0, float(np.abs(want[key]).max()))
    close = np.allclose(got[key], want[key], rtol=1e-4, atol=1e-4 * scale)
    ok = ok and close
    print(f"{'ok  ' if close else 'FAIL'} {sys.argv[3]}: {key} max |diff| {diff:.2e} (max |pytorch| {scale:.2e}), "
          f"median {sys.argv[4]} ms")
sys.exit(0 if ok else 1)
PY
    then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  done
done
echo "$passed $failed"
