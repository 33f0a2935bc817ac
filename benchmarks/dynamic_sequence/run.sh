#!/usr/bin/env bash
# A sequence-bounded module vs static modules and ONNX Runtime (issue 16), report only.
# A BERT-base-sized encoder (tools/zoo/text_models.py: 12 layers, d=768, 12 heads; untrained
# weights, which the timing does not depend on) exported here with a dynamic sequence axis "S" on
# input_ids and attention_mask, compiled
#   bounded  --bounds S=1..128   (padded variants 16, 32, 64, 128: a run of n pads to the next)
#   static   one module per measured n (--input-shape input_ids:1xN,attention_mask:1xN)
# and timed through the path a user takes (`agate run --print-time --threads T`), interleaved with
# ONNX Runtime 1.30 (benchmarks/peers/ort_models.js, which runs the dynamic model at each n),
# ROUNDS rounds of REPEAT runs each. Prints per n: the median of the round medians and their
# spread, bounded/static and ONNX Runtime/bounded (> 1: agate faster), and the largest difference
# between the bounded and the static module's outputs on the same input. Rerun:
#   benchmarks/dynamic_sequence/run.sh   (AGATE_LENGTHS="128 100 40 12", AGATE_THREADS=1,
#   AGATE_ROUNDS=3, AGATE_REPEAT=10, AGATE_TARGET, AGATE_LAYERS=12, AGATE (a built CLI) override)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
LENGTHS="${AGATE_LENGTHS:-128 100 40 12}"
THREADS="${AGATE_THREADS:-1}"
ROUNDS="${AGATE_ROUNDS:-3}"
REPEAT="${AGATE_REPEAT:-10}"
TARGET="${AGATE_TARGET:-llvm -mcpu=native}"
LAYERS="${AGATE_LAYERS:-12}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
if [ -z "${AGATE:-}" ]; then
  bazel build --noshow_progress //tools/cli:agate >/dev/null
  AGATE="$ROOT/bazel-bin/tools/cli/agate"
fi
ORT_DIR="$ROOT/benchmarks/peers"
[ -d "$ORT_DIR/node_modules/onnxruntime-node" ] || { echo "install ONNX Runtime first: (cd benchmarks/peers && npm install --ignore-scripts onnxruntime-node@1.30.0)"; exit 1; }
/usr/bin/python3 - "$WORK" "$LAYERS" $LENGTHS <<'PY'
import sys
import numpy as np
import torch
sys.path.insert(0, "tools/zoo")
import text_models
work, layers, lengths = sys.argv[1], int(sys.argv[2]), [int(n) for n in sys.argv[3:]]
torch.manual_seed(0)
model = text_models.BertEncoder(layers, 768, 12, 3072).eval()
ids = torch.randint(0, 30522, (1, 9))
torch.onnx.export(model, (ids, torch.ones(1, 9, dtype=torch.int64)), f"{work}/bert.onnx",
                  input_names=["input_ids", "attention_mask"], output_names=["output"],
                  dynamic_axes={"input_ids": {1: "S"}, "attention_mask": {1: "S"}, "output": {1: "S"}},
                  opset_version=13)
rng = np.random.default_rng(0)
for n in lengths:
    mask = np.ones((1, n), np.int64)
    mask[0, n - n // 8:] = 0  # the last eighth padding, as the zoo's bert_base
    np.savez(f"{work}/in{n}.npz", input_ids=rng.integers(0, 30522, (1, n)), attention_mask=mask)
PY
echo "BERT-base-sized encoder ($LAYERS layers), target '$TARGET', $THREADS thread(s), $ROUNDS rounds x $REPEAT runs"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo)"
"$AGATE" compile "$WORK/bert.onnx" -o "$WORK/bounded.agm" --target "$TARGET" --bounds S=1..128 \
  >"$WORK/bounded.log" 2>&1 || { tail -5 "$WORK/bounded.log"; exit 1; }
"$AGATE" inspect "$WORK/bounded.agm" | grep '^symbol'
for n in $LENGTHS; do
  "$AGATE" compile "$WORK/bert.onnx" -o "$WORK/static$n.agm" --target "$TARGET" \
    --input-shape "input_ids:1x$n,attention_mask:1x$n" >/dev/null 2>&1
done
median_ms() {  # module, inputs
  "$AGATE" run "$1" --inputs "$2" --repeat "$REPEAT" --threads "$THREADS" --print-time 2>/dev/null |
    awk '/median/ { getline; print $2 }'
}
for n in $LENGTHS; do
  : >"$WORK/b$n.txt"; : >"$WORK/s$n.txt"; : >"$WORK/o$n.txt"
  for _ in $(seq "$ROUNDS"); do
    median_ms "$WORK/bounded.agm" "$WORK/in$n.npz" >>"$WORK/b$n.txt"
    median_ms "$WORK/static$n.agm" "$WORK/in$n.npz" >>"$WORK/s$n.txt"
    (cd "$ORT_DIR" && node ort_models.js "$WORK/bert.onnx" --input "input_ids:int64:1x$n" \
      --input "attention_mask:int64:1x$n" --threads "$THREADS" --runs "$REPEAT") |
      /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["median_ms"])' >>"$WORK/o$n.txt"
  done
  "$AGATE" run "$WORK/bounded.agm" --inputs "$WORK/in$n.npz" --outputs "$WORK/ob$n.npz" >/dev/null 2>&1
  "$AGATE" run "$WORK/static$n.agm" --inputs "$WORK/in$n.npz" --outputs "$WORK/os$n.npz" >/dev/null 2>&1
  /usr/bin/python3 - "$WORK" "$n" <<'PY'
import statistics, sys
import numpy as np
work, n = sys.argv[1], sys.argv[2]
def figures(name):
    values = [float(x) for x in open(f"{work}/{name}{n}.txt").read().split()]
    return statistics.median(values), min(values), max(values)
(b, b0, b1), (s, s0, s1), (o, o0, o1) = figures("b"), figures("s"), figures("o")
diff = float(np.abs(np.load(f"{work}/ob{n}.npz")["output"] - np.load(f"{work}/os{n}.npz")["output"]).max())
print(f"S={n:>4}: bounded {b:8.2f} ms ({b0:.2f}..{b1:.2f})  static {s:8.2f} ({s0:.2f}..{s1:.2f})  "
      f"ONNX Runtime {o:8.2f} ({o0:.2f}..{o1:.2f})  bounded/static {b / s:.2f}  ORT/bounded {o / b:.2f}  "
      f"max |bounded - static| {diff:.1e}")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
