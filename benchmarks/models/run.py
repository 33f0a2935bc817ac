#!/usr/bin/python3
"""End-to-end model benchmark (issue: CPU operator library and end-to-end speed).

For each model, batch 1, fp32: agate (--fusion none|rule|all) against PyTorch eager, TorchScript
frozen + optimize_for_inference and ONNX Runtime 1.30 CPU, in the same run on the same machine,
medians over --runs runs after warm-up, for each thread count. Prints the machine, the peers'
environment, and a Markdown table (ms, and each agate policy as speed-up over PyTorch eager),
plus compile times. Usage:
  benchmarks/models/run.py [--models resnet50 vgg16 inception_v3 mobilenet_v2] [--threads 1 2] [--runs 20]
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
    a = p.parse_args()
    run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_models.py"), *a.models])
    run(["bazel", "build", "--noshow_progress", "//tools/cli:agate", "//benchmarks/harness:peak"], cwd=ROOT)
    print(run([os.path.join(ROOT, "bazel-bin/benchmarks/harness/peak")]), end="")
    rows, compile_ms = [], {}
    for model in a.models:
        onnx = os.path.join(ZOO, model + ".onnx")
        agate = {}
        for fusion in a.fusion:
            out = os.path.join("/tmp", f"agate-bench-{model}-{fusion}.agm")
            summary = run([AGATE, "compile", onnx, "-o", out, "--fusion", fusion])
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
            for fusion in a.fusion:
                ms = agate[(fusion, t)]
                cells.append(f"{ms:.1f} ({eager / ms:.2f}x)")
            rows.append(cells)
    header = ["model", "threads", "PyTorch eager ms", "TorchScript frozen ms", "ONNX Runtime ms"] + [
        f"agate {f} ms (vs eager)" for f in a.fusion]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\ncompile time (ms): " + "; ".join(f"{m} {f} {v}" for (m, f), v in compile_ms.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
