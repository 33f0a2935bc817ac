#!/usr/bin/python3
"""Step 1 of the GPU benchmark (issue 12), on the machine with the compiler: export the models, compile
them for the GPU with `agate compile --target cuda`, and pack what the GPU machine needs into one folder.

A GPU machine here is lent for minutes and takes at most 64 MiB along, so the modules travel compressed,
and their weights are drawn with little entropy: every weight is a random odd multiple of half a power of two,
LEVELS values in all (--levels, 4 by default), with the step sized to the layer's initial standard deviation (so activations keep
their scale), and every BatchNorm has running_var = 1 - eps and gamma in {0.5, 1} (so folding it into the
convolution keeps the weights exact, and the per-channel mean and beta still differ). Each weight is still
drawn independently, so a kernel that reads a wrong element gives a wrong answer; only the bytes compress.
The reference is PyTorch's (Debian's 1.13, CPU, fp32) output for the same weights and input.

Writes into --out: <model>.b<batch>.<fusion>.agm, <model>.b<batch>.inputs.npz, <model>.b<batch>.reference.npz,
and models.json (what was compiled, compile seconds, module bytes). Then pack it:
  tar -C OUT -cf - . | xz -T2 -6 > CARRY/models.tar.xz
Usage:
  benchmarks/cuda/prepare.py --out DIR [--models resnet50 mobilenet_v2 ...] [--fusion rule none all]
                             [--batch 1] [--arch sm_90] [--agate bazel-bin/tools/cli/agate]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "zoo"))
import export_models  # noqa: E402


LEVELS = 4  # values per weight (--levels)


def quantized_like(rng, tensor):
    """A random tensor of `tensor`'s shape whose values are k * step, k in {-LEVELS/2 + 0.5, ..., LEVELS/2 - 0.5}."""
    std = float(tensor.float().std()) if tensor.numel() > 1 else abs(float(tensor.float().mean()))
    if not math.isfinite(std) or std == 0.0:
        return tensor  # constant initialisations (LayerNorm's ones and zeros) compress as they are
    k = rng.integers(-LEVELS // 2, LEVELS // 2, size=tuple(tensor.shape)).astype(np.float32) + 0.5
    step = 2.0 ** round(math.log2(std / float(np.sqrt(np.mean(np.unique(k) ** 2)))))
    return torch.from_numpy(k * np.float32(step))


def low_entropy_weights(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_var.fill_(1.0 - m.eps)
                m.weight.copy_(torch.from_numpy(rng.choice(np.float32([0.5, 1.0]), size=m.weight.shape)))
                m.running_mean.copy_(torch.from_numpy((rng.integers(-8, 8, m.running_mean.shape) / 16).astype(np.float32)))
                m.bias.copy_(torch.from_numpy((rng.integers(-4, 4, m.bias.shape) / 16).astype(np.float32)))
                continue
            for name, p in m.named_parameters(recurse=False):
                if p.dtype == torch.float32:
                    p.copy_(quantized_like(rng, p))
            for name, b in m.named_buffers(recurse=False):
                if b.dtype == torch.float32 and b.numel() > 1:
                    b.copy_(quantized_like(rng, b))


def set_levels(levels):
    global LEVELS
    LEVELS = levels


def batched(inputs, batch):
    if batch == 1:
        return inputs
    return {k: v.repeat(batch, *([1] * (v.dim() - 1))) if v.dtype.is_floating_point else v.repeat(batch, 1)
            for k, v in inputs.items()}


def export(name, batch, out):
    constructor, make_inputs = export_models.MODELS[name]
    torch.manual_seed(0)
    model = constructor().eval()
    low_entropy_weights(model, seed=12)
    xs = make_inputs(torch.Generator().manual_seed(1))
    if batch > 1:
        # distinct images per batch element (a kernel mixing up batch elements must show)
        xs = {k: (torch.rand((batch,) + tuple(v.shape[1:]), generator=torch.Generator().manual_seed(3))
                  if v.dtype.is_floating_point else batched({k: v}, batch)[k]) for k, v in xs.items()}
    with torch.no_grad():
        y = model(*xs.values())
        y = y[0] if isinstance(y, tuple) else y
    stem = os.path.join(out, f"{name}.b{batch}")
    torch.onnx.export(model, tuple(xs.values()), stem + ".onnx", input_names=list(xs), output_names=["output"],
                      opset_version=13, do_constant_folding=True)
    np.savez(stem + ".inputs.npz", **{k: v.numpy() for k, v in xs.items()})
    np.savez(stem + ".reference.npz", output=y.numpy())
    return stem


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2", "inception_v3", "resnet18"])
    parser.add_argument("--fusion", nargs="+", default=["rule"])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--levels", type=int, default=4, help="distinct values per weight tensor (even)")
    parser.add_argument("--agate", default=os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate"))
    args = parser.parse_args()
    set_levels(args.levels)
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "models.json")
    manifest = json.load(open(manifest_path)) if os.path.exists(manifest_path) else []
    for name in args.models:
        stem = export(name, args.batch, args.out)
        for fusion in args.fusion:
            module = f"{stem}.{fusion}.agm"
            start = time.time()
            subprocess.run([args.agate, "compile", stem + ".onnx", "-o", module, "--fusion", fusion,
                            "--target", f"cuda -arch={args.arch}"], check=True, stdout=subprocess.DEVNULL)
            entry = {"model": name, "batch": args.batch, "fusion": fusion, "module": os.path.basename(module),
                     "arch": args.arch, "compile_s": round(time.time() - start, 1), "bytes": os.path.getsize(module)}
            print(json.dumps(entry), flush=True)
            manifest = [m for m in manifest if m["module"] != entry["module"]] + [entry]
        os.remove(stem + ".onnx")
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
