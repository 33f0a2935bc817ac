#!/usr/bin/python3
"""Flash and RAM of the example firmware, per model, as a markdown table (examples/mcu/SIZES.md).

Flash is attributed from the linked firmware (after --gc-sections) by symbol: a symbol counts
for the runtime core, a model's kernels or a model's table and entry points when the object of
that part defines it (build_firmware.sh keeps them in obj/runtime, obj/<prefix>); a model's
constants are its module array (weights plus the plan and tensor descriptions). RAM comes from
the package's header (arena, workspace, outputs) and from what the firmware measured on the core
(AGATE_RAM: the loaded module's and the executor's state with 32-bit pointers).

Called by run_example.py; needs arm-none-eabi-nm (gcc-arm-none-eabi).
"""
import glob
import os
import re
import subprocess


def defined_symbols(path):
    """(name, size) of every sized text/data symbol an ELF or object defines."""
    out = subprocess.run(["arm-none-eabi-nm", "-S", "--defined-only", path], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2].lower() in "tdrb":
            symbols[(parts[3], parts[2].lower())] = int(parts[1], 16)
    return symbols


def header_macros(path):
    macros = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"#define (AGATE_\w+) (\d+)u", line)
            if m:
                macros[m.group(1)] = int(m.group(2))
    return macros


def measure(board, target, build_dir, packages, ram, default_plans=None):
    """The figures of one firmware: {board, target, runtime_flash, models: {prefix: {...}}}."""
    firmware = defined_symbols(os.path.join(build_dir, "firmware.elf"))

    def linked_bytes(objects, kinds="tr"):
        names = set()
        for o in objects:
            names.update(k for k in defined_symbols(o) if k[1] in kinds)
        return sum(size for key, size in firmware.items() if key in names)

    report = {"board": board, "target": target,
              "runtime_flash": linked_bytes(glob.glob(os.path.join(build_dir, "obj/runtime/*.o")), "trd"),
              "models": {}}
    for prefix, package in packages.items():
        macros = header_macros(os.path.join(package, f"agate_{prefix}.h"))
        P = "AGATE_" + prefix.upper() + "_"
        objects = os.path.join(build_dir, "obj", prefix)
        module_array = sum(size for (name, _), size in firmware.items() if name == f"agate_{prefix}_module")
        measured = ram.get(prefix, {})
        arena, workspace, outputs = macros[P + "ARENA_BYTES"], macros[P + "WORKSPACE_BYTES"], macros[P + "OUTPUTS_BYTES"]
        executor = measured.get("executor", 0)
        report["models"][prefix] = {
            "kernels_flash": linked_bytes(glob.glob(os.path.join(objects, f"agate_{prefix}_kernels.o")), "trd"),
            "table_flash": linked_bytes([os.path.join(objects, f"agate_{prefix}.o")], "trd"),
            "constants_flash": macros.get(P + "CONSTANT_BYTES", 0),
            "module_flash": module_array,
            "arena": arena,
            "workspace": workspace,
            "outputs": outputs,
            # The executor's own tables: what it holds beyond arena, workspace and outputs.
            "executor_state": max(0, executor - ((arena + 63) // 64 * 64) - workspace - outputs),
            "module_state": measured.get("module_state", 0),
            "memory_macro": macros[P + "MEMORY_BYTES"],
        }
        if default_plans and prefix in default_plans:
            default = header_macros(os.path.join(default_plans[prefix], f"agate_{prefix}.h"))
            report["models"][prefix]["default_arena"] = default[P + "ARENA_BYTES"]
    return report


def kib(n):
    return f"{n / 1024:.1f}"


def total_ram(m):
    return ((m["arena"] + 63) // 64 * 64) + m["workspace"] + m["outputs"] + m["executor_state"] + m["module_state"]


TFLM_DS_CNN_ARENA = 23 * 1024  # MLPerf Tiny's int8 DS-CNN on TFLite Micro (see the text)


def comparison(reports):
    """The DS-CNN lines of the TFLite Micro section, from the measured figures."""
    lines = []
    for r in reports:
        models = r["models"]
        if "kws" not in models or "kws8" not in models:
            continue
        fp32, int8 = total_ram(models["kws"]), total_ram(models["kws8"])
        lines.append(f"  - {r['board']}: int8 DS-CNN {kib(int8)} KiB of RAM in all, float32 {kib(fp32)} KiB "
                     f"(int8/fp32 = {int8 / fp32:.2f}; issue 17's goal <= 0.33: "
                     f"{'met' if 3 * int8 <= fp32 else 'not met'}); against TFLite Micro's 23 KiB arena "
                     f"(issue 15's goal, total <= arena): {'met' if int8 <= TFLM_DS_CNN_ARENA else 'not met'}.")
    return lines


def markdown(reports):
    lines = [
        "# Flash and RAM of the microcontroller example",
        "",
        "Written by `examples/mcu/run_example.py --sizes examples/mcu/SIZES.md` (see README.md): the three models",
        "(the DS-CNN in float32 and int8, the demo CNN) linked into one firmware with arm-none-eabi-gcc 12 (`-O2`",
        "packages, `-Os` runtime, `--gc-sections`), compiled with `--memory-plan min-peak` (the default plan's",
        "arena in parentheses), the core runtime built with its full error messages. KiB = 1024 bytes.",
        "",
    ]
    for r in reports:
        lines += [f"## {r['board']} (`{r['target']}`)", "",
                  f"Runtime core (parse, verify, run; FlatBuffers verifier; messages on): "
                  f"**{kib(r['runtime_flash'])} KiB** flash, shared by the models.", "",
                  "| model | flash: kernels | flash: constants (module) | flash: table + entry | RAM: arena | "
                  "RAM: workspace | RAM: outputs | RAM: executor + module state | RAM: total |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for prefix, m in r["models"].items():
            total = total_ram(m)
            lines.append(f"| {prefix} | {kib(m['kernels_flash'])} | {kib(m['constants_flash'])} "
                         f"({kib(m['module_flash'])}) | {kib(m['table_flash'])} | {kib(m['arena'])}"
                         f"{' (' + kib(m['default_arena']) + ')' if 'default_arena' in m else ''} | "
                         f"{kib(m['workspace'])} | {kib(m['outputs'])} | "
                         f"{m['executor_state'] + m['module_state']} B | **{kib(total)}** |")
        lines.append("")
    lines += [
        "RAM: total is what the firmware reserves per model beyond its stack: the arena of intermediate tensors",
        "(64-byte aligned), the largest kernel workspace, the outputs, and the executor's and loaded module's",
        "tables as measured on the core (32-bit pointers; the header's `AGATE_<PREFIX>_MEMORY_BYTES` is sized on",
        "the 64-bit host, a few hundred bytes more). Stack use is not measured. Flash counts symbols of the",
        "linked firmware by the object that defines them; newlib's helpers (memcpy, printf) are not counted.",
        "The runtime core without messages (`-DAGATE_RT_NO_MESSAGES`) is smaller still:",
        "`benchmarks/runtime/cortex_m4_size.sh`.",
        "",
        "## Against TensorFlow Lite Micro",
        "",
        "- DS-CNN, RAM: TFLite Micro runs MLPerf Tiny's *int8* DS-CNN in a 23 KiB tensor arena (\"Minimum",
        "  kTensorArenaSize = 23\" in a public MLPerf Tiny keyword-spotting harness, `submitter_implemented.cpp`",
        "  with TFLM's `MicroModelRunner`; the copy in mlcommons/tiny itself was not checked here). `kws8` is the",
        "  same network in int8 (PyTorch's static quantization, QDQ export: `tools/zoo/export_qdq_models.py",
        "  ds_cnn_kws`), folded by agate into integer convolutions that read their 8-bit input in place",
        "  (`core/ops/qlinear_mcu.h`: no padded copy, no workspace), its int8 feature maps planned into two",
        "  slots of 8000 B (`--memory-plan min-peak`; the pool's dequantization fused into the pool, so no",
        "  float32 copy of the last map is stored). TFLite Micro's arena holds its tensors and its",
        "  interpreter's state; agate's total above holds the same (arena, workspace, outputs, executor), but",
        "  not the model's input, which the caller owns (here float32, 1.9 KiB: the int8 model quantizes it",
        "  itself; TFLite Micro's int8 input, 490 B, is in its arena), nor either one's stack:",
    ] + comparison(reports) + [
        "- Runtime flash: TFLite Micro's interpreter core is 9732 bytes by the figure",
        "  `benchmarks/runtime/cortex_m4_size.sh` quotes; agate's core is in the table above (messages on).",
        "",
    ]
    return "\n".join(lines) + "\n"
