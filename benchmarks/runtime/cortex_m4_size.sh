#!/bin/sh
# Flash size of agate's core runtime profile on a Cortex-M4, and of the host
# profile. Rerun from anywhere: benchmarks/runtime/cortex_m4_size.sh
#
# Needs: arm-none-eabi-g++ / arm-none-eabi-size (Debian gcc-arm-none-eabi,
# libstdc++-arm-none-eabi-newlib), flatc (flatbuffers-compiler), and for the host
# line a built //c_api:libagate_runtime.so (bazel build -c opt //c_api:libagate_runtime.so).
#
# Two builds of the core profile:
#   messages     every refusal carries its full message (names, offsets, sizes);
#   no messages  -DAGATE_RT_NO_MESSAGES: the message is the status name and the
#                source line that refused ("corrupt at runtime_minimal/core/verify.cc:210");
# and two figures for each:
#   objects      every core object compiled (an upper bound: all C functions kept);
#   firmware     a firmware that loads, verifies and runs a module, linked with
#                --gc-sections, minus the same firmware without the runtime: what an
#                application pays, FlatBuffers verifier and newlib helpers included.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$root"  # relative source paths: shorter file names in no-message builds

mkdir -p "$out/gen/runtime_minimal/schema" "$out/include/dlpack"
flatc --cpp --scoped-enums -o "$out/gen/runtime_minimal/schema" runtime_minimal/schema/module.fbs
cp -r /usr/include/flatbuffers "$out/include/"
cp /usr/include/dlpack/dlpack.h "$out/include/dlpack/"

CXX=arm-none-eabi-g++
FLAGS="-Os -mcpu=cortex-m4 -mthumb -fno-exceptions -fno-rtti -std=c++17 -ffunction-sections -fdata-sections -fno-threadsafe-statics -DNDEBUG -DAGATE_RT_SINGLE_THREADED -DAGATE_RT_STATIC_SHAPES_ONLY"
LINK="-specs=nano.specs -specs=nosys.specs -Wl,--gc-sections"
INCLUDES="-I. -I$out/gen -Ic_api/include -I$out/include"
SOURCES="c_api executor message module verify"
echo "compiler: $($CXX --version | head -1)"
echo "flags:    $CXX $FLAGS [variant flags]"
echo "link:     $CXX [flags] $LINK"

text_data() { arm-none-eabi-size "$1" | awk 'NR==2 { print $1 + $2 }'; }

measure() {
  variant="$1"
  extra="$2"
  dir="$out/$(echo "$variant" | tr " " _)"
  mkdir -p "$dir"
  objects=""
  for src in $SOURCES; do
    $CXX $FLAGS $extra $INCLUDES -c "runtime_minimal/core/$src.cc" -o "$dir/$src.o"
    objects="$objects $dir/$src.o"
  done
  $CXX $FLAGS $extra $INCLUDES -c benchmarks/runtime/cortex_m4_firmware.cc -o "$dir/firmware.o"
  $CXX $FLAGS $extra $INCLUDES -DAGATE_BASELINE -c benchmarks/runtime/cortex_m4_firmware.cc -o "$dir/baseline.o"
  $CXX $FLAGS $LINK "$dir/firmware.o" $objects -o "$dir/firmware.elf"
  $CXX $FLAGS $LINK "$dir/baseline.o" -o "$dir/baseline.elf"
  echo
  echo "== core profile, $variant ${extra:+($extra)}"
  (cd "$dir" && arm-none-eabi-size -t c_api.o executor.o message.o module.o verify.o && arm-none-eabi-size firmware.elf baseline.elf)
  fw=$(text_data "$dir/firmware.elf")
  base=$(text_data "$dir/baseline.elf")
  echo "flash cost (text+data, firmware - baseline): $((fw - base)) bytes   [goal < 8192; TFLite Micro: 9732]"
  fbs=$(arm-none-eabi-nm -S -C "$dir/firmware.elf" | grep -E ' [TtWw] (flatbuffers::|agate::fb::)' |
        while read -r _ size _; do echo $((0x$size)); done | awk '{ s += $1 } END { print s + 0 }')
  echo "  of which FlatBuffers verifier templates (flatbuffers::, agate::fb:: code): $fbs bytes"
  echo "  verify.o (FlatBuffers verifier + semantic checks, all functions): $(text_data "$dir/verify.o") bytes"
}

measure "messages" ""
measure "no messages" "-DAGATE_RT_NO_MESSAGES"

echo
lib="bazel-bin/c_api/libagate_runtime.so"
if [ -f "$lib" ]; then
  echo "== host profile: libagate_runtime.so (core + host + cuda, x86-64, bazel -c opt)"
  size "$lib"
else
  echo "(host profile: bazel build -c opt //c_api:libagate_runtime.so, then rerun, to print its size)"
fi
