#!/usr/bin/python3
"""Fusion policies compared end to end (issue 14: the AGATF paper's Table 1 on our machine).

For each model (batch 1, fp32, the zoo's ONNX export): `agate compile --fusion none|rule|all|adaptive`
(adaptive: the policy shipped in core/fusion/policies, trained by tools/fusion/train_fusion.py on
models NOT in this table), then `agate run --json --repeat RUNS` per thread count. The policies take
turns (--rounds R: none, rule, all, adaptive, none, ...) and each figure is the median of the rounds'
medians; the spread is the lowest and highest per-round median. Beside each time its ratio to rule
(rule / policy: above 1 is faster than rule), the number of kernels and the compile time (wall clock
of `agate compile`, import included). The FMA peak is measured at the start and the end of the run
(benchmarks/harness peak) to show how loaded the machine was. Usage:
  benchmarks/fusion/run.py [--models resnet50 ...] [--threads 1] [--runs 20] [--rounds 3] [--out benchmarks/fusion]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ZOO = os.path.expanduser("~/.cache/agate/zoo")
AGATE = os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate")
PEAK = os.path.join(ROOT, "bazel-bin", "benchmarks", "harness", "peak")
TARGET = "llvm -mcpu=native"
# None of these is a training model of the shipped policy (tools/fusion/train_fusion.py TRAIN_MODELS).
MODELS = ["resnet50", "vgg16", "inception_v3", "mobilenet_v2", "convnext_tiny", "swin_t", "vit_b_16", "bert_small",
          "gpt2_small"]
POLICIES = ["none", "rule", "all", "adaptive"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def peak():
    text = run([PEAK])
    return {int(t): float(g) for g, t in re.findall(r"([\d.]+) GFLOP/s \((\d) thread", text)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=MODELS)
    p.add_argument("--threads", nargs="+", type=int, default=[1])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--policies", nargs="+", default=POLICIES)
    p.add_argument("--out", help="write RESULTS.md and results.json into this folder")
    p.add_argument("--cache", help="keep compiled modules (and their compile time and kernel count) in this folder "
                                   "and reuse them; --compile-only fills it")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--agate", default=AGATE, help="the agate binary (default: bazel-bin's, built first)")
    a = p.parse_args()
    for folder in (a.cache, a.out):
        if folder:
            os.makedirs(folder, exist_ok=True)
    run(["bazel", "build", "--noshow_progress", "//tools/cli:agate", "//benchmarks/harness:peak"], cwd=ROOT)
    agate = a.agate
    peak_start = peak()
    load_start = open("/proc/loadavg").read().split()[:3]
    rows, failed = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models:
            onnx = os.path.join(ZOO, model + ".onnx")
            modules, kernels, compile_s = {}, {}, {}
            for policy in a.policies:
                # A policy may name a file (adaptive,policy=DIR/x.policy): keep the module's name one path part.
                module = os.path.join(a.cache or tmp, f"{model}.{re.sub(r'[^A-Za-z0-9_.=-]', '_', policy)}.agm")
                info = module + ".json"
                if a.cache and os.path.exists(module) and os.path.exists(info):
                    with open(info) as f:
                        kernels[policy], compile_s[policy] = json.load(f)
                else:
                    t0 = time.time()
                    try:
                        summary = run([agate, "compile", onnx, "-o", module, "--target", TARGET, "--fusion", policy])
                    except subprocess.CalledProcessError as e:
                        # A policy the compiler cannot lower for this model is a finding for the table, not the
                        # end of the run.
                        failed[(model, policy)] = e.stderr.strip().splitlines()[-1]
                        print(f"FAILED {model} --fusion {policy}: {failed[(model, policy)]}", flush=True)
                        continue
                    compile_s[policy] = time.time() - t0
                    kernels[policy] = int(re.search(r"^kernels: (\d+)", summary, re.M).group(1))
                    with open(info, "w") as f:
                        json.dump([kernels[policy], compile_s[policy]], f)
                    print(f"compiled {model} --fusion {policy}: {kernels[policy]} kernels, {compile_s[policy]:.1f} s",
                          flush=True)
                modules[policy] = module
            if a.compile_only:
                continue
            policies = [p for p in a.policies if p in modules]
            errors = {policy: reference_error(agate, model, modules[policy], tmp) for policy in policies}
            for t in a.threads:
                rounds = {policy: [] for policy in policies}
                for _ in range(a.rounds):
                    for policy in policies:
                        r = json.loads(run([agate, "run", modules[policy], "--json", "--repeat", str(a.runs),
                                            "--threads", str(t)]))
                        rounds[policy].append(r["median_ms"])
                row = {"model": model, "threads": t, "ms": {}, "spread": {}, "kernels": kernels,
                       "compile_s": compile_s, "max_rel_error": errors}
                for policy in policies:
                    row["ms"][policy] = statistics.median(rounds[policy])
                    row["spread"][policy] = [min(rounds[policy]), max(rounds[policy])]
                rows.append(row)
                print(model, t, {k: round(v, 2) for k, v in row["ms"].items()}, flush=True)
    if a.compile_only:
        return 0
    peak_end = peak()
    load_end = open("/proc/loadavg").read().split()[:3]
    md = report(a, rows, peak_start, peak_end, load_start, load_end, failed)
    print(md)
    if a.out:
        with open(os.path.join(a.out, "RESULTS.md"), "w") as f:
            f.write(md)
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump({"rows": rows, "peak_start": peak_start, "peak_end": peak_end, "runs": a.runs,
                       "rounds": a.rounds}, f, indent=1)
    return 0


def reference_error(agate, model, module, tmp):
    """Largest |agate - PyTorch| / max |PyTorch| over the outputs, on the zoo's inputs."""
    import numpy as np
    out = os.path.join(tmp, "out.npz")
    run([agate, "run", module, "--inputs", os.path.join(ZOO, model + ".inputs.npz"), "--outputs", out])
    got, ref = np.load(out), np.load(os.path.join(ZOO, model + ".reference.npz"))
    return max(float(np.max(np.abs(got[k].astype(np.float64) - ref[k])) / (np.max(np.abs(ref[k])) + 1e-12))
               for k in ref.files)


def report(a, rows, peak_start, peak_end, load_start, load_end, failed):
    lines = ["# Fusion policies end to end (`benchmarks/fusion/run.py`)", "",
             f"Machine: {os.cpu_count()} cores; FMA peak at the start {peak_start} GFLOP/s, at the end {peak_end} "
             f"(by thread count); load average {' '.join(load_start)} at the start, {' '.join(load_end)} at the end.",
             f"Each time: median over {a.rounds} interleaved rounds of the median of {a.runs} runs "
             "(`agate run --json`); in brackets the lowest and highest round median. "
             "x rule = rule's time / the policy's (above 1: faster than rule).", ""]
    head = "| model | threads | " + " | ".join(f"{p} ms | {p} x rule" for p in a.policies) + " | kernels (" + \
        "/".join(a.policies) + ") | compile s (" + "/".join(a.policies) + ") | max rel. error vs PyTorch |"
    lines += [head, "|" + " --- |" * (2 + 2 * len(a.policies) + 3)]
    for r in rows:
        cells = []
        for p in a.policies:
            if p not in r["ms"]:
                cells += ["compile failed", "-"]
                continue
            lo, hi = r["spread"][p]
            cells.append(f"{r['ms'][p]:.2f} [{lo:.2f}-{hi:.2f}]")
            cells.append(f"{r['ms']['rule'] / r['ms'][p]:.3f}" if "rule" in r["ms"] else "-")
        lines.append(f"| {r['model']} | {r['threads']} | " + " | ".join(cells) + " | " +
                     "/".join(str(r["kernels"].get(p, "-")) for p in a.policies) + " | " +
                     "/".join(f"{r['compile_s'][p]:.1f}" if p in r["compile_s"] else "-" for p in a.policies) +
                     " | " + f"{max(r['max_rel_error'].values()):.1e} |")
    if failed:
        lines += ["", "Compiles that failed:"] + [f"- {m} --fusion {p}: {why}" for (m, p), why in failed.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
