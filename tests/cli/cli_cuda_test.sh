#!/usr/bin/env bash
# `agate run` and `agate version` with CUDA modules, on a machine without a GPU:
# first with no driver at all (a clear error, exit 1), then against the fake
# CUDA driver (runtime_minimal/cuda/testing/fake_cuda.h) with two GPUs and the
# test kernels' host twins, so runs compute: outputs, --device, --profile.
# Then a model compiled by `agate compile --target cuda` (NVRTC, no GPU) loads and
# launches on the fake driver: its cubin on an sm_80 GPU, its PTX on an sm_90 one.
# The fake driver executes nothing, but it checks what a real one would refuse:
# the image and its architecture, every entry name and parameter count, every
# pointer against live allocations, threads and shared memory per launch.
# Prints one "ok"/"FAIL" line per check; exits non-zero if any failed.
set -u
AGATE="$1"
MAKE_MODULE="$2"
FAKE="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
MODEL="$4"
RUNTIME="$5"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
source "$(dirname "$0")/checks.sh"

"$MAKE_MODULE" "$TMP/add.agm" || { echo "FAIL cannot write the CUDA test module"; exit 1; }
"$MAKE_MODULE" "$TMP/add10.agm" 1.0 || { echo "FAIL cannot write the format-1.0 CUDA test module"; exit 1; }
/usr/bin/python3 - "$TMP" <<'PY' || failures=$((failures + 1))
import sys, numpy as np
np.savez(sys.argv[1] + "/x.npz", x=np.arange(256, dtype=np.float32) % 7 - 3)
np.savez(sys.argv[1] + "/x64.npz", x=np.zeros(256, np.float64))
PY

# No driver: refused with the reason, nothing crashes.
export AGATE_CUDA_DRIVER=/nonexistent/libcuda.so.1
check "no driver is exit 1" 1 "$AGATE" run "$TMP/add.agm"
expect_in "no driver is named" "$TMP/err.txt" "no CUDA driver: cannot open /nonexistent/libcuda.so.1"
expect_in "the module is named" "$TMP/err.txt" "add.agm"
check "version without a driver" 0 "$AGATE" version
expect_in "version says CUDA is unavailable and why" "$TMP/out.txt" "CUDA: unavailable (no CUDA driver"

# The fake driver: two GPUs (sm_80, sm_90), the test kernels' host twins.
export AGATE_CUDA_DRIVER="$FAKE" AGATE_FAKE_CUDA_DEVICES="80:1G,90:1G" AGATE_FAKE_CUDA_TEST_KERNELS=1
check "version counts the GPUs" 0 "$AGATE" version
expect_in "two GPUs" "$TMP/out.txt" "CUDA: 2 GPUs"
for device in 0 1; do
  check "run on GPU $device" 0 "$AGATE" run "$TMP/add.agm" --device "$device" --inputs "$TMP/x.npz" --outputs "$TMP/y$device.npz"
  expect "GPU $device computes y = (x + c) + x" /usr/bin/python3 - "$TMP" "$device" <<'PY'
import sys, numpy as np
d, device = sys.argv[1], sys.argv[2]
x = np.load(d + "/x.npz")["x"]
y = np.load(d + "/y%s.npz" % device)["y"]
expected = (x + np.arange(256, dtype=np.float32) * 0.5) + x
sys.exit(0 if np.array_equal(y, expected) else 1)
PY
done
# --device-resident: the input copied to the GPU once, then read there by every run.
check "run --device-resident on a GPU" 0 "$AGATE" run "$TMP/add.agm" --device-resident --repeat 3 --inputs "$TMP/x.npz" \
  --outputs "$TMP/yd.npz"
expect "device-resident and host inputs agree" /usr/bin/python3 -c \
  "import numpy as np,sys; sys.exit(0 if np.array_equal(np.load(sys.argv[1])['y'], np.load(sys.argv[2])['y']) else 1)" \
  "$TMP/yd.npz" "$TMP/y0.npz"
# agate-runtime: the same run without the compiler (what a deployment machine gets).
check "agate-runtime version counts the GPUs" 0 "$RUNTIME" version
expect_in "agate-runtime sees two GPUs" "$TMP/out.txt" "CUDA: 2 GPUs"
check "agate-runtime runs the module" 0 "$RUNTIME" run "$TMP/add.agm" --inputs "$TMP/x.npz" --outputs "$TMP/yr.npz"
expect "agate-runtime and agate agree" /usr/bin/python3 -c \
  "import numpy as np,sys; sys.exit(0 if np.array_equal(np.load(sys.argv[1])['y'], np.load(sys.argv[2])['y']) else 1)" \
  "$TMP/yr.npz" "$TMP/y0.npz"
check "agate-runtime has no compiler" 2 "$RUNTIME" compile "$MODEL"
expect_in "agate-runtime names the unknown command" "$TMP/err.txt" "agate-runtime: unknown command 'compile'"
check "a format-1.0 module runs" 0 "$AGATE" run "$TMP/add10.agm" --inputs "$TMP/x.npz" --outputs "$TMP/y10.npz"
expect "format 1.0 and 1.1 agree" /usr/bin/python3 -c \
  "import numpy as np,sys; sys.exit(0 if np.array_equal(np.load(sys.argv[1])['y'], np.load(sys.argv[2])['y']) else 1)" \
  "$TMP/y10.npz" "$TMP/y0.npz"
check "a GPU that does not exist is exit 1" 1 "$AGATE" run "$TMP/add.agm" --device 2
expect_in "the GPU count is named" "$TMP/err.txt" "CUDA device 2 does not exist: the driver sees 2 GPUs (0..1)"
check "run --profile on a GPU" 0 "$AGATE" run "$TMP/add.agm" --profile --repeat 3
expect_in "profile says the times are device times" "$TMP/out.txt" "Device times on cuda:0 (CUDA events)"
expect_in "profile lists the kernel with its 2 calls" "$TMP/out.txt" "100.0%      2  agate_cuda_add"
check "run --print-time on a GPU" 0 "$AGATE" run "$TMP/add.agm" --print-time --repeat 3 --number 2
expect_in "timing table" "$TMP/out.txt" "median (ms)"
check "inspect a CUDA module" 0 "$AGATE" inspect "$TMP/add.agm"
check "a wrong input dtype is exit 1" 1 "$AGATE" run "$TMP/add.agm" --inputs "$TMP/x64.npz"
expect_in "the input is named" "$TMP/err.txt" "input 'x'"

# A compiled model on the fake driver.
if "$AGATE" compile "$MODEL" -o "$TMP/cnn.agm" --target "cuda -arch=sm_80" >"$TMP/out.txt" 2>"$TMP/err.txt"; then
  echo "ok   compile the demo CNN for cuda -arch=sm_80"
  for spec in "80:1G" "90:1G"; do
    check "the compiled CNN loads and launches on a fake sm_${spec%%:*} GPU" 0 \
      env AGATE_FAKE_CUDA_DEVICES="$spec" AGATE_FAKE_CUDA_TEST_KERNELS=0 "$AGATE" run "$TMP/cnn.agm" --repeat 2
  done
  check "the compiled CNN is refused on a fake sm_75 GPU" 1 \
    env AGATE_FAKE_CUDA_DEVICES="75:1G" AGATE_FAKE_CUDA_TEST_KERNELS=0 "$AGATE" run "$TMP/cnn.agm"
  expect_in "the refusal names the architectures" "$TMP/err.txt" "sm_75"
elif grep -q "NVRTC" "$TMP/err.txt"; then
  echo "ok   (compiled-model checks skipped: NVRTC is not installed)"
else
  echo "FAIL compile the demo CNN for cuda"; sed 's/^/     /' "$TMP/out.txt" "$TMP/err.txt" | head -20
  failures=$((failures + 1))
fi

finish
