// agate's fp32 GEMM, C[M,N] = A[M,K] * B[K,N] (row-major), as lowered loop IR.
//
// Why a hand-written loop nest: this is the schedule a TE GEMM lowers to
// (cache tiling, packing, register blocking, vectorize, parallel), written out
// so that the benchmark measures what agate's LLVM code generator makes of it:
//   1. pack B into column panels Bp[N/NR][K][NR] (parallel over panels, in the
//      kernel workspace), zero-padded past N;
//   2. parallel over row blocks of MC rows; per block and K slice of KC:
//      pack the A block into Ap[MC/MR][KC][MR] (a per-task stack buffer), then
//      for every NR-column panel and MR-row micro-panel run the register-blocked
//      micro-kernel: MR x NR accumulators (NR/lanes vectors per row), one
//      broadcast of A and NR/lanes vector loads of B per k, FMAs.
// Edges (M or N not multiples of the blocks) use row guards and lane predicates.
#ifndef AGATE_BENCHMARKS_GEMM_GEMM_KERNEL_H_
#define AGATE_BENCHMARKS_GEMM_GEMM_KERNEL_H_

#include <string>

#include "core/ir/function.h"

namespace agate {
namespace benchmarks {

struct GemmBlocking {
  int mr = 8;     // rows of the micro-kernel
  int nr = 32;    // columns of the micro-kernel (a multiple of lanes)
  int lanes = 16; // SIMD lanes of float32
  int mc = 128;   // rows per parallel block (multiple of mr)
  int kc = 512;   // K slice that one packed A block and B micro-panel cover
  int threads = 2;  // row blocks are balanced for this many tasks
};

// Blocking for the host: lanes from the vector width, the rest tuned on AVX-512 / AVX2.
GemmBlocking DefaultBlocking(int m, int n, int k, int vector_width_bits, int threads);

// Blocking for the TE schedule: its lowering vectorizes only loops without guards,
// so every factor is chosen to divide its extent (NR = 40 for N = 1000: LLVM
// splits a 40-lane vector into 16 + 16 + 8). Falls back to ragged factors.
GemmBlocking TeBlocking(int m, int n, int k, int vector_width_bits, int threads);

// The kernel `name(A, B, C)` written directly as loop IR; its workspace holds the packed B.
ir::LoweredFunc MakeGemmKernel(const std::string& name, int m, int n, int k, const GemmBlocking& blocking);

// The same algorithm as a tensor expression with a schedule, lowered by core/lower:
//   Bp[jo, k, ji] = B[k, jo*NR + ji]                  (packed panels; parallel, vectorized)
//   C[i, j] = sum_k A[i, k] * Bp[j / NR, k, j % NR]
// C's loops: (row blocks of MC) parallel, k slices of KC, column panels, micro-rows,
// k, MR rows unrolled, NR columns vectorized. A is read in place (no packing).
ir::LoweredFunc MakeTeGemmKernel(const std::string& name, int m, int n, int k, const GemmBlocking& blocking);

}  // namespace benchmarks
}  // namespace agate

#endif  // AGATE_BENCHMARKS_GEMM_GEMM_KERNEL_H_
