#!/usr/bin/env bash
# The Go binding's suite: builds the fixture modules (bindings/testdata/prepare.sh)
# and installs the runtime into a temporary prefix (tools/install), which cgo finds
# through pkg-config (`#cgo pkg-config: agate-runtime`), then `go test -v` of bindings/go
# (standard library only, offline: GOFLAGS=-mod=mod GOPROXY=off) with cgo's
# strict pointer checks (GODEBUG=cgocheck=2). Prints the log; the LAST line is
# "<passed> <failed>" ("0 1" when nothing could be built). Always exits 0.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"

if ! bindings/testdata/prepare.sh; then
  echo "go suite: could not build the runtime library or the fixtures"
  echo "0 1"
  exit 0
fi
# CUDA tests: the fake driver where no NVIDIA driver is installed.
source bindings/testdata/cuda_env.sh
if ! command -v go >/dev/null; then
  echo "go suite: go not found (Debian package golang-go)"
  echo "0 1"
  exit 0
fi

PREFIX="$(mktemp -d)"
LOG="$(mktemp)"
trap 'rm -rf "$LOG" "$PREFIX"' EXIT
if ! bazel build --noshow_progress //tools/install:agate_runtime_tarball >/dev/null 2>&1 ||
   ! /usr/bin/python3 tools/install/install.py --prefix "$PREFIX" \
       --tarball "$(bazel info bazel-bin 2>/dev/null)/tools/install/agate-runtime.tar.gz" >/dev/null; then
  echo "go suite: could not build or install the runtime"
  echo "0 1"
  exit 0
fi
export CGO_ENABLED=1
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
export CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib"
export GOFLAGS=-mod=mod GOPROXY=off
export AGATE_TESTDATA_DIR="$ROOT/bindings/testdata/out/modules"
(cd bindings/go && GODEBUG=cgocheck=2 go test -v -count=1 -p 2 ./... 2>&1) | tee "$LOG"
status=${PIPESTATUS[0]}

# Top-level test results: "--- PASS: TestName (0.00s)" / "--- FAIL: ...".
passed=$(grep -c '^--- PASS: ' "$LOG")
failed=$(grep -c '^--- FAIL: ' "$LOG")
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "go suite: go test exited $status without a failed test (build error or crash)"
  failed=1
fi
echo "$passed $failed"
