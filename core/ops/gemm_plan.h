// GemmPlan: how one GEMM-class product (dense, matmul, batch_matmul with more
// than one row) is cut into register tiles, cache blocks and parallel tasks.
//
// Why a plan separate from the schedule: the numbers are the whole performance
// story of a GEMM and each one follows from a machine property, so they are
// derived here, in one place, from the target description (vector lanes and
// registers, cache sizes) and the shape, and the schedule (gemm.cc) only
// applies them. Every number is a knob (LowerGroupOptions::dense_*) that the
// auto-tuner may set instead; PlanGemm clamps a knob to what the shape allows.
//
//   register tile  mr x nr: nr = v vectors of the target's lanes; mr*v
//                  accumulators + v loaded B vectors + 1 broadcast of A fit in
//                  the vector registers, and mr*v covers the FMA latency times
//                  the FMA pipes. Among those, the tile with the least modelled
//                  time (padding of ragged M and N included) wins.
//   K slice  kc    the B micro-panel (kc x nr) stays in L2 while every row tile
//                  of the block streams past it; whole K when it fits (the
//                  accumulators then stay in registers over all of K and the
//                  epilogue is applied at the register tile).
//   row block      register tiles of rows per parallel block: the A block
//                  (rows x kc) shares L2 with the B micro-panel.
//   column block   panels per parallel block: the B block (kc x columns) of one
//                  task fits in half the L2.
//   parallel       (batch, column block) form one parallel loop, so that each
//                  task packs (or streams) its block of B once for all rows;
//                  column blocks shrink until there are enough tasks for the
//                  threads, and only when a panel per task is still too few do
//                  the row blocks join the parallel loop.
#ifndef AGATE_CORE_OPS_GEMM_PLAN_H_
#define AGATE_CORE_OPS_GEMM_PLAN_H_

#include <cstdint>
#include <string>

#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// The problem: `batch` independent products of rows x k by k x n (batch
// dimensions that broadcast B are folded into rows by the caller).
struct GemmShape {
  int64_t batch = 1;
  int64_t rows = 1;
  int64_t n = 1;
  int64_t k = 1;
  // B is packed while the kernel runs (not a compile-time constant): row blocks that each
  // pack their own copy of the B block must be tall enough to pay for it.
  bool b_packed_at_run_time = false;
};

struct GemmPlan {
  int64_t lanes = 1;        // SIMD lanes of the element type
  int64_t mr = 1, nr = 1;   // register tile: rows x columns (nr a multiple of lanes when lanes > 1)
  int64_t row_tiles = 1;    // ceil(rows / mr)
  int64_t panels = 1;       // ceil(n / nr): column panels of B
  int64_t row_block = 1;    // register tiles per parallel block (divides row_tiles)
  int64_t col_block = 1;    // panels per parallel block (divides panels)
  int64_t kc = 1;           // K slice; == k when the register tile accumulates all of K
  bool parallel = false;    // the block loop runs on the thread pool
  // Row blocks are part of the parallel loop (else each task runs every row
  // block of its column block, so its B block is packed or read once).
  bool parallel_rows = false;
  // A B packed at run time is packed per block, into the task's own buffer, just
  // before the block uses it (cache-resident, parallel with the product; each
  // row block repacks its column block), rather than all of it at the root.
  bool pack_per_block = true;

  int64_t padded_rows() const { return row_tiles * mr; }
  int64_t padded_n() const { return panels * nr; }
  int64_t row_blocks() const { return row_tiles / row_block; }
  int64_t col_blocks() const { return panels / col_block; }
  int64_t blocks(const GemmShape& s) const { return s.batch * row_blocks() * col_blocks(); }
  // Iterations of the parallel loop: (batch, column blocks[, row blocks]).
  int64_t tasks(const GemmShape& s) const { return s.batch * col_blocks() * (parallel_rows ? row_blocks() : 1); }
  // "tile 6x32, blocks 66x160, kc 768, 12 parallel blocks".
  std::string Describe(const GemmShape& s) const;
};

// The plan for `shape` with elements of `dtype` on `target`; knobs set in
// `options` (dense_m_block, dense_n_block, dense_row_block, dense_col_block,
// dense_k_block: 0 = derive; dense_parallel_rows: -1 = derive) take precedence
// where the shape allows them.
GemmPlan PlanGemm(const GemmShape& shape, ir::DType dtype, const target::Target& target,
                  const LowerGroupOptions& options);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_GEMM_PLAN_H_
