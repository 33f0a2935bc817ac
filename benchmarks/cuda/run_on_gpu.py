#!/usr/bin/env python3
"""Step 2 of the GPU benchmark (issue 12), on the GPU machine: check and time the modules that
benchmarks/cuda/prepare.py compiled, beside PyTorch on the same GPU in the same run.

For every module in DIR/models.json:
  * correctness: `agate-runtime run` on the GPU with the packed input; max |agate - PyTorch 1.13 CPU| over
    max |PyTorch| and top-1 agreement;
  * time: `agate-runtime run --device-resident --repeat R --json` (input already on the GPU, the whole
    plan replayed as one CUDA graph, synchronised after each run: host wall time per run) and the same with
    the input copied from host memory every run; median of R runs after the first;
  * per-kernel device times (`--profile`, CUDA events), all modules' in OUT/profiles.txt.
Peers, same model and batch, input on the GPU, fp32 (TF32 off, so all do the same arithmetic): PyTorch eager
(cudnn.benchmark on), torch.compile default mode, and with --modes more (reduce-overhead: CUDA graphs,
max-autotune-no-cudagraphs), each timed like agate: wall time of one synchronised forward, median of R.
The GPU's measured ceilings come first (fp32 matrix product TFLOP/s without TF32, device copy GB/s).
Prints one Markdown table at the end and writes OUT/results.json.
Usage (on the GPU machine):
  run_on_gpu.py --runtime AGATE_RUNTIME --dir DIR [--out OUT] [--repeat 100] [--modes default] [--no-peers]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "zoo"))


def sh(cmd, timeout=120):
    """Runs cmd; a run that does not end in `timeout` s (a kernel that never finishes) is a failure, not a hang."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", "timed out after %d s" % timeout)


def ceilings(torch):
    n = 8192
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        t = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    fp32 = 2 * n ** 3 / statistics.median(times) / 1e12
    x = torch.empty(1 << 28, device="cuda")  # 1 GiB
    y = torch.empty_like(x)
    y.copy_(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        t = time.perf_counter()
        y.copy_(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    copy = 2 * x.numel() * 4 / statistics.median(times) / 1e9
    del a, b, x, y
    return {"fp32_matmul_tflops": round(fp32, 1), "copy_gbps": round(copy)}


def time_torch(torch, fn, x, repeat):
    with torch.no_grad():
        for _ in range(10):
            fn(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times), max(times)


def peers(torch, name, batch, modes, repeat, inputs):
    import export_models
    import prepare
    constructor, _ = export_models.MODELS[name]
    torch.manual_seed(0)
    model = constructor().eval()
    prepare.low_entropy_weights(model, seed=12)
    model = model.cuda()
    xs = [torch.from_numpy(inputs[k]).cuda() for k in inputs.files]
    fwd = lambda m: (lambda x: m(*x))
    result = {}
    with torch.no_grad():
        y = model(*xs)
        y = y[0] if isinstance(y, tuple) else y
        result["torch_output"] = y.float().cpu().numpy()
    result["eager"] = time_torch(torch, fwd(model), xs, repeat)
    for mode in modes:
        try:
            torch._dynamo.reset()
            start = time.time()
            compiled = torch.compile(model, mode=None if mode == "default" else mode)
            with torch.no_grad():
                compiled(*xs)
            compile_s = time.time() - start
            result["compile_" + mode] = time_torch(torch, fwd(compiled), xs, repeat) + (compile_s,)
        except Exception as e:  # a mode that fails is reported, not fatal
            result["compile_" + mode] = ("failed: %s" % str(e).splitlines()[0][:120],)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpu-bench"))
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--modes", nargs="*", default=["default"])
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--only", nargs="*", help="modules (file names) to run; default every one")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    report = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "ceilings": ceilings(torch)}
    print(json.dumps(report), flush=True)
    rows = []
    done_peers = {}
    for entry in json.load(open(os.path.join(args.dir, "models.json"))):
        if args.only and entry["module"] not in args.only:
            continue
        module = os.path.join(args.dir, entry["module"])
        stem = os.path.join(args.dir, f"{entry['model']}.b{entry['batch']}")
        row = dict(entry)
        out_npz = os.path.join("/tmp", entry["module"] + ".outputs.npz")
        r = sh([args.runtime, "run", module, "--inputs", stem + ".inputs.npz", "--outputs", out_npz])
        if r.returncode != 0:
            row["error"] = r.stderr.strip()[-400:]
            print(json.dumps(row), flush=True)
            rows.append(row)
            report["rows"] = rows
            continue
        got = np.load(out_npz)["output"].astype(np.float64)
        ref = np.load(stem + ".reference.npz")["output"].astype(np.float64)
        row["max_rel_err"] = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
        if ref.ndim == 2:
            row["top1_agree"] = float((got.argmax(1) == ref.argmax(1)).mean())
        for label, extra in (("agate_device_ms", ["--device-resident"]), ("agate_host_ms", [])):
            r = sh([args.runtime, "run", module, "--inputs", stem + ".inputs.npz", "--repeat", str(args.repeat),
                    "--json"] + extra)
            if r.returncode == 0:
                s = json.loads(r.stdout.strip().splitlines()[-1])
                row[label] = (s["median_ms"], s["min_ms"], s["max_ms"])
            else:
                row[label] = "failed: " + r.stderr.strip()[-200:]
        r = sh([args.runtime, "run", module, "--inputs", stem + ".inputs.npz", "--profile", "--repeat", "20"])
        with open(os.path.join(args.out, "profiles.txt"), "a") as f:
            f.write("==== %s\n%s%s\n" % (entry["module"], r.stdout, r.stderr))
        key = (entry["model"], entry["batch"])
        if not args.no_peers and key not in done_peers:
            try:
                done_peers[key] = peers(torch, entry["model"], entry["batch"], args.modes, args.repeat,
                                        np.load(stem + ".inputs.npz"))
                t = done_peers[key].pop("torch_output")
                done_peers[key]["torch_gpu_vs_reference"] = float(np.abs(t - ref).max() / np.abs(ref).max())
            except Exception as e:
                done_peers[key] = {"error": str(e)[:300]}
        row.update(done_peers.get(key, {}))
        print(json.dumps(row), flush=True)
        rows.append(row)
        report["rows"] = rows
        with open(os.path.join(args.out, "results.json"), "w") as f:  # after every model: a cut-off run keeps them
            json.dump(report, f, indent=1)
    print("\n| model | batch | fusion | max rel err | agate (input on GPU) ms | agate (host input) ms | eager ms | "
          "compile ms | agate vs eager | agate vs compile |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        a = row.get("agate_device_ms")
        e = row.get("eager")
        c = row.get("compile_default")
        num = lambda v: v[0] if isinstance(v, (list, tuple)) and isinstance(v[0], float) else None
        fmt = lambda v: "%.3f" % num(v) if num(v) is not None else str(v)[:40]
        ratio = lambda p: "%.2fx" % (num(p) / num(a)) if num(p) and num(a) else "-"
        print(f"| {row['model']} | {row['batch']} | {row['fusion']} | {row.get('max_rel_err', row.get('error', '-'))} "
              f"| {fmt(a)} | {fmt(row.get('agate_host_ms'))} | {fmt(e)} | {fmt(c)} | {ratio(e)} | {ratio(c)} |")


if __name__ == "__main__":
    main()
