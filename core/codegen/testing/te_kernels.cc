#include "core/codegen/testing/te_kernels.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "core/lower/lower.h"
#include "core/schedule/schedule.h"
#include "core/te/tensor.h"

namespace agate {
namespace codegen {
namespace testing {

using namespace te;  // NOLINT: tensor expressions read better unqualified

namespace {

std::vector<float> Random(size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace

TeCase TeMatmul(int m, int n, int k) {
  Tensor a = placeholder({Expr(m), Expr(k)}, DType::Float(32), "A");
  Tensor b = placeholder({Expr(k), Expr(n)}, DType::Float(32), "B");
  IterVar rk = reduce_axis({0, Expr(k)}, "k");
  Tensor c = compute({Expr(m), Expr(n)}, [&](Var i, Var j) { return sum(a(i, rk) * b(rk, j), {rk}); }, "C");
  Schedule s = create_schedule({c});
  Tensor cl = s.cache_write(c, ir::MemoryScope::kLocal);
  Stage cs = s[c];
  auto tile = cs.tile(cs.axis(0), cs.axis(1), 4, 16);  // io, jo, ii, ji
  s[cl].compute_at(cs, tile[1]);
  Stage ls = s[cl];
  ls.reorder({rk, ls.axis(0), ls.axis(1)});
  ls.unroll(ls.axis(0));
  ls.vectorize(ls.axis(1));
  cs.vectorize(tile[3]);
  cs.parallel(tile[0]);
  TeCase t;
  t.func = lower::Lower(s, {a, b, c}, "te_matmul_" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  t.args = {Random(size_t(m) * k, 11, -1, 1), Random(size_t(k) * n, 12, -1, 1), std::vector<float>(size_t(m) * n)};
  t.outputs = {2};
  t.reference = [=](std::vector<std::vector<float>>& v) {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int p = 0; p < k; ++p) acc += double(v[0][i * k + p]) * v[1][p * n + j];
        v[2][i * n + j] = static_cast<float>(acc);
      }
  };
  t.tolerance = 2e-5;
  return t;
}

TeCase TeElementwise(int rows, int cols) {
  Tensor x = placeholder({Expr(rows), Expr(cols)}, DType::Float(32), "X");
  Tensor y = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) {
    Expr v = x(i, j);
    return exp(v * 0.25f) + tanh(v) + sigmoid(v) + erf(v * 0.5f) + log(abs(v) + 1.0f);
  }, "Y");
  Schedule s = create_schedule({y});
  Stage ys = s[y];
  auto [jo, ji] = ys.split(ys.axis(1), 16);
  ys.vectorize(ji);
  ys.parallel(ys.axis(0));
  TeCase t;
  t.func = lower::Lower(s, {x, y}, "te_elementwise");
  t.args = {Random(size_t(rows) * cols, 13, -6, 6), std::vector<float>(size_t(rows) * cols)};
  t.outputs = {1};
  t.reference = [](std::vector<std::vector<float>>& v) {
    for (size_t i = 0; i < v[0].size(); ++i) {
      double z = v[0][i];
      v[1][i] = static_cast<float>(std::exp(z * 0.25) + std::tanh(z) + 1 / (1 + std::exp(-z)) + std::erf(z * 0.5) +
                                   std::log(std::fabs(z) + 1));
    }
  };
  t.tolerance = 5e-6;
  return t;
}

TeCase TeSoftmax(int rows, int cols) {
  Tensor x = placeholder({Expr(rows), Expr(cols)}, DType::Float(32), "X");
  IterVar k1 = reduce_axis({0, Expr(cols)}, "k1");
  IterVar k2 = reduce_axis({0, Expr(cols)}, "k2");
  Tensor mx = compute({Expr(rows)}, [&](Var i) { return te::max(x(i, k1), {k1}); }, "rowmax");
  Tensor e = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) { return exp(x(i, j) - mx(i)); }, "e");
  Tensor sm = compute({Expr(rows)}, [&](Var i) { return te::sum(e(i, k2), {k2}); }, "rowsum");
  Tensor y = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) { return e(i, j) / sm(i); }, "Y");
  Schedule s = create_schedule({y});
  Stage ys = s[y];
  auto [jo, ji] = ys.split(ys.axis(1), 8);
  ys.vectorize(ji);
  ys.parallel(ys.axis(0));
  s[mx].compute_at(ys, ys.axis(0));
  s[e].compute_at(ys, ys.axis(0));
  s[sm].compute_at(ys, ys.axis(0));
  TeCase t;
  t.func = lower::Lower(s, {x, y}, "te_softmax");
  t.args = {Random(size_t(rows) * cols, 14, -8, 8), std::vector<float>(size_t(rows) * cols)};
  t.outputs = {1};
  t.reference = [=](std::vector<std::vector<float>>& v) {
    for (int i = 0; i < rows; ++i) {
      double m = -1e300, total = 0;
      for (int j = 0; j < cols; ++j) m = std::max(m, double(v[0][i * cols + j]));
      for (int j = 0; j < cols; ++j) total += std::exp(v[0][i * cols + j] - m);
      for (int j = 0; j < cols; ++j) v[1][i * cols + j] = static_cast<float>(std::exp(v[0][i * cols + j] - m) / total);
    }
  };
  t.tolerance = 1e-5;
  return t;
}

std::vector<TeCase> AllTeCases() {
  return {TeMatmul(64, 64, 48), TeMatmul(30, 36, 17), TeElementwise(7, 100), TeSoftmax(9, 37)};
}

std::string CompareFloats(const std::vector<float>& got, const std::vector<float>& want, double tolerance) {
  std::ostringstream out;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    double error = std::fabs(double(got[i]) - want[i]) / std::max(1.0, std::fabs(double(want[i])));
    if (!(error <= tolerance)) {
      out << "[" << i << "] got " << got[i] << " want " << want[i] << "; ";
      ++bad;
    }
  }
  return out.str();
}

}  // namespace testing
}  // namespace codegen
}  // namespace agate
