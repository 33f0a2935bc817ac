#!/usr/bin/env bash
# agate compile --quantize int8 on the bundled CNN, as a user meets it: the int8 module takes and
# returns float, runs, stays near the fp32 module, and records how it was quantized; every bad
# calibration file or flag gives a one-line error naming the entry or flag, exit 1, and no file.
# Prints one "ok"/"FAIL" line per check; exits non-zero if any failed.
set -u
AGATE="$1"
MODEL="$2"
STEM="${MODEL%.onnx}"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
source "$(dirname "$0")/checks.sh"

/usr/bin/python3 - "$TMP" <<'PY'
import sys
import numpy as np
t = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.random((16, 1, 3, 32, 32), dtype=np.float32)  # the demo's inputs are in [0, 1)
np.savez(t + "/cal.npz", input=x)
np.savez(t + "/missing.npz", image=x)
np.savez(t + "/extra.npz", input=x, mask=x)
np.savez(t + "/shape.npz", input=x[:, 0])
np.savez(t + "/dtype.npz", input=x.astype(np.float64))
np.savez(t + "/empty.npz", input=x[:0])
np.savez(t + "/held_out.npz", input=rng.random((1, 3, 32, 32), dtype=np.float32))
PY

check "compile fp32" 0 "$AGATE" compile "$MODEL" -o "$TMP/fp32.agm" --target "llvm -mcpu=x86-64-v3"
check "compile --quantize int8" 0 "$AGATE" compile "$MODEL" -o "$TMP/int8.agm" --target "llvm -mcpu=x86-64-v3" \
  --quantize int8 --calibration "$TMP/cal.npz"
expect_in "the summary says what was quantized" "$TMP/out.txt" "quantization: int8; calibration .*cal.npz (16 samples, minmax)"
expect_in "the kernels are integer ones" "$TMP/out.txt" "(QLinearConv)"
expect "nothing stays float by accident" test "$(grep -c 'stays float' "$TMP/err.txt")" -eq 0
check "inspect the int8 module" 0 "$AGATE" inspect "$TMP/int8.agm"
expect_in "the module's metadata records the quantization" "$TMP/out.txt" 'quantization="int8; calibration'
for m in fp32 int8; do
  check "run the $m module" 0 "$AGATE" run "$TMP/$m.agm" --inputs "$TMP/held_out.npz" --outputs "$TMP/$m.npz"
done
check "int8 takes and returns float, near fp32" 0 /usr/bin/python3 -c "
import numpy as np, sys
a = np.load('$TMP/fp32.npz'); b = np.load('$TMP/int8.npz')
for k in a.files:
    d = float(np.abs(a[k] - b[k]).max()); s = float(np.abs(a[k]).max())
    print(k, b[k].dtype, 'max |int8 - fp32|', d, 'of max |fp32|', s)
    if b[k].dtype != a[k].dtype or not d <= 0.1 * s: sys.exit(1)"
check "percentile calibration, a kept op type" 0 "$AGATE" compile "$MODEL" -o "$TMP/p.agm" --target "llvm -mcpu=x86-64-v3" \
  --quantize int8 --calibration "$TMP/cal.npz" --calibration-method percentile:99.9 --keep-float Softmax
expect_in "the method is recorded" "$TMP/out.txt" "percentile:99.9"

# The dynamic form (no samples): the demo's classifier becomes MatMulInteger, activations quantized per run.
check "compile --quantize int8-dynamic" 0 "$AGATE" compile "$MODEL" -o "$TMP/dyn.agm" --quantize int8-dynamic
expect_in "the summary says it is dynamic" "$TMP/out.txt" "quantization: int8 dynamic"
expect_in "the classifier is an integer product" "$TMP/out.txt" "MatMulInteger"
check "run the dynamic module" 0 "$AGATE" run "$TMP/dyn.agm" --inputs "$TMP/held_out.npz" --outputs "$TMP/dyn.npz"
check "int8-dynamic near fp32" 0 /usr/bin/python3 -c "
import numpy as np, sys
a = np.load('$TMP/fp32.npz'); b = np.load('$TMP/dyn.npz')
for k in a.files:
    d = float(np.abs(a[k] - b[k]).max()); s = float(np.abs(a[k]).max())
    print(k, 'max |int8-dynamic - fp32|', d, 'of max |fp32|', s)
    if b[k].dtype != a[k].dtype or not 0 < d <= 0.1 * s: sys.exit(1)"

bad() {  # bad NAME EXPECTED_TEXT FLAGS...: exit 1, the text on stderr, no module
  local name="$1" text="$2"
  shift 2
  check "$name is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/bad.agm" "$@"
  expect_in "$name is named" "$TMP/err.txt" "$text"
  expect "no module for $name" no_file_like "$TMP" bad.agm
}
bad "a calibration file without the input" "no entry for model input 'input'" --quantize int8 --calibration "$TMP/missing.npz"
bad "an entry for no input" "entry 'mask' names no input" --quantize int8 --calibration "$TMP/extra.npz"
bad "samples without the sample axis" "entry 'input' has shape \[16,3,32,32\]" --quantize int8 --calibration "$TMP/shape.npz"
bad "float64 samples" "entry 'input' is float64" --quantize int8 --calibration "$TMP/dtype.npz"
bad "zero samples" "entry 'input' holds zero samples" --quantize int8 --calibration "$TMP/empty.npz"
bad "an unknown --keep-float name" "--keep-float 'Sofmax'" --quantize int8 --calibration "$TMP/cal.npz" --keep-float Sofmax
bad "--calibration without --quantize" "--calibration is an option of post-training quantization" --calibration "$TMP/cal.npz"
bad "--keep-float without --quantize" "--keep-float is an option" --keep-float Softmax
bad "--quantize without --calibration" "--quantize int8 needs --calibration" --quantize int8
bad "a bad calibration method" "--calibration-method 'kl'" --quantize int8 --calibration "$TMP/cal.npz" --calibration-method kl
bad "int8-dynamic with samples" "int8-dynamic quantizes activations per run" --quantize int8-dynamic --calibration "$TMP/cal.npz"
check "an unknown --quantize type is exit 2" 2 "$AGATE" compile "$MODEL" -o "$TMP/bad.agm" --quantize int4 --calibration "$TMP/cal.npz"
expect "no module for int4" no_file_like "$TMP" bad.agm

finish
