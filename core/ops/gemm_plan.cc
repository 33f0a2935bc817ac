#include "core/ops/gemm_plan.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include "core/ops/schedule_common.h"

namespace agate {
namespace ops {
namespace {

// Throughput model of one register tile per step of k, in cycles: the FMAs on
// two pipes, the loads (one broadcast of A per row, one vector of B per column
// vector) on two ports, and the FMA latency (each accumulator waits for its
// previous FMA: about 4 cycles on current cores).
double CyclesPerK(int64_t mr, int64_t vectors) {
  double fmas = static_cast<double>(mr * vectors) / 2.0;
  double loads = static_cast<double>(mr + vectors) / 2.0;
  return std::max({fmas, loads, 4.0});
}

struct Tile {
  int64_t mr = 1, vectors = 1;
};

// The largest divisor of n not above limit, or 1.
int64_t Block(int64_t n, int64_t limit) { return DivisorAtMost(n, std::max<int64_t>(1, limit)); }

// K slice: all of K while the B micro-panel (k x nr) fits in half of L2 (then
// the accumulators stay in registers over all of K and every register tile of
// the block streams the panel from L2), else slices of a quarter of L2.
// Measured on Zen 5 (1 MiB L2), 197x3072x768: whole K 0.97x oneDNN, slices
// of 1024 0.90x, 512 0.74x (the block's partial sums go through memory).
int64_t KSlice(const GemmShape& s, int64_t nr, int64_t lanes, int64_t esz, int64_t l2) {
  if (l2 <= 0 || s.k * nr * esz <= l2 / 2) return s.k;
  int64_t slice = std::max<int64_t>(lanes, l2 / 4 / (nr * esz));
  return CeilDiv(s.k, CeilDiv(s.k, slice));
}

// Panels per column block: the B block (kc x columns) of one task in half of L2.
int64_t ColumnBlock(int64_t panels, int64_t kc, int64_t nr, int64_t esz, int64_t l2) {
  return l2 > 0 ? Block(panels, l2 / 2 / (kc * esz) / nr) : panels;
}

// Bytes per cycle a core streams from the last-level cache (a conservative figure
// for current x86 and Arm server cores).
constexpr double kStreamBytesPerCycle = 16.0;

// The register tile with the least modelled time for the whole product
// (padding of ragged rows and columns counts as work, and so does reading A
// again for every column block when A outgrows half of L2: a task reads all its
// rows of A once per block of columns, so a panel count without a divisor near
// the L2 block, e.g. 1024 columns in 43 panels of 24, streams A 43 times where
// 64 panels of 16 stream it 16 times; measured on the AVX2 EPYC, 1024^3: 4x24
// 0.82-0.91x oneDNN, 4x16 and 6x16 0.99-1.01x). Ties within 2% go to the tile
// with more accumulators (fewer stores of C, fewer passes over A and B), then
// to the wider one.
Tile ChooseTile(const GemmShape& s, int64_t lanes, int registers, int64_t esz, int64_t l2) {
  // Rows of A per tile: A is read in place, each row one prefetch stream;
  // measured on Zen 5 (197x768x3072), 14-row tiles ran at 0.8x of 6- to 9-row ones.
  const int64_t max_rows = 8;
  std::vector<std::pair<Tile, double>> candidates;
  double least = 0;
  for (int64_t v = 1; v <= 4; ++v) {
    int64_t mr_max = std::min<int64_t>(max_rows, (registers - v - 1) / v);
    for (int64_t mr = 1; mr <= mr_max; ++mr) {
      const int64_t nr = v * lanes, panels = CeilDiv(s.n, nr);
      int64_t tiles = CeilDiv(s.rows, mr) * panels;
      double cost = static_cast<double>(tiles) * (static_cast<double>(s.k) * CyclesPerK(mr, v) + 2.0 * mr * v);
      const int64_t a_bytes = s.rows * s.k * esz;
      if (l2 > 0 && a_bytes > l2 / 2) {  // else A stays in L2 from one column block to the next
        const int64_t column_blocks = panels / ColumnBlock(panels, KSlice(s, nr, lanes, esz, l2), nr, esz, l2);
        cost += static_cast<double>(column_blocks) * static_cast<double>(a_bytes) / kStreamBytesPerCycle;
      }
      candidates.push_back({Tile{mr, v}, cost});
      least = least == 0 ? cost : std::min(least, cost);
    }
  }
  Tile best;
  for (const auto& [tile, cost] : candidates) {
    if (cost > least * 1.02) continue;
    int64_t acc = tile.mr * tile.vectors, best_acc = best.mr * best.vectors;
    if (acc > best_acc || (acc == best_acc && tile.vectors > best.vectors)) best = tile;
  }
  return best;
}

}  // namespace

std::string GemmPlan::Describe(const GemmShape& s) const {
  std::ostringstream os;
  os << "tile " << mr << "x" << nr << ", blocks " << row_block * mr << "x" << col_block * nr << ", kc " << kc << ", "
     << blocks(s) << " block(s)";
  if (parallel) os << " in " << tasks(s) << " parallel task(s)";
  return os.str();
}

GemmPlan PlanGemm(const GemmShape& s, ir::DType dtype, const target::Target& target, const LowerGroupOptions& o) {
  GemmPlan p;
  p.lanes = VectorLanes(target, dtype);
  const int64_t esz = std::max(1, dtype.bytes());
  const int64_t l2 = target.l2_cache_bytes();
  Tile tile = ChooseTile(s, p.lanes, target.vector_registers(), esz, l2);
  p.mr = o.dense_m_block > 0 ? o.dense_m_block : tile.mr;
  p.nr = tile.vectors * p.lanes;
  if (o.dense_n_block > 0) p.nr = p.lanes > 1 ? std::max<int64_t>(1, o.dense_n_block / p.lanes) * p.lanes : o.dense_n_block;
  p.mr = std::min(p.mr, s.rows);
  p.row_tiles = CeilDiv(s.rows, p.mr);
  p.panels = CeilDiv(s.n, p.nr);

  p.kc = o.dense_k_block > 0 ? std::min<int64_t>(o.dense_k_block, s.k) : KSlice(s, p.nr, p.lanes, esz, l2);

  // Blocks: the A block (rows x kc) in half of L2, the B block (kc x columns) of
  // one task in half of L2; without a cache description, whole rows/columns.
  if (o.dense_row_block > 0) {
    p.row_block = Block(p.row_tiles, CeilDiv(o.dense_row_block, p.mr));
  } else {
    p.row_block = l2 > 0 ? Block(p.row_tiles, l2 / 2 / (p.kc * esz) / p.mr) : p.row_tiles;
  }
  if (o.dense_col_block > 0) {
    p.col_block = Block(p.panels, CeilDiv(o.dense_col_block, p.nr));
  } else {
    p.col_block = ColumnBlock(p.panels, p.kc, p.nr, esz, l2);
  }

  // Parallel over blocks when there is enough work to pay for a fork (a few
  // microseconds of multiply-adds); shrink the blocks until every thread of a
  // typical pool gets several (balance), never below one register tile:
  // columns first (a task then packs its B block once for all of its rows).
  // Per-block packing keeps the packed B in cache instead of writing and reading
  // all of it through memory once more (measured: 197x768x3072 with B packed at
  // the root 0.85x oneDNN); the buffer lives on the task's stack, so a block
  // whose K x columns panel would not fit a modest stack is packed at the root.
  const int64_t stack_budget = int64_t{1} << 20;
  auto packs_per_block = [&] { return s.k * p.col_block * p.nr * esz <= stack_budget; };
  p.parallel = ParallelAllowed(target) && o.allow_parallel && s.batch * s.rows * s.n * s.k >= (int64_t{1} << 18);
  if (p.parallel) {
    const int64_t threads = target.num_threads() > 0 ? target.num_threads() : 4;
    const int64_t wanted = 2 * threads;
    bool free_cols = o.dense_col_block <= 0, free_rows = o.dense_row_block <= 0;
    while (free_cols && s.batch * p.col_blocks() < wanted && p.col_block > 1) p.col_block = Block(p.panels, p.col_block - 1);
    p.parallel_rows = o.dense_parallel_rows >= 0 ? o.dense_parallel_rows == 1 : s.batch * p.col_blocks() < wanted;
    // Each row block packs the same B block again when B is packed per block at run
    // time: about 4 / rows of the block's multiply-adds (a load and a store per packed
    // vector against rows / 2 cycles of FMAs), so row blocks keep >= 32 rows (<= 1/8).
    // Measured on Zen 5, 1 thread, 128x128x128: 5-row blocks 0.68x oneDNN.
    const int64_t min_row_tiles =
        s.b_packed_at_run_time && packs_per_block() ? std::min(p.row_tiles, CeilDiv(32, p.mr)) : 1;
    while (p.parallel_rows && free_rows && p.blocks(s) < wanted && p.row_block > 1) {
      int64_t smaller = Block(p.row_tiles, p.row_block - 1);
      if (smaller < min_row_tiles) break;
      p.row_block = smaller;
    }
  }
  p.pack_per_block = packs_per_block();
  return p;
}

}  // namespace ops
}  // namespace agate
