#!/usr/bin/python3
"""End-to-end model benchmark (issue: CPU operator library and end-to-end speed).

For each model, batch 1, fp32: agate (--fusion none|rule|all) against PyTorch eager, TorchScript
frozen + optimize_for_inference and ONNX Runtime 1.30 CPU, in the same run on the same machine,
medians over --runs runs after warm-up, for each thread count. Prints the machine, the peers'
environment, and a Markdown table (ms, and each agate policy as speed-up over PyTorch eager), agate
rule's ratio to every peer, and compile times; --out DIR also writes them to DIR/RESULTS.md and a
plot to DIR/results.png (matplotlib). Usage:
  benchmarks/models/run.py [--models resnet50 vgg16 inception_v3 mobilenet_v2] [--threads 1 2] [--runs 20]
                           [--fusion none rule all] [--out benchmarks/models]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ZOO = os.path.expanduser("~/.cache/agate/zoo")
AGATE = os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate")
SIZES = {"resnet18": 224, "resnet50": 224, "vgg16": 224, "inception_v3": 299, "mobilenet_v2": 224}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=["resnet50", "vgg16", "inception_v3", "mobilenet_v2"])
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--fusion", nargs="+", default=["none", "rule", "all"], choices=["none", "rule", "all"])
    p.add_argument("--no-ort", action="store_true")
    p.add_argument("--out", help="write RESULTS.md and results.png into this folder")
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
    machine = run([os.path.join(ROOT, "bazel-bin/benchmarks/harness/peak")])
    print(machine, end="")
    rows, compile_ms, ratios, plot_rows = [], {}, {}, {}
    for model in a.models:
        onnx = os.path.join(ZOO, model + ".onnx")
        agate = {}
        for fusion in a.fusion:
            out = os.path.join("/tmp", f"agate-bench-{model}-{fusion}.agm")
            cmd = [AGATE, "compile", onnx, "-o", out, "--fusion", fusion]
            records = os.path.join(a.tuning_records, model + ".jsonl") if a.tuning_records else ""
            if records and os.path.exists(records):  # kernels whose workload has a record get its best
                cmd += ["--tuning-records", records]
            summary = run(cmd)
            line = [l for l in summary.splitlines() if l.startswith("compile time")][0]
            compile_ms[(model, fusion)] = line.split("total ")[1].split(" ms")[0]
            for t in a.threads:
                j = json.loads(run([AGATE, "run", out, "--json", "--repeat", str(a.runs), "--threads", str(t)]))
                agate[(fusion, t)] = j["median_ms"]
        torch = {}
        for line in run(["/usr/bin/python3", os.path.join(ROOT, "benchmarks/peers/pytorch_models.py"), model,
                         "--threads", *map(str, a.threads), "--runs", str(a.runs)]).splitlines():
            r = json.loads(line)
            torch[(r["peer"], r["threads"])] = r["median_ms"]
        ort = {}
        if not a.no_ort:
            s = SIZES[model]
            for line in run(["node", os.path.join(ROOT, "benchmarks/peers/ort_models.js"), onnx, "input", "1", "3",
                             str(s), str(s), "--threads", *map(str, a.threads), "--runs", str(a.runs)]).splitlines():
                r = json.loads(line)
                ort[r["threads"]] = r["median_ms"]
        for t in a.threads:
            eager = torch[("pytorch_eager", t)]
            cells = [model, str(t), f"{eager:.1f}", f"{torch[('pytorch_torchscript_frozen', t)]:.1f}",
                     f"{ort[t]:.1f}" if t in ort else "-"]
            ts = torch[("pytorch_torchscript_frozen", t)]
            plot_rows[(model, t)] = {"PyTorch eager": eager, "TorchScript frozen": ts, "ONNX Runtime": ort.get(t, 0)}
            for fusion in a.fusion:
                ms = agate[(fusion, t)]
                cells.append(f"{ms:.1f} ({eager / ms:.2f}x)")
                plot_rows[(model, t)][f"agate {fusion}"] = ms
            if ("rule", t) in agate:
                ms = agate[("rule", t)]
                ratios[(model, t)] = {"eager": eager / ms, "ts": ts / ms, "ort": ort[t] / ms if t in ort else None}
            rows.append(cells)
    header = ["model", "threads", "PyTorch eager ms", "TorchScript frozen ms", "ONNX Runtime ms"] + [
        f"agate {f} ms (vs eager)" for f in a.fusion]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    # The goal's view: agate rule against each peer (>1 means agate is faster).
    if "rule" in a.fusion:
        lines += ["", "| model | threads | rule vs eager | rule vs TorchScript | rule vs ONNX Runtime |", "| --- | --- | --- | --- | --- |"]
        for (model, t), r in sorted(ratios.items()):
            lines.append(f"| {model} | {t} | {r['eager']:.2f}x | {r['ts']:.2f}x | " +
                         (f"{r['ort']:.2f}x" if r["ort"] else "-") + " |")
    lines += ["", "compile time (ms): " + "; ".join(f"{m} {f} {v}" for (m, f), v in compile_ms.items())]
    table = "\n".join(lines)
    print(table)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "RESULTS.md"), "w") as f:
            f.write("# End-to-end models, batch 1, fp32\n\nGenerated by `benchmarks/models/run.py " +
                    " ".join(sys.argv[1:]) + "`.\n\n```\n" + machine + "```\n\n" + table + "\n")
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
    fig, axes = plt.subplots(1, len(threads), figsize=(7 * len(threads), 5.2), squeeze=False)
    for ax, t in zip(axes[0], threads):
        models = [m for (m, tt) in plot_rows if tt == t]
        width = 0.8 / len(series)
        for i, name in enumerate(series):
            values = [plot_rows[(m, t)].get(name, 0) / plot_rows[(m, t)]["PyTorch eager"] for m in models]
            ax.bar([x + i * width for x in range(len(models))], values, width, label=name)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(models))])
        ax.set_xticklabels(models)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylabel("latency relative to PyTorch eager (lower is faster)")
        ax.set_title(f"{t} thread(s), batch 1, fp32")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
