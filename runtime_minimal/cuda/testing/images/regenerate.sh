#!/bin/sh
# Regenerates the committed test images from test_kernels.cu with the CUDA toolkit
# (nvcc in /usr/local/cuda/bin or on PATH). The tests do not need the toolkit.
set -eu
cd "$(dirname "$0")"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
"$NVCC" -ptx -arch=compute_75 test_kernels.cu -o test_kernels_compute75.ptx
"$NVCC" -cubin -arch=sm_80 test_kernels.cu -o test_kernels_sm80.cubin
