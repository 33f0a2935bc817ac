#!/usr/bin/python3
"""int8 benchmark (issue 17): agate int8 (QDQ models folded into QLinearConv) against agate fp32 and
ONNX Runtime 1.30 CPU running the same QDQ model (and the fp32 one), batch 1, in the same run.

Models: ResNet-50 and MobileNetV2, QDQ from tools/zoo/export_qdq_models.py (PyTorch static PTQ,
per-channel s8 weights, u8 activations), fp32 from tools/zoo/export_models.py; the transformers
bert_small, bert_base, gpt2_small (GPT-2 over 128 tokens) and gpt2_step1 (its one-token decoder step: matrix-vector
products) quantized dynamically by
tools/zoo/export_dynamic_int8.py (DynamicQuantizeLinear + MatMulInteger, ONNX Runtime's quantize_dynamic
form; the "int8" columns of those rows are that model, the "QDQ" column header notwithstanding). The engines take turns
(--rounds R: agate int8, agate fp32, ORT int8, ORT fp32, then again), each round a median over --runs
runs after warm-up; a figure is the median of the rounds' medians and the spread the lowest and highest
round median. The FMA peak (benchmarks/harness:peak) is measured at the start to show the machine's
state. Usage:
  benchmarks/quantized/run.py [--models resnet50 mobilenet_v2] [--threads 1] [--runs 10] [--rounds 3]
Prints a Markdown table; nothing is written unless --out FILE is given.
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


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def agate_ms(module, threads, runs):
    r = json.loads(run([AGATE, "run", module, "--json", "--repeat", str(runs), "--threads", str(threads)]))
    return r["median_ms"]


DYNAMIC = ("bert_small", "bert_base", "gpt2_small", "gpt2_step1")  # quantized dynamically (export_dynamic_int8.py)


def model_inputs(model):
    """ort_models.js --input arguments for the model's ONNX inputs, from the zoo's definitions."""
    if model not in DYNAMIC:
        return ["--input", "input:float32:1x3x224x224"]
    sys.path.insert(0, os.path.join(ROOT, "tools", "zoo"))
    import export_models  # noqa: E402
    import torch  # noqa: E402
    xs = export_models.MODELS[model][1](torch.Generator().manual_seed(1))
    args = []
    for k, v in xs.items():
        args += ["--input", f"{k}:{str(v.dtype).replace('torch.', '')}:{'x'.join(map(str, v.shape))}"]
    return args


def ort_ms(model, inputs, threads, runs):
    line = run(["node", os.path.join(ROOT, "benchmarks/peers/ort_models.js"), model, *inputs,
                "--threads", str(threads), "--runs", str(runs)]).splitlines()[-1]
    return json.loads(line)["median_ms"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2"])
    p.add_argument("--threads", nargs="+", type=int, default=[1])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out")
    args = p.parse_args()
    run(["bazel", "build", "--noshow_progress", "//tools/cli:agate", "//benchmarks/harness:peak"], cwd=ROOT)
    static = [m for m in args.models if m not in DYNAMIC]
    dynamic = [m for m in args.models if m in DYNAMIC]
    if static:
        run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_qdq_models.py"), *static])
        run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_models.py"), *static])
    if dynamic:
        run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_dynamic_int8.py"), *dynamic])
    machine = run([os.path.join(ROOT, "bazel-bin/benchmarks/harness/peak")]).strip()
    load = open("/proc/loadavg").read().split()[:3]
    lines = ["machine: " + machine.replace("\n", "; "), "load average at start: " + " ".join(load), "",
             "| model | threads | agate int8 ms | agate fp32 ms | ORT int8 (QDQ) ms | ORT fp32 ms | "
             "agate int8 / agate fp32 speed-up | agate int8 / ORT int8 speed-up |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for model in args.models:
        suffix = "_dynint8.onnx" if model in DYNAMIC else "_qdq.onnx"
        qdq, fp32 = os.path.join(ZOO, model + suffix), os.path.join(ZOO, model + ".onnx")
        inputs = model_inputs(model)
        modules = {}
        for kind, path in (("int8", qdq), ("fp32", fp32)):
            modules[kind] = os.path.join("/tmp", f"agate_quantized_bench_{model}_{kind}.agm")
            run([AGATE, "compile", path, "-o", modules[kind]])
        for t in args.threads:
            rounds = {k: [] for k in ("agate_int8", "agate_fp32", "ort_int8", "ort_fp32")}
            for _ in range(args.rounds):
                rounds["agate_int8"].append(agate_ms(modules["int8"], t, args.runs))
                rounds["agate_fp32"].append(agate_ms(modules["fp32"], t, args.runs))
                rounds["ort_int8"].append(ort_ms(qdq, inputs, t, args.runs))
                rounds["ort_fp32"].append(ort_ms(fp32, inputs, t, args.runs))
            med = {k: statistics.median(v) for k, v in rounds.items()}
            cell = lambda k: f"{med[k]:.1f} ({min(rounds[k]):.1f}-{max(rounds[k]):.1f})"
            lines.append(f"| {model} | {t} | {cell('agate_int8')} | {cell('agate_fp32')} | {cell('ort_int8')} | "
                         f"{cell('ort_fp32')} | {med['agate_fp32'] / med['agate_int8']:.2f}x | "
                         f"{med['ort_int8'] / med['agate_int8']:.2f}x |")
            print(lines[-1], flush=True)
    lines.append("")
    lines.append("load average at end: " + " ".join(open("/proc/loadavg").read().split()[:3]))
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
