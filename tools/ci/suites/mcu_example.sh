#!/usr/bin/env bash
# The microcontroller example (examples/mcu/run_example.py): the DS-CNN keyword-spotting model
# exported from PyTorch in float32 and in int8 (QDQ, folded into integer kernels; bit for bit with the
# reference interpreter on the host) and the demo CNN, packaged by `agate compile --package` (C for a
# Cortex-M4, LLVM objects for a Cortex-M55), linked into one firmware per board with
# arm-none-eabi-gcc and newlib, run under qemu-system-arm (mps2-an386, mps3-an547), outputs
# compared with `agate run` on this machine; a module given the other model's kernel table
# must be refused. Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
for tool in arm-none-eabi-gcc qemu-system-arm flatc; do
  if ! command -v "$tool" >/dev/null; then
    echo "FAIL $tool is not installed (gcc-arm-none-eabi, qemu-system-arm, flatbuffers-compiler)"
    echo "0 1"
    exit 0
  fi
done
bazel build --noshow_progress //tools/cli:agate //tools/zoo:interpret >/dev/null 2>&1 || {
  echo "could not build the CLI and the interpreter"; echo "0 1"; exit 0; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
/usr/bin/python3 examples/mcu/run_example.py --agate "$ROOT/bazel-bin/tools/cli/agate" \
  --interpret "$ROOT/bazel-bin/tools/zoo/interpret" --work "$WORK" >"$WORK/log" 2>&1
status=$?
cat "$WORK/log"
passed=$(grep -c '^ok ' "$WORK/log")
failed=$(grep -c '^FAIL ' "$WORK/log")
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$passed $failed"
