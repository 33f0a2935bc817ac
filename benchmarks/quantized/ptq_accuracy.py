#!/usr/bin/python3
"""Post-training quantization accuracy (issue 17): agate's own int8 quantization (`agate compile
--quantize int8 --calibration FILE`) against agate fp32 on the model suite's CNNs, and the int8 module's
speed beside the fp32 one.

Models: torchvision ResNet-18, ResNet-50 and MobileNetV2 built at run time with weights=None and a fixed
seed (no download), their BatchNorm statistics measured on random inputs as tools/zoo/export_qdq_models.py
does (untrained BatchNorms shrink activations layer by layer to one quantization level), exported to fp32
ONNX. Inputs are uniform in [0, 1) (the distribution the BatchNorms were measured on): --calibration N
samples (seed 1) calibrate, --held-out M others (seed 2) are never seen by calibration. For each set:
top-1 agreement of the int8 module with the fp32 module, the largest |int8 - fp32| logit, the largest
|fp32| logit, and how many distinct fp32 top-1 classes the set has (an untrained network favours a few
classes: agreement over few classes says less than over many).

Speed: `agate run --json` medians, int8 and fp32 taking turns for --rounds rounds (median of the rounds'
medians, spread = lowest-highest round median), the FMA peak (benchmarks/harness:peak) and the load
average printed with them.

Usage:
  benchmarks/quantized/ptq_accuracy.py [--models resnet18 resnet50 mobilenet_v2] [--size 224]
      [--calibration 32] [--held-out 64] [--method minmax] [--rounds 3] [--runs 10] [--threads 1]
      [--check-agreement 0.99] [--check-logit-error 0.25] [--no-speed]
--check-*: exit 1 when the held-out agreement is below, or the largest logit error above the fraction
of the largest fp32 logit (the quantized_models suite's end-to-end check).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "zoo"))
from export_qdq_models import normalize_batch_norms  # noqa: E402

CACHE = os.path.join(os.environ.get("AGATE_ZOO", os.path.expanduser("~/.cache/agate/zoo")), "ptq")
AGATE = os.environ.get("AGATE", os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate"))
MODELS = ("resnet18", "resnet50", "mobilenet_v2")


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def export(name, size):
    """The fp32 ONNX model (cached): input "input" [1, 3, size, size], output "output"."""
    path = os.path.join(CACHE, f"{name}_{size}.onnx")
    if os.path.exists(path):
        return path
    os.makedirs(CACHE, exist_ok=True)
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    normalize_batch_norms(model, torch.Generator().manual_seed(3))
    model.eval()
    x = torch.rand(1, 3, size, size, generator=torch.Generator().manual_seed(4))
    tmp = path + ".tmp"
    torch.onnx.export(model, x, tmp, opset_version=13, input_names=["input"], output_names=["output"])
    os.replace(tmp, path)
    return path


def samples(count, size, seed):
    g = np.random.default_rng(seed)
    return g.random((count, 1, 3, size, size), dtype=np.float32)


def outputs(module, xs, work):
    """The module's output on each sample (one `agate run` per sample)."""
    result = []
    for i, x in enumerate(xs):
        inp, out = os.path.join(work, "in.npz"), os.path.join(work, "out.npz")
        np.savez(inp, input=x)
        run([AGATE, "run", module, "--inputs", inp, "--outputs", out])
        result.append(np.load(out)["output"].reshape(-1))
    return np.stack(result)


def compare(fp32, int8):
    agree = float(np.mean(fp32.argmax(1) == int8.argmax(1)))
    return {"agreement": agree, "logit_error": float(np.abs(fp32 - int8).max()),
            "logit_max": float(np.abs(fp32).max()), "classes": int(len(set(fp32.argmax(1).tolist())))}


def agate_ms(module, threads, runs):
    r = json.loads(run([AGATE, "run", module, "--json", "--repeat", str(runs), "--threads", str(threads)]))
    return r["median_ms"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--calibration", type=int, default=32)
    p.add_argument("--held-out", type=int, default=64)
    p.add_argument("--method", default="minmax")
    p.add_argument("--target", default="llvm -mcpu=native")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-speed", action="store_true")
    p.add_argument("--check-agreement", type=float)
    p.add_argument("--check-logit-error", type=float)
    args = p.parse_args()
    lines = []
    if not args.no_speed:
        run(["bazel", "build", "--noshow_progress", "//benchmarks/harness:peak"])
        machine = run([os.path.join(ROOT, "bazel-bin/benchmarks/harness/peak")]).strip()
        lines += ["machine: " + machine.replace("\n", "; "),
                  "load average at start: " + " ".join(open("/proc/loadavg").read().split()[:3]), ""]
    lines += [f"| model | input | calibration | top-1 agreement, calibration inputs | top-1 agreement, held-out | "
              f"max abs logit error (of max abs fp32 logit) | fp32 top-1 classes (cal / held-out) | "
              f"int8 ms | fp32 ms | int8 speed-up |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    failed = False
    cal, held = samples(args.calibration, args.size, 1), samples(args.held_out, args.size, 2)
    with tempfile.TemporaryDirectory() as work:
        cal_file = os.path.join(work, "calibration.npz")
        np.savez(cal_file, input=cal)
        for name in args.models:
            model = export(name, args.size)
            fp32_module, int8_module = os.path.join(work, "fp32.agm"), os.path.join(work, "int8.agm")
            run([AGATE, "compile", model, "-o", fp32_module, "--target", args.target])
            log = run([AGATE, "compile", model, "-o", int8_module, "--target", args.target, "--quantize", "int8",
                       "--calibration", cal_file, "--calibration-method", args.method])
            summary = next((l for l in log.splitlines() if l.startswith("quantization:")), "")
            print(name, summary, flush=True)
            on_cal = compare(outputs(fp32_module, cal, work), outputs(int8_module, cal, work))
            on_held = compare(outputs(fp32_module, held, work), outputs(int8_module, held, work))
            speed = ("-", "-", "-")
            if not args.no_speed:
                rounds = {"int8": [], "fp32": []}
                for _ in range(args.rounds):
                    rounds["int8"].append(agate_ms(int8_module, args.threads, args.runs))
                    rounds["fp32"].append(agate_ms(fp32_module, args.threads, args.runs))
                med = {k: statistics.median(v) for k, v in rounds.items()}
                cell = lambda k: f"{med[k]:.1f} ({min(rounds[k]):.1f}-{max(rounds[k]):.1f})"
                speed = (cell("int8"), cell("fp32"), f"{med['fp32'] / med['int8']:.2f}x")
            error = max(on_cal["logit_error"], on_held["logit_error"])
            scale = max(on_cal["logit_max"], on_held["logit_max"])
            lines.append(f"| {name} | 1x3x{args.size}x{args.size} | {args.method}, {args.calibration} samples | "
                         f"{on_cal['agreement']:.1%} of {args.calibration} | {on_held['agreement']:.1%} of "
                         f"{args.held_out} | {error:.3g} ({scale:.3g}) | {on_cal['classes']} / {on_held['classes']} | "
                         f"{speed[0]} | {speed[1]} | {speed[2]} |")
            print(lines[-1], flush=True)
            if args.check_agreement is not None and on_held["agreement"] < args.check_agreement:
                print(f"FAIL {name}: held-out top-1 agreement {on_held['agreement']:.1%} < {args.check_agreement:.1%}")
                failed = True
            if args.check_logit_error is not None and error > args.check_logit_error * scale:
                print(f"FAIL {name}: logit error {error:.3g} > {args.check_logit_error} x {scale:.3g}")
                failed = True
    if not args.no_speed:
        lines += ["", "load average at end: " + " ".join(open("/proc/loadavg").read().split()[:3])]
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
