#!/usr/bin/python3
"""What the PyTorch peers ran with, printed beside every benchmark table that has them.

Debian's python3-torch is 1.13, built for AVX2 at most (its "CPU capability"), even on an AVX-512
machine; its BLAS is the system one (OpenBLAS), whose kernels OPENBLAS_CORETYPE forces (Haswell
kernels on this VM: the auto-detected core can be slower under the hypervisor's CPUID). The load
average says how busy the shared machine was. Usage: peer_environment.py [--no-load] (prints lines;
--no-load leaves out the load average, for callers that print their own); from Python: describe().
"""
import ctypes
import os
import re
import subprocess
import sys


def _openblas_path():
    """The OpenBLAS library the process has loaded (after `import torch`), or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if re.search(r"/libopenblas[^/]*\.so", path) or re.search(r"/openblas[^/]*/libblas\.so", path):
                return path
    return None


def _corename(path):
    lib = ctypes.CDLL(path)
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()


def _corename_without_override(path):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    code = ("import ctypes; lib = ctypes.CDLL(%r); lib.openblas_get_corename.restype = ctypes.c_char_p; "
            "print(lib.openblas_get_corename().decode())" % path)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def set_blas_threads(threads):
    """Runs the loaded OpenBLAS on `threads` threads; returns the count it reports, or None without OpenBLAS.

    torch.set_num_threads sets PyTorch's own (OpenMP) threads only: Debian's PyTorch calls the system
    BLAS, and its default OpenBLAS (openblas-pthread) starts one thread per core of its own, so a
    "1 thread" PyTorch matmul ran on every core until this was called.
    """
    path = _openblas_path()
    if not path:
        return None
    lib = ctypes.CDLL(path)
    lib.openblas_set_num_threads(ctypes.c_int(threads))
    lib.openblas_get_num_threads.restype = ctypes.c_int
    return lib.openblas_get_num_threads()


def load_average():
    with open("/proc/loadavg") as f:
        return "load average (1/5/15 min): " + " ".join(f.read().split()[:3])


def describe(with_load=True):
    import torch  # noqa: the peers' library; imported here so BLAS is loaded as the peers load it
    config = torch.__config__.show()
    capability = re.search(r"CPU capability usage: (\S+)", config)
    lines = [f"PyTorch {torch.__version__} (Debian python3-torch), CPU capability "
             f"{capability.group(1) if capability else 'unknown'}"]
    path = _openblas_path()
    if path:
        forced = os.environ.get("OPENBLAS_CORETYPE")
        used = _corename(path)
        if forced:
            lines.append(f"OpenBLAS ({path}): {used} kernels, forced by OPENBLAS_CORETYPE={forced}; "
                         f"without it OpenBLAS would pick {_corename_without_override(path)}")
        else:
            lines.append(f"OpenBLAS ({path}): {used} kernels (auto-detected; OPENBLAS_CORETYPE unset)")
        lines.append("OpenBLAS threads: set to each run's thread count (openblas_set_num_threads; "
                     "torch.set_num_threads does not reach them)")
    else:
        lines.append("OpenBLAS: not loaded by PyTorch (OPENBLAS_CORETYPE has no effect on these peers)")
    if with_load:
        lines.append(load_average())
    return lines


if __name__ == "__main__":
    print("\n".join(describe(with_load="--no-load" not in sys.argv[1:])))
