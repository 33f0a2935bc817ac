#!/usr/bin/python3
"""The microcontroller example end to end, as a user would do it, and its check.

1. Exports the keyword-spotting DS-CNN from PyTorch in float32 (tools/zoo/export_models.py
   ds_cnn_kws: fixed seeds, with PyTorch's reference output) and in int8 (tools/zoo/export_qdq_models.py
   ds_cnn_kws: PyTorch's static quantization in QDQ form, with PyTorch's int8 output), and takes the
   bundled demo CNN (examples/demo).
2. Compiles each into a package with `agate compile --package --memory-plan min-peak` (prefixes
   kws, kws8 and demo): the portable C backend for the Cortex-M4 board, LLVM objects for the
   Cortex-M55 board (and, with --sizes, each with the default memory plan for the report's
   comparison). The int8 model must fold into integer operators (no "stays float" warning).
3. Builds one firmware per board holding the three models (build_firmware.sh) and runs it under
   qemu-system-arm (mps2-an386, mps3-an547) with the models' inputs.
4. Compares every output the firmware prints with `agate run` of the same model compiled for
   this machine, and with PyTorch's (the int8 model with PyTorch's int8 model, within a
   quantization step of the logits), and checks that a module given the other model's kernel
   table was refused.

Prints one "ok"/"FAIL" line per check and, with --sizes FILE, writes the size report
(size_report.py). Exit status 0 when every check passed.

  examples/mcu/run_example.py --agate bazel-bin/tools/cli/agate [--work DIR] [--boards mps2-an386 ...]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import size_report  # noqa: E402

BOARDS = {
    # board: (agate target, QEMU machine)
    "mps2-an386": ("c -mcpu=cortex-m4", "mps2-an386"),
    "mps3-an547": ("llvm -mtriple=thumbv8.1m.main-none-eabi -mcpu=cortex-m55", "mps3-an547"),
}

failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + detail), flush=True)
    if not ok:
        failures += 1
    return ok


def run(command, **kwargs):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    if result.returncode != 0:
        print("$ " + " ".join(command) + "\n" + result.stdout[-3000:], flush=True)
    return result


def only_array(path):
    with np.load(path) as data:
        return np.asarray(data[data.files[0]], dtype=np.float32)


def close(got, want):
    """|got - want| <= 1e-5 + 1e-4 |want|: other compilers, other summation orders."""
    if got.shape != want.shape:
        return False, f"shape {got.shape} vs {want.shape}"
    diff = np.abs(got - want)
    bound = 1e-5 + 1e-4 * np.abs(want)
    return bool(np.all(diff <= bound)), f"max |diff| {diff.max():.3g}"


def close_int8(got, want, tolerance=0.02):
    """The int8 DS-CNN against PyTorch's int8 model: the same quantized network, but PyTorch
    (onednn) requantises in float32 where agate rounds in double (core/ops/qlinear.h), so a logit
    may move by one quantization step; the softmax outputs agree within `tolerance`."""
    if got.shape != want.shape:
        return False, f"shape {got.shape} vs {want.shape}"
    diff = float(np.abs(got - want).max())
    return diff <= tolerance and int(got.argmax()) == int(want.argmax()), f"max |diff| {diff:.3g}"


def parse_firmware_output(text):
    outputs, ram, refused = {}, {}, None
    for line in text.splitlines():
        words = line.split()
        if line.startswith("AGATE_OUTPUT "):
            bits = np.array([int(w, 16) for w in words[3:]], dtype=np.uint32)
            outputs[words[1]] = bits.view(np.float32)
        elif line.startswith("AGATE_RAM "):
            ram[words[1]] = {k: int(v) for k, v in (w.split("=") for w in words[2:])}
        elif line.startswith("AGATE_REFUSED "):
            refused = line[len("AGATE_REFUSED "):]
    return outputs, ram, refused


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agate", required=True, help="the agate command line (bazel-bin/tools/cli/agate)")
    parser.add_argument("--work", help="working folder (default: a temporary one)")
    parser.add_argument("--boards", nargs="+", default=sorted(BOARDS), choices=sorted(BOARDS))
    parser.add_argument("--sizes", help="write the size report (markdown) here")
    parser.add_argument("--interpret", help="the reference interpreter (bazel-bin/tools/zoo/interpret): the int8 "
                        "model's host output must equal its output bit for bit")
    args = parser.parse_args()
    agate = os.path.abspath(args.agate)
    work = args.work or tempfile.mkdtemp(prefix="agate-mcu-")
    os.makedirs(work, exist_ok=True)

    # 1. The models and their inputs.
    zoo = os.path.join(work, "zoo")
    exported = run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_models.py"), "--out", zoo, "ds_cnn_kws"])
    if not check("DS-CNN exported from PyTorch", exported.returncode == 0):
        return 1
    exported = run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_qdq_models.py"), "--out", zoo,
                    "ds_cnn_kws"])
    if not check("int8 DS-CNN exported from PyTorch (QDQ)", exported.returncode == 0):
        return 1
    models = {
        "kws": (os.path.join(zoo, "ds_cnn_kws.onnx"), os.path.join(zoo, "ds_cnn_kws.inputs.npz"),
                os.path.join(zoo, "ds_cnn_kws.reference.npz")),
        "kws8": (os.path.join(zoo, "ds_cnn_kws_qdq.onnx"), os.path.join(zoo, "ds_cnn_kws_qdq.inputs.npz"),
                 os.path.join(zoo, "ds_cnn_kws_qdq.torch_int8.npz")),
        "demo": (os.path.join(ROOT, "examples/demo/demo_cnn.onnx"), os.path.join(ROOT, "examples/demo/demo_cnn.inputs.npz"),
                 os.path.join(ROOT, "examples/demo/demo_cnn.reference.npz")),
    }

    # The host's answer: the same models compiled for this machine, run by `agate run`.
    host = {}
    for prefix, (onnx, inputs, reference) in models.items():
        module = os.path.join(work, prefix + ".host.agm")
        out = os.path.join(work, prefix + ".host.npz")
        compiled = run([agate, "compile", onnx, "-o", module, "--target", "llvm"])
        ok = compiled.returncode == 0 and run([agate, "run", module, "--inputs", inputs, "--outputs", out]).returncode == 0
        if not check(f"{prefix}: agate run on the host", ok):
            return 1
        if prefix == "kws8":
            check("kws8: every quantized pattern folded into integer operators", "stays float" not in compiled.stdout,
                  compiled.stdout[-500:])
            if args.interpret:
                ref = os.path.join(work, "kws8.interpreter.npz")
                ok = run([os.path.abspath(args.interpret), onnx, inputs, ref]).returncode == 0
                # The integer part is exact; the float softmax at the end may round its exp differently
                # (a unit in the last place), so the outputs must agree to a few ulps.
                got, want = only_array(out), only_array(ref) if ok else None
                ulps = int(np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32)).max()) if ok and \
                    got.shape == want.shape else None
                check(f"kws8: the host equals the reference interpreter to {ulps} ulp (float softmax after the integer "
                      "network)", ulps is not None and ulps <= 4)
        host[prefix] = only_array(out)
        same, detail = (close_int8 if prefix == "kws8" else close)(host[prefix], only_array(reference))
        peer = "PyTorch's int8 model" if prefix == "kws8" else "PyTorch"
        check(f"{prefix}: the host matches {peer} ({detail})", same, detail)
        only_array(inputs).tofile(os.path.join(work, prefix + ".in"))

    reports = []
    for board in args.boards:
        target, machine = BOARDS[board]
        folder = os.path.join(work, board)
        os.makedirs(folder, exist_ok=True)
        # 2. A package per model.
        # The firmware uses the memory plan for RAM-bound targets; the default plan's package is
        # made too, for the size report's comparison.
        packages, default_plans = {}, {}
        os.makedirs(os.path.join(folder, "default_plan"), exist_ok=True)
        for prefix, (onnx, _, _) in models.items():
            packages[prefix] = os.path.join(folder, prefix)
            default_plans[prefix] = os.path.join(folder, "default_plan", prefix)
            ok = run([agate, "compile", onnx, "--target", target, "--package", packages[prefix],
                      "--memory-plan", "min-peak"]).returncode == 0
            if ok and args.sizes:
                ok = run([agate, "compile", onnx, "--target", target, "--package", default_plans[prefix]]).returncode == 0
            if not check(f"{board}: package {prefix} for '{target}'", ok):
                return 1
        # 3. One firmware with both, run under QEMU.
        built = run([os.path.join(HERE, "build_firmware.sh"), board, os.path.join(folder, "build"), packages["kws"],
                     packages["kws8"], packages["demo"]])
        if not check(f"{board}: firmware with the three models links", built.returncode == 0):
            continue
        for prefix in models:
            with open(os.path.join(work, prefix + ".in"), "rb") as src, \
                    open(os.path.join(folder, "build", prefix + ".in"), "wb") as dst:
                dst.write(src.read())
        ran = run(["timeout", "120", "qemu-system-arm", "-M", machine, "-nographic", "-monitor", "none", "-serial",
                   "none", "-semihosting-config", "enable=on,target=native", "-kernel", "firmware.elf"],
                  cwd=os.path.join(folder, "build"))
        check(f"{board}: firmware runs under qemu-system-arm", ran.returncode == 0, ran.stdout[-500:])
        outputs, ram, refused = parse_firmware_output(ran.stdout)
        # 4. The firmware's answers against the host's.
        for prefix in models:
            if not check(f"{board}: {prefix} output printed", prefix in outputs):
                continue
            same, detail = close(outputs[prefix].reshape(host[prefix].shape), host[prefix])
            check(f"{board}: {prefix} matches agate run on the host ({detail})", same, detail)
        check(f"{board}: the kws module with the demo's kernel table is refused",
              refused is not None and refused.startswith("invalid argument") and "fingerprint" in refused,
              str(refused))
        if refused:
            print(f"     firmware said: {refused}")
        reports.append(size_report.measure(board, target, os.path.join(folder, "build"), packages, ram,
                                           default_plans if args.sizes else None))

    if args.sizes and reports:
        with open(args.sizes, "w") as f:
            f.write(size_report.markdown(reports))
        print(f"wrote {args.sizes}")
    print(f"{failures} failed")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
