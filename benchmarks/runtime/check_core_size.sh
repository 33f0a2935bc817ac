#!/bin/sh
# Guards the core profile's flash goal: the Cortex-M4 build without messages must
# stay under 8 KiB (cortex_m4_size.sh prints every figure).
set -eu
script="$1"
if ! command -v arm-none-eabi-g++ >/dev/null 2>&1; then
  echo "arm-none-eabi-g++ is not installed (Debian gcc-arm-none-eabi): size not measured" >&2
  exit 1
fi
report=$(sh "$script" 2>&1)
echo "$report"
bytes=$(echo "$report" | grep "flash cost" | tail -1 | sed 's/.*baseline): \([0-9]*\) bytes.*/\1/')
echo "core profile without messages: $bytes bytes of flash"
[ "$bytes" -lt 8192 ]
