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
source tools/ci/suites/lib/compile_run_compare.sh
for model in "${models[@]}"; do
  for fusion in rule none all; do
    compile_run_compare "$model --fusion $fusion" "$ZOO/$model.onnx" "$ZOO/$model.inputs.npz" \
      "$ZOO/$model.reference.npz" 1e-4 "$fusion" --print-time --repeat 5
  done
done
echo "$passed $failed"
