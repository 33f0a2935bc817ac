// Reference kernels of Einsum and Det.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph_eval/kernel.h"
#include "core/graph/shape_inference.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs

namespace {

using Tensors = std::vector<Tensor>;

Tensors Einsum(const KernelContext& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) shapes.push_back(ctx.in(i).shape());
  EinsumSpec spec = ParseEinsum(ctx.attrs().GetString("equation"), shapes, ctx.node.Describe());
  // Loop over every label: output labels first, then the summed ones.
  std::string labels = spec.output;
  for (const auto& [c, extent] : spec.extents)
    if (labels.find(c) == std::string::npos) labels += c;
  Shape loop;
  for (char c : labels) loop.push_back(spec.extents.at(c));
  std::vector<std::vector<int64_t>> strides(ctx.inputs.size());  // per input, per loop label
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    std::vector<int64_t> row_major = RowMajorStrides(shapes[i]);
    strides[i].assign(labels.size(), 0);
    for (size_t a = 0; a < spec.inputs[i].size(); ++a)
      if (shapes[i][a] != 1) strides[i][labels.find(spec.inputs[i][a])] += row_major[a];
  }
  std::vector<double> out(ctx.outputs[0].numel(), 0.0);
  int64_t summed = 1;
  for (size_t k = spec.output.size(); k < loop.size(); ++k) summed *= loop[k];
  ForEachIndex(loop, [&](const std::vector<int64_t>& idx, int64_t linear) {
    double product = 1;
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * strides[i][k];
      product *= ctx.in(i).GetDouble(off);
    }
    out[linear / summed] += product;
  });
  return {Tensor::FromDoubles(ctx.outputs[0].dtype, ctx.outputs[0].shape, out)};
}

Tensors Det(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t n = x.shape().back();
  Tensor out = ctx.NewOutput(0);
  for (int64_t b = 0; b < out.numel(); ++b) {
    std::vector<double> a(n * n);
    for (int64_t i = 0; i < n * n; ++i) a[i] = x.GetDouble(b * n * n + i);
    double det = 1;
    for (int64_t col = 0; col < n; ++col) {  // Gaussian elimination with partial pivoting
      int64_t pivot = col;
      for (int64_t r = col + 1; r < n; ++r)
        if (std::fabs(a[r * n + col]) > std::fabs(a[pivot * n + col])) pivot = r;
      if (a[pivot * n + col] == 0) {
        det = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[pivot * n + k], a[col * n + k]);
        det = -det;
      }
      det *= a[col * n + col];
      for (int64_t r = col + 1; r < n; ++r) {
        double f = a[r * n + col] / a[col * n + col];
        for (int64_t k = col; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
      }
    }
    out.SetDouble(b, det);
  }
  return {out};
}

}  // namespace

void RegisterLinalgKernels(KernelRegistry* r) {
  r->Register("Einsum", Einsum);
  r->Register("Det", Det);
}

}  // namespace graph_eval
}  // namespace agate
