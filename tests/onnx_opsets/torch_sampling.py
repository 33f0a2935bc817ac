#!/usr/bin/env python3
"""Writes the sampling-operator cases (GridSample, AffineGrid, Col2Im, DeformConv) that tests/onnx_opsets/torch_compare checks against PyTorch.

Usage: torch_sampling.py OUT_DIR

For each case, OUT_DIR/STEM.npz holds the inputs (keys named as the node's inputs) and PyTorch's
output under "expected"; OUT_DIR/cases.txt lists one case a line:
  STEM OP OPSET INPUTS ATTR...
INPUTS is a comma-separated list; a name starting with '@' is an initializer (a constant). An ATTR
is NAME=i:INT, NAME=s:STRING or NAME=is:INT,INT,... Inputs are random, grids reach 60% beyond
[-1, 1] so that every padding mode is exercised. Debian's PyTorch 1.13 (CPU) computes the
expected values; nothing comes from agate.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    lines = []

    def case(stem, op, opset, inputs, attrs, expected):
        arrays = {name.lstrip("@"): value for name, value in inputs}
        np.savez(os.path.join(out, stem + ".npz"), expected=expected, **arrays)
        names = ",".join(name for name, _ in inputs)
        lines.append(" ".join([stem, op, str(opset), names] + attrs))

    def randn(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def grid(*shape):
        return rng.uniform(-1.6, 1.6, shape).astype(np.float32)

    # GridSample: 2-D at opset 16 (bilinear / bicubic) and 20 (linear / cubic), 3-D at opset 20.
    for mode16, mode20 in (("bilinear", "linear"), ("nearest", "nearest"), ("bicubic", "cubic")):
        for padding in ("zeros", "border", "reflection"):
            for align in (0, 1):
                x, g = randn(2, 3, 7, 9), grid(2, 5, 11, 2)
                y = F.grid_sample(torch.from_numpy(x), torch.from_numpy(g), mode=mode16, padding_mode=padding,
                                  align_corners=bool(align)).numpy()
                for opset, mode in ((16, mode16), (20, mode20)):
                    attrs = [f"mode=s:{mode}", f"padding_mode=s:{padding}", f"align_corners=i:{align}"]
                    case(f"gridsample{opset}_{mode}_{padding}_{align}", "GridSample", opset,
                         [("x", x), ("grid", g)], attrs, y)
                if mode16 == "bicubic":
                    continue  # PyTorch samples volumes with bilinear and nearest only
                x, g = randn(1, 2, 4, 5, 6), grid(1, 3, 4, 5, 3)
                y = F.grid_sample(torch.from_numpy(x), torch.from_numpy(g), mode=mode16, padding_mode=padding,
                                  align_corners=bool(align)).numpy()
                attrs = [f"mode=s:{mode20}", f"padding_mode=s:{padding}", f"align_corners=i:{align}"]
                case(f"gridsample20_3d_{mode20}_{padding}_{align}", "GridSample", 20, [("x", x), ("grid", g)],
                     attrs, y)

    # AffineGrid: 2-D and 3-D, both align_corners.
    for align in (0, 1):
        theta = randn(2, 2, 3)
        size = np.array([2, 3, 5, 7], dtype=np.int64)
        y = F.affine_grid(torch.from_numpy(theta), list(size), align_corners=bool(align)).numpy()
        case(f"affinegrid_2d_{align}", "AffineGrid", 20, [("theta", theta), ("@size", size)],
             [f"align_corners=i:{align}"], y)
        theta = randn(2, 3, 4)
        size = np.array([2, 3, 4, 5, 6], dtype=np.int64)
        y = F.affine_grid(torch.from_numpy(theta), list(size), align_corners=bool(align)).numpy()
        case(f"affinegrid_3d_{align}", "AffineGrid", 20, [("theta", theta), ("@size", size)],
             [f"align_corners=i:{align}"], y)

    # Col2Im against torch.nn.functional.fold (2-D).
    for image, block, dilation, pad, stride in (((5, 6), (2, 3), (1, 1), (0, 0, 0, 0), (1, 1)),
                                                ((9, 8), (3, 2), (2, 1), (1, 2, 1, 2), (2, 3)),
                                                ((7, 7), (3, 3), (1, 2), (2, 1, 2, 1), (1, 2))):
        n, c = 2, 3
        blocks = 1
        for d in range(2):
            blocks *= (image[d] + pad[d] + pad[d + 2] - dilation[d] * (block[d] - 1) - 1) // stride[d] + 1
        x = randn(n, c * block[0] * block[1], blocks)
        y = F.fold(torch.from_numpy(x), image, block, dilation=dilation, padding=(pad[0], pad[1]),
                   stride=stride).numpy()
        stem = "col2im_" + "x".join(map(str, image)) + "_" + "x".join(map(str, block))
        case(stem, "Col2Im", 18,
             [("x", x), ("@image_shape", np.array(image, dtype=np.int64)),
              ("@block_shape", np.array(block, dtype=np.int64))],
             ["dilations=is:" + ",".join(map(str, dilation)), "pads=is:" + ",".join(map(str, pad)),
              "strides=is:" + ",".join(map(str, stride))], y)

    # DeformConv against torchvision.ops.deform_conv2d: groups, offset groups, mask, bias,
    # stride, padding and dilation; offsets of a few pixels push taps outside the image.
    from torchvision.ops import deform_conv2d
    for n, c, oc, hw, k, group, offset_group, stride, pad, dilation, mask, bias in (
            (1, 2, 3, (6, 7), (3, 3), 1, 1, (1, 1), (1, 1), (1, 1), False, False),
            (2, 4, 6, (7, 6), (3, 2), 2, 2, (2, 1), (1, 0), (1, 2), True, True),
            (1, 6, 4, (5, 5), (2, 2), 2, 3, (1, 2), (2, 1), (2, 1), True, False)):
        oh = (hw[0] + 2 * pad[0] - dilation[0] * (k[0] - 1) - 1) // stride[0] + 1
        ow = (hw[1] + 2 * pad[1] - dilation[1] * (k[1] - 1) - 1) // stride[1] + 1
        taps = k[0] * k[1]
        x, w = randn(n, c, *hw), randn(oc, c // group, *k)
        offset = (rng.standard_normal((n, 2 * offset_group * taps, oh, ow)) * 2).astype(np.float32)
        m = rng.uniform(0, 1, (n, offset_group * taps, oh, ow)).astype(np.float32) if mask else None
        b = randn(oc) if bias else None
        y = deform_conv2d(torch.from_numpy(x), torch.from_numpy(offset), torch.from_numpy(w),
                          None if b is None else torch.from_numpy(b), stride=stride, padding=pad, dilation=dilation,
                          mask=None if m is None else torch.from_numpy(m)).numpy()
        inputs = [("x", x), ("w", w), ("offset", offset)]
        if bias or mask:
            inputs.append(("b", b if bias else np.zeros(oc, np.float32)))
        if mask:
            inputs.append(("mask", m))
        attrs = [f"group=i:{group}", f"offset_group=i:{offset_group}", "kernel_shape=is:%d,%d" % k,
                 "strides=is:%d,%d" % stride, "pads=is:%d,%d,%d,%d" % (pad + pad),
                 "dilations=is:%d,%d" % dilation]
        case(f"deformconv_g{group}_og{offset_group}_{'mask' if mask else 'nomask'}_{'bias' if bias else 'nobias'}",
             "DeformConv", 19, inputs, attrs, y)

    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(len(lines), "cases")


if __name__ == "__main__":
    main(sys.argv[1])
