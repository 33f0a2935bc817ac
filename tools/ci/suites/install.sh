#!/usr/bin/env bash
# The installable runtime (tools/install): the installer's own tests (a failed install leaves the
# prefix as it was), then `./agate install --prefix` into a temporary prefix and, from a folder
# outside the repository, a C program (linked with the shared and with the static library), a Rust
# program (cargo, offline, the agate crate by path; static link) and a Go program (agate.dev/agate
# as a local module, `#cgo pkg-config`) built against that prefix through pkg-config, each running
# the demo module and comparing its outputs with PyTorch's.
# Prints its log and, as its last line, "<passed> <failed>".
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
command -v cargo >/dev/null || export PATH="$HOME/.cargo/bin:$PATH"
passed=0
failed=0
note() { if [ "$1" -eq 0 ]; then echo "ok   $2"; passed=$((passed + 1)); else echo "FAIL $2"; failed=$((failed + 1)); fi; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PREFIX="$WORK/prefix"

log="$(/usr/bin/python3 tools/install/install_test.py -v 2>&1)"
echo "$log"
ran=$(echo "$log" | sed -n 's/^Ran \([0-9]*\) tests\? .*/\1/p')
bad=$(echo "$log" | grep -cE ' \.\.\. (FAIL|ERROR)$')
if [ -z "$ran" ]; then failed=$((failed + 1)); else passed=$((passed + ran - bad)); failed=$((failed + bad)); fi

if ! ./agate install --prefix "$PREFIX" >"$WORK/install.log" 2>&1; then
  tail -20 "$WORK/install.log"
  note 1 "./agate install --prefix"
  echo "$passed $failed"
  exit 0
fi
note 0 "./agate install --prefix laid out $(grep -c "^$PREFIX" "$WORK/install.log") files"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
readelf -d "$PREFIX/lib/libagate_runtime.so.1" | grep 'SONAME.*\[libagate_runtime\.so\.1\]' >/dev/null
note $? "libagate_runtime.so.1 has the SONAME libagate_runtime.so.1"

bazel build --noshow_progress //tools/cli:agate >/dev/null 2>&1 &&
  "$ROOT/bazel-bin/tools/cli/agate" compile examples/demo/demo_cnn.onnx -o "$WORK/demo.agm" \
    --target "llvm -mcpu=x86-64-v3" >"$WORK/compile.log" 2>&1
status=$?
[ "$status" -eq 0 ] || tail -5 "$WORK/compile.log"
note "$status" "the demo compiled for a portable target (llvm -mcpu=x86-64-v3)"
ARGS=("$WORK/demo.agm" "$ROOT/c_api/testing/demo_input.bin" "$ROOT/c_api/testing/demo_expected.bin")

# Everything below builds in $WORK/src, a copy outside the repository.
mkdir -p "$WORK/src"
cp -r tests/install/demo.c tests/install/rust_demo tests/install/go_demo "$WORK/src/"
cd "$WORK/src"

gcc -std=c99 -Wall -Wextra -Werror -pedantic demo.c -o demo_shared $(pkg-config --cflags --libs agate-runtime) \
  -Wl,-rpath,"$PREFIX/lib" -lm && ./demo_shared "${ARGS[@]}" &&
  ldd ./demo_shared | grep "libagate_runtime.so.1 => $PREFIX/lib/" >/dev/null
note $? "C program, shared library from the prefix (pkg-config agate-runtime)"

static_libs="$(pkg-config --static --libs agate-runtime | sed 's/-lagate_runtime/-l:libagate_runtime.a/')"
gcc -std=c99 -Wall -Wextra -Werror -pedantic demo.c -o demo_static $(pkg-config --cflags agate-runtime) $static_libs -lm &&
  ./demo_static "${ARGS[@]}" && ! readelf -d ./demo_static | grep agate_runtime >/dev/null
note $? "C program, static library (pkg-config --static), no agate library needed at run time"

sed -i "s|AGATE_CRATE_PATH|$ROOT/bindings/rust|" rust_demo/Cargo.toml
(cd rust_demo && CARGO_TARGET_DIR="$WORK/cargo" cargo build --offline -q 2>&1 | tail -20) &&
  "$WORK/cargo/debug/agate_rust_demo" "${ARGS[@]}" &&
  ! readelf -d "$WORK/cargo/debug/agate_rust_demo" | grep -E "agate_runtime|RPATH|RUNPATH" >/dev/null
note $? "Rust program (path dependency, pkg-config, static link, no rpath)"

sed -i "s|AGATE_GO_PATH|$ROOT/bindings/go|" go_demo/go.mod
(cd go_demo && CGO_ENABLED=1 CGO_LDFLAGS="-Wl,-rpath,$PREFIX/lib" GOFLAGS=-mod=mod GOPROXY=off \
  GOCACHE="${GOCACHE:-$HOME/.cache/go-build}" go build -o "$WORK/agate_go_demo" . 2>&1 | tail -20) &&
  "$WORK/agate_go_demo" "${ARGS[@]}"
note $? "Go program (agate.dev/agate as a local module, #cgo pkg-config)"

echo "$passed $failed"
