#!/usr/bin/python3
"""Where a compiled model and the reference interpreter part: intermediate values of an ONNX model made
outputs, compared value by value.

Why: a whole-model difference (issue 17: the dynamically quantized BERT-small 0.014 from the interpreter)
says nothing about where it starts. Each chosen value gets an Identity probe that is a graph output
(probe_<i>), so `agate compile` must write it while the rest of the graph fuses as before (the probed value
becomes a group output; its group's arithmetic is unchanged); the probed model is compiled and run with
agate and run on tools/zoo:interpret (the reference interpreter after the same graph passes), and every
probe is compared: elements that differ, the largest difference, and for one-element values both values.
The first probe that differs is where they part.

Values probed: the inputs and outputs of every node whose op is in --ops (default: DynamicQuantizeLinear,
where a float difference becomes an integer one), and the names in --names.

Usage: probe_values.py MODEL.onnx INPUTS.npz WORKDIR [--ops A,B] [--names x,y] [--compile-args "..."]
(agate and interpret from bazel-bin, or $AGATE and $INTERPRET).
"""
import argparse
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, shape_inference

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AGATE = os.environ.get("AGATE", os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate"))
INTERPRET = os.environ.get("INTERPRET", os.path.join(ROOT, "bazel-bin", "tools", "zoo", "interpret"))


def probed_model(model, ops, names):
    """`model` with an Identity probe (graph output probe_<i>) per chosen value; returns the value names."""
    inferred = shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in list(inferred.graph.value_info) + list(inferred.graph.output) +
             list(inferred.graph.input)}
    wanted = []
    for n in model.graph.node:
        if n.op_type in ops:
            wanted += [n.input[0], *n.output]
    wanted += names
    probes = []
    for w in wanted:
        if w in types and w not in probes:
            probes.append(w)
    for i, w in enumerate(probes):
        model.graph.node.append(helper.make_node("Identity", [w], [f"probe_{i}"], name=f"probe_node_{i}"))
        out = onnx.ValueInfoProto()
        out.name = f"probe_{i}"
        out.type.CopyFrom(types[w])
        model.graph.output.append(out)
    return probes


def describe(name, got, ref):
    wide = np.int64 if got.dtype.kind in "uib" else np.float64
    d = np.abs(got.astype(wide) - ref.astype(wide))
    line = f"{name[:64]:64s} {str(got.dtype):8s} {got.size:9d} differ {int((d != 0).sum()):8d} max {d.max():.4g}"
    if got.size == 1:
        line += f"  ({got.ravel()[0]!r} vs {ref.ravel()[0]!r})"
    return line


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("inputs")
    p.add_argument("work")
    p.add_argument("--ops", default="DynamicQuantizeLinear")
    p.add_argument("--names", default="")
    p.add_argument("--compile-args", default="")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model = onnx.load(a.model)
    probes = probed_model(model, set(filter(None, a.ops.split(","))), list(filter(None, a.names.split(","))))
    if not probes:
        print("probe_values.py: no value matched --ops / --names", file=sys.stderr)
        return 2
    path, module = os.path.join(a.work, "probed.onnx"), os.path.join(a.work, "probed.agm")
    got_path, ref_path = os.path.join(a.work, "compiled.npz"), os.path.join(a.work, "interpreted.npz")
    onnx.save(model, path)
    for cmd in ([AGATE, "compile", path, "-o", module, *shlex.split(a.compile_args)],
                [AGATE, "run", module, "--inputs", a.inputs, "--outputs", got_path],
                [INTERPRET, path, a.inputs, ref_path]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"probe_values.py: {' '.join(cmd[:2])} failed:\n{r.stderr.strip()[-2000:]}", file=sys.stderr)
            return 1
    got, ref = np.load(got_path), np.load(ref_path)
    for out in (o.name for o in model.graph.output if not o.name.startswith("probe_")):
        print(describe("output " + out, got[out], ref[out]))
    for i, name in enumerate(probes):
        print(f"{i:3d} " + describe(name, got[f"probe_{i}"], ref[f"probe_{i}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
