#!/usr/bin/env bash
# The Rust binding's suite: builds the runtime shared library and the fixture
# modules (bindings/testdata/prepare.sh), then `cargo test` of bindings/rust
# (offline, target dir bindings/rust/target). Prints the log; the LAST line is
# "<passed> <failed>" ("0 1" when nothing could be built). Always exits 0.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"

if ! bindings/testdata/prepare.sh; then
  echo "rust suite: could not build the runtime library or the fixtures"
  echo "0 1"
  exit 0
fi
# CUDA tests: the fake driver where no NVIDIA driver is installed.
source bindings/testdata/cuda_env.sh
if ! command -v cargo >/dev/null; then
  echo "rust suite: cargo not found"
  echo "0 1"
  exit 0
fi

export AGATE_RUNTIME_LIB_DIR="$ROOT/bindings/testdata/out/lib"
export AGATE_TESTDATA_DIR="$ROOT/bindings/testdata/out/modules"
export LD_LIBRARY_PATH="$AGATE_RUNTIME_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CARGO_TARGET_DIR="$ROOT/bindings/rust/target"
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
(cd bindings/rust && cargo test --offline --no-fail-fast -j 2 2>&1) | tee "$LOG"
status=${PIPESTATUS[0]}

# "test result: ok. 17 passed; 0 failed; ..." once per test binary and for doc tests.
read -r passed failed < <(awk '/^test result:/ {
    for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1) }
  } END { print p + 0, f + 0 }' "$LOG")
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "rust suite: cargo test exited $status without a failed test case (build error or crash)"
  failed=1
fi
echo "$passed $failed"
