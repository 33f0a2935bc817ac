#!/usr/bin/python3
"""Dynamically quantized transformers (issue 17): BERT-small, BERT-base, GPT-2 over 128 tokens and GPT-2's
one-token decoder step (gpt2_step1) with every constant-weight MatMul in the form ONNX Runtime's
quantize_dynamic writes.

The float models are tools/zoo/export_models.py's (same architectures as benchmarks/models; exported on
demand into the same cache). Each MatMul whose second operand is a float initializer of rank 2 (the Linear
layers, GPT-2's LM head) becomes

    x -> DynamicQuantizeLinear -> x_q (uint8), x_scale, x_zero_point   (once per activation: Q, K and V
                                                                         share theirs)
    MatMulInteger(x_q, W_q, x_zero_point, W_zero_point) -> int32
    Mul(x_scale, W_scale) -> scale product;  Cast(int32 -> float) * scale product -> the MatMul's output

with W_q int8 per output column, symmetric (W_scale[n] = max |W[:, n]| / 127, zero points 0, values rounded
half to even and clipped to [-127, 127]). The bias Add after the MatMul stays as it was. Products of two
activations (attention) stay float. Built with Debian's onnx Python helpers; deterministic (the same float
model gives the same bytes).

Beside <name>_dynint8.onnx go <name>_dynint8.inputs.npz (the float model's inputs) and
<name>_dynint8.fp32.npz (PyTorch's float outputs). With --ort, ONNX Runtime 1.30 (node,
benchmarks/quantized/ort_outputs.js) runs the quantized model on those inputs: <name>_dynint8.ort.npz,
and the script prints its difference from the float outputs.

Usage: export_dynamic_int8.py [--out DIR] [--ort] [--force] MODEL...   MODEL: bert_small bert_base gpt2_small gpt2_step1
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DEFAULT_CACHE = os.path.expanduser("~/.cache/agate/zoo")
MODELS = ("bert_small", "bert_base", "gpt2_small", "gpt2_step1")


def quantize_weight(w):
    """[K, N] float -> (int8 [K, N], float32 scales [N]): per column, symmetric, round half to even."""
    amax = np.abs(w).max(axis=0).astype(np.float32)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def stem(name):
    """A tensor name as a prefix for new names (ONNX names may hold '/', ':' or '.')."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")


def quantize_model(model):
    """Rewrites `model` in place; returns the number of MatMuls quantized."""
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    nodes, quantized_inputs, count = [], {}, 0
    new_inits, replaced = [], set()
    for node in graph.node:
        w = inits.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2 or w.data_type != TensorProto.FLOAT:
            nodes.append(node)
            continue
        x = node.input[0]
        if x not in quantized_inputs:
            base = stem(x)
            names = (base + "_quantized", base + "_scale", base + "_zero_point")
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], list(names), name=base + "_DynamicQuantizeLinear"))
            quantized_inputs[x] = names
        xq, xs, xz = quantized_inputs[x]
        wq, ws = quantize_weight(numpy_helper.to_array(w))
        wbase, out = stem(w.name), node.output[0]
        obase = stem(out)
        new_inits += [numpy_helper.from_array(wq, wbase + "_quantized"),
                      numpy_helper.from_array(ws, wbase + "_scale"),
                      numpy_helper.from_array(np.zeros(wq.shape[1], np.int8), wbase + "_zero_point")]
        replaced.add(w.name)
        nodes += [
            helper.make_node("MatMulInteger", [xq, wbase + "_quantized", xz, wbase + "_zero_point"], [obase + "_int32"],
                             name=obase + "_MatMulInteger"),
            helper.make_node("Mul", [xs, wbase + "_scale"], [obase + "_scales"], name=obase + "_scales_mul"),
            helper.make_node("Cast", [obase + "_int32"], [obase + "_float"], name=obase + "_cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [obase + "_float", obase + "_scales"], [out], name=obase + "_mul"),
        ]
        count += 1
    still_read = {i for n in nodes for i in n.input}
    kept = [i for i in graph.initializer if i.name not in replaced or i.name in still_read]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + new_inits)
    return count


def ort_outputs(model_path, inputs):
    """ONNX Runtime's outputs for `inputs` (name -> array) through benchmarks/quantized/ort_outputs.js."""
    with tempfile.TemporaryDirectory() as d:
        manifest = []
        for i, (name, value) in enumerate(inputs.items()):
            value = np.ascontiguousarray(value)
            value.tofile(os.path.join(d, f"input_{i}.bin"))
            manifest.append({"name": name, "dtype": str(value.dtype), "shape": list(value.shape), "file": f"input_{i}.bin"})
        with open(os.path.join(d, "inputs.json"), "w") as f:
            json.dump(manifest, f)
        subprocess.run(["node", os.path.join(ROOT, "benchmarks/quantized/ort_outputs.js"), model_path, d], check=True)
        outputs = {}
        for o in json.load(open(os.path.join(d, "outputs.json"))):
            outputs[o["name"]] = np.fromfile(os.path.join(d, o["file"]), dtype=o["dtype"]).reshape(o["shape"])
        return outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--out", default=DEFAULT_CACHE)
    parser.add_argument("--ort", action="store_true", help="also write ONNX Runtime's outputs (<name>_dynint8.ort.npz)")
    parser.add_argument("--force", action="store_true", help="re-write even when the files exist")
    args = parser.parse_args()
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        print(f"export_dynamic_int8.py: unknown model(s) {unknown}; choose from {list(MODELS)}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    subprocess.run(["/usr/bin/python3", os.path.join(HERE, "export_models.py"), "--out", args.out, *args.models],
                   check=True)
    for name in args.models:
        src = os.path.join(args.out, name)
        dst = os.path.join(args.out, name + "_dynint8")
        if args.force or not os.path.exists(dst + ".fp32.npz"):
            model = onnx.load(src + ".onnx")
            count = quantize_model(model)
            onnx.checker.check_model(model)
            tmp = dst + ".onnx.tmp"
            onnx.save(model, tmp)
            os.replace(tmp, dst + ".onnx")
            shutil.copyfile(src + ".inputs.npz", dst + ".inputs.npz")
            if os.path.exists(dst + ".ort.npz"):
                os.remove(dst + ".ort.npz")  # from an earlier model
            shutil.copyfile(src + ".reference.npz", dst + ".fp32.npz")
            print(f"{name}_dynint8: {count} MatMuls quantized dynamically, {os.path.getsize(dst + '.onnx') / 1024:.0f} KiB")
        else:
            print(f"{name}_dynint8: cached in {args.out}")
        if args.ort and (args.force or not os.path.exists(dst + ".ort.npz")):
            inputs = dict(np.load(dst + ".inputs.npz"))
            got = ort_outputs(dst + ".onnx", inputs)
            np.savez(dst + ".ort.npz", **got)
        if args.ort:
            got, fp32 = np.load(dst + ".ort.npz")["output"], np.load(dst + ".fp32.npz")["output"]
            print(f"{name}_dynint8: ONNX Runtime int8 vs PyTorch fp32: max |diff| {np.abs(got - fp32).max():.4g} of "
                  f"max |fp32| {np.abs(fp32).max():.4g}, mean |diff| {np.abs(got - fp32).mean():.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
