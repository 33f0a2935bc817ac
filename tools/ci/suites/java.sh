#!/usr/bin/env bash
# The Java binding's suite: builds the runtime shared library, the JNI library
# (//bindings/java:libagate_jni.so) and the fixture modules
# (bindings/testdata/prepare.sh), compiles dev.agate (javac --release 8, what
# Android accepts) and its JUnit 5 tests, packs agate.jar (the classes plus the JNI
# and runtime libraries under dev/agate/native/linux-<arch>/) and runs the tests
# from that jar with Debian's JUnit console launcher under -Xcheck:jni, with no
# java.library.path: the binding extracts its libraries from the jar
# (NativeLoader, into -Dagate.native.dir). Prints the log; the LAST line is
# "<passed> <failed>" ("0 1" when nothing could be built). Always exits 0.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
JUNIT=/usr/share/java/junit-platform-console-standalone.jar
BUILD="$ROOT/bindings/java/build"

if ! bindings/testdata/prepare.sh //bindings/java:libagate_jni.so; then
  echo "java suite: could not build the runtime, JNI library or fixtures"
  echo "0 1"
  exit 0
fi
# CUDA tests: the fake driver where no NVIDIA driver is installed.
source bindings/testdata/cuda_env.sh
rm -rf "$BUILD"
mkdir -p "$BUILD/classes" "$BUILD/test-classes"
if ! javac --release 8 -Xlint:all -Xlint:-options -d "$BUILD/classes" $(find bindings/java/src/main -name '*.java') ||
   ! javac -Xlint:all -d "$BUILD/test-classes" -cp "$BUILD/classes:$JUNIT" $(find bindings/java/src/test -name '*.java'); then
  echo "java suite: javac failed"
  echo "0 1"
  exit 0
fi

case "$(uname -m)" in x86_64) ARCH=x86_64 ;; aarch64) ARCH=aarch64 ;; *) ARCH="$(uname -m)" ;; esac
NATIVE="$BUILD/jar-resources/dev/agate/native/linux-$ARCH"
mkdir -p "$NATIVE"
cp "$ROOT/bindings/testdata/out/lib/libagate_jni.so" "$ROOT/bindings/testdata/out/lib/libagate_runtime.so" "$NATIVE/"
if ! jar cf "$BUILD/agate.jar" -C "$BUILD/classes" . -C "$BUILD/jar-resources" .; then
  echo "java suite: jar failed"
  echo "0 1"
  exit 0
fi

LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
AGATE_TESTDATA_DIR="$ROOT/bindings/testdata/out/modules" \
  java -Xcheck:jni -Dagate.native.dir="$BUILD/native" -Dagate.test.expect.jar=true -jar "$JUNIT" \
  --disable-banner --disable-ansi-colors --details=tree \
  -cp "$BUILD/agate.jar:$BUILD/test-classes" --select-package dev.agate 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}

# The launcher's summary: "[        23 tests successful      ]", "[         0 tests failed          ]".
count() { awk -v what="$1" '$0 ~ "tests " what {gsub(/[^0-9]/, "", $2); n += $2} END {print n + 0}' "$LOG"; }
passed=$(count successful)
# "aborted" is JUnit's word for an assumption that did not hold: a test that
# skipped itself, saying why (the CUDA tests without a GPU). Not a failure.
failed=$(count failed)
echo "java suite: $(count aborted) test(s) skipped themselves (see 'Assumption failed' above)"

if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "java suite: the JUnit launcher exited $status without a failed test (crash or no tests run)"
  failed=1
fi
echo "$passed $failed"
