#!/usr/bin/python3
"""The model zoo for tests and benchmarks: torchvision models and text transformers exported to ONNX
with PyTorch's reference outputs.

Every model is built with weights=None and a fixed seed (no download), put in eval mode, and
exported with torch.onnx.export; beside it go `<name>.inputs.npz` (the inputs, keyed by the ONNX
input names) and `<name>.reference.npz` (PyTorch's outputs, keyed by the ONNX output names).
Files are generated on demand into the cache folder and reused; nothing here is committed
except the tiny demo model (see --demo).

The text transformers (bert_*, gpt2_small) are built from torch.nn modules in text_models.py the way
Hugging Face `transformers` computes them (the package is not installed). The *_ci models are small
members of the same families (same blocks, fewer or narrower layers) that the CI model suite compiles
under every fusion policy within its time budget; the benchmark runs the full-size ones.

Usage:
  export_models.py [--out DIR] [--opset N] MODEL...      MODEL: see --list
  export_models.py --list                                every model with its inputs
  export_models.py --demo --out examples/demo            the small CNN bundled for `./agate demo`
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torchvision.models import convnext, vision_transformer

import text_models

DEFAULT_CACHE = os.path.expanduser("~/.cache/agate/zoo")


def image(size):
    """The inputs of an image model: one [1, 3, size, size] tensor named "input"."""
    return lambda generator: {"input": torch.rand(1, 3, size, size, generator=generator)}


def tokens(count, vocab, padding=0, with_mask=True):
    return lambda generator: text_models.token_inputs(generator, count, vocab, padding, with_mask)


def convnext_atto():
    """ConvNeXt's blocks at the widths and depths of timm's ConvNeXt-Atto (40-320 channels, 2-2-6-2 blocks)."""
    cfg = convnext.CNBlockConfig
    return convnext.ConvNeXt([cfg(40, 80, 2), cfg(80, 160, 2), cfg(160, 320, 6), cfg(320, None, 2)])


# name: (constructor, inputs(generator) -> {ONNX input name: tensor})
MODELS = {
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), image(224)),
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), image(224)),
    "vgg16": (lambda: torchvision.models.vgg16(weights=None), image(224)),
    "inception_v3": (lambda: torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=True),
                     image(299)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), image(224)),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(weights=None), image(224)),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), image(224)),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(weights=None), image(224)),
    "swin_t": (lambda: torchvision.models.swin_t(weights=None), image(224)),
    # BERT-base: 12 layers, d=768, 12 heads, 128 tokens (the last 16 padding).
    "bert_base": (lambda: text_models.BertEncoder(12, 768, 12, 3072), tokens(128, 30522, padding=16)),
    # GPT-2 small: 12 layers, d=768, 12 heads; one decoder step over a 128-token context.
    "gpt2_small": (lambda: text_models.Gpt2Decoder(12, 768, 12), tokens(128, 50257, with_mask=False)),
    # The same decoder over a one-token context (every matrix product a matrix-vector one), as
    # benchmarks/models/precision.py and the int8 benchmark run it.
    "gpt2_step1": (lambda: text_models.Gpt2Decoder(12, 768, 12), tokens(1, 50257, with_mask=False)),
    # The small BERT-like encoder of issue 19: 4 layers, d=128 (2 heads of 64), 64 tokens (the last 8 padding).
    "bert_small": (lambda: text_models.BertEncoder(4, 128, 2, 512), tokens(64, 30522, padding=8)),
    # CI sizes (see the module comment).
    "vit_ci": (lambda: vision_transformer.VisionTransformer(224, 16, 4, 3, 192, 768), image(224)),
    "convnext_ci": (convnext_atto, image(224)),
    # Keyword spotting on a microcontroller (examples/mcu): 49 frames x 10 MFCC features.
    "ds_cnn_kws": (lambda: DsCnn(), lambda generator: {"input": torch.rand(1, 1, 49, 10, generator=generator)}),
}


class DsCnn(nn.Module):
    """The keyword-spotting DS-CNN of MLPerf Tiny (after ARM's ML-KWS "DS-CNN small"): a 10x4
    stride-2 convolution with TensorFlow's "same" padding, four depthwise-separable blocks
    (3x3 depthwise, 1x1 pointwise, each with BatchNorm and ReLU), 64 channels, average pooling
    over the 25x5 map and a 12-class classifier, for a 49x10 MFCC input. Float32 here; the
    MLPerf Tiny reference is its int8 quantization."""

    def __init__(self, classes=12, channels=64, blocks=4):
        super().__init__()
        self.stem = nn.Sequential(nn.ZeroPad2d((1, 1, 4, 5)), nn.Conv2d(1, channels, (10, 4), stride=2),
                                  nn.BatchNorm2d(channels), nn.ReLU())
        layers = []
        for _ in range(blocks):
            layers += [nn.Conv2d(channels, channels, 3, padding=1, groups=channels), nn.BatchNorm2d(channels),
                       nn.ReLU(), nn.Conv2d(channels, channels, 1), nn.BatchNorm2d(channels), nn.ReLU()]
        self.blocks = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d((25, 5))
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return torch.softmax(self.fc(torch.flatten(self.pool(x), 1)), dim=1)


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


def randomize_zero_layers(model, generator):
    """Layers a constructor initializes to zeros (ViT's classifier head) would make every output 0 and any
    kernel look right; give them small random weights instead."""
    for m in model.modules():
        if isinstance(m, nn.Linear) and not m.weight.any():
            with torch.no_grad():
                m.weight.normal_(0.0, 0.02, generator=generator)
                m.bias.uniform_(-0.1, 0.1, generator=generator)


def export(model, inputs, out_dir, name, opset):
    """`inputs(generator)` gives the ONNX inputs by name; randomize_batchnorm draws from the same generator first."""
    onnx_path = os.path.join(out_dir, name + ".onnx")
    generator = torch.Generator().manual_seed(1)
    randomize_batchnorm(model, generator)
    randomize_zero_layers(model, torch.Generator().manual_seed(2))
    model.eval()
    xs = inputs(generator)
    with torch.no_grad():
        y = model(*xs.values())
        if isinstance(y, tuple):  # inception_v3 in eval mode returns logits only; be safe
            y = y[0]
    tmp = onnx_path + ".tmp"
    torch.onnx.export(model, tuple(xs.values()), tmp, input_names=list(xs), output_names=["output"],
                      opset_version=opset, do_constant_folding=True)
    os.replace(tmp, onnx_path)
    np.savez(os.path.join(out_dir, name + ".inputs.npz"), **{k: v.numpy() for k, v in xs.items()})
    np.savez(os.path.join(out_dir, name + ".reference.npz"), output=y.numpy())
    print(f"{name}: {onnx_path} ({os.path.getsize(onnx_path) / 1024:.0f} KiB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*")
    parser.add_argument("--out", default=DEFAULT_CACHE)
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--demo", action="store_true")
    parser.add_argument("--force", action="store_true", help="re-export even when the files exist")
    parser.add_argument("--list", action="store_true", help="print every model with its inputs and exit")
    args = parser.parse_args()
    if args.list:
        for name, (_, inputs) in MODELS.items():
            xs = inputs(torch.Generator().manual_seed(1))
            print(name, " ".join(f"{k}:{str(v.dtype).replace('torch.', '')}{list(v.shape)}" for k, v in xs.items()))
        return 0
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    if args.demo:
        export(DemoNet(), image(32), args.out, "demo_cnn", args.opset)
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
        constructor, inputs = MODELS[name]
        export(constructor(), inputs, args.out, name, args.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
