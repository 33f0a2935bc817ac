#!/usr/bin/python3
"""PyTorch peers for the end-to-end model benchmark: eager and TorchScript frozen
(+ optimize_for_inference), batch 1, fp32, after warm-up, median over --runs runs.

Prints one JSON object per line: {"peer": ..., "model": ..., "threads": N, "median_ms": ..., ...}.
Models come from tools/zoo/export_models.py (same constructors and seed).
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "zoo"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402
import peer_environment  # noqa: E402


def timed_runs(fn, xs, warmup, runs):
    with torch.no_grad():
        for _ in range(warmup):
            fn(*xs)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(*xs)
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    env = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    for name in args.models:
        torch.manual_seed(0)
        constructor, inputs = export_models.MODELS[name]
        model = constructor().eval()
        generator = torch.Generator().manual_seed(1)
        export_models.randomize_batchnorm(model, generator)
        xs = tuple(inputs(generator).values())
        with torch.no_grad():
            frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, xs).eval()))
        for threads in args.threads:
            torch.set_num_threads(threads)
            # PyTorch's matmuls run in the system OpenBLAS, whose threads torch.set_num_threads does not set.
            blas_threads = peer_environment.set_blas_threads(threads)
            if blas_threads is not None and blas_threads != threads:
                sys.exit(f"OpenBLAS runs {blas_threads} threads where {threads} were asked")
            for peer, fn in (("pytorch_eager", model), ("pytorch_torchscript_frozen", frozen)):
                times = timed_runs(fn, xs, args.warmup, args.runs)
                print(json.dumps({"peer": peer, "model": name, "threads": threads, "median_ms": statistics.median(times),
                                  "min_ms": min(times), "max_ms": max(times), "runs": len(times),
                                  "torch": torch.__version__, "blas_threads": blas_threads, "env": env}),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
