#!/usr/bin/python3
"""Recurrent models for the compiled LSTM/GRU path, exported from PyTorch with its reference outputs.

  lstm_tagger: a part-of-speech-style tagger: Embedding(100, 32) -> 2-layer LSTM(hidden 64) ->
               Linear(64, 12) -> log_softmax, over token ids [seq 16, batch 2] (PyTorch's
               sequence-first layout).
  gru_model:   a bidirectional GRU(20 -> 24, batch_first, so exported with Transposes around
               ONNX's sequence-first GRU; PyTorch's GRU is linear_before_reset=1) with initial
               state h0, then Linear(48, 5) on every step, over float features [batch 3, seq 10, 20].

As tools/zoo/export_models.py: weights from a fixed seed, eval mode, torch.onnx.export; beside each
`<name>.onnx` go `<name>.inputs.npz` and `<name>.reference.npz` (keyed by ONNX input/output names).

Usage: export_recurrent_models.py --out DIR [MODEL...]   (default: every model)
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn


class LstmTagger(nn.Module):
    def __init__(self, vocab=100, embed=32, hidden=64, tags=12):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2)
        self.out = nn.Linear(hidden, tags)

    def forward(self, tokens):
        y, _ = self.lstm(self.embed(tokens))
        return torch.log_softmax(self.out(y), dim=-1)


class GruModel(nn.Module):
    def __init__(self, features=20, hidden=24, classes=5):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, x, h0):
        y, h = self.gru(x, h0)
        return self.out(y), h


def lstm_tagger_inputs(generator):
    return {"tokens": torch.randint(0, 100, (16, 2), generator=generator)}


def gru_model_inputs(generator):
    return {"x": torch.rand(3, 10, 20, generator=generator) * 2 - 1,
            "h0": torch.rand(2, 3, 24, generator=generator) * 2 - 1}


MODELS = {
    "lstm_tagger": (LstmTagger, lstm_tagger_inputs, ["log_probs"]),
    "gru_model": (GruModel, gru_model_inputs, ["y", "h"]),
}


def export(name, out_dir):
    build, make_inputs, output_names = MODELS[name]
    torch.manual_seed(0)
    model = build().eval()
    inputs = make_inputs(torch.Generator().manual_seed(1))
    with torch.no_grad():
        outputs = model(*inputs.values())
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, tuple(inputs.values()), path, input_names=list(inputs.keys()),
                      output_names=output_names, opset_version=14)
    np.savez(os.path.join(out_dir, name + ".inputs.npz"), **{k: v.numpy() for k, v in inputs.items()})
    np.savez(os.path.join(out_dir, name + ".reference.npz"),
             **{k: v.numpy() for k, v in zip(output_names, outputs)})
    print(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("models", nargs="*", default=list(MODELS))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        if name not in MODELS:
            sys.exit(f"unknown model {name}; the models are {', '.join(MODELS)}")
        export(name, args.out)


if __name__ == "__main__":
    main()
