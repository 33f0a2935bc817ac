#!/usr/bin/env bash
# Batch-bounded module vs static modules (issue 16 goal: within 1.1x of both), report only.
# ResNet-50 (torchvision, exported here with a dynamic batch axis "N" on its input and output,
# untrained weights: the timing does not depend on them) compiled three times, same target:
#   bounded  --input-shape input:Nx3x224x224 --bounds N=1..8   (variants 1, 8)
#   static1  batch 1      static8  batch 8
# then timed through the path a user takes (`agate run --print-time`), bounded and static
# interleaved, ROUNDS rounds of REPEAT runs each; prints the median of each round's median,
# the spread (min..max of the round medians), the ratio bounded/static at batch 1 and 8, and
# the load average. Rerun: benchmarks/dynamic_batch/run.sh [MODEL.onnx with a dynamic batch] (AGATE_ROUNDS, AGATE_REPEAT,
# AGATE_TARGET, AGATE_INPUT, AGATE (a built CLI) override the defaults).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
MODEL="${1:-}"
INPUT="${AGATE_INPUT:-input}"
TARGET="${AGATE_TARGET:-llvm -mcpu=native}"
ROUNDS="${AGATE_ROUNDS:-5}"
REPEAT="${AGATE_REPEAT:-10}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
if [ -z "${AGATE:-}" ]; then  # AGATE=path/to/agate uses an already built CLI
  bazel build --noshow_progress //tools/cli:agate >/dev/null
  AGATE="$ROOT/bazel-bin/tools/cli/agate"
fi
if [ -z "$MODEL" ]; then
  MODEL="$WORK/resnet50_dynamic.onnx"
  /usr/bin/python3 - "$MODEL" <<'PY'
import sys
import torch
import torchvision
model = torchvision.models.resnet50().eval()
torch.onnx.export(model, torch.randn(1, 3, 224, 224), sys.argv[1], input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "N"}, "output": {0: "N"}}, opset_version=13)
PY
fi
echo "model $MODEL, target '$TARGET', $ROUNDS rounds x $REPEAT runs; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$AGATE" compile "$MODEL" -o "$WORK/bounded.agm" --target "$TARGET" --input-shape "$INPUT:Nx3x224x224" --bounds N=1..8 \
  >"$WORK/bounded.log" 2>&1 || { tail -5 "$WORK/bounded.log"; exit 1; }
"$AGATE" compile "$MODEL" -o "$WORK/static1.agm" --target "$TARGET" --input-shape "$INPUT:1x3x224x224" >/dev/null 2>&1
"$AGATE" compile "$MODEL" -o "$WORK/static8.agm" --target "$TARGET" --input-shape "$INPUT:8x3x224x224" >/dev/null 2>&1
/usr/bin/python3 - "$WORK" "$INPUT" <<'PY'
import sys
import numpy as np
work, name = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
for n in (1, 8):
    np.savez(f"{work}/in{n}.npz", **{name: rng.standard_normal((n, 3, 224, 224)).astype(np.float32)})
PY
median_ms() {  # module, inputs: the median of one `agate run --print-time` round
  "$AGATE" run "$1" --inputs "$2" --repeat "$REPEAT" --print-time 2>/dev/null | awk '/median/ { getline; print $2 }'
}
for n in 1 8; do
  : >"$WORK/b$n.txt"
  : >"$WORK/s$n.txt"
  for _ in $(seq "$ROUNDS"); do
    median_ms "$WORK/bounded.agm" "$WORK/in$n.npz" >>"$WORK/b$n.txt"
    median_ms "$WORK/static$n.agm" "$WORK/in$n.npz" >>"$WORK/s$n.txt"
  done
  /usr/bin/python3 - "$WORK/b$n.txt" "$WORK/s$n.txt" "$n" <<'PY'
import statistics, sys
b = [float(x) for x in open(sys.argv[1]).read().split()]
s = [float(x) for x in open(sys.argv[2]).read().split()]
mb, ms = statistics.median(b), statistics.median(s)
print(f"batch {sys.argv[3]}: bounded {mb:.2f} ms (rounds {min(b):.2f}..{max(b):.2f}), static {ms:.2f} ms "
      f"(rounds {min(s):.2f}..{max(s):.2f}), bounded/static {mb / ms:.3f}")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
