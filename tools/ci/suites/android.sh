#!/usr/bin/env bash
# Android arm64-v8a without an Android device: bindings/android/Makefile cross-builds
# libagate_runtime.so and libagate_jni.so with Debian's aarch64 toolchain and packs agate.aar;
# then the demo, compiled for aarch64, runs under qemu-aarch64 in a C program linked against that
# runtime: through the default kernel loader (memfd), through a kernel directory (the loader for
# Android before API 30), and refused with a clear message when built for x86-64 or for CPU
# features the emulated CPU (Cortex-A53) lacks.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
passed=0
failed=0
note() { if [ "$1" -eq 0 ]; then echo "ok   $2"; passed=$((passed + 1)); else echo "FAIL $2"; failed=$((failed + 1)); fi; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  if ! command -v "$tool" >/dev/null; then
    echo "android suite: $tool not found (Debian packages g++-aarch64-linux-gnu, qemu-user-static)"
    echo "0 1"
    exit 0
  fi
done
if ! make -j2 -C bindings/android all aar >"$WORK/make.log" 2>&1; then
  grep -E "error|Error" "$WORK/make.log" | head -20
  note 1 "cross-build of the arm64 runtime, JNI library and AAR"
  echo "$passed $failed"
  exit 0
fi
note 0 "cross-build of the arm64 runtime, JNI library and AAR"
OUT="$ROOT/bindings/android/build/arm64-v8a"
AAR="$ROOT/bindings/android/build/agate.aar"

entries="$(unzip -Z1 "$AAR" | sort | tr '\n' ' ')"
[ "$entries" = "AndroidManifest.xml classes.jar jni/ jni/arm64-v8a/ jni/arm64-v8a/libagate_jni.so jni/arm64-v8a/libagate_runtime.so " ]
note $? "agate.aar holds AndroidManifest.xml, classes.jar and jni/arm64-v8a/*.so (has: $entries)"
unzip -p "$AAR" classes.jar >"$WORK/classes.jar" && unzip -Z1 "$WORK/classes.jar" | grep -q '^dev/agate/NativeApi.class$'
note $? "classes.jar holds dev.agate"
for lib in libagate_runtime.so libagate_jni.so; do
  readelf -h "$OUT/$lib" | grep -q "Machine:.*AArch64" && ! readelf -d "$OUT/$lib" | grep -q "libstdc++"
  note $? "$lib is AArch64 and needs no shared libstdc++ (Android has none)"
done

BIN="$ROOT/bazel-bin/tools/cli/agate"
bazel build --noshow_progress //tools/cli:agate >/dev/null 2>&1 &&
  "$BIN" compile examples/demo/demo_cnn.onnx -o "$WORK/arm.agm" --target "llvm -mtriple=aarch64-linux-gnu" >/dev/null &&
  "$BIN" compile examples/demo/demo_cnn.onnx -o "$WORK/x86.agm" --target "llvm -mcpu=x86-64-v3" >/dev/null &&
  "$BIN" compile examples/demo/demo_cnn.onnx -o "$WORK/sve.agm" --target "llvm -mtriple=aarch64-linux-gnu -mattr=+sve2" \
    >/dev/null
note $? "the demo compiled for aarch64, x86-64-v3 and aarch64+SVE2"

aarch64-linux-gnu-gcc -std=c99 -Wall -Wextra -Werror -pedantic tests/install/demo.c -o "$WORK/demo" \
  -Ic_api/include -isystem "$OUT/include" -L"$OUT" -lagate_runtime -lm -Wl,-rpath,"$OUT"
note $? "the C demo program cross-built against the arm64 runtime"
IO=("$ROOT/c_api/testing/demo_input.bin" "$ROOT/c_api/testing/demo_expected.bin")
run_arm() { QEMU_CPU="${QEMU_CPU:-cortex-a53}" qemu-aarch64-static -L /usr/aarch64-linux-gnu "$WORK/demo" "$@"; }

run_arm "$WORK/arm.agm" "${IO[@]}"
note $? "arm64 runtime under qemu-aarch64 (Cortex-A53): the demo matches PyTorch (memfd loader)"
mkdir "$WORK/kernels"
run_arm "$WORK/arm.agm" "${IO[@]}" "$WORK/kernels" && [ -z "$(ls -A "$WORK/kernels")" ]
note $? "the same through a kernel directory (Android before API 30), which is empty again afterwards"
run_arm "$WORK/x86.agm" "${IO[@]}" 2>"$WORK/err.txt"
[ $? -ne 0 ] && grep -q "module built for x86-64, this runtime runs on aarch64" "$WORK/err.txt"
note $? "an x86-64 module is refused naming both architectures ($(cat "$WORK/err.txt"))"
run_arm "$WORK/sve.agm" "${IO[@]}" 2>"$WORK/err.txt"
[ $? -ne 0 ] && grep -q "CPU features .*sve2.* that this CPU lacks" "$WORK/err.txt"
note $? "an SVE2 module is refused on a Cortex-A53 naming the features (getauxval)"
echo "$passed $failed"
