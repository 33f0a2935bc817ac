#!/usr/bin/env bash
# The plain-Debian build: the runtime (libagate_runtime.so, every profile), its
# tests and the native parts of the bindings build with the CUDA toolkit hidden
# (AGATE_CUDA_PATH pointing nowhere: third_party/cuda/cuda_configure.bzl then
# marks @cuda's targets incompatible, so what needs the toolkit is skipped, not
# failed). Also checks that no runtime or binding source includes a toolkit header.
# Prints the log; the LAST line is "<passed> <failed>" (checks). Always exits 0.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
passed=0
failed=0
note() { if [ "$1" -eq 0 ]; then echo "ok   $2"; passed=$((passed + 1)); else echo "FAIL $2"; failed=$((failed + 1)); fi; }

HIDDEN=(--repo_env=AGATE_CUDA_PATH=/nonexistent/cuda)
TARGETS=(//c_api:libagate_runtime.so //runtime_minimal/... //bindings/java:libagate_jni.so //bindings/testdata/...)
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
bazel test --jobs=2 "${HIDDEN[@]}" --build_tests_only=false "${TARGETS[@]}" >"$LOG" 2>&1
status=$?
grep -E "^//|Executed|ERROR|skipped|incompatible" "$LOG" | head -60
note "$status" "runtime, its tests and the bindings' native parts build and pass without a CUDA toolkit"
grep -q "driver_api_conformance_test.*SKIPPED\|1 was skipped\|were skipped" "$LOG"
note $? "the toolkit-only test (driver_api_conformance_test) is skipped, not failed"
leaks="$(grep -rlE '#include *[<"](cuda|cuda_runtime|nvrtc)\.h[>"]' runtime_minimal c_api bindings \
  --include='*.h' --include='*.cc' --include='*.c' | grep -v driver_api_conformance_test.cc)"
[ -z "$leaks" ]
note $? "no runtime or binding source includes a CUDA toolkit header${leaks:+ (found: $leaks)}"
# Back to the default, so later builds do not re-run the repository rule for this suite.
bazel build --nobuild //c_api:libagate_runtime.so >/dev/null 2>&1
echo "$passed $failed"
