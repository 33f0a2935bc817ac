// Property tests: random legal schedules over matmul, conv2d and a softmax-like
// reduction must agree with a plain C++ reference through the evaluator.
#include <gtest/gtest.h>

#include <random>

#include "core/lower/lower.h"
#include "core/lower/testing/lower_and_run.h"
#include "core/support/error.h"

namespace agate {
namespace lower {
namespace {

using namespace te;  // NOLINT
using testing::AllClose;
using testing::RandomData;

constexpr int kTrials = 40;

// Lowers and runs; an exception becomes a test failure that shows the schedule and the IR.
void RunOrFail(const Schedule& s, const std::vector<Tensor>& args, const std::vector<std::vector<float>*>& bufs,
               const std::string& log, ir::LoweredFunc* f) {
  try {
    *f = Lower(s, args, "kernel");
    ASSERT_EQ(loop_eval::RunFloat(*f, bufs), 0);
  } catch (const Error& e) {
    FAIL() << "schedule:" << log << "\n" << e.what() << "\n" << s.ToString() << "\n"
           << (f->body.defined() ? ir::ToString(*f) : std::string("<not lowered>"));
  }
}

int Pick(std::mt19937* rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(*rng); }
bool Coin(std::mt19937* rng) { return Pick(rng, 0, 1) == 1; }

// Applies random loop transformations to a stage's leaves; returns a description.
std::string RandomLoopSchedule(Stage st, std::mt19937* rng, bool allow_fuse = true) {
  std::string log;
  // Random splits.
  int nsplits = Pick(rng, 0, 3);
  for (int n = 0; n < nsplits; ++n) {
    const auto& leaves = st.leaf_iter_vars();
    IterVar iv = leaves[Pick(rng, 0, static_cast<int>(leaves.size()) - 1)];
    int factor = Pick(rng, 1, 9);
    if (Coin(rng)) {
      st.split(iv, factor);
      log += " split(" + iv.name() + "," + std::to_string(factor) + ")";
    } else {
      st.split_by_nparts(iv, factor);
      log += " nparts(" + iv.name() + "," + std::to_string(factor) + ")";
    }
  }
  // Random reorder (any permutation is legal).
  std::vector<IterVar> leaves = st.leaf_iter_vars();
  std::shuffle(leaves.begin(), leaves.end(), *rng);
  st.reorder(leaves);
  log += " reorder";
  // Maybe fuse two adjacent leaves of the same kind.
  if (allow_fuse && Coin(rng)) {
    const auto& l = st.leaf_iter_vars();
    for (size_t i = 0; i + 1 < l.size(); ++i) {
      if (l[i].kind() == l[i + 1].kind()) {
        st.fuse(l[i], l[i + 1]);
        log += " fuse";
        break;
      }
    }
  }
  // Parallel on the outermost leaf if data-parallel; vectorize the innermost if data-parallel.
  const auto& fin = st.leaf_iter_vars();
  if (Coin(rng) && fin.front().kind() == ir::IterVarKind::kDataPar) {
    st.parallel(fin.front());
    log += " parallel(" + fin.front().name() + ")";
  }
  if (Coin(rng) && fin.back().kind() == ir::IterVarKind::kDataPar && fin.size() > 1) {
    st.vectorize(fin.back());
    log += " vectorize(" + fin.back().name() + ")";
  }
  if (Coin(rng) && fin.size() > 2) {
    IterVar u = fin[fin.size() - 2];
    st.unroll(u);
    log += " unroll(" + u.name() + ")";
  }
  return log;
}

TEST(PropertyTest, RandomMatmulSchedules) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < kTrials; ++trial) {
    int64_t m = Pick(&rng, 1, 12), n = Pick(&rng, 1, 12), k = Pick(&rng, 1, 9);
    Tensor a = placeholder({Expr(m), Expr(k)}, DType::Float(32), "A");
    Tensor b = placeholder({Expr(k), Expr(n)}, DType::Float(32), "B");
    IterVar rk = reduce_axis({0, Expr(k)}, "k");
    Tensor c = compute({Expr(m), Expr(n)}, [&](Var i, Var j) { return sum(a(i, rk) * b(rk, j), {rk}); }, "C");
    Schedule s = create_schedule({c});
    std::string log;
    if (Coin(&rng)) {
      Tensor cl = s.cache_write(c, ir::MemoryScope::kLocal);
      log += RandomLoopSchedule(s[c], &rng);
      const auto& leaves = s[c].leaf_iter_vars();
      IterVar at = leaves[Pick(&rng, 0, static_cast<int>(leaves.size()) - 1)];
      auto vec = ir::ForKind::kSerial;
      auto it = s[c]->iter_var_attrs.find(at.get());
      if (it != s[c]->iter_var_attrs.end()) vec = it->second.for_kind;
      if (vec != ir::ForKind::kVectorized) {
        s[cl].compute_at(s[c], at);
        log += " cache_write@" + at.name();
      }
      log += " |" + RandomLoopSchedule(s[cl], &rng);
    } else {
      log += RandomLoopSchedule(s[c], &rng);
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k) + ":" + log);
    std::vector<float> av = RandomData(m * k, trial), bv = RandomData(k * n, trial + 100), cv(m * n);
    ir::LoweredFunc f;
    RunOrFail(s, {a, b, c}, {&av, &bv, &cv}, log, &f);
    std::vector<float> want(m * n, 0.0f);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk = 0; kk < k; ++kk) want[i * n + j] += av[i * k + kk] * bv[kk * n + j];
    if (HasFatalFailure()) return;
    ASSERT_TRUE(AllClose(cv, want)) << ir::ToString(f);
  }
}

TEST(PropertyTest, RandomConv2dSchedules) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < kTrials; ++trial) {
    int64_t c_in = Pick(&rng, 1, 3), f_out = Pick(&rng, 1, 4), h = Pick(&rng, 3, 9), w = Pick(&rng, 3, 9);
    int64_t kh = 3, kw = 3, pad = 1;
    Tensor data = placeholder({Expr(c_in), Expr(h), Expr(w)}, DType::Float(32), "data");
    Tensor weight = placeholder({Expr(f_out), Expr(c_in), Expr(kh), Expr(kw)}, DType::Float(32), "weight");
    Tensor padded = compute(
        {Expr(c_in), Expr(h + 2 * pad), Expr(w + 2 * pad)},
        [&](Var c, Var y, Var x) {
          // Reads outside `data` happen only where `inside` is false: lowering masks them.
          Expr inside = y >= pad && y < h + pad && x >= pad && x < w + pad;
          return ir::select(inside, data(c, y - pad, x - pad), Expr(0.0f));
        },
        "pad");
    IterVar rc = reduce_axis({0, Expr(c_in)}, "rc"), ry = reduce_axis({0, Expr(kh)}, "ry"),
            rx = reduce_axis({0, Expr(kw)}, "rx");
    Tensor conv = compute(
        {Expr(f_out), Expr(h), Expr(w)},
        [&](Var f, Var y, Var x) { return sum(padded(rc, y + ry, x + rx) * weight(f, rc, ry, rx), {rc, ry, rx}); },
        "conv");
    Schedule s = create_schedule({conv});
    std::string log = RandomLoopSchedule(s[conv], &rng);
    int where = Pick(&rng, 0, 2);
    if (where == 0) {
      s[padded].compute_inline();
      log += " inline(pad)";
    } else if (where == 1) {
      const auto& leaves = s[conv].leaf_iter_vars();
      IterVar at = leaves[Pick(&rng, 0, static_cast<int>(leaves.size()) - 1)];
      auto it = s[conv]->iter_var_attrs.find(at.get());
      if (it == s[conv]->iter_var_attrs.end() || it->second.for_kind != ir::ForKind::kVectorized) {
        s[padded].compute_at(s[conv], at);
        log += " pad@" + at.name();
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ":" + log);
    std::vector<float> dv = RandomData(c_in * h * w, trial), wv = RandomData(f_out * c_in * kh * kw, trial + 7),
                       ov(f_out * h * w);
    ir::LoweredFunc fn;
    RunOrFail(s, {data, weight, conv}, {&dv, &wv, &ov}, log, &fn);
    std::vector<float> want(f_out * h * w, 0.0f);
    for (int64_t f = 0; f < f_out; ++f)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          for (int64_t c = 0; c < c_in; ++c)
            for (int64_t dy = 0; dy < kh; ++dy)
              for (int64_t dx = 0; dx < kw; ++dx) {
                int64_t iy = y + dy - pad, ix = x + dx - pad;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                want[(f * h + y) * w + x] += dv[(c * h + iy) * w + ix] * wv[((f * c_in + c) * kh + dy) * kw + dx];
              }
    if (HasFatalFailure()) return;
    ASSERT_TRUE(AllClose(ov, want)) << ir::ToString(fn);
  }
}

TEST(PropertyTest, RandomSoftmaxSchedules) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < kTrials; ++trial) {
    int64_t rows = Pick(&rng, 1, 6), cols = Pick(&rng, 1, 13);
    Tensor x = placeholder({Expr(rows), Expr(cols)}, DType::Float(32), "X");
    IterVar k1 = reduce_axis({0, Expr(cols)}, "k1"), k2 = reduce_axis({0, Expr(cols)}, "k2");
    Tensor mx = compute({Expr(rows)}, [&](Var i) { return te::max(x(i, k1), {k1}); }, "rowmax");
    Tensor e = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) { return ir::exp(x(i, j) - mx(i)); }, "e");
    Tensor sm = compute({Expr(rows)}, [&](Var i) { return sum(e(i, k2), {k2}); }, "rowsum");
    Tensor out = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) { return e(i, j) / sm(i); }, "softmax");
    Schedule s = create_schedule({out});
    std::string log = RandomLoopSchedule(s[out], &rng, /*allow_fuse=*/false);
    IterVar row_axis;
    for (const IterVar& iv : s[out].leaf_iter_vars()) {
      if (iv.same_as(s[out].axis(0))) row_axis = iv;
    }
    if (row_axis.defined() && s[out].leaf_iter_vars().front().same_as(row_axis) && Coin(&rng)) {
      s[mx].compute_at(s[out], row_axis);
      s[sm].compute_at(s[out], row_axis);
      log += " reductions@row";
      if (Coin(&rng)) {
        s[e].compute_at(s[out], row_axis);
        log += " e@row";
      } else {
        s[e].compute_inline();
        log += " inline(e)";
      }
    } else if (Coin(&rng)) {
      s[e].compute_inline();
      log += " inline(e)";
    }
    if (Coin(&rng)) {
      // Factor the row sum so partial sums run in lanes or tasks.
      auto parts = s[sm].split(k2, Pick(&rng, 1, 6));
      IterVar factored = Coin(&rng) ? parts.first : parts.second;
      Tensor rf = s.rfactor(sm, factored);
      log += " rfactor(" + factored.name() + ")";
      Stage r = s[rf];
      if (s[sm]->attach_type == AttachType::kScope) {
        // The partial sums read rowmax, which lives inside the row loop: compute them there too.
        r.compute_at(s[out], row_axis);
        log += " rf@row";
      }
      if (Coin(&rng)) {
        r.reorder({r.axis(1), r.reduce_axis(0), r.axis(0)});
        r.vectorize(r.axis(0));
        log += " rf-vectorized";
      } else {
        r.parallel(r.axis(0));
        log += " rf-parallel";
      }
    }
    log += " |" + RandomLoopSchedule(s[mx], &rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + ":" + log);
    std::vector<float> xv = RandomData(rows * cols, trial), ov(rows * cols);
    ir::LoweredFunc fn;
    RunOrFail(s, {x, out}, {&xv, &ov}, log, &fn);
    if (HasFatalFailure()) return;
    for (int64_t i = 0; i < rows; ++i) {
      float m = -1e30f, z = 0;
      for (int64_t j = 0; j < cols; ++j) m = std::max(m, xv[i * cols + j]);
      for (int64_t j = 0; j < cols; ++j) z += std::exp(xv[i * cols + j] - m);
      for (int64_t j = 0; j < cols; ++j) {
        float want = std::exp(xv[i * cols + j] - m) / z;
        ASSERT_NEAR(ov[i * cols + j], want, 1e-5) << ir::ToString(fn);
      }
    }
  }
}

}  // namespace
}  // namespace lower
}  // namespace agate
