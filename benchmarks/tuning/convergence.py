#!/usr/bin/env python3
"""Tuner convergence: best-so-far GFLOP/s against measured trials for `agate tune --tuner
xgb|random|grid` (the TVM paper's figure 12), on the 1024^3 GEMM and three ResNet-50 3x3
convolutions (56x56x64, 28x28x128, 14x14x256, each with bias and ReLU as in the network).

Each workload is a one-operator ONNX model (exported with PyTorch); `agate tune` tunes it with
every tuner into its own records file; the records are read back in file order (the order they
were measured) for the workload's main task. Writes DIR/RESULTS.md and DIR/convergence.png
(python3-matplotlib). Usage:
    benchmarks/tuning/convergence.py --trials 64 --threads 1 --seeds 3 --out benchmarks/tuning
    benchmarks/tuning/convergence.py --replot benchmarks/tuning/RESULTS.json --out benchmarks/tuning
With --seeds N, xgb and random each run N times (seeds 1..N; grid is deterministic and runs
once): one run of a randomised search says little, since its first batch is random for every
tuner. The table gives medians over the seeds and each seed's figure; the plot the median curve
with the range of the seeds shaded.
With --retime R (default 5), every config some run would have returned at some trial (its
fastest single time so far) is timed again R times, interleaved, by `agate tune`'s finalists'
re-check, and a second table and row of plots give, after each trial, the re-timed speed of the
config the search would return: what a tuner delivers is a config, and a best-so-far curve of
single noisy timings also counts lucky timings (more of them for random search, which measures
one program under many names).
Timing is what `agate tune` measures: the kernel through the runtime, caches as inside a network
(LLC flushed, inputs re-read), median of --repeats runs. The finalists' re-timing and the whole-model
check are turned off (--confirm-rounds 0 --model-check-rounds 0), so every record is one trial of the search.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGATE = os.path.join(ROOT, "bazel-bin", "tools", "cli", "agate")
TUNERS = ["xgb", "random", "grid"]
SEEDED = {"xgb", "random"}  # grid walks the space in a fixed order


def workloads():
    # name, kind, shape, GFLOP per call
    return [
        ("gemm_1024", "gemm", (1024, 1024, 1024), 2 * 1024 ** 3 / 1e9),
        ("conv_56x56x64", "conv", (64, 56), 2 * 64 * 64 * 9 * 56 * 56 / 1e9),
        ("conv_28x28x128", "conv", (128, 28), 2 * 128 * 128 * 9 * 28 * 28 / 1e9),
        ("conv_14x14x256", "conv", (256, 14), 2 * 256 * 256 * 9 * 14 * 14 / 1e9),
    ]


def export(kind, shape, path):
    import torch

    torch.manual_seed(0)
    if kind == "gemm":
        m, k, n = shape

        class Gemm(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(k, n) * 0.03)

            def forward(self, x):
                return torch.matmul(x, self.w)

        module, x = Gemm(), torch.randn(m, k)
    else:
        c, hw = shape
        module = torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.ReLU())
        x = torch.randn(1, c, hw, hw)
    torch.onnx.export(module.eval(), x, path, input_names=["input"], output_names=["output"], opset_version=13)


def main_task_records(records_path):
    """The records (parsed, with their raw lines) of the main task: the one with the most records."""
    by_task = {}
    with open(records_path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            r["_line"] = line.rstrip("\n")
            by_task.setdefault(r["task"], []).append(r)
    return max(by_task.values(), key=len)


def config_key(record):
    return json.dumps(record["knobs"], sort_keys=True)


def best_so_far(records_path, gflop):
    """GFLOP/s after each trial of the main task, the default's, and after each trial the config
    the search would return if stopped there (the fastest single time so far)."""
    main = main_task_records(records_path)
    curve, chosen, best, best_key = [], [], 0.0, None
    for r in main:
        if r["ms"] is not None and r["ms"] > 0 and gflop / (r["ms"] / 1e3) > best:
            best, best_key = gflop / (r["ms"] / 1e3), config_key(r)
        curve.append(best)
        chosen.append(best_key)
    # Every tuner measures the default config first (core/autotune/search.h).
    first = main[0]
    default = gflop / (first["ms"] / 1e3) if first["ms"] else 0.0
    return curve, default, chosen


def retime(model, record_files, keys, a, gflop):
    """Times again, interleaved, the configs `keys` (config_key) measured in `record_files`: every
    config any run of this workload would have returned at some trial (best_so_far's `chosen`).
    Returns config key -> median GFLOP/s over a.retime rounds.

    Why: a best-so-far curve of single noisy timings rewards a lucky measurement as much as a good
    config, and random search, which measures the same program under many names, draws more such
    lucky timings of its best program than a search that measures each program once. What a
    tuner returns is a config; its worth is that config's speed. The re-timing is `agate tune`'s
    own finalists' re-check (--confirm-top all of them, --confirm-rounds a.retime) on a records file
    holding each config's first record, so it is timed exactly as the search timed it."""
    lines = {}
    for path in record_files:
        for r in main_task_records(path):
            if config_key(r) in keys:
                lines.setdefault(config_key(r), r["_line"])
    path = os.path.join(os.path.dirname(record_files[0]), os.path.basename(model) + ".retime.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines.values()) + "\n")
    # The file resumes the task; one new (grid) trial makes the tuner run its finalists' re-check,
    # which a resumed task that measures nothing new skips (core/autotune/tuner.cc).
    subprocess.run([AGATE, "tune", model, "--records", path, "--trials", str(len(lines) + 1), "--tuner", "grid",
                    "--threads", str(a.threads), "--batch", str(a.batch), "--repeats", str(a.repeats),
                    "--confirm-top", str(len(lines) + 1), "--confirm-rounds", str(a.retime),
                    "--model-check-rounds", "0"], check=True, stdout=subprocess.DEVNULL)
    times = {}
    for r in main_task_records(path)[len(lines) + 1:]:
        if r["ms"] and r["ms"] > 0:
            times.setdefault(config_key(r), []).append(r["ms"])
    missing = set(lines) - set(times)
    if missing:
        raise RuntimeError(f"{len(missing)} configs were not re-timed: {sorted(missing)[:3]}")
    return {k: gflop / (statistics.median(times[k]) / 1e3) for k in lines}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seeds", type=int, default=1, help="runs of xgb and random, seeds 1..N")
    p.add_argument("--only", nargs="*", help="workload names to run (default: all)")
    p.add_argument("--retime", type=int, default=5, metavar="ROUNDS",
                   help="re-time every config a run would have returned, this many interleaved rounds (0: off)")
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "tuning"))
    p.add_argument("--replot", metavar="RESULTS_JSON", help="only redraw --out/convergence.png from a RESULTS.json")
    a = p.parse_args()
    if a.replot:
        with open(a.replot) as f:
            saved = json.load(f)
        plot(os.path.join(a.out, "convergence.png"), {tuple(k.split(" ")): v for k, v in saved.items()})
        return
    subprocess.run(["bazel", "build", "--noshow_progress", "//tools/cli:agate"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="agate-tuning-")
    results = {}
    for name, kind, shape, gflop in workloads():
        if a.only and name not in a.only:
            continue
        model = os.path.join(work, name + ".onnx")
        export(kind, shape, model)
        files = []
        for tuner in TUNERS:
            runs = []
            for seed in range(1, (a.seeds if tuner in SEEDED else 1) + 1):
                rec = os.path.join(work, f"{name}_{tuner}_{seed}.jsonl")
                t0 = time.time()
                subprocess.run([AGATE, "tune", model, "--records", rec, "--trials", str(a.trials), "--tuner", tuner,
                                "--threads", str(a.threads), "--batch", str(a.batch), "--repeats", str(a.repeats),
                                "--seed", str(seed), "--confirm-rounds", "0", "--model-check-rounds", "0"],
                               check=True, stdout=subprocess.DEVNULL)
                curve, default, chosen = best_so_far(rec, gflop)
                runs.append({"curve": curve, "default": default, "seconds": time.time() - t0, "seed": seed,
                             "chosen": chosen})
                files.append(rec)
                print(f"{name} {tuner} seed {seed}: default {default:.1f} GFLOP/s, best {curve[-1]:.1f} GFLOP/s "
                      f"after {len(curve)} trials ({time.time() - t0:.0f} s)", flush=True)
            results[(name, tuner)] = runs
        if a.retime:
            t0 = time.time()
            chosen = {k for t in TUNERS for run in results[(name, t)] for k in run["chosen"] if k}
            speeds = retime(model, files, chosen, a, gflop)
            for tuner in TUNERS:
                for run in results[(name, tuner)]:
                    run["retimed"] = [speeds[k] if k else 0.0 for k in run["chosen"]]
            print(f"{name}: {len(speeds)} configs re-timed {a.retime} times ({time.time() - t0:.0f} s)", flush=True)
    os.makedirs(a.out, exist_ok=True)
    write_table(os.path.join(a.out, "RESULTS.md"), results, a)
    plot(os.path.join(a.out, "convergence.png"), results)


def trials_to_reach(curve, target):
    for i, v in enumerate(curve):
        if v >= target * 0.999:
            return i + 1
    return None


def median_curve(runs, field="curve"):
    """Per trial, the median (and range) over the runs of `field`; runs may differ in length."""
    n = min(len(r[field]) for r in runs)
    columns = [sorted(r[field][i] for r in runs) for i in range(n)]
    return [statistics.median(c) for c in columns], [c[0] for c in columns], [c[-1] for c in columns]


def goal_table(results, names, field, first, a):
    """A markdown table on `field` ("curve": best single timing so far; "retimed": the re-timed config the search
    would return): per workload `first` (a header and a function of the workload's runs), each tuner's final value
    (median over the seeds, each seed's), random's median final, and the trial at which each xgb seed reached it."""
    what = "best" if field == "curve" else "final config"
    lines = [f"| workload | {first[0]} | " + " | ".join(f"{t} {what}" for t in TUNERS) +
             f" | random's final {'best' if field == 'curve' else 'config'} (median) | xgb trials to reach it, per seed"
             " | goal (trials / 3) |", "|---" * (5 + len(TUNERS)) + "|"]
    for name in names:
        runs = {t: results[(name, t)] for t in TUNERS}
        row = [name, first[1](runs)]
        for t in TUNERS:
            finals = [r[field][-1] for r in runs[t]]
            row.append(f"{statistics.median(finals):.1f}" +
                       (f" [{', '.join(f'{v:.1f}' for v in finals)}]" if len(finals) > 1 else ""))
        target = statistics.median(r[field][-1] for r in runs["random"])
        reach = [trials_to_reach(r[field], target) for r in runs["xgb"]]
        row += [f"{target:.1f}", ", ".join(str(v) if v else "not reached" for v in reach), f"<= {a.trials // 3}"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def write_table(path, results, a):
    names = sorted({n for n, _ in results})
    lines = [f"# Tuner convergence ({a.trials} trials per tuner, {a.threads} thread(s), batch {a.batch}, "
             f"median of {a.repeats} runs per candidate, {a.seeds} seed(s) for xgb and random)", "",
             "Best GFLOP/s after the last trial: the median over the seeds, each seed's in brackets. \"xgb trials "
             "to random's best\": for each xgb seed, the first trial at which xgb's best-so-far reached the median "
             "of random's final bests (within 0.1%); the goal is at most a third of random's trials.", ""]
    default = lambda runs: f"{statistics.median(r['default'] for t in TUNERS for r in runs[t]):.1f}"
    lines += goal_table(results, names, "curve", ("default GFLOP/s", default), a)
    if all("retimed" in r for runs in results.values() for r in runs):
        lines += ["", "Re-timed (--retime): after each trial, the speed of the config the search would return if "
                  "stopped there (its fastest single time so far), as the median of the interleaved re-timing of "
                  "every such config of the workload. \"xgb trials to reach it\": the first trial at which the "
                  "config xgb would return is at least as fast (within 0.1%) as the median of random's final "
                  "configs.", ""]
        retimed = lambda runs: str(len({k for t in TUNERS for r in runs[t] for k in r["chosen"] if k}))
        lines += goal_table(results, names, "retimed", ("configs re-timed", retimed), a)
    lines += ["", "Machine: " + subprocess.run(["uname", "-m"], capture_output=True, text=True).stdout.strip() +
              f", {os.cpu_count()} CPUs. Reproduce: benchmarks/tuning/convergence.py --trials {a.trials} "
              f"--threads {a.threads} --seeds {a.seeds} --retime {a.retime}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(path)[0] + ".json", "w") as f:
        json.dump({f"{n} {t}": v for (n, t), v in results.items()}, f)
    print("\n".join(lines))


def plot(path, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing (apt install python3-matplotlib): no plot written", file=sys.stderr)
        return
    names = sorted({n for n, _ in results})
    rows = [("curve", "best GFLOP/s so far (single timings)")]
    if all("retimed" in r for runs in results.values() for r in runs):
        rows.append(("retimed", "GFLOP/s of the config it would return (re-timed)"))
    fig, axes = plt.subplots(len(rows), len(names), figsize=(5 * len(names), 4 * len(rows)), squeeze=False)
    for row, (field, label) in enumerate(rows):
        for ax, name in zip(axes[row], names):
            for t in TUNERS:
                mid, low, high = median_curve(results[(name, t)], field)
                x = range(1, len(mid) + 1)
                line, = ax.plot(x, mid, label=t)
                if len(results[(name, t)]) > 1:
                    ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2)
            ax.set_title(name)
            ax.set_xlabel("trials")
            ax.set_ylabel(label)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
