#!/usr/bin/python3
"""End-to-end model benchmark (issues: CPU operator library and end-to-end speed; transformers and modern CNNs).

For each model, batch 1, fp32: agate (--fusion none|rule|all) against PyTorch eager, TorchScript
frozen + optimize_for_inference and ONNX Runtime 1.30 CPU, in the same run on the same machine,
medians over --runs runs after warm-up, for each thread count; with --rounds R the engines take turns
R times per model (agate, PyTorch, ONNX Runtime, agate, ...) and each figure is the median of the
rounds' medians, the spread the lowest and highest single run over all rounds. Prints the machine,
the load average at the start and the end, the peers' environment, a Markdown table (ms, and each agate
policy as speed-up over PyTorch eager), agate rule's ratio to every peer, the spread, the GFLOP/s and
share of the measured FMA peak of each transformer's largest matrix products (from `agate run
--profile`), and compile times; --out DIR also writes them to DIR/RESULTS.md, DIR/results.json and a
plot to DIR/results.png (matplotlib). Model inputs (names, dtypes, shapes) come from
tools/zoo/export_models.py. Usage:
  benchmarks/models/run.py [--models resnet50 ... bert_base gpt2_small] [--threads 1 2] [--runs 20] [--rounds 1]
                           [--fusion none rule all] [--baseline OTHER_AGATE_BINARY] [--out benchmarks/models]
Beside the table: PyTorch's version and CPU capability, and the OpenBLAS kernels OPENBLAS_CORETYPE
forces with what OpenBLAS would pick without it (benchmarks/peers/peer_environment.py).
--baseline also compiles every model (--fusion rule) with another agate build (e.g. main's) and times its
modules in the same rounds: the "no slower than before" check.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ZOO = os.path.expanduser("~/.cache/agate/zoo")
AGATE = os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate")
SEED_MODELS = ["resnet50", "vgg16", "inception_v3", "mobilenet_v2"]
NEW_MODELS = ["mobilenet_v3_small", "convnext_tiny", "vit_b_16", "swin_t", "bert_small", "bert_base", "gpt2_small"]

# The largest matrix products of the transformers: (kernel text to match in `agate compile`'s kernel list,
# M, N, K). Every layer's kernel for that product is profiled; the table gives their median.
LARGEST_MATMULS = {
    "vit_b_16": (r"mlp/mlp\.0/MatMul \(", 197, 3072, 768),
    "bert_base": (r"intermediate/MatMul \(", 128, 3072, 768),
    "bert_small": (r"intermediate/MatMul \(", 64, 512, 128),
    "gpt2_small": (r"c_fc/MatMul \(", 128, 3072, 768),
    "swin_t": (r"features\.1/features\.1\.\d/mlp/mlp\.0/MatMul \(", 3136, 384, 96),
    "convnext_tiny": (r"features\.1/features\.1\.\d/block/block\.3/MatMul \(", 3136, 384, 96),
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def fma_peak():
    """(the peak program's report, {threads: fp32 FMA GFLOP/s}) from benchmarks/harness peak (built by the caller)."""
    out = run([os.path.join(ROOT, "bazel-bin/benchmarks/harness/peak")])
    return out, {int(t): float(g) for g, t in re.findall(r"([\d.]+) GFLOP/s \((\d) thread", out)}


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def model_inputs(model):
    """[(name, dtype, shape)] of the model's ONNX inputs, from the zoo's definitions."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "zoo"))
    import export_models  # noqa: E402
    import torch  # noqa: E402
    if model not in export_models.MODELS:  # a model exported elsewhere (resnet50_qdq...): its file says
        import onnx  # noqa: E402
        graph = onnx.load(os.path.join(ZOO, model + ".onnx"), load_external_data=False).graph
        dtypes = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.INT64: "int64"}
        constants = {i.name for i in graph.initializer}
        inputs = [i for i in graph.input if i.name not in constants]
        for i in inputs:  # the peers' drivers take these two (ort_models.js: float32 and int64)
            if i.type.tensor_type.elem_type not in dtypes:
                sys.exit(f"{model}: input '{i.name}' is neither float32 nor int64, which the benchmark drivers take")
        return [(i.name, dtypes[i.type.tensor_type.elem_type], [d.dim_value for d in i.type.tensor_type.shape.dim])
                for i in inputs]
    xs = export_models.MODELS[model][1](torch.Generator().manual_seed(1))
    return [(k, str(v.dtype).replace("torch.", ""), list(v.shape)) for k, v in xs.items()]


def agate_runs(out, threads, runs, binary=AGATE):
    return {t: json.loads(run([binary, "run", out, "--json", "--repeat", str(runs), "--threads", str(t)]))
            for t in threads}


def torch_runs(model, threads, runs):
    result = {}
    for line in run(["/usr/bin/python3", os.path.join(ROOT, "benchmarks/peers/pytorch_models.py"), model,
                     "--threads", *map(str, threads), "--runs", str(runs)]).splitlines():
        r = json.loads(line)
        result[(r["peer"], r["threads"])] = r
    return result


def ort_runs(model, inputs, threads, runs):
    args = []
    for name, dtype, shape in inputs:
        args += ["--input", f"{name}:{dtype}:{'x'.join(map(str, shape))}"]
    result = {}
    for line in run(["node", os.path.join(ROOT, "benchmarks/peers/ort_models.js"), os.path.join(ZOO, model + ".onnx"),
                     *args, "--threads", *map(str, threads), "--runs", str(runs)]).splitlines():
        r = json.loads(line)
        result[r["threads"]] = r
    return result


def profile_kernels(out, threads, runs):
    """kernel name -> median ms from `agate run --profile`."""
    ms = {}
    for line in run([AGATE, "run", out, "--profile", "--repeat", str(runs), "--threads", str(threads)]).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3].startswith("k") and parts[1].endswith("%"):
            ms[parts[3]] = float(parts[0])
    return ms


def summarize(rounds, key):
    """Median of the rounds' medians and the lowest / highest single run."""
    return (statistics.median(r[key]["median_ms"] for r in rounds), min(r[key]["min_ms"] for r in rounds),
            max(r[key].get("max_ms", r[key]["median_ms"]) for r in rounds))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=SEED_MODELS + NEW_MODELS)
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--fusion", nargs="+", default=["none", "rule", "all"], choices=["none", "rule", "all"])
    p.add_argument("--no-ort", action="store_true")
    p.add_argument("--baseline", help="another agate binary whose rule-fusion modules are timed in the same rounds")
    p.add_argument("--out", help="write RESULTS.md, results.json and results.png into this folder")
    p.add_argument("--tuning-records", metavar="DIR",
                   help="compile each model with DIR/<model>.jsonl (agate tune's records) when that file exists")
    p.add_argument("--replot", help="only redraw DIR/results.png from DIR/results.json")
    a = p.parse_args()
    if a.replot:
        with open(os.path.join(a.replot, "results.json")) as f:
            saved = json.load(f)
        rows = {(r["model"], r["threads"]): r["ms"] for r in saved["rows"]}
        plot(os.path.join(a.replot, "results.png"), rows, saved["threads"], saved["fusion"])
        return 0
    run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_models.py"), *a.models])
    run(["bazel", "build", "--noshow_progress", "//tools/cli:agate", "//benchmarks/harness:peak"], cwd=ROOT)
    load_start = load_average()
    machine, peak = fma_peak()
    machine += run(["/usr/bin/python3", os.path.join(ROOT, "benchmarks/peers/peer_environment.py"), "--no-load"])
    print(machine, end="")
    rows, spread_rows, matmul_rows, baseline_rows, compile_ms, ratios, plot_rows = [], [], [], [], {}, {}, {}
    for model in a.models:
        onnx = os.path.join(ZOO, model + ".onnx")
        inputs = model_inputs(model)
        modules, kernel_text = {}, ""
        for fusion in a.fusion:
            out = os.path.join("/tmp", f"agate-bench-{model}-{fusion}.agm")
            cmd = [AGATE, "compile", onnx, "-o", out, "--fusion", fusion]
            records = os.path.join(a.tuning_records, model + ".jsonl") if a.tuning_records else ""
            if records and os.path.exists(records):  # kernels whose workload has a record get its best
                cmd += ["--tuning-records", records]
            summary = run(cmd)
            line = [l for l in summary.splitlines() if l.startswith("compile time")][0]
            compile_ms[(model, fusion)] = line.split("total ")[1].split(" ms")[0]
            modules[fusion] = out
            if fusion == "rule":
                kernel_text = summary
        if a.baseline:
            baseline_module = os.path.join("/tmp", f"agate-bench-{model}-baseline.agm")
            run([a.baseline, "compile", onnx, "-o", baseline_module, "--fusion", "rule"])
        agate, torch, ort, base = [], [], [], []
        for _ in range(a.rounds):  # the engines take turns
            agate.append({(f, t): r for f in a.fusion for t, r in agate_runs(modules[f], a.threads, a.runs).items()})
            if a.baseline:
                base.append(agate_runs(baseline_module, a.threads, a.runs, a.baseline))
            torch.append(torch_runs(model, a.threads, a.runs))
            if not a.no_ort:
                ort.append(ort_runs(model, inputs, a.threads, a.runs))
        for t in a.threads:
            eager = summarize(torch, ("pytorch_eager", t))
            ts = summarize(torch, ("pytorch_torchscript_frozen", t))
            o = summarize(ort, t) if ort else None
            cells = [model, str(t), f"{eager[0]:.1f}", f"{ts[0]:.1f}", f"{o[0]:.1f}" if o else "-"]
            plot_rows[(model, t)] = {"PyTorch eager": eager[0], "TorchScript frozen": ts[0],
                                     "ONNX Runtime": o[0] if o else 0}
            for fusion in a.fusion:
                ms = summarize(agate, (fusion, t))[0]
                cells.append(f"{ms:.2f} ({eager[0] / ms:.2f}x)")
                plot_rows[(model, t)][f"agate {fusion}"] = ms
            if "rule" in a.fusion:
                r = summarize(agate, ("rule", t))
                ratios[(model, t)] = {"eager": eager[0] / r[0], "ts": ts[0] / r[0], "ort": o[0] / r[0] if o else None}
                spread_rows.append(f"| {model} | {t} | {r[1]:.2f}-{r[2]:.2f} | " +
                                   (f"{o[1]:.2f}-{o[2]:.2f}" if o else "-") + f" | {ts[1]:.2f}-{ts[2]:.2f} | "
                                   f"{eager[1]:.2f}-{eager[2]:.2f} |")
            rows.append(cells)
            if base and "rule" in a.fusion:
                b, r = summarize(base, t), summarize(agate, ("rule", t))
                baseline_rows.append(f"| {model} | {t} | {b[0]:.2f} ({b[1]:.2f}-{b[2]:.2f}) | {r[0]:.2f} "
                                     f"({r[1]:.2f}-{r[2]:.2f}) | {b[0] / r[0]:.2f}x |")
        if model in LARGEST_MATMULS and "rule" in a.fusion:
            pattern, m, n, k = LARGEST_MATMULS[model]
            kernels = [l.split(":")[0].strip() for l in kernel_text.splitlines()
                       if re.match(r"\s+k\d+_", l) and re.search(pattern, l)]
            for t in a.threads:
                profile = profile_kernels(modules["rule"], t, a.runs)
                times = [profile[kn] for kn in kernels if kn in profile]
                if not times:
                    continue
                ms = statistics.median(times)
                gflops = 2.0 * m * n * k / (ms * 1e6)
                share = f"{100 * gflops / peak[t]:.0f}%" if t in peak else "-"
                matmul_rows.append(f"| {model} | {m}x{n}x{k} | {len(times)} | {t} | {ms:.3f} | {gflops:.1f} | {share} |")
    load_end = load_average()
    header = ["model", "threads", "PyTorch eager ms", "TorchScript frozen ms", "ONNX Runtime ms"] + [
        f"agate {f} ms (vs eager)" for f in a.fusion]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    # The goal's view: agate rule against each peer (>1 means agate is faster).
    if "rule" in a.fusion:
        lines += ["", "| model | threads | rule vs eager | rule vs TorchScript | rule vs ONNX Runtime |",
                  "| --- | --- | --- | --- | --- |"]
        for (model, t), r in sorted(ratios.items()):
            lines.append(f"| {model} | {t} | {r['eager']:.2f}x | {r['ts']:.2f}x | " +
                         (f"{r['ort']:.2f}x" if r["ort"] else "-") + " |")
        lines += ["", "Spread: the fastest and slowest single run (ms) over all rounds.", "",
                  "| model | threads | agate rule | ONNX Runtime | TorchScript frozen | PyTorch eager |",
                  "| --- | --- | --- | --- | --- | --- |"] + spread_rows
    if baseline_rows:
        lines += ["", f"Against the baseline build `{a.baseline}` (rule, same rounds; median (fastest-slowest) ms):", "",
                  "| model | threads | baseline | this build | speed-up |", "| --- | --- | --- | --- | --- |"]
        lines += baseline_rows
    if matmul_rows:
        lines += ["", "Largest matrix products (agate rule, `agate run --profile`, median over the layers' kernels; "
                  "% of the FMA peak measured at the start):", "",
                  "| model | M x N x K | kernels | threads | ms | GFLOP/s | % of peak |",
                  "| --- | --- | --- | --- | --- | --- | --- |"] + matmul_rows
    lines += ["", "compile time (ms): " + "; ".join(f"{m} {f} {v}" for (m, f), v in compile_ms.items())]
    table = "\n".join(lines)
    print(f"load average: {load_start} at the start, {load_end} at the end")
    print(table)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "RESULTS.md"), "w") as f:
            f.write("# End-to-end models, batch 1, fp32\n\nGenerated by `benchmarks/models/run.py " +
                    " ".join(sys.argv[1:]) + "`.\n\n```\n" + machine +
                    f"load average: {load_start} at the start, {load_end} at the end\n```\n\n" + table + "\n")
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump({"threads": a.threads, "fusion": a.fusion,
                       "rows": [{"model": m, "threads": t, "ms": v} for (m, t), v in plot_rows.items()]}, f, indent=1)
        plot(os.path.join(a.out, "results.png"), plot_rows, a.threads, a.fusion)
    return 0


def plot(path, plot_rows, threads, fusions):
    """Bars per model: each peer's and agate policy's latency relative to PyTorch eager (lower is faster)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing (apt install python3-matplotlib): no plot written", file=sys.stderr)
        return
    series = ["PyTorch eager", "TorchScript frozen", "ONNX Runtime"] + [f"agate {f}" for f in fusions]
    fig, axes = plt.subplots(len(threads), 1, figsize=(14, 5.2 * len(threads)), squeeze=False)
    for ax, t in zip(axes[:, 0], threads):
        models = [m for (m, tt) in plot_rows if tt == t]
        width = 0.8 / len(series)
        for i, name in enumerate(series):
            values = [plot_rows[(m, t)].get(name, 0) / plot_rows[(m, t)]["PyTorch eager"] for m in models]
            ax.bar([x + i * width for x in range(len(models))], values, width, label=name)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(models))])
        ax.set_xticklabels(models, fontsize=8)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylabel("latency relative to PyTorch eager (lower is faster)")
        ax.set_title(f"{t} thread(s), batch 1, fp32")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
