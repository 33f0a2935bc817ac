#!/usr/bin/env bash
# Builds what every binding's tests need and stages it under bindings/testdata/out:
#   out/lib/libagate_runtime.so   the runtime shared library (//c_api:libagate_runtime.so)
#   out/lib/libagate_fake_cuda.so the fake CUDA driver (runtime_minimal/cuda/testing/fake_cuda.h;
#                                 cuda_env.sh points the runtime at it where no NVIDIA driver is)
#   out/modules/*.agm             the fixture modules (make_fixtures; numbers in fixture_kernels.h)
#   out/modules/cuda_add.agm      the CUDA test module, y = (x + c) + x on float32[256], c[i] = i / 2
# plus any extra Bazel targets given as arguments (e.g. the JNI library), which are
# copied into out/lib. Used by tools/ci/suites/{rust,java,go}.sh; exits non-zero
# when anything fails to build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="$ROOT/bindings/testdata/out"

if ! bazel build --jobs=2 //c_api:libagate_runtime.so //bindings/testdata:make_fixtures \
  //bindings/testdata:libagate_fixture_kernels.so //runtime_minimal/cuda/testing:make_cuda_test_module \
  //runtime_minimal/cuda/testing:libagate_fake_cuda.so "$@" >"$ROOT/bindings/testdata/.build.log" 2>&1; then
  grep -vE "^(Loading|Analyzing|\[)" "$ROOT/bindings/testdata/.build.log" >&2
  echo "prepare.sh: bazel build failed" >&2
  exit 1
fi
BIN="$(bazel info bazel-bin 2>/dev/null)"
rm -rf "$OUT"
mkdir -p "$OUT/lib" "$OUT/modules"
cp "$BIN/c_api/libagate_runtime.so" "$BIN/runtime_minimal/cuda/testing/libagate_fake_cuda.so" "$OUT/lib/"
for target in "$@"; do
  package="${target#//}"
  package="${package%%:*}"
  cp "$BIN/$package/${target##*:}" "$OUT/lib/"
done
chmod u+w "$OUT"/lib/*
"$BIN/bindings/testdata/make_fixtures" "$BIN/bindings/testdata/libagate_fixture_kernels.so" "$OUT/modules"
"$BIN/runtime_minimal/cuda/testing/make_cuda_test_module" "$OUT/modules/cuda_add.agm"
ls "$OUT/modules/add_relu.agm" "$OUT/modules/classifier.agm" "$OUT/modules/cuda_add.agm" >/dev/null
