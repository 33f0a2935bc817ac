#!/usr/bin/env bash
# agate compile --precision fp16|bf16 on the bundled CNN, as a user meets it: the summary says how
# many weight bytes are narrow, the module is smaller, records its precision (agate inspect), takes
# and returns float32 and stays near the fp32 module; C kernels widen the weights in portable C; a
# bad value, a target that cannot read narrow weights and --quantize with it give a one-line error
# naming the flag, exit 1, and no file.
# Prints one "ok"/"FAIL" line per check; exits non-zero if any failed.
set -u
AGATE="$1"
MODEL="$2"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
source "$(dirname "$0")/checks.sh"
TARGET="llvm -mcpu=x86-64-v3"

/usr/bin/python3 -c "
import numpy as np
np.savez('$TMP/in.npz', input=np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32))"

check "compile fp32" 0 "$AGATE" compile "$MODEL" -o "$TMP/fp32.agm" --target "$TARGET"
for p in fp16 bf16; do
  check "compile --precision $p" 0 "$AGATE" compile "$MODEL" -o "$TMP/$p.agm" --target "$TARGET" --precision $p
  expect_in "the summary says the $p weights" "$TMP/out.txt" "precision: $p weights ([1-9][0-9]* packed tensors"
  check "inspect the $p module" 0 "$AGATE" inspect "$TMP/$p.agm"
  expect_in "the $p module records its precision" "$TMP/out.txt" "precision=\"$p\""
  expect "the $p module is smaller" test "$(stat -c %s "$TMP/$p.agm")" -lt "$(stat -c %s "$TMP/fp32.agm")"
done
for m in fp32 fp16 bf16; do
  check "run the $m module" 0 "$AGATE" run "$TMP/$m.agm" --inputs "$TMP/in.npz" --outputs "$TMP/$m.npz"
done
check "fp16 and bf16 take and return float32, near fp32" 0 /usr/bin/python3 -c "
import numpy as np, sys
a = np.load('$TMP/fp32.npz')
for p, tol in (('fp16', 0.01), ('bf16', 0.05)):
    b = np.load('$TMP/' + p + '.npz')
    for k in a.files:
        d = float(np.abs(a[k] - b[k]).max()); s = float(np.abs(a[k]).max())
        print(p, k, b[k].dtype, 'max |narrow - fp32|', d, 'of max |fp32|', s)
        if b[k].dtype != a[k].dtype or not 0 < d <= tol * s: sys.exit(1)"

check "compile --precision fp16 for the C target" 0 "$AGATE" compile "$MODEL" -o "$TMP/c.agm" --target c --precision fp16
expect_in "C kernels widen float16 weights" "$TMP/c.agm.kernels.c" "agate_f16_to_f32("

bad() {  # bad NAME EXPECTED_TEXT FLAGS...: exit 1, the text on stderr, no module
  local name="$1" text="$2"
  shift 2
  check "$name is exit 1" 1 "$AGATE" compile "$MODEL" -o "$TMP/bad.agm" "$@"
  expect_in "$name is named" "$TMP/err.txt" "$text"
  expect "no module for $name" no_file_like "$TMP" bad.agm
}
bad "an unknown precision" "precision 'fp8': expected fp32, fp16 or bf16" --precision fp8
bad "fp16 without F16C" "has no F16C" --target "llvm -mcpu=x86-64-v2" --precision fp16
bad "--precision with --quantize" "choose one" --precision bf16 --quantize int8 --calibration "$TMP/in.npz"

finish
