#!/usr/bin/python3
"""agate compile --precision fp32|fp16|bf16: module size, speed and accuracy (issue 12's precision option).

For each model of the zoo (tools/zoo/export_models.py; gpt2_step1 is GPT-2 small's decoder over a
one-token context, exported here from the same constructor and seed as gpt2_small):
  - size: the module and its constant bytes at each precision (`agate compile`'s summary);
  - accuracy: agate's outputs on the zoo's inputs against PyTorch fp32 (the zoo's reference.npz):
    max |agate - PyTorch| / max |PyTorch|, and for classifiers the top-1 agreement of each narrow module
    with the fp32 module over --samples random inputs (N(0, 1) images: near-ties make this a harsh test);
  - speed (--speed MODELS): `agate run --json` of the three modules and ONNX Runtime 1.30 CPU taking turns
    for --rounds rounds at --threads threads; medians of the rounds' medians, the spread the lowest and
    highest single run; the load average at the start and the end.
Writes a Markdown report to stdout (and --out FILE). Usage:
  benchmarks/models/precision.py [--models resnet50 bert_base gpt2_small gpt2_step1] [--speed gpt2_step1 ...]
                                 [--threads 1] [--rounds 3] [--runs 10] [--samples 8] [--out FILE] [--agate BINARY]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as models  # noqa: E402  (benchmarks/models/run.py: the zoo, the peers, the harness calls)

PRECISIONS = ["fp32", "fp16", "bf16"]
CLASSIFIERS = {"resnet18", "resnet50", "vgg16", "inception_v3", "mobilenet_v2", "mobilenet_v3_small", "vit_b_16",
               "convnext_tiny", "swin_t"}


def export_step_model():
    """gpt2_small's decoder over a one-token context: every matrix product is a matrix-vector one."""
    if os.path.exists(os.path.join(models.ZOO, "gpt2_step1.reference.npz")):
        return
    sys.path.insert(0, os.path.join(models.ROOT, "tools", "zoo"))
    import export_models  # noqa: E402
    import text_models  # noqa: E402
    import torch  # noqa: E402
    torch.manual_seed(0)
    export_models.export(text_models.Gpt2Decoder(12, 768, 12), export_models.tokens(1, 50257, with_mask=False),
                         models.ZOO, "gpt2_step1", 13)


def inputs_of(model):
    if model == "gpt2_step1":
        return [("input_ids", "int64", [1, 1])]
    return models.model_inputs(model)


def compile_module(model, precision, tmp):
    out = os.path.join(tmp, f"{model}-{precision}.agm")
    summary = models.run([models.AGATE, "compile", os.path.join(models.ZOO, model + ".onnx"), "-o", out,
                          "--precision", precision])
    constants = [l for l in summary.splitlines() if l.startswith("constants:")][0].split()[1]
    return out, os.path.getsize(out), int(constants)


def run_module(module, inputs_npz, tmp):
    out = os.path.join(tmp, "out.npz")
    models.run([models.AGATE, "run", module, "--inputs", inputs_npz, "--outputs", out])
    with np.load(out) as f:
        return {k: f[k] for k in f.files}


def accuracy(model, modules, samples, tmp):
    """{precision: (max relative error vs PyTorch, top-1 agreement with fp32 or None)}."""
    inputs = os.path.join(models.ZOO, model + ".inputs.npz")
    with np.load(os.path.join(models.ZOO, model + ".reference.npz")) as f:
        reference = f["output"]
    result = {}
    for p in PRECISIONS:
        got = run_module(modules[p], inputs, tmp)["output"]
        result[p] = [float(np.abs(got - reference).max() / np.abs(reference).max()), None]
    if model in CLASSIFIERS and samples:
        names = [(n, shape) for n, _, shape in inputs_of(model)]
        rng = np.random.default_rng(0)
        top1 = {p: [] for p in PRECISIONS}
        for _ in range(samples):
            path = os.path.join(tmp, "sample.npz")
            np.savez(path, **{n: rng.standard_normal(shape).astype(np.float32) for n, shape in names})
            for p in PRECISIONS:
                top1[p].append(int(run_module(modules[p], path, tmp)["output"].argmax()))
        for p in PRECISIONS:
            result[p][1] = sum(a == b for a, b in zip(top1[p], top1["fp32"])) / samples
    return result


def speed(model, modules, threads, rounds, runs):
    """{engine: (median ms, lowest, highest)}: the three modules and ONNX Runtime taking turns."""
    timings = {e: [] for e in PRECISIONS + ["onnxruntime"]}
    for _ in range(rounds):
        for p in PRECISIONS:
            timings[p].append(models.agate_runs(modules[p], [threads], runs, models.AGATE)[threads])
        timings["onnxruntime"].append(models.ort_runs(model, inputs_of(model), [threads], runs)[threads])
    return {e: (statistics.median(r["median_ms"] for r in rs), min(r["min_ms"] for r in rs),
                max(r.get("max_ms", r["median_ms"]) for r in rs)) for e, rs in timings.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", nargs="+", default=["resnet50", "bert_base", "gpt2_small", "gpt2_step1"])
    p.add_argument("--speed", nargs="*", default=["gpt2_step1", "gpt2_small", "bert_base"])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--samples", type=int, default=8)
    p.add_argument("--out")
    p.add_argument("--agate", help="an agate binary to use instead of building //tools/cli:agate")
    a = p.parse_args()
    zoo_models = [m for m in a.models if m != "gpt2_step1"]
    if zoo_models:
        models.run(["/usr/bin/python3", os.path.join(models.ROOT, "tools/zoo/export_models.py"), *zoo_models])
    if "gpt2_step1" in a.models:
        export_step_model()
    if a.agate:
        models.AGATE = os.path.abspath(a.agate)
    else:
        models.run(["bazel", "build", "--noshow_progress", "//tools/cli:agate"], cwd=models.ROOT)
    lines = [f"load average at the start: {models.load_average()}", ""]
    size_rows, accuracy_rows, speed_rows = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models:
            modules, sizes = {}, {}
            for precision in PRECISIONS:
                modules[precision], module_bytes, constant_bytes = compile_module(model, precision, tmp)
                sizes[precision] = (module_bytes, constant_bytes)
            base = sizes["fp32"][0]
            size_rows.append(f"| {model} | " + " | ".join(
                f"{sizes[q][0] / 1e6:.1f} ({sizes[q][0] / base:.2f}x)" for q in PRECISIONS) + " |")
            acc = accuracy(model, modules, a.samples, tmp)
            accuracy_rows.append(f"| {model} | " + " | ".join(f"{acc[q][0]:.1e}" for q in PRECISIONS) + " | " +
                                 " | ".join("-" if acc[q][1] is None else f"{100 * acc[q][1]:.0f}%"
                                            for q in ("fp16", "bf16")) + " |")
            if model in a.speed:
                t = speed(model, modules, a.threads, a.rounds, a.runs)
                ort = t["onnxruntime"][0]
                speed_rows.append(f"| {model} | {a.threads} | " + " | ".join(
                    f"{t[q][0]:.2f} ({t[q][1]:.2f}-{t[q][2]:.2f}; {t['fp32'][0] / t[q][0]:.2f}x fp32, "
                    f"{ort / t[q][0]:.2f}x ORT)" for q in PRECISIONS) +
                    f" | {ort:.2f} ({t['onnxruntime'][1]:.2f}-{t['onnxruntime'][2]:.2f}) |")
            print(f"{model} done:", size_rows[-1], accuracy_rows[-1], speed_rows[-1] if model in a.speed else "",
                  file=sys.stderr, flush=True)
    lines += ["Module size, MB (vs fp32):", "", "| model | fp32 | fp16 | bf16 |", "| --- | --- | --- | --- |",
              *size_rows, "",
              "Accuracy against PyTorch fp32 (max |agate - PyTorch| / max |PyTorch| on the zoo's input) and "
              f"top-1 agreement with agate fp32 over {a.samples} random inputs (classifiers):", "",
              "| model | fp32 | fp16 | bf16 | top-1 fp16 | top-1 bf16 |", "| --- | --- | --- | --- | --- | --- |",
              *accuracy_rows, ""]
    if speed_rows:
        lines += [f"Speed, ms: median of {a.rounds} rounds' medians of {a.runs} runs (lowest-highest single run; "
                  "speed-up over agate fp32 and over ONNX Runtime):", "",
                  "| model | threads | agate fp32 | agate fp16 | agate bf16 | ONNX Runtime |",
                  "| --- | --- | --- | --- | --- | --- |", *speed_rows, ""]
    lines.append(f"load average at the end: {models.load_average()}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
