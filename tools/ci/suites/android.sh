#!/usr/bin/env bash
# Android arm64-v8a without an Android device: bindings/android/Makefile cross-builds
# libagate_runtime.so and libagate_jni.so with Debian's aarch64 toolchain and packs agate.aar;
# then the demo, compiled for aarch64, runs under qemu-aarch64 in a C program linked against that
# runtime: through the default kernel loader (memfd), through a kernel directory (the loader for
# Android before API 30), and refused with a clear message when built for x86-64 or for CPU
# features the emulated CPU (Cortex-A53) lacks; the demo quantized to int8 for a Cortex-A76 (sdot)
# runs under qemu as one. Last, the Java binding's JUnit tests run on an
# arm64 JDK under qemu-aarch64, loading the arm64 JNI and runtime libraries from the jar the way an
# app does: Debian's openjdk-17-jre-headless:arm64 (and zlib1g:arm64) are fetched with apt into a
# private state directory and unpacked, never installed (no foreign architecture is added to the
# machine), and cached under ~/.cache/agate/arm64-jdk.
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
unzip -p "$AAR" classes.jar >"$WORK/classes.jar" && unzip -Z1 "$WORK/classes.jar" | grep '^dev/agate/NativeApi.class$' >/dev/null
note $? "classes.jar holds dev.agate"
for lib in libagate_runtime.so libagate_jni.so; do
  readelf -h "$OUT/$lib" | grep "Machine:.*AArch64" >/dev/null && ! readelf -d "$OUT/$lib" | grep "libstdc++" >/dev/null
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

# int8 on phones with the dotprod extension (Cortex-A55/A76 and later): the demo quantized by agate
# (post-training, 8 random calibration samples) and compiled for a Cortex-A76 takes the sdot conv and
# matmul templates; under qemu-aarch64 as a Cortex-A76 its output equals, within the demo's
# tolerance, the same int8 model compiled for this x86 host and run by agate (integer-exact
# kernels on both: the float steps around them differ by rounding only); a Cortex-A53 refuses it.
/usr/bin/python3 -c "
import numpy as np
np.savez('$WORK/calib.npz', input=np.random.RandomState(0).randn(8, 1, 3, 32, 32).astype(np.float32))
np.savez('$WORK/in.npz', input=np.fromfile('${IO[0]}', dtype=np.float32).reshape(1, 3, 32, 32))" &&
  "$BIN" compile examples/demo/demo_cnn.onnx -o "$WORK/int8_a76.agm" --quantize int8 --calibration "$WORK/calib.npz" \
    --target "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76" >"$WORK/int8.log" 2>&1 &&
  [ "$(grep -c "int8 dotprod (sdot)" "$WORK/int8.log")" -ge 5 ] &&
  "$BIN" compile examples/demo/demo_cnn.onnx -o "$WORK/int8_host.agm" --quantize int8 --calibration "$WORK/calib.npz" \
    >/dev/null 2>&1 &&
  "$BIN" run "$WORK/int8_host.agm" --inputs "$WORK/in.npz" --outputs "$WORK/int8_host.npz" >/dev/null &&
  /usr/bin/python3 -c "
import numpy as np
np.load('$WORK/int8_host.npz')['output'].astype(np.float32).tofile('$WORK/int8_expected.bin')"
note $? "the demo quantized to int8 and compiled for a Cortex-A76: its convs and matmul use sdot ($(grep -c "int8 dotprod (sdot)" "$WORK/int8.log") kernels)"
QEMU_CPU=cortex-a76 run_arm "$WORK/int8_a76.agm" "${IO[0]}" "$WORK/int8_expected.bin"
note $? "the sdot int8 module under qemu-aarch64 (Cortex-A76) matches the same int8 model on this x86 host"
QEMU_CPU=cortex-a53 run_arm "$WORK/int8_a76.agm" "${IO[0]}" "$WORK/int8_expected.bin" 2>"$WORK/err.txt"
[ $? -ne 0 ] && grep -q "CPU features .*dotprod.* that this CPU lacks" "$WORK/err.txt"
note $? "the sdot module is refused on a Cortex-A53 naming dotprod"

# ---- JUnit on an arm64 JDK under qemu-aarch64
JDK_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agate/arm64-jdk"
JAVA_ARM="$JDK_CACHE/root/usr/lib/jvm/java-17-openjdk-arm64/bin/java"
fetch_arm64_jdk() {
  [ -x "$JAVA_ARM" ] && return 0
  local apt_dir="$WORK/apt" opts
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs" "$JDK_CACHE.tmp"
  opts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Dir::State::Lists="$apt_dir/lists"
        -o Dir::Cache="$apt_dir/cache" -o Dir::State::status=/dev/null)
  apt-get "${opts[@]}" -qq update >"$WORK/apt.log" 2>&1 &&
    (cd "$apt_dir/debs" && apt-get "${opts[@]}" -qq download openjdk-17-jre-headless zlib1g >>"$WORK/apt.log" 2>&1) &&
    for deb in "$apt_dir"/debs/*.deb; do dpkg-deb -x "$deb" "$JDK_CACHE.tmp/root" || return 1; done &&
    rm -rf "$JDK_CACHE" && mv "$JDK_CACHE.tmp" "$JDK_CACHE" && [ -x "$JAVA_ARM" ]
}
JUNIT=/usr/share/java/junit-platform-console-standalone.jar
J="$WORK/junit"
if ! fetch_arm64_jdk; then
  tail -5 "$WORK/apt.log"
  note 1 "Debian's arm64 OpenJDK 17 fetched and unpacked (apt-get download openjdk-17-jre-headless:arm64)"
elif ! { bazel build --noshow_progress //bindings/testdata:make_fixtures >"$WORK/fixtures.log" 2>&1 &&
         mkdir -p "$J/modules" "$J/classes" "$J/test-classes" "$J/res/dev/agate/native/linux-aarch64" &&
         aarch64-linux-gnu-gcc -std=c99 -O2 -fPIC -shared -I. -Ic_api/include -isystem /usr/include/dlpack \
           bindings/testdata/fixture_kernels.c -o "$J/libfixture_kernels.so" &&
         "$ROOT/bazel-bin/bindings/testdata/make_fixtures" "$J/libfixture_kernels.so" "$J/modules" >/dev/null &&
         (cd "$J/classes" && unzip -q "$WORK/classes.jar") &&
         javac -Xlint:all -d "$J/test-classes" -cp "$J/classes:$JUNIT" $(find bindings/java/src/test -name '*.java') &&
         cp "$OUT/libagate_jni.so" "$OUT/libagate_runtime.so" "$J/res/dev/agate/native/linux-aarch64/" &&
         jar cf "$J/agate.jar" -C "$J/classes" . -C "$J/res" .; }; then
  note 1 "arm64 fixture modules, JUnit test classes and agate.jar with the arm64 libraries built"
else
  # The CUDA tests skip themselves (no driver in the emulated process): JUnit reports them aborted.
  AGATE_TESTDATA_DIR="$J/modules" QEMU_CPU=cortex-a53 qemu-aarch64-static -L /usr/aarch64-linux-gnu \
    -E LD_LIBRARY_PATH="$JDK_CACHE/root/usr/lib/aarch64-linux-gnu:$JDK_CACHE/root/lib/aarch64-linux-gnu" \
    "$JAVA_ARM" -Xcheck:jni -Dagate.native.dir="$J/native" -Dagate.test.expect.jar=true -jar "$JUNIT" \
    --disable-banner --disable-ansi-colors --details=tree -cp "$J/agate.jar:$J/test-classes" \
    --select-package dev.agate >"$J/junit.log" 2>&1
  status=$?
  cat "$J/junit.log"
  count() { awk -v what="$1" '$0 ~ "tests " what {gsub(/[^0-9]/, "", $2); n += $2} END {print n + 0}' "$J/junit.log"; }
  junit_passed=$(count successful)
  junit_failed=$(count failed)
  echo "android suite: JUnit on the arm64 JDK: $junit_passed passed, $junit_failed failed, $(count aborted) skipped themselves"
  if [ "$status" -ne 0 ] && [ "$junit_failed" -eq 0 ]; then junit_failed=1; fi
  passed=$((passed + junit_passed))
  failed=$((failed + junit_failed))
  ls "$J/native"/*/libagate_jni.so >/dev/null 2>&1 || [ -f "$J/native/libagate_jni.so" ]
  note $? "the arm64 JNI library was extracted from agate.jar (NativeLoader), not found on a library path"
fi
echo "$passed $failed"
