#include "benchmarks/gemm/gemm_kernel.h"

#include <algorithm>

#include "core/ir/buffer.h"
#include "core/ir/expr.h"
#include "core/ir/stmt.h"
#include "core/lower/lower.h"
#include "core/schedule/schedule.h"
#include "core/te/tensor.h"
#include "core/support/error.h"

namespace agate {
namespace benchmarks {

using namespace ir;  // NOLINT: IR construction reads better without qualifiers

namespace {

int CeilDiv(int a, int b) { return (a + b - 1) / b; }
Expr I(int64_t v) { return Expr(v); }
Expr Vec(Expr base, int lanes) { return Ramp::make(base, I(1), lanes); }

}  // namespace

GemmBlocking DefaultBlocking(int m, int n, int k, int vector_width_bits, int threads) {
  GemmBlocking b;
  b.lanes = std::max(4, vector_width_bits / 32);
  b.nr = 2 * b.lanes;
  b.mr = b.lanes >= 16 ? 8 : 6;
  b.threads = std::max(1, threads);
  // K slices of at most 1024, split evenly (2048 -> 2 x 1024); the packed A block
  // (mc x kc floats) lives on the task's stack, so slices stay below 2048.
  int slices = CeilDiv(k, 1024);
  b.kc = CeilDiv(k, slices);
  // Row blocks: a multiple of the thread count, each at most ~128 rows, a multiple of mr.
  int blocks = b.threads * CeilDiv(m, 128 * b.threads);
  b.mc = CeilDiv(CeilDiv(m, blocks), b.mr) * b.mr;
  (void)n;
  return b;
}

namespace {

int FirstDivisor(int extent, const std::vector<int>& candidates, int fallback) {
  for (int c : candidates) {
    if (c > 0 && extent % c == 0) return c;
  }
  return fallback;
}

}  // namespace

GemmBlocking TeBlocking(int m, int n, int k, int vector_width_bits, int threads) {
  GemmBlocking b = DefaultBlocking(m, n, k, vector_width_bits, threads);
  const int lanes = b.lanes;
  b.nr = FirstDivisor(n, {2 * lanes, 3 * lanes, 5 * lanes / 2, 4 * lanes, 3 * lanes / 2, lanes, lanes / 2}, 2 * lanes);
  b.mr = FirstDivisor(m, {8, 12, 6, 10, 4, 5, 2, 1}, 8);
  // The largest divisor of K that is at most 2048: measured on Zen 5 (1 MiB L2),
  // whole-K micro-panels (no C reloads, long prefetch streams) beat 256-512 slices.
  b.kc = 1;
  for (int d = std::min(k, 2048); d >= 1; --d) {
    if (k % d == 0) {
      b.kc = d;
      break;
    }
  }
  // Row blocks: divide the micro-rows evenly, at most 256 rows each, preferring a
  // multiple of the thread count, else the count with the least imbalance.
  const int micro = std::max(1, m / b.mr);
  int best_blocks = micro;
  double best_cost = 1e30;
  for (int blocks = 1; blocks <= micro; ++blocks) {
    if (micro % blocks != 0 || (micro / blocks) * b.mr > 256) continue;
    int rounds = CeilDiv(blocks, b.threads);
    double imbalance = double(rounds * b.threads) / blocks;  // 1.0 when blocks divide evenly over threads
    double cost = imbalance + 0.001 * blocks;                // then prefer fewer, larger blocks
    if (cost < best_cost) {
      best_cost = cost;
      best_blocks = blocks;
    }
  }
  b.mc = (micro / best_blocks) * b.mr;
  return b;
}

LoweredFunc MakeGemmKernel(const std::string& name, int m, int n, int k, const GemmBlocking& bl) {
  AGATE_REQUIRE(bl.nr % bl.lanes == 0 && bl.mc % bl.mr == 0, kInvalidArgument)
      << "gemm blocking: nr must be a multiple of lanes and mc of mr";
  const DType f32 = DType::Float(32);
  const int lanes = bl.lanes, mr = bl.mr, nr = bl.nr, mc = bl.mc;
  const int kc = std::min(bl.kc, k);
  const int panels = CeilDiv(n, nr);           // NR-column panels of B
  const int row_blocks = CeilDiv(m, mc);       // parallel row blocks
  const int k_slices = CeilDiv(k, kc);
  const bool n_edge = n % nr != 0;
  const int vectors = nr / lanes;

  Buffer a = CreateBuffer("A", f32, {Expr(m), Expr(k)});
  Buffer b = CreateBuffer("B", f32, {Expr(k), Expr(n)});
  Buffer c = CreateBuffer("C", f32, {Expr(m), Expr(n)});
  const int64_t bp_elements = int64_t{panels} * k * nr;
  Buffer bp = CreateBuffer("Bp", f32, {Expr(bp_elements)}, MemoryScope::kWorkspace);
  Buffer ap = CreateBuffer("Ap", f32, {Expr(mc * kc)}, MemoryScope::kLocal);
  Buffer acc = CreateBuffer("acc", f32, {Expr(mr * nr)}, MemoryScope::kLocal);

  // Column lanes [col, col + lanes) that exist in B and C.
  auto column_mask = [&](Expr col) -> Expr {
    if (!n_edge) return Expr();
    return Vec(col, lanes) < Broadcast::make(I(n), lanes);
  };

  // 1. Pack B: Bp[(jr*K + kk)*NR + j] = B[kk*N + jr*NR + j], zero past N.
  Var jr_pack("jr_pack"), k_pack("k_pack");
  std::vector<Stmt> pack_b_body;
  for (int v = 0; v < vectors; ++v) {
    Expr col = jr_pack * nr + v * lanes;
    Expr value = Load::make(b, Vec(k_pack * n + col, lanes), column_mask(col));
    pack_b_body.push_back(Store::make(bp, value, Vec((jr_pack * k + k_pack) * nr + v * lanes, lanes)));
  }
  Stmt pack_b = For::make(jr_pack, 0, panels, ForKind::kParallel,
                          For::make(k_pack, 0, k, ForKind::kSerial, Seq::make(pack_b_body)));

  // 2. Row blocks in parallel.
  Var ic("ic"), pc("pc"), ir_pack("ir_pack"), m_pack("m_pack"), k_a("k_a"), jr("jr"), ir("ir"), kk("kk");
  Expr rows_in_block = min(I(mc), I(m) - ic * mc);
  Expr micro_panels = floordiv(rows_in_block + (mr - 1), I(mr));
  Expr k_in_slice = min(I(kc), I(k) - pc * kc);

  // Pack A: Ap[(ir*KC + kk)*MR + mm] = A[row*K + pc*KC + kk], zero for rows past M.
  Expr pack_row = ic * mc + ir_pack * mr + m_pack;
  Expr a_value = Load::make(a, pack_row * k + pc * kc + k_a);
  if (m % mr != 0) a_value = select(pack_row < I(m), a_value, Expr(0.0f));
  Stmt pack_a = For::make(ir_pack, 0, micro_panels, ForKind::kSerial,
                          For::make(m_pack, 0, mr, ForKind::kSerial,
                                    For::make(k_a, 0, k_in_slice, ForKind::kSerial,
                                              Store::make(ap, a_value, (ir_pack * kc + k_a) * mr + m_pack))));

  // The micro-kernel for panel jr and micro-panel ir.
  Expr row0 = ic * mc + ir * mr;
  auto acc_index = [&](int mm, int v) { return Vec(I(int64_t{mm} * nr + v * lanes), lanes); };
  auto c_index = [&](int mm, int v) { return Vec((row0 + mm) * n + jr * nr + v * lanes, lanes); };
  auto guard_row = [&](int mm, Stmt s) {
    return m % mr == 0 ? s : IfThenElse::make(row0 + mm < I(m), s);
  };
  std::vector<Stmt> zero, reload, update, store;
  for (int mm = 0; mm < mr; ++mm) {
    for (int v = 0; v < vectors; ++v) {
      Expr col = jr * nr + v * lanes;
      zero.push_back(Store::make(acc, Broadcast::make(Expr(0.0f), lanes), acc_index(mm, v)));
      Expr c_old = Load::make(c, c_index(mm, v), column_mask(col));
      reload.push_back(Store::make(acc, c_old, acc_index(mm, v)));
      Expr a_bcast = Broadcast::make(Load::make(ap, (ir * kc + kk) * mr + mm), lanes);
      Expr b_vec = Load::make(bp, Vec((jr * k + pc * kc + kk) * nr + v * lanes, lanes));
      update.push_back(Store::make(acc, Load::make(acc, acc_index(mm, v)) + a_bcast * b_vec, acc_index(mm, v)));
      store.push_back(guard_row(mm, Store::make(c, Load::make(acc, acc_index(mm, v)), c_index(mm, v), column_mask(col))));
    }
  }
  // Rows of C past M must not be read: there the reload is guarded row by row.
  Stmt init = IfThenElse::make(pc == 0, Seq::make(zero), Seq::make(reload));
  if (m % mr != 0) {
    std::vector<Stmt> guarded_reload;
    for (int mm = 0; mm < mr; ++mm) {
      std::vector<Stmt> row;
      for (int v = 0; v < vectors; ++v) {
        Expr col = jr * nr + v * lanes;
        row.push_back(Store::make(acc, Load::make(c, c_index(mm, v), column_mask(col)), acc_index(mm, v)));
      }
      guarded_reload.push_back(IfThenElse::make(row0 + mm < I(m), Seq::make(row)));
    }
    init = IfThenElse::make(pc == 0, Seq::make(zero), Seq::make({Seq::make(zero), Seq::make(guarded_reload)}));
  }
  Stmt micro = Allocate::make(acc, {Expr(mr * nr)}, 64, MemoryScope::kLocal,
                              Seq::make({init, For::make(kk, 0, k_in_slice, ForKind::kSerial, Seq::make(update)),
                                         Seq::make(store)}));
  Stmt panels_loop = For::make(jr, 0, panels, ForKind::kSerial, For::make(ir, 0, micro_panels, ForKind::kSerial, micro));
  Stmt block = Allocate::make(ap, {Expr(mc * kc)}, 64, MemoryScope::kLocal,
                              For::make(pc, 0, k_slices, ForKind::kSerial, Seq::make({pack_a, panels_loop})));
  Stmt compute = For::make(ic, 0, row_blocks, ForKind::kParallel, block);

  Stmt body = Allocate::make(bp, {Expr(bp_elements)}, 64, MemoryScope::kWorkspace, Seq::make({pack_b, compute}), 0);
  return LoweredFunc{name, {a, b, c}, body, bp_elements * 4};
}

LoweredFunc MakeTeGemmKernel(const std::string& name, int m, int n, int k, const GemmBlocking& bl) {
  using te::Tensor;
  const int panels = CeilDiv(n, bl.nr);
  const int kc = std::min(bl.kc, k);
  Tensor a = te::placeholder({Expr(m), Expr(k)}, DType::Float(32), "A");
  Tensor b = te::placeholder({Expr(k), Expr(n)}, DType::Float(32), "B");
  // Columns past N repeat the last one: they are computed but never stored.
  Tensor bp = te::compute(
      {Expr(panels), Expr(k), Expr(bl.nr)},
      [&](Var jo, Var kk, Var ji) { return b(kk, min(jo * bl.nr + ji, I(n - 1))); }, "Bp");
  IterVar rk = te::reduce_axis({0, Expr(k)}, "k");
  Tensor c = te::compute(
      {Expr(m), Expr(n)},
      [&](Var i, Var j) { return te::sum(a(i, rk) * bp(floordiv(j, I(bl.nr)), rk, floormod(j, I(bl.nr))), {rk}); },
      "C");
  te::Schedule s = te::create_schedule({c});
  te::Stage ps = s[bp];
  ps.parallel(ps.axis(0));
  ps.vectorize(ps.axis(2));
  te::Stage cs = s[c];
  auto [io, ii] = cs.split(cs.axis(0), Expr(bl.mr));
  auto [jo, ji] = cs.split(cs.axis(1), Expr(bl.nr));
  auto [ioo, ioi] = cs.split(io, Expr(std::max(1, bl.mc / bl.mr)));
  auto [ko, ki] = cs.split(rk, Expr(kc));
  cs.reorder({ioo, ko, jo, ioi, ki, ii, ji});
  cs.unroll(ii);
  cs.vectorize(ji);
  cs.parallel(ioo);
  lower::LowerOptions options;
  return lower::Lower(s, {a, b, c}, name, options);
}

}  // namespace benchmarks
}  // namespace agate
