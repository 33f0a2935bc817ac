#!/usr/bin/python3
"""How fast a speed-up goal over ONNX Runtime asks a model to run, against this machine's FMA peak.

Why: a goal such as "agate >= 1.2x ONNX Runtime" is a claim about the peer as much as about agate. When the peer
already runs a model near the machine's arithmetic peak, the goal can ask for more arithmetic per second than the
cores have, and no schedule, fusion or tuning can meet it; this script says when that is so, from measurements in
one run rather than from an argument.

For each model and thread count it counts the model's multiply-adds from the ONNX graph (shape inference; Conv by
kind, Gemm/MatMul), measures the fp32 FMA peak (benchmarks/harness peak) at the start and the end, and times agate
(`agate compile --fusion rule` + `agate run`, inputs at run time) and ONNX Runtime 1.30 (onnxruntime-node) end to
end, the engines taking turns --rounds times. It prints each engine's GFLOP/s and share of the peak, and what the
goal asks: the time (ONNX Runtime's / --goal) and the share of the peak that time means

- over all the model's multiply-adds ("all MACs"), and
- over only the multiply-adds no fast algorithm removes ("irreducible MACs": 1x1 convs, strided convs, Gemm and
  MatMul), counting every stride-1 KxK conv, which Winograd-style transforms can reduce, as free.

A share above 100% means the goal cannot be met at this peak by computing those products; the second is the lower
bound a kernel technique could not beat (it treats the reducible convs, and everything that is not a product:
pooling, elementwise, memory traffic, as costing nothing).

Usage: benchmarks/models/bound.py [--models mobilenet_v2 ...] [--threads 1 2] [--runs 10] [--rounds 3] [--goal 1.2]
                                  [--tuning-records DIR]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import run as model_table  # noqa: E402  (the zoo's inputs, the agate binary, the peers' drivers)

ROOT = model_table.ROOT


def count_macs(path):
    """{'reducible': MACs of stride-1 KxK convs (K > 1), 'irreducible': the other convs, Gemm and MatMul}."""
    import onnx  # noqa: E402
    from onnx import shape_inference  # noqa: E402
    graph = shape_inference.infer_shapes(onnx.load(path)).graph
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(graph.value_info) + list(graph.input) + list(graph.output)}
    dims.update({t.name: list(t.dims) for t in graph.initializer})
    macs = {"reducible": 0, "irreducible": 0}
    for node in graph.node:
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "Conv":
            weight, out = dims[node.input[1]], dims[node.output[0]]
            product = 1
            for d in out[1:] + weight[1:]:  # output channels x spatial x (input channels per group x kernel)
                product *= d
            product *= out[0]
            strides = list(attrs["strides"].ints) if "strides" in attrs else [1] * (len(weight) - 2)
            kernel = weight[2:]
            reducible = all(s == 1 for s in strides) and any(k > 1 for k in kernel)
            macs["reducible" if reducible else "irreducible"] += product
        elif node.op_type in ("Gemm", "MatMul"):
            a, b = dims.get(node.input[0]), dims.get(node.input[1])
            if not a or not b or 0 in a or 0 in b:
                sys.exit(f"{path}: {node.op_type} '{node.name}' has a dynamic shape; the count needs static shapes")
            trans_a = "transA" in attrs and attrs["transA"].i
            trans_b = "transB" in attrs and attrs["transB"].i
            m, k = (a[-1], a[-2]) if trans_a else (a[-2], a[-1])
            n = b[-2] if trans_b else b[-1]
            batch = 1
            for d in a[:-2]:
                batch *= d
            macs["irreducible"] += batch * m * n * k
    return macs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=["mobilenet_v2"])
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--goal", type=float, default=1.2, help="the speed-up over ONNX Runtime asked for")
    p.add_argument("--tuning-records", metavar="DIR", help="compile each model with DIR/<model>.jsonl if present")
    a = p.parse_args()
    model_table.run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_models.py"), *a.models])
    model_table.run(["bazel", "build", "--noshow_progress", "//tools/cli:agate", "//benchmarks/harness:peak"],
                    cwd=ROOT)
    print(f"load average at the start: {model_table.load_average()}")
    peaks = [model_table.fma_peak()[1]]
    rows = []
    for model in a.models:
        onnx_path = os.path.join(model_table.ZOO, model + ".onnx")
        macs = count_macs(onnx_path)
        module = os.path.join("/tmp", f"agate-bound-{model}.agm")
        cmd = [model_table.AGATE, "compile", onnx_path, "-o", module, "--fusion", "rule"]
        records = os.path.join(a.tuning_records, model + ".jsonl") if a.tuning_records else ""
        if records and os.path.exists(records):
            cmd += ["--tuning-records", records]
        model_table.run(cmd)
        inputs = model_table.model_inputs(model)
        agate, ort = [], []
        for _ in range(a.rounds):  # the engines take turns
            agate.append(model_table.agate_runs(module, a.threads, a.runs))
            ort.append(model_table.ort_runs(model, inputs, a.threads, a.runs))
        for t in a.threads:
            rows.append((model, t, macs, statistics.median(r[t]["median_ms"] for r in agate),
                         [r[t]["median_ms"] for r in agate], statistics.median(r[t]["median_ms"] for r in ort),
                         [r[t]["median_ms"] for r in ort]))
    peaks.append(model_table.fma_peak()[1])
    print(f"load average at the end: {model_table.load_average()}")
    peak = {t: max(p[t] for p in peaks) for t in peaks[0]}
    print("measured fp32 FMA peak (the higher of the start and the end): " +
          ", ".join(f"{peak[t]:.1f} GFLOP/s on {t} thread(s) (start {peaks[0][t]:.1f}, end {peaks[1][t]:.1f})"
                    for t in sorted(peak)))
    print()
    print(f"| model | threads | GFLOP (all / irreducible) | agate ms [rounds] | agate GFLOP/s (% of peak) | "
          f"ONNX Runtime ms [rounds] | ONNX Runtime GFLOP/s (% of peak) | agate vs ORT | {a.goal}x ORT means ms | "
          f"% of peak over all MACs | % of peak over irreducible MACs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    def rate(gflop, ms, t):
        return f"{gflop / ms * 1e3:.1f} ({100 * gflop / ms * 1e3 / peak[t]:.0f}%)"

    for model, t, macs, agate_ms, agate_rounds, ort_ms, ort_rounds in rows:
        total = 2e-9 * (macs["reducible"] + macs["irreducible"])
        irreducible = 2e-9 * macs["irreducible"]
        goal_ms = ort_ms / a.goal
        print(f"| {model} | {t} | {total:.3f} / {irreducible:.3f} | {agate_ms:.2f} "
              f"[{', '.join(f'{x:.2f}' for x in agate_rounds)}] | {rate(total, agate_ms, t)} | {ort_ms:.2f} "
              f"[{', '.join(f'{x:.2f}' for x in ort_rounds)}] | {rate(total, ort_ms, t)} | {ort_ms / agate_ms:.2f}x | "
              f"{goal_ms:.2f} | {100 * total / goal_ms * 1e3 / peak[t]:.0f}% | "
              f"{100 * irreducible / goal_ms * 1e3 / peak[t]:.0f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
