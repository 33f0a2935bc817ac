#!/usr/bin/python3
"""Models whose outputs' extents the values decide, exported from PyTorch with reference outputs.

  nms_select:   torchvision.ops.nms(boxes, scores, 0.5), then the kept boxes scaled and their scores
                (NonMaxSuppression -> Gather of the box column -> Squeeze -> Gather, as torchvision 0.14
                exports it), over 64 boxes with random corners.
  mask_select:  boxes[scores > 0.5] * 2 (NonZero -> Transpose -> GatherND).
  where_linear: Linear(4, 3) of boxes[torch.where(scores > 0.5)[0]] (NonZero -> Transpose -> Split ->
                Squeeze -> Gather -> MatMul + Add): a product row for row on the selected rows.
  grid_select:  features[scores > 0.5] * 2 with a 2-D mask over [batch, slots] and
                torch.nonzero(scores > 0.5) (NonZero -> Transpose -> GatherND; NonZero -> Transpose):
                positions [2, rows] whose rows follow an axis longer than 1.

Each model gets three input sets: random scores, and for the masks every score above and none above
the threshold (for NMS: boxes that all overlap and boxes that never do). Beside `<name>.onnx` go
`<name>.<set>.inputs.npz` and `<name>.<set>.reference.npz` (keyed by ONNX input/output names; the
references have the shapes the values decide). Weights from a fixed seed, eval mode, opset 13.

Usage: export_selection_models.py --out DIR [MODEL...]   (default: every model)
"""
import argparse
import os
import sys

import numpy as np
import torch
import torchvision


class NmsSelect(torch.nn.Module):
    def forward(self, boxes, scores):
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        return boxes[keep] * 2.0, scores[keep]


class MaskSelect(torch.nn.Module):
    def forward(self, boxes, scores):
        return boxes[scores > 0.5] * 2.0


class WhereLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, boxes, scores):
        return self.linear(boxes[torch.where(scores > 0.5)[0]])


class GridSelect(torch.nn.Module):
    def forward(self, features, scores):
        mask = scores > 0.5
        return features[mask] * 2.0, torch.nonzero(mask)


def random_boxes(generator, n, side):
    corner = torch.rand(n, 2, generator=generator) * 10
    size = torch.rand(n, 2, generator=generator) * side + 0.5
    return torch.cat([corner, corner + size], dim=1)


def nms_inputs(generator):
    n = 64
    scores = torch.rand(n, generator=generator)
    overlapping = torch.tensor([[0.0, 0.0, 10.0, 10.0]]).repeat(n, 1) + torch.rand(n, 4, generator=generator) * 0.1
    apart = torch.arange(n, dtype=torch.float32).unsqueeze(1) * 10 + torch.tensor([0.0, 0.0, 1.0, 1.0])
    return {"random": {"boxes": random_boxes(generator, n, 3.0), "scores": scores},
            "overlapping": {"boxes": overlapping, "scores": scores},
            "apart": {"boxes": apart, "scores": scores}}


def mask_inputs(generator):
    n = 20
    boxes = random_boxes(generator, n, 3.0)
    return {"random": {"boxes": boxes, "scores": torch.rand(n, generator=generator)},
            "all": {"boxes": boxes, "scores": torch.full((n,), 0.9)},
            "none": {"boxes": boxes, "scores": torch.full((n,), 0.1)}}


def grid_inputs(generator):
    batch, slots, width = 3, 6, 4
    features = torch.rand(batch, slots, width, generator=generator) * 2 - 1
    return {"random": {"features": features, "scores": torch.rand(batch, slots, generator=generator)},
            "all": {"features": features, "scores": torch.full((batch, slots), 0.9)},
            "none": {"features": features, "scores": torch.full((batch, slots), 0.1)}}


MODELS = {
    "nms_select": (NmsSelect, nms_inputs, ["kept_boxes", "kept_scores"]),
    "mask_select": (MaskSelect, mask_inputs, ["selected"]),
    "where_linear": (WhereLinear, mask_inputs, ["projected"]),
    "grid_select": (GridSelect, grid_inputs, ["selected", "positions"]),
}


def export(name, out_dir):
    build, make_inputs, output_names = MODELS[name]
    torch.manual_seed(0)
    model = build().eval()
    sets = make_inputs(torch.Generator().manual_seed(1))
    first = next(iter(sets.values()))
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, tuple(first.values()), path, input_names=list(first.keys()),
                      output_names=output_names, opset_version=13)
    for set_name, inputs in sets.items():
        with torch.no_grad():
            outputs = model(*inputs.values())
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        prefix = os.path.join(out_dir, f"{name}.{set_name}")
        np.savez(prefix + ".inputs.npz", **{k: v.numpy() for k, v in inputs.items()})
        np.savez(prefix + ".reference.npz", **{k: v.numpy() for k, v in zip(output_names, outputs)})
        print(prefix, [tuple(o.shape) for o in outputs])


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
