#!/usr/bin/python3
"""Every ONNX operator through `agate compile`, with the shapes a fuzzer takes long to find.

Why: libFuzzer mutates bytes, so reaching "ArgMax of a scalar" or "ScatterND of one index tuple" takes it a
hundred thousand runs; a sweep over the operator schemas reaches them in one. For each operator of the default
domain (ONNX's own schemas, opset 17) it builds one-node models whose inputs all take one shape from a list of
edge cases (scalar, empty, 1-D, 2-D, 4-D, an empty axis, mismatched ranks), with and without an `axis`
attribute of 0, 1 and -1 where the operator has one, and compiles each for the portable C target (no LLVM: the
importer, shape inference, graph passes, lowering and C code generation all run). A refusal with a message is
the expected answer for most; a crash, a timeout, an internal error or a C++ library message leaking out
(std::, vector::) is a bug, printed with the model's path, and the exit status is 1.

With --run, each model is compiled for this machine (LLVM) instead and, when it compiles, run once on random
inputs (`agate run`): the kernels' handling of empty and scalar tensors is probed too (about 5x slower).

Usage: c_api/fuzz/probe_operators.py [--agate PATH] [--keep DIR] [--ops ArgMax Gather ...] [--run]
The models of the failing cases are kept in DIR (default: a temporary folder, printed); a fixed one belongs in
c_api/fuzz/regressions/ so the fuzzers' smoke runs replay it.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, defs, helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHAPES = [[], [0], [3], [2, 3], [1, 3, 4, 4], [1, 0, 2]]
# (first input's shape, the others') where ranks or extents differ.
MIXED = [([2, 3], [3]), ([1, 3, 4, 4], [3]), ([3], []), ([2, 3], [4])]
PREFERRED = [("tensor(float)", TensorProto.FLOAT), ("tensor(int64)", TensorProto.INT64),
             ("tensor(int32)", TensorProto.INT32), ("tensor(uint8)", TensorProto.UINT8),
             ("tensor(bool)", TensorProto.BOOL)]
SKIPPED = {"If", "Loop", "Scan", "SequenceMap"}  # need subgraphs
LEAKS = ("internal error", "std::", "vector::", "basic_string", "terminate called")


def element_type(schema, formal):
    allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}.get(formal.typeStr,
                                                                                             [formal.typeStr])
    return next((t for name, t in PREFERRED if name in allowed), None)


def models(schema, rng):
    """(description, ModelProto) for each probe of one operator."""
    has_axis = "axis" in schema.attributes
    for first, rest in [(s, s) for s in SHAPES] + MIXED:
        for axis in ([None, 0, 1, -1] if has_axis else [None]):
            inputs, names = [], []
            for i, formal in enumerate(schema.inputs):
                if formal.option == defs.OpSchema.FormalParameterOption.Optional and i >= 1 and rng.random() < 0.5:
                    break
                t = element_type(schema, formal)
                if t is None:
                    inputs = []
                    break
                copies = 2 if formal.option == defs.OpSchema.FormalParameterOption.Variadic else 1
                for c in range(copies):
                    names.append(f"in{i}_{c}")
                    inputs.append(helper.make_tensor_value_info(names[-1], t, first if i == 0 and c == 0 else rest))
            if not inputs:
                continue
            required = [o for o in schema.outputs if o.option != defs.OpSchema.FormalParameterOption.Optional]
            outputs = [helper.make_tensor_value_info(f"y{j}", TensorProto.UNDEFINED, None)
                       for j in range(max(1, len(required)))]
            attrs = {} if axis is None else {"axis": axis}
            node = helper.make_node(schema.name, names, [o.name for o in outputs], **attrs)
            graph = helper.make_graph([node], "probe", inputs, outputs)
            yield (f"{schema.name} inputs {first}/{rest} axis {axis}",
                   helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agate", default=os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate"))
    p.add_argument("--keep", help="folder for the models of failing cases")
    p.add_argument("--ops", nargs="+", help="only these operators")
    p.add_argument("--run", action="store_true", help="compile for the host and run each module that compiles")
    a = p.parse_args()
    keep = a.keep or tempfile.mkdtemp(prefix="agate-probe-")
    os.makedirs(keep, exist_ok=True)
    rng = random.Random(1)
    schemas = sorted((s for s in defs.get_all_schemas() if s.domain == "" and not s.deprecated), key=lambda s: s.name)
    failures = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        # A private copy: a build while the probe runs (minutes) replaces bazel-bin's binary.
        shutil.copy(a.agate, os.path.join(tmp, "agate"))
        a.agate = os.path.join(tmp, "agate")
        for schema in schemas:
            if schema.name in SKIPPED or (a.ops and schema.name not in a.ops):
                continue
            for what, model in models(schema, rng):
                path = os.path.join(tmp, "probe.onnx")
                onnx.save(model, path)
                runs += 1
                module = os.path.join(tmp, "probe.agm")
                target = [] if a.run else ["--target", "c"]
                commands = [[a.agate, "compile", path, *target, "-o", module]]
                if a.run:
                    commands.append([a.agate, "run", module, "--seed", "1"])
                bad, why = False, ""
                for command in commands:
                    try:
                        r = subprocess.run(command, capture_output=True, text=True, timeout=120)
                        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
                        bad = r.returncode < 0 or r.returncode >= 128 or any(s in last for s in LEAKS)
                        why = f"{command[1]}: exit {r.returncode}: {last[:200]}"
                    except subprocess.TimeoutExpired:
                        bad, why = True, f"{command[1]}: timed out after 120 s"
                    if bad or r.returncode != 0:
                        break
                if bad:
                    failures += 1
                    kept = os.path.join(keep, f"{schema.name}_{failures}.onnx")
                    onnx.save(model, kept)
                    print(f"FAIL {what}: {why} ({kept})", flush=True)
    print(f"{runs} models, {failures} failed" + (f" (kept in {keep})" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
