#!/usr/bin/python3
"""Model fragments that PyTorch exports as decompositions agate fuses back (issue 19): nn.LayerNorm,
nn.GELU (erf and tanh), GPT-2's gelu_new, nn.SiLU, nn.Hardswish, a LLaMA-style RMSNorm, BERT's
self-attention with a padding mask, GPT-2's causal attention (torch.where) and nn.MultiheadAttention
(as torchvision's ViT uses it), each exported by Debian's PyTorch 1.13 at the given opsets.

For every fragment and opset it writes <name>_op<N>.onnx, .inputs.npz and .reference.npz (PyTorch's
output) into --out, and prints one line per file: "<file stem> <fused op> <decomposed ops...>": the
operator the fused graph must contain and the operators that must be gone (tools/ci/suites/patterns.sh
checks both in `agate compile`'s kernel list, then the numbers against PyTorch).

Usage: export_patterns.py --out DIR [--opsets 13 17]
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import text_models  # noqa: E402


class RmsNorm(nn.Module):
    """LLaMA's RMSNorm as transformers writes it."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class Activation(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


class BertAttention(nn.Module):
    """BertSelfAttention with BERT's extended padding mask (text_models.BertLayer's attention half)."""

    def __init__(self, d=32, heads=2):
        super().__init__()
        self.layer = text_models.BertLayer(d, heads, 4 * d, 1e-12)

    def forward(self, x, attention_mask):
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        a = self.layer
        q = text_models.split_heads(a.query(x), a.heads)
        k = text_models.split_heads(a.key(x), a.heads)
        v = text_models.split_heads(a.value(x), a.heads)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        return text_models.merge_heads(torch.matmul(torch.softmax(scores + mask, dim=-1), v))


class VitAttention(nn.Module):
    """nn.MultiheadAttention(batch_first=True) as torchvision's ViT encoder block calls it."""

    def __init__(self, d=48, heads=3):
        super().__init__()
        self.attention = nn.MultiheadAttention(d, heads, batch_first=True)

    def forward(self, x):
        y, _ = self.attention(x, x, x, need_weights=False)
        return y


def fragments():
    g = torch.Generator().manual_seed(3)
    x16 = torch.rand(2, 5, 16, generator=g) * 4 - 2
    x8 = torch.rand(2, 8, generator=g) * 8 - 4
    tokens = torch.rand(1, 12, 32, generator=g)
    mask = torch.ones(1, 12, dtype=torch.int64)
    mask[:, 9:] = 0
    return {
        # name: (module, inputs, fused op, decomposed ops that must be gone)
        "layer_norm": (nn.LayerNorm(16), {"x": x16}, "LayerNormalization", ["ReduceMean", "Sqrt"]),
        "gelu": (nn.GELU(), {"x": x8}, "Gelu", ["Erf"]),
        "gelu_tanh": (nn.GELU(approximate="tanh"), {"x": x8}, "Gelu", ["Tanh"]),
        "gelu_new": (Activation(text_models.gelu_new), {"x": x8}, "Gelu", ["Tanh", "Pow"]),
        "silu": (nn.SiLU(), {"x": x8}, "Swish", ["Sigmoid"]),
        "hardswish": (nn.Hardswish(), {"x": x8}, "HardSwish", ["HardSigmoid"]),
        "rms_norm": (RmsNorm(16), {"x": x16}, "RMSNormalization", ["ReduceMean", "Sqrt"]),
        "bert_attention": (BertAttention(), {"x": tokens, "attention_mask": mask}, "Attention", ["Softmax"]),
        "gpt2_attention": (text_models.Gpt2Block(32, 2, 16, 1e-5), {"x": tokens}, "Attention", ["Softmax", "Where"]),
        "vit_attention": (VitAttention(), {"x": torch.rand(1, 7, 48, generator=g)}, "Attention", ["Softmax"]),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--opsets", type=int, nargs="+", default=[13, 17])
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    for name, (module, inputs, fused, gone) in fragments().items():
        module.eval()
        with torch.no_grad():
            y = module(*inputs.values())
        for opset in a.opsets:
            stem = os.path.join(a.out, f"{name}_op{opset}")
            torch.onnx.export(module, tuple(inputs.values()), stem + ".onnx", input_names=list(inputs),
                              output_names=["output"], opset_version=opset, do_constant_folding=True)
            np.savez(stem + ".inputs.npz", **{k: v.numpy() for k, v in inputs.items()})
            np.savez(stem + ".reference.npz", output=y.numpy())
            print(os.path.basename(stem), fused, *gone)
    return 0


if __name__ == "__main__":
    sys.exit(main())
