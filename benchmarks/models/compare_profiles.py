#!/usr/bin/python3
"""Where agate loses to ONNX Runtime, kernel by kernel (issue: speed beyond the seed models).

The model table (run.py) says how much slower or faster a whole model is; this says where. For one zoo model and
thread count it compiles the model (--fusion rule), takes agate's per-kernel profile (`agate run --profile`) and
ONNX Runtime's own per-node profile of the same model (benchmarks/peers/ort_models.js --profile), and matches each
ONNX Runtime node to the agate kernel that computes the same ONNX node: ONNX Runtime names a fused node after the
ONNX node or the output it ends with (e.g. "/layer1/layer1.0/relu/Relu_output_0_nchwc" for conv + relu), and agate's
kernel list names every ONNX node a kernel holds. Prints both totals (median time per node or kernel, summed), then
the kernels sorted by agate ms - ONNX Runtime ms, with agate's schedule. ONNX Runtime nodes no agate kernel holds
(its own fused transformer ops, renamed nodes) are summed as "unmatched"; their time is left out of the rows.

Usage: benchmarks/models/compare_profiles.py MODEL [--threads 1] [--runs 10] [--rounds 3] [--rows 25]
The engines take turns --rounds times (agate, ONNX Runtime, agate, ...) and each kernel or node keeps its fastest
round: on this shared VM a whole engine's speed drifts by a quarter from one minute to the next (the same module
profiled 97 and 125 ms total in two runs), so one pair of runs can show either engine ahead everywhere.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(__file__))
import run as model_table  # noqa: E402  (the zoo's inputs, the agate binary)


def agate_profile(module, threads, runs):
    out = subprocess.run([model_table.AGATE, "run", module, "--profile", "--repeat", str(runs), "--threads",
                          str(threads)], check=True, capture_output=True, text=True).stdout
    ms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3].startswith("k") and parts[1].endswith("%"):
            ms[parts[3]] = float(parts[0])
    return ms


def agate_kernels(summary):
    """kernel name -> (the ONNX nodes it holds, as text; its schedule)."""
    kernels = {}
    for line in summary.splitlines():
        m = re.match(r"\s+(k\d+_\w+): (.*?)\s+\[(.*)", line)
        if m:
            kernels[m.group(1)] = (m.group(2), m.group(3).rstrip("]"))
    return kernels


def ort_profile(onnx, inputs, threads, runs, prefix):
    args = []
    for name, dtype, shape in inputs:
        args += ["--input", f"{name}:{dtype}:{'x'.join(map(str, shape))}"]
    subprocess.run(["node", os.path.join(ROOT, "benchmarks/peers/ort_models.js"), onnx, *args, "--threads",
                    str(threads), "--runs", str(runs), "--profile", prefix], check=True, capture_output=True, text=True)
    files = sorted(glob.glob(f"{prefix}_t{threads}_*.json"))
    if not files:
        sys.exit("compare_profiles: ONNX Runtime wrote no profile")
    per_node = defaultdict(list)
    for event in json.load(open(files[-1])):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            per_node[event["name"][: -len("_kernel_time")]].append(event["dur"] / 1000.0)
    return {node: statistics.median(times) for node, times in per_node.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", type=int, default=25)
    p.add_argument("--module", help="an agate module of the model to profile instead of compiling one")
    a = p.parse_args()
    onnx = os.path.join(model_table.ZOO, a.model + ".onnx")
    if not os.path.exists(onnx):  # the quantized models (resnet50_qdq...) come from benchmarks/quantized/run.py
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_models.py"), a.model], check=True,
                       capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        module = a.module or os.path.join(tmp, a.model + ".agm")
        summary = subprocess.run([model_table.AGATE, "compile", onnx, "-o", module if not a.module else os.path.join(
            tmp, "unused.agm"), "--fusion", "rule"], check=True, capture_output=True, text=True).stdout
        kernels = agate_kernels(summary)
        inputs = model_table.model_inputs(a.model)
        ours, theirs = {}, {}
        for r in range(a.rounds):
            for k, ms in agate_profile(module, a.threads, a.runs).items():
                ours[k] = min(ms, ours.get(k, ms))
            for n, ms in ort_profile(onnx, inputs, a.threads, a.runs, os.path.join(tmp, f"ort{r}")).items():
                theirs[n] = min(ms, theirs.get(n, ms))
    matched, unmatched, unmatched_nodes = defaultdict(float), 0.0, {}
    for node, ms in theirs.items():
        # ONNX Runtime's QDQ rewrite names a quantized node <node>_token_<n>; agate's fold, <node>_quantized.
        name = re.sub(r"(_output_\d+)?(_nchwc)?(_token_\d+)?$", "", node)
        # Its graph fusions name the new node after the first node they absorb plus a suffix
        # ("/layers.1/output/MatMul/MatMulAddFusion").
        name = re.sub(r"/[A-Za-z]+Fusion$", "", name)
        hit = next((k for k, (nodes, _) in kernels.items() if name + " (" in nodes or name + "_quantized (" in nodes),
                   None)
        if hit:
            matched[hit] += ms
        else:
            unmatched += ms
            unmatched_nodes[node] = ms
    print(f"{a.model}, {a.threads} thread(s), fastest of {a.rounds} rounds per kernel: agate {sum(ours.values()):.2f} ms in {len(ours)} kernels, "
          f"ONNX Runtime {sum(theirs.values()):.2f} ms in {len(theirs)} nodes ({unmatched:.2f} ms unmatched); "
          f"load average {model_table.load_average()}")
    total_theirs = sum(theirs.values())
    if total_theirs > 0 and unmatched > total_theirs / 2:
        # ONNX Runtime's own transformer fusions (Attention, SkipLayerNormalization, FastGelu, fused MatMul +
        # bias) carry names no ONNX node has: the rows would call every agate kernel "slower" against 0 ms.
        largest = sorted(unmatched_nodes.items(), key=lambda kv: -kv[1])[:5]
        print(f"most of ONNX Runtime's time ({100 * unmatched / total_theirs:.0f}%) is in nodes no agate kernel "
              f"holds (its own fused operators), so the rows below compare only the rest; compare the totals. "
              f"Largest: " + ", ".join(f"{n} {ms:.2f} ms" for n, ms in largest))
    rows = sorted(((ms - matched.get(k, 0.0), ms, matched.get(k, 0.0), k) for k, ms in ours.items()), reverse=True)
    print("| agate kernel | agate ms | ONNX Runtime ms | difference | agate schedule |")
    print("| --- | --- | --- | --- | --- |")
    for gap, ms, ort_ms, k in rows[: a.rows]:
        print(f"| {k} | {ms:.3f} | {ort_ms:.3f} | {gap:+.3f} | {kernels.get(k, ('', ''))[1][:90]} |")
    print(f"sum of the gaps where agate is slower: {sum(r[0] for r in rows if r[0] > 0):.2f} ms; "
          f"where it is faster: {sum(r[0] for r in rows if r[0] < 0):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
