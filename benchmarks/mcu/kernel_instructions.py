#!/usr/bin/python3
"""Instructions the int8 DS-CNN's kernels execute per inference on an emulated Cortex-M4, with the
microcontroller int8 conv template's SMLAD variant (core/ops/qlinear_mcu.h, picked where the target
has Arm's DSP extension) and without it (one product per multiply-accumulate).

QEMU has no cycle model (the Cortex-M's DWT cycle counter reads 0 under qemu-system-arm), so this
counts instructions, not cycles: a TCG plugin (insn_count_plugin.c, built here with the host's gcc)
counts the guest instructions executed inside the kws8 package's kernel functions, whose addresses
come from the linked firmware's symbols. The firmware is examples/mcu's (the three models, one
inference each); only the kws8 package differs between variants. Each variant's outputs must equal
the first's bit for bit (the same integer network).

    benchmarks/mcu/kernel_instructions.py --agate bazel-bin/tools/cli/agate [--work DIR]

Needs gcc-arm-none-eabi, libnewlib-arm-none-eabi, qemu-system-arm, flatc (as examples/mcu).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples/mcu"))
import run_example  # noqa: E402
import size_report  # noqa: E402

BOARD = "mps2-an386"  # Cortex-M4 with FPU; every package's kernels built with its -mcpu=cortex-m4 flags
# (label, agate target of the kws8 package, extra compile options). The Cortex-M3 targets produce
# the template without SMLAD (no DSP extension) while the firmware is still built for the M4, so
# the difference is the template alone. SMLAD's weights are int8 packed four to a word (unpacked
# by SXTB16) by default; --knob int8_mcu_packed=0 stores them as int16 pairs (one load per pair).
# Padded convs read their input in place and have their output loops cut into border and interior
# parts (core/lower/loop_partition.h); --knob loop_partition=0 keeps one loop with a bounds test
# per tap (less code: the kernel bytes column shows the trade).
VARIANTS = [
    ("C backend, SMLAD, packed int8 weights (c -mcpu=cortex-m4)", "c -mcpu=cortex-m4", []),
    ("C backend, SMLAD, int16 weight pairs (int8_mcu_packed=0)", "c -mcpu=cortex-m4", ["--knob", "int8_mcu_packed=0"]),
    ("C backend, one product per MAC (c -mcpu=cortex-m3)", "c -mcpu=cortex-m3", []),
    ("C backend, SMLAD, packed, padding tested per tap (loop_partition=0)", "c -mcpu=cortex-m4",
     ["--knob", "loop_partition=0"]),
    ("LLVM, SMLAD, packed int8 weights (thumbv7em, cortex-m4)", "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4", []),
    ("LLVM, SMLAD, int16 weight pairs (int8_mcu_packed=0)", "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4",
     ["--knob", "int8_mcu_packed=0"]),
    ("LLVM, one product per MAC (thumbv7em, cortex-m4, -dsp)",
     "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4 -mattr=-dsp", []),
    ("LLVM, SMLAD, packed, padding tested per tap (loop_partition=0)",
     "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4", ["--knob", "loop_partition=0"]),
]


def run(command, **kwargs):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit("$ " + " ".join(command) + "\n" + result.stdout[-3000:])
    return result


def kernel_ranges(build_dir, prefix):
    """[(lo, hi, name)] of the text symbols the package's kernel object defines, in the linked firmware."""
    objects = os.path.join(build_dir, "obj", prefix, f"agate_{prefix}_kernels.o")
    names = {name for name, kind in size_report.defined_symbols(objects) if kind == "t"}
    out = run(["arm-none-eabi-nm", "-S", "--defined-only", os.path.join(build_dir, "firmware.elf")]).stdout
    ranges = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2].lower() == "t" and parts[3] in names:
            lo = int(parts[0], 16) & ~1  # the Thumb bit
            ranges.append((lo, lo + int(parts[1], 16), parts[3]))
    return ranges


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agate", required=True, help="the agate command line (bazel-bin/tools/cli/agate)")
    parser.add_argument("--work", help="working folder (default: a temporary one)")
    args = parser.parse_args()
    agate = os.path.abspath(args.agate)
    work = args.work or tempfile.mkdtemp(prefix="agate-mcu-insns-")
    os.makedirs(work, exist_ok=True)
    plugin = os.path.join(work, "insn_count_plugin.so")
    run(["gcc", "-O2", "-shared", "-fPIC", "-o", plugin, os.path.join(HERE, "insn_count_plugin.c")])

    zoo = os.path.join(work, "zoo")
    run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_models.py"), "--out", zoo, "ds_cnn_kws"])
    run(["/usr/bin/python3", os.path.join(ROOT, "tools/zoo/export_qdq_models.py"), "--out", zoo, "ds_cnn_kws"])
    models = {
        "kws": (os.path.join(zoo, "ds_cnn_kws.onnx"), os.path.join(zoo, "ds_cnn_kws.inputs.npz")),
        "kws8": (os.path.join(zoo, "ds_cnn_kws_qdq.onnx"), os.path.join(zoo, "ds_cnn_kws_qdq.inputs.npz")),
        "demo": (os.path.join(ROOT, "examples/demo/demo_cnn.onnx"), os.path.join(ROOT, "examples/demo/demo_cnn.inputs.npz")),
    }
    board_target, machine = run_example.BOARDS[BOARD]
    packages = {}
    for prefix in ("kws", "demo"):
        packages[prefix] = os.path.join(work, prefix)
        run([agate, "compile", models[prefix][0], "--target", board_target, "--package", packages[prefix],
             "--memory-plan", "min-peak"])

    rows, first_output = [], {}
    for label, target, options in VARIANTS:
        folder = os.path.join(work, re.sub(r"[^a-z0-9]+", "_", target + " ".join(options)))
        os.makedirs(folder, exist_ok=True)
        packages["kws8"] = os.path.join(folder, "kws8")
        run([agate, "compile", models["kws8"][0], "--target", target, "--package", packages["kws8"],
             "--memory-plan", "min-peak"] + options)
        with open(os.path.join(packages["kws8"], "agate_kws8_module.c")) as f:
            module_bytes = int(re.search(r"agate_kws8_module_size = (\d+)u", f.read()).group(1))
        build = os.path.join(folder, "build")
        run([os.path.join(ROOT, "examples/mcu/build_firmware.sh"), BOARD, build, packages["kws"], packages["kws8"],
             packages["demo"]])
        for prefix, (_, inputs) in models.items():
            run_example.only_array(inputs).tofile(os.path.join(build, prefix + ".in"))
        ranges = kernel_ranges(build, "kws8")
        spec = ",".join([plugin] + [f"range={lo:x}-{hi:x}" for lo, hi, _ in ranges])
        ran = run(["timeout", "300", "qemu-system-arm", "-M", machine, "-nographic", "-monitor", "none", "-serial",
                   "none", "-semihosting-config", "enable=on,target=native", "-kernel", "firmware.elf",
                   "-plugin", spec, "-d", "plugin"], cwd=build)
        counted = re.search(r"AGATE_INSNS in_ranges=(\d+) total=(\d+)", ran.stdout)
        per_range = {m.group(1): int(m.group(2)) for m in re.finditer(r"AGATE_INSNS_RANGE (\S+) (\d+)", ran.stdout)}
        per_kernel = {name: per_range.get(f"{lo:x}-{hi:x}", 0) for lo, hi, name in ranges}
        outputs, _, _ = run_example.parse_firmware_output(ran.stdout)
        if counted is None or "kws8" not in outputs:
            sys.exit(f"{label}: no instruction count or kws8 output in\n{ran.stdout[-2000:]}")
        # The integer network is exact: within one backend the variants agree bit for bit (across
        # backends the float softmax at the end may round differently).
        backend = target.split()[0]
        if backend not in first_output:
            first_output[backend] = (label, outputs["kws8"])
        elif outputs["kws8"].tobytes() != first_output[backend][1].tobytes():
            sys.exit(f"{label}: kws8's output differs from {first_output[backend][0]}'s")
        flash = sum(hi - lo for lo, hi, _ in ranges)
        summary = run([agate, "inspect", models["kws8"][0], "--target", target]).stdout  # (inspect takes no knobs)
        smlad = len(re.findall(r"dsp: SMLAD", summary))
        rows.append((label, int(counted.group(1)), flash, smlad, per_kernel, int(counted.group(2)), module_bytes))
        print(f"{label}: {int(counted.group(1)):,} instructions in kws8's kernels ({len(ranges)} functions, "
              f"{flash} bytes), {smlad} conv(s) on SMLAD, module {module_bytes} bytes", flush=True)

    print(f"\n| kws8 kernels on {BOARD} (Cortex-M4, QEMU) | instructions per inference | vs the same backend's first row | "
          "whole firmware run | kernel code (bytes) | module: constants and tables (bytes) | convs on SMLAD |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    base = {}
    for label, count, flash, smlad, _, total, module_bytes in rows:
        backend = label.split(",")[0]
        base.setdefault(backend, count)
        print(f"| {label} | {count:,} | {count / base[backend]:.2f}x | {total:,} | {flash} | {module_bytes:,} | {smlad} |")
    print("(the whole run: the three models and the runtime, library calls included; only kws8 differs between rows)")
    print("\nPer kernel function (instructions per inference; the C backend shares one function between layers of "
          "equal shapes, LLVM does not; functions above 1% of their row's total):")
    names = []
    for row in rows:
        names += [n for n in sorted(row[4], key=lambda k: -row[4][k]) if n not in names and row[4][n] * 100 >= row[1]]
    print("| kernel | " + " | ".join(label for label, *_ in rows) + " |")
    print("| --- |" + " ---: |" * len(rows))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{r[4][name]:,}" if name in r[4] else "-" for r in rows) + " |")
    print("outputs: bit-identical between the variants of each backend")
    return 0


if __name__ == "__main__":
    sys.exit(main())
