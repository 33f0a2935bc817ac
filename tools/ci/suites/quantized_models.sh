#!/usr/bin/env bash
# QDQ int8 models (issue 17): ResNet-18 and MobileNetV2 quantized with PyTorch's static PTQ and exported
# in QDQ form (tools/zoo/export_qdq_models.py), compiled with ./agate (the QDQ pass folds every conv into
# QLinearConv and the classifier into MatMulInteger and its requantisation), run in the minimal runtime and
# compared with the reference interpreter over the same graph passes (tools/zoo:interpret): equal bit for bit. The difference from the
# float model before quantization is printed, and bounded loosely (a quarter of the largest float logit, or
# 1.25x PyTorch's own int8 model's distance from it when that is larger) to catch a wrong scale, not to
# grade the quantization. Then a float ResNet-18 quantized by agate
# (--quantize int8) against agate fp32.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
ZOO="${AGATE_ZOO:-$HOME/.cache/agate/zoo}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
models=(resnet18 mobilenet_v2)
passed=0
failed=0

if ! /usr/bin/python3 tools/zoo/export_qdq_models.py --out "$ZOO" "${models[@]}" >"$WORK/export.log" 2>&1; then
  echo "could not export the QDQ models"; tail -5 "$WORK/export.log"
  echo "0 1"
  exit 0
fi
bazel build --noshow_progress //tools/cli:agate //tools/zoo:interpret >/dev/null 2>&1 || {
  echo "could not build the CLI and the interpreter"; echo "0 1"; exit 0; }
AGATE="$ROOT/bazel-bin/tools/cli/agate"
INTERPRET="$ROOT/bazel-bin/tools/zoo/interpret"
for model in "${models[@]}"; do
  stem="$ZOO/${model}_qdq"
  if ! "$AGATE" compile "$stem.onnx" -o "$WORK/$model.agm" >"$WORK/compile.log" 2>&1; then
    echo "FAIL $model: compile failed"; tail -3 "$WORK/compile.log"; failed=$((failed + 1)); continue
  fi
  if grep -q "stays float" "$WORK/compile.log"; then
    echo "FAIL $model: a pattern was not folded:"; grep "stays float" "$WORK/compile.log" | head -3
    failed=$((failed + 1)); continue
  fi
  if ! "$AGATE" run "$WORK/$model.agm" --inputs "$stem.inputs.npz" --outputs "$WORK/out.npz" >"$WORK/run.log" 2>&1; then
    echo "FAIL $model: run failed"; tail -3 "$WORK/run.log"; failed=$((failed + 1)); continue
  fi
  if ! "$INTERPRET" "$stem.onnx" "$stem.inputs.npz" "$WORK/ref.npz" >"$WORK/interpret.log" 2>&1; then
    echo "FAIL $model: the reference interpreter failed"; tail -3 "$WORK/interpret.log"; failed=$((failed + 1)); continue
  fi
  if /usr/bin/python3 - "$WORK/out.npz" "$WORK/ref.npz" "$stem" "$model" <<'PY'
import sys
import numpy as np
got, ref = np.load(sys.argv[1])["output"], np.load(sys.argv[2])["output"]
stem, model = sys.argv[3], sys.argv[4]
fp32, torch_int8 = np.load(stem + ".fp32.npz")["output"], np.load(stem + ".torch_int8.npz")["output"]
exact = got.dtype == ref.dtype and np.array_equal(got, ref)
scale = float(np.abs(fp32).max())
diff = float(np.abs(got - fp32).max())
# PyTorch's own int8 model's distance from fp32: MobileNetV2 quantized per tensor is far from its float
# model on some hosts (exported on an AVX2 machine, PyTorch's int8 is 0.157 of 0.489 away, and its top-1
# differs). A wrong scale gives errors the size of the logits, above both bounds.
torch_err = float(np.abs(torch_int8 - fp32).max())
ok = exact and diff <= max(0.25 * scale, 1.25 * torch_err)
print(f"{'ok  ' if ok else 'FAIL'} {model}: compiled {'==' if exact else '!='} reference interpreter "
      f"(max |diff| {float(np.abs(got - ref).max()):.3g}); vs fp32 max |diff| {diff:.3g} of max |fp32| {scale:.3g}, "
      f"top-1 {'same' if got.argmax() == fp32.argmax() else 'differs'}; vs PyTorch's int8 model (onednn) "
      f"max |diff| {float(np.abs(got - torch_int8).max()):.3g} (PyTorch int8 vs fp32 {torch_err:.3g})")
sys.exit(0 if ok else 1)
PY
  then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
# Post-training quantization by agate itself (agate compile --quantize int8, core/quantize): ResNet-18 at
# 112x112 calibrated on 4 random inputs, the int8 module against the fp32 one on 8 held-out inputs
# (benchmarks/quantized/ptq_accuracy.py prints the agreement and the logit error; the check is loose, to
# catch a wrong scale or a broken pass, not to grade the quantization).
if AGATE="$AGATE" /usr/bin/python3 benchmarks/quantized/ptq_accuracy.py --models resnet18 --size 112 \
    --calibration 4 --held-out 8 --no-speed \
    --check-logit-error 0.25 --check-agreement 0.75 >"$WORK/ptq.log" 2>&1; then
  echo "ok   resnet18 --quantize int8: $(grep '^| resnet18' "$WORK/ptq.log")"; passed=$((passed + 1))
else
  echo "FAIL resnet18 --quantize int8:"; tail -5 "$WORK/ptq.log"; failed=$((failed + 1))
fi
# BERT-small quantized dynamically (tools/zoo/export_dynamic_int8.py: DynamicQuantizeLinear + MatMulInteger
# with per-column int8 weights, ONNX Runtime's quantize_dynamic form): its MatMulIntegers must take the VNNI
# template where the host has VNNI; the output against the reference interpreter over the same passes and,
# where ONNX Runtime's output on the same inputs exists (written by the exporter with --ort, when
# onnxruntime-node is installed in benchmarks/peers), against ONNX Runtime: both within DYN_TOL of the largest
# output; against PyTorch's fp32 output loosely. Why not bit for bit: a float result one ulp apart before a
# DynamicQuantizeLinear (its max sets the scale; an element at an exact .5 step rounds to even) moves one
# quantized activation by one step, and the next layers amplify it (tools/zoo/probe_values.py finds the value;
# benchmarks/quantized/RESULTS.md has the trace). Over 8 inputs such a cascade moved the output by at most
# 0.38% of its largest value, for agate and for ONNX Runtime alike (each against the reference interpreter);
# DYN_TOL = 0.5% is that plus a third (it was 1%, set before the cause was known). The check is there for a
# wrong scale, zero point or product, not for float rounding.
DYN_TOL=0.005
ort_flag=()
if command -v node >/dev/null && [ -d "${AGATE_ORT_NODE_MODULES:-$ROOT/benchmarks/peers/node_modules}/onnxruntime-node" ]; then
  ort_flag=(--ort)
fi
dyn="$ZOO/bert_small_dynint8"
if ! /usr/bin/python3 tools/zoo/export_dynamic_int8.py --out "$ZOO" "${ort_flag[@]}" bert_small >"$WORK/dyn_export.log" 2>&1; then
  echo "FAIL bert_small_dynint8: export failed"; tail -3 "$WORK/dyn_export.log"; failed=$((failed + 1))
elif ! "$AGATE" compile "$dyn.onnx" -o "$WORK/dyn.agm" >"$WORK/dyn_compile.log" 2>&1; then
  echo "FAIL bert_small_dynint8: compile failed"; tail -3 "$WORK/dyn_compile.log"; failed=$((failed + 1))
elif ! "$AGATE" run "$WORK/dyn.agm" --inputs "$dyn.inputs.npz" --outputs "$WORK/dyn_out.npz" >"$WORK/dyn_run.log" 2>&1; then
  echo "FAIL bert_small_dynint8: run failed"; tail -3 "$WORK/dyn_run.log"; failed=$((failed + 1))
elif ! "$INTERPRET" "$dyn.onnx" "$dyn.inputs.npz" "$WORK/dyn_ref.npz" >"$WORK/dyn_interpret.log" 2>&1; then
  echo "FAIL bert_small_dynint8: the reference interpreter failed"; tail -3 "$WORK/dyn_interpret.log"
  failed=$((failed + 1))
else
  vnni=0
  grep -q avx512_vnni /proc/cpuinfo && vnni=1
  if /usr/bin/python3 - "$WORK/dyn_out.npz" "$WORK/dyn_ref.npz" "$dyn" "$DYN_TOL" "$vnni" "$WORK/dyn_compile.log" <<'PY'
import os
import re
import sys
import numpy as np
got, ref = np.load(sys.argv[1])["output"], np.load(sys.argv[2])["output"]
stem, tol, vnni = sys.argv[3], float(sys.argv[4]), sys.argv[5] == "1"
summary = open(sys.argv[6]).read()  # agate compile prints every kernel's schedule
fp32 = np.load(stem + ".fp32.npz")["output"]
scale = float(np.abs(fp32).max())
ok = True
lines = []
d_ref = float(np.abs(got - ref).max())
ok &= d_ref <= tol * scale
lines.append(f"vs reference interpreter max |diff| {d_ref:.3g}")
if os.path.exists(stem + ".ort.npz"):
    ort = np.load(stem + ".ort.npz")["output"]
    d_ort = float(np.abs(got - ort).max())
    ort_ref = float(np.abs(ort - ref).max())
    note = f"(ONNX Runtime vs fp32 {float(np.abs(ort - fp32).max()):.3g}, vs the reference interpreter {ort_ref:.3g})"
    if ort_ref <= tol * scale:
        ok &= d_ort <= tol * scale
        lines.append(f"vs ONNX Runtime int8 max |diff| {d_ort:.3g} {note}")
    else:
        # ONNX Runtime's own int8 is off the spec here: without VNNI its u8 x s8 kernels sum pairs of products in
        # saturating int16 (vpmaddubsw), which is why its quantize_dynamic documents reduce_range for such CPUs.
        lines.append(f"ONNX Runtime int8 not compared: it is itself off the reference on this CPU {note}")
else:
    lines.append("ONNX Runtime's output not available (not compared)")
d_fp32 = float(np.abs(got - fp32).max())
ok &= d_fp32 <= 0.1 * scale
lines.append(f"vs fp32 max |diff| {d_fp32:.3g}, all within {tol} x max |fp32| {scale:.3g}")
vnni_kernels = len(re.findall(r"matmul int8 vnni", summary))
if vnni:
    ok &= vnni_kernels > 0
lines.append(f"{vnni_kernels} kernels with the VNNI matmul template")
print(f"{'ok  ' if ok else 'FAIL'} bert_small_dynint8: " + "; ".join(lines))
sys.exit(0 if ok else 1)
PY
  then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
echo "$passed $failed"
