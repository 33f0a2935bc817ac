#!/usr/bin/env python3
"""Compares a run's outputs (.npz) with reference outputs (.npz), entry by entry, for the model suites.

An entry passes when its shape matches and |got - want| <= rtol * |want| + rtol * max(1, max|want|):
an absolute tolerance scaled by the output's magnitude, since untrained networks reach logits of 1e3 to
1e13, where fp32 sums taken in another order differ by more than any fixed absolute tolerance.
Prints one line per entry and exits 1 when any entry differs.

Usage: compare_outputs.py GOT.npz WANT.npz NAME RTOL [NOTE]
"""
import sys

import numpy as np


def main(argv):
    got_path, want_path, name, rtol = argv[1], argv[2], argv[3], float(argv[4])
    note = f", {argv[5]}" if len(argv) > 5 and argv[5] else ""
    got, want = np.load(got_path), np.load(want_path)
    ok = True
    for key in want.files:
        if key not in got.files:
            print(f"FAIL {name}: output {key} missing from the run's outputs")
            ok = False
            continue
        same_shape = got[key].shape == want[key].shape
        diff = float(np.abs(got[key] - want[key]).max(initial=0.0)) if same_shape else float("inf")
        scale = max(1.0, float(np.abs(want[key]).max(initial=0.0)))  # an empty output: 1
        close = same_shape and bool(np.allclose(got[key], want[key], rtol=rtol, atol=rtol * scale))
        ok = ok and close
        shape = "" if same_shape else f" shape {got[key].shape} != {want[key].shape}"
        print(f"{'ok  ' if close else 'FAIL'} {name}: {key}{shape} max |diff| {diff:.2e} "
              f"(max |reference| {scale:.2e}){note}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
