#!/bin/sh
# Builds the example firmware: the agate core runtime, three packages and firmware/main.c, for one
# of QEMU's Arm boards, with arm-none-eabi-gcc and newlib (semihosting, rdimon).
#
#   examples/mcu/build_firmware.sh BOARD OUT_DIR KWS_PACKAGE KWS8_PACKAGE DEMO_PACKAGE
#
# BOARD: mps2-an386 (Cortex-M4, hard float) or mps3-an547 (Cortex-M55, hard float, MVE).
# The packages are folders `agate compile --package` wrote with the prefixes kws, kws8 and demo.
# Writes OUT_DIR/firmware.elf and OUT_DIR/firmware.map; the objects stay in OUT_DIR/obj (runtime/,
# kws/, kws8/, demo/, app/), which size_report.py attributes the firmware's bytes by.
# Needs: gcc-arm-none-eabi, libnewlib-arm-none-eabi, libstdc++-arm-none-eabi-newlib,
# flatbuffers-compiler (flatc), libflatbuffers-dev and libdlpack-dev (their headers).
set -eu
board="$1"
out="$2"
kws="$3"
kws8="$4"
demo="$5"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

case "$board" in
  mps2-an386) cpu="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"; script=mps2_an386.ld ;;
  mps3-an547) cpu="-mcpu=cortex-m55 -mthumb -mfloat-abi=hard"; script=mps3_an547.ld ;;
  *) echo "build_firmware.sh: unknown board '$board' (mps2-an386, mps3-an547)" >&2; exit 2 ;;
esac

mkdir -p "$out/obj/runtime" "$out/obj/kws" "$out/obj/kws8" "$out/obj/demo" "$out/obj/app" "$out/include/dlpack" \
  "$out/gen/runtime_minimal/schema"
# The runtime's generated FlatBuffers reader, and the headers it needs, apart from the host's /usr/include.
flatc --cpp --scoped-enums -o "$out/gen/runtime_minimal/schema" "$root/runtime_minimal/schema/module.fbs"
cp -r /usr/include/flatbuffers "$out/include/"
cp /usr/include/dlpack/dlpack.h "$out/include/dlpack/"

common="$cpu -ffunction-sections -fdata-sections -DNDEBUG"
includes="-I$root/c_api/include -I$out/include"
# The core runtime: freestanding C++17, no exceptions, RTTI or threads; full error messages.
for src in c_api executor message module verify; do
  arm-none-eabi-g++ $common -Os -std=c++17 -fno-exceptions -fno-rtti -fno-threadsafe-statics \
    -DAGATE_RT_SINGLE_THREADED -DAGATE_RT_STATIC_SHAPES_ONLY -I"$root" -I"$out/gen" $includes \
    -c "$root/runtime_minimal/core/$src.cc" -o "$out/obj/runtime/$src.o"
done
# Each package: its table and entry points, its module array, its kernels (C source or object).
for pkg in kws kws8 demo; do
  dir=$(eval echo "\$$pkg")
  for c in "$dir"/agate_${pkg}.c "$dir"/agate_${pkg}_module.c "$dir"/agate_${pkg}_kernels.c; do
    [ -f "$c" ] || continue
    arm-none-eabi-gcc $common -O2 -std=c99 -I"$dir" $includes -c "$c" -o "$out/obj/$pkg/$(basename "$c" .c).o"
  done
  [ -f "$dir/agate_${pkg}_kernels.o" ] && cp "$dir/agate_${pkg}_kernels.o" "$out/obj/$pkg/"
done
arm-none-eabi-gcc $common -O2 -std=c99 -I"$kws" -I"$kws8" -I"$demo" $includes -c "$here/firmware/main.c" -o "$out/obj/app/main.o"
arm-none-eabi-gcc $common -O2 -std=c99 -c "$here/firmware/startup.c" -o "$out/obj/app/startup.o"
arm-none-eabi-g++ $cpu -specs=rdimon.specs -Wl,--gc-sections -Wl,-Map="$out/firmware.map" \
  -L"$here/firmware" -T "$here/firmware/$script" \
  "$out"/obj/app/*.o "$out"/obj/runtime/*.o "$out"/obj/kws/*.o "$out"/obj/kws8/*.o "$out"/obj/demo/*.o -lm -o "$out/firmware.elf"
echo "built $out/firmware.elf for $board"
