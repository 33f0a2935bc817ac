#include "benchmarks/gemm/gemm_kernel.h"

#include <algorithm>

#include "core/ir/buffer.h"
#include "core/ir/expr.h"
#include "core/ir/stmt.h"
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
  // K slices of at most 512, split evenly (1000 -> 2 x 500).
  int slices = CeilDiv(k, 512);
  b.kc = CeilDiv(k, slices);
  // Row blocks: a multiple of the thread count, each at most ~128 rows, a multiple of mr.
  int blocks = b.threads * CeilDiv(m, 128 * b.threads);
  b.mc = CeilDiv(CeilDiv(m, blocks), b.mr) * b.mr;
  (void)n;
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

}  // namespace benchmarks
}  // namespace agate
