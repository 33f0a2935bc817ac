#!/usr/bin/python3
"""QDQ int8 models for tests and benchmarks: torchvision's quantizable ResNet-18/50 and MobileNetV2,
and the keyword-spotting DS-CNN of the microcontroller example (examples/mcu), quantized with PyTorch's
static post-training quantization and exported to ONNX in QDQ form.

Each model is built with weights=None and a fixed seed (no download), its BatchNorm statistics measured
on random inputs (normalize_batch_norms), its Conv+BN(+ReLU) modules fused,
observed on random calibration batches and converted with torch.ao.quantization (eager mode). Debian's
torch 1.13 has no fbgemm engine; the x86 engine it has is onednn, whose default qconfig is fbgemm's
(per-channel symmetric int8 weights, per-tensor uint8 activations with a histogram observer), so the
models are what fbgemm PTQ produces. torch.onnx.export writes every quantized op as DequantizeLinear ->
float op -> QuantizeLinear (opset 13), the form ONNX Runtime's quantizer writes too.

The DS-CNN (export_models.DsCnn, MLPerf Tiny's model) is quantized the same way, with its stem's
ZeroPad2d left in float before the QuantStub (the padded input is quantized as a whole, its border
exactly the zero point, and the stem's conv has no padding of its own), the average pooling and the
classifier in int8 and the softmax in float: MLPerf Tiny's int8 DS-CNN, with random weights.

Beside <name>_qdq.onnx go:
  <name>_qdq.inputs.npz      the input ("input": [1, 3, 224, 224] in [0, 1); the DS-CNN: [1, 1, 49, 10])
  <name>_qdq.fp32.npz        the fused float model's output on it (before quantization)
  <name>_qdq.torch_int8.npz  PyTorch's own int8 model's output on it

Usage: export_qdq_models.py [--out DIR] MODEL...   (MODEL: resnet18, resnet50, mobilenet_v2, ds_cnn_kws)
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch
from torchvision.models import quantization as qmodels

from export_models import DsCnn

DEFAULT_CACHE = os.path.expanduser("~/.cache/agate/zoo")
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "ds_cnn_kws")
ENGINE = "onednn"  # fbgemm's x86 qconfig; Debian's torch is built without fbgemm


def normalize_batch_norms(model, generator, input_shape=(8, 3, 224, 224), batches=4):
    """Untrained networks keep BatchNorm's initial statistics (mean 0, variance 1), under which
    activations shrink or grow layer by layer (MobileNetV2's logits end near 1e-9, all one
    quantization level). BatchNorm statistics measured on random inputs (a cumulative average)
    keep every layer's activations near unit scale, like a trained network's."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.rand(*input_shape, generator=generator))
    model.eval()


class QuantizableDsCnn(torch.nn.Module):
    """export_models.DsCnn with quantization stubs: the stem's ZeroPad2d in float, then int8 from the
    stem's conv to the classifier, the softmax in float. fuse() folds every Conv+BN+ReLU."""

    def __init__(self, f):
        super().__init__()
        self.pad = f.stem[0]
        self.quant = torch.ao.quantization.QuantStub()
        self.stem = torch.nn.Sequential(*list(f.stem)[1:])
        self.blocks = f.blocks
        self.pool = f.pool
        self.fc = f.fc
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(self.quant(self.pad(x)))))
        return torch.softmax(self.dequant(self.fc(torch.flatten(x, 1))), dim=1)

    def fuse(self):
        groups = [["stem.0", "stem.1", "stem.2"]]
        groups += [[f"blocks.{i}", f"blocks.{i + 1}", f"blocks.{i + 2}"] for i in range(0, len(self.blocks), 3)]
        torch.ao.quantization.fuse_modules(self, groups, inplace=True)


def build(name):
    """(the float model with fused Conv+BN(+ReLU), in eval mode; its input shape for batch 1)."""
    if name == "ds_cnn_kws":
        shape = (1, 1, 49, 10)
        float_model = DsCnn()
        normalize_batch_norms(float_model, torch.Generator().manual_seed(3), (8,) + shape[1:])
        model = QuantizableDsCnn(float_model).eval()
        model.fuse()
        return model, shape
    model = getattr(qmodels, name)(weights=None, quantize=False)
    normalize_batch_norms(model, torch.Generator().manual_seed(3))
    model.fuse_model(is_qat=False)
    return model, (1, 3, 224, 224)


def export(name, out_dir, calibration_batches=8):
    torch.manual_seed(0)
    torch.backends.quantized.engine = ENGINE
    model, shape = build(name)
    fp32 = copy.deepcopy(model)
    model.qconfig = torch.ao.quantization.get_default_qconfig(ENGINE)
    torch.ao.quantization.prepare(model, inplace=True)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(calibration_batches):
            model(torch.rand(2, *shape[1:], generator=generator))
    torch.ao.quantization.convert(model, inplace=True)
    x = torch.rand(*shape, generator=torch.Generator().manual_seed(2))
    stem = os.path.join(out_dir, name + "_qdq")
    # No constant folding: it would turn DequantizeLinear of the int8 weights into float weights.
    torch.onnx.export(model, x, stem + ".onnx", opset_version=13, do_constant_folding=False,
                      input_names=["input"], output_names=["output"])
    with torch.no_grad():
        np.savez(stem + ".inputs.npz", input=x.numpy())
        np.savez(stem + ".fp32.npz", output=fp32(x).numpy())
        np.savez(stem + ".torch_int8.npz", output=model(x).numpy())
    return stem


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=DEFAULT_CACHE)
    parser.add_argument("models", nargs="+", choices=MODELS)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        stem = os.path.join(args.out, name + "_qdq")
        if all(os.path.exists(stem + ext) for ext in (".onnx", ".inputs.npz", ".fp32.npz", ".torch_int8.npz")):
            print(stem, "(cached)")
            continue
        print(export(name, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
