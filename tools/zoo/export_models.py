#!/usr/bin/python3
"""The model zoo for tests and benchmarks: torchvision models exported to ONNX with PyTorch's
reference outputs.

Every model is built with weights=None and a fixed seed (no download), put in eval mode, and
exported with torch.onnx.export; beside it go `<name>.inputs.npz` (the input, keyed by the ONNX
input name) and `<name>.reference.npz` (PyTorch's outputs, keyed by the ONNX output names).
Files are generated on demand into the cache folder and reused; nothing here is committed
except the tiny demo model (see --demo).

Usage:
  export_models.py [--out DIR] [--opset N] MODEL...      MODEL in: resnet18 resnet50 vgg16 inception_v3 mobilenet_v2
  export_models.py --demo --out examples/demo            the small CNN bundled for `./agate demo`
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

DEFAULT_CACHE = os.path.expanduser("~/.cache/agate/zoo")

# name: (constructor, input size)
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), 224),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), 224),
    "vgg16": (lambda: torchvision.models.vgg16(weights=None), 224),
    "inception_v3": (lambda: torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=True), 299),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), 224),
}


class DemoNet(nn.Module):
    """A small residual CNN: conv-bn-relu, a residual block (conv-bn-relu-conv-bn-add-relu),
    a strided depthwise-separable stage, global pooling and a classifier. It exercises the
    fusion rules and most CNN operators while staying a few hundred KB."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.conv1 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.down = nn.Sequential(
            nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=32, bias=False), nn.BatchNorm2d(32), nn.ReLU6(),
            nn.Conv2d(32, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU6())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.stem(x)
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        x = torch.relu(x + y)
        x = self.down(x)
        x = torch.flatten(self.pool(x), 1)
        return torch.softmax(self.fc(x), dim=1)


def randomize_batchnorm(model, generator):
    """Fresh BatchNorm layers are identities; give them real statistics so folding is tested."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5, generator=generator)
                m.running_var.uniform_(0.5, 1.5, generator=generator)
                m.weight.uniform_(0.5, 1.5, generator=generator)
                m.bias.uniform_(-0.2, 0.2, generator=generator)


def export(model, size, out_dir, name, opset):
    onnx_path = os.path.join(out_dir, name + ".onnx")
    generator = torch.Generator().manual_seed(1)
    randomize_batchnorm(model, generator)
    model.eval()
    x = torch.rand(1, 3, size, size, generator=generator)
    with torch.no_grad():
        y = model(x)
        if isinstance(y, tuple):  # inception_v3 in eval mode returns logits only; be safe
            y = y[0]
    tmp = onnx_path + ".tmp"
    torch.onnx.export(model, x, tmp, input_names=["input"], output_names=["output"], opset_version=opset,
                      do_constant_folding=True)
    os.replace(tmp, onnx_path)
    np.savez(os.path.join(out_dir, name + ".inputs.npz"), input=x.numpy())
    np.savez(os.path.join(out_dir, name + ".reference.npz"), output=y.numpy())
    print(f"{name}: {onnx_path} ({os.path.getsize(onnx_path) / 1024:.0f} KiB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*")
    parser.add_argument("--out", default=DEFAULT_CACHE)
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--demo", action="store_true")
    parser.add_argument("--force", action="store_true", help="re-export even when the files exist")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    if args.demo:
        export(DemoNet(), 32, args.out, "demo_cnn", args.opset)
        return 0
    unknown = [m for m in args.models if m not in MODELS]
    if unknown or not args.models:
        print(f"export_models.py: unknown or no model(s) {unknown}; choose from {sorted(MODELS)}", file=sys.stderr)
        return 2
    for name in args.models:
        if not args.force and os.path.exists(os.path.join(args.out, name + ".reference.npz")):
            print(f"{name}: cached in {args.out}")
            continue
        torch.manual_seed(0)
        constructor, size = MODELS[name]
        export(constructor(), size, args.out, name, args.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
