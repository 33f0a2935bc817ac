// A GPU schedule several tests share: the classic shared-memory GEMM (TVM's and
// CUDA's textbook one), so that the GPU lowering passes (core/lower) and the CUDA
// code generator (core/codegen/cuda) are tested on the same kernel.
#ifndef AGATE_CORE_LOWER_TESTING_SHARED_GEMM_H_
#define AGATE_CORE_LOWER_TESTING_SHARED_GEMM_H_

#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"
#include "core/te/tensor.h"

namespace agate {
namespace lower {
namespace testing {

// The classic shared-memory GEMM: 8x8 threads per 32x32 output tile, each thread
// a 4x4 register tile; A and B tiles fetched cooperatively per k step.
struct SharedGemm {
  int64_t m, n, k;
  te::Tensor a, b, c;
  ir::IterVar rk;
  SharedGemm(int64_t m_, int64_t n_, int64_t k_) : m(m_), n(n_), k(k_) {
    a = te::placeholder({te::Expr(m), te::Expr(k)}, ir::DType::Float(32), "A");
    b = te::placeholder({te::Expr(k), te::Expr(n)}, ir::DType::Float(32), "B");
    rk = te::reduce_axis({0, te::Expr(k)}, "k");
    c = te::compute({te::Expr(m), te::Expr(n)}, [&](te::Var i, te::Var j) { return te::sum(a(i, rk) * b(rk, j), {rk}); }, "C");
  }
  te::Schedule MakeSchedule() const {
    te::Schedule s = te::create_schedule({c});
    te::Tensor cl = s.cache_write(c, ir::MemoryScope::kLocal);
    te::Tensor as = s.cache_read(a, ir::MemoryScope::kShared, {cl});
    te::Tensor bs = s.cache_read(b, ir::MemoryScope::kShared, {cl});
    te::Stage sc = s[c];
    auto [bi, bj, ii, jj] = sc.tile(sc.axis(0), sc.axis(1), 32, 32);
    auto [ty, ri] = sc.split(ii, 4);
    auto [tx, rj] = sc.split(jj, 4);
    sc.reorder({bi, bj, ty, tx, ri, rj});
    sc.bind(bi, "blockIdx.y").bind(bj, "blockIdx.x").bind(ty, "threadIdx.y").bind(tx, "threadIdx.x");
    te::Stage l = s[cl];
    l.compute_at(sc, tx);
    auto [ko, ki] = l.split(l.reduce_axis(0), 8);
    l.reorder({ko, ki, l.axis(0), l.axis(1)});
    for (const te::Tensor& t : {as, bs}) {
      te::Stage st = s[t];
      st.compute_at(l, ko);
      ir::IterVar fused = st.fuse(st.axis(0), st.axis(1));
      auto [fo, fi] = st.split(fused, 64);
      auto [fty, ftx] = st.split(fi, 8);
      st.bind(fty, "threadIdx.y").bind(ftx, "threadIdx.x");
    }
    return s;
  }
  std::vector<float> Reference(const std::vector<float>& av, const std::vector<float>& bv) const {
    std::vector<float> out(m * n, 0.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j) out[i * n + j] += av[i * k + kk] * bv[kk * n + j];
    return out;
  }
};

}  // namespace testing
}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_TESTING_SHARED_GEMM_H_
