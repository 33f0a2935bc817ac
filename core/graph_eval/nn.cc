// Reference kernels of the neural-network operators.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/graph_eval/kernel.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs
namespace {

using Tensors = std::vector<Tensor>;

int64_t BlockOf(const Node& node) { return InputLayoutBlock(node); }

// NCHW{c}c <-> NCHW conversions of a whole tensor, for the blocked-layout variants.
Tensor Unblock(const Tensor& x, int64_t block) {
  const Shape& s = x.shape();
  TensorType type{x.dtype(), {s[0], s[1] * block, s[2], s[3]}};
  std::vector<int64_t> offsets(type.numel());
  ForEachIndex(type.shape, [&](const std::vector<int64_t>& o, int64_t linear) {
    offsets[linear] = (((o[0] * s[1] + o[1] / block) * s[2] + o[2]) * s[3] + o[3]) * block + o[1] % block;
  });
  return GatherByOffsets(x, type, offsets);
}

Tensor Block(const Tensor& x, int64_t block) {
  const Shape& s = x.shape();
  TensorType type{x.dtype(), {s[0], s[1] / block, s[2], s[3], block}};
  std::vector<int64_t> offsets(type.numel());
  ForEachIndex(type.shape, [&](const std::vector<int64_t>& o, int64_t linear) {
    offsets[linear] = ((o[0] * s[1] + o[1] * block + o[4]) * s[2] + o[2]) * s[3] + o[3];
  });
  return GatherByOffsets(x, type, offsets);
}

TensorType LogicalType(const TensorType& physical, int64_t block) {
  if (block == 0) return physical;
  const Shape& s = physical.shape;
  return TensorType{physical.dtype, {s[0], s[1] * s[4], s[2], s[3]}};
}

Shape Spatial(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

// Row-major offset of a spatial index inside one (n, c) plane.
int64_t SpatialOffset(const std::vector<int64_t>& idx, const Shape& spatial) {
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off = off * spatial[d] + idx[d];
  return off;
}

// Input spatial index of output position `o` and kernel position `k`; false when in padding.
bool InputIndex(const WindowGeometry& g, const std::vector<int64_t>& o, const std::vector<int64_t>& k,
                std::vector<int64_t>* in) {
  for (size_t d = 0; d < o.size(); ++d) {
    int64_t i = o[d] * g.strides[d] + k[d] * g.dilations[d] - g.pad_begin[d];
    if (i < 0 || i >= g.in[d]) return false;
    (*in)[d] = i;
  }
  return true;
}

// The 2-D case written as plain loops: the same arithmetic as the N-d loop
// below, fast enough to serve as the oracle for whole CNNs.
void Conv2D(const std::vector<double>& x, const std::vector<double>& w, const Shape& xs, const Shape& ws,
            const WindowGeometry& g, int64_t group, const Tensor* bias, std::vector<double>* out) {
  int64_t n_batch = xs[0], c_in = xs[1], ih = xs[2], iw = xs[3];
  int64_t m_out = ws[0], c_per_group = ws[1], kh = ws[2], kw = ws[3];
  int64_t oh = g.out[0], ow = g.out[1], m_per_group = m_out / group;
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t m = 0; m < m_out; ++m) {
      int64_t first_channel = (m / m_per_group) * c_per_group;
      double b = bias ? bias->GetDouble(m) : 0.0;
      double* o = &(*out)[(n * m_out + m) * oh * ow];
      for (int64_t i = 0; i < oh * ow; ++i) o[i] = b;
      for (int64_t c = 0; c < c_per_group; ++c) {
        const double* xp = &x[(n * c_in + first_channel + c) * ih * iw];
        const double* wp = &w[(m * c_per_group + c) * kh * kw];
        for (int64_t ky = 0; ky < kh; ++ky) {
          for (int64_t kx = 0; kx < kw; ++kx) {
            double weight = wp[ky * kw + kx];
            for (int64_t y = 0; y < oh; ++y) {
              int64_t iy = y * g.strides[0] + ky * g.dilations[0] - g.pad_begin[0];
              if (iy < 0 || iy >= ih) continue;
              for (int64_t xo = 0; xo < ow; ++xo) {
                int64_t ix = xo * g.strides[1] + kx * g.dilations[1] - g.pad_begin[1];
                if (ix >= 0 && ix < iw) o[y * ow + xo] += xp[iy * iw + ix] * weight;
              }
            }
          }
        }
      }
    }
  }
}

Tensors Conv(const KernelContext& ctx) {
  int64_t block = BlockOf(ctx.node), out_block = OutputLayoutBlock(ctx.node);
  Tensor x_t = block ? Unblock(ctx.in(0), block) : ctx.in(0);
  TensorType out_type = LogicalType(ctx.outputs[0], out_block);
  std::vector<double> x = x_t.ToDoubles(), w = ctx.in(1).ToDoubles();
  const Shape& xs = x_t.shape();
  const Shape& ws = ctx.in(1).shape();
  WindowGeometry g = ComputeWindow(ctx.node, xs, Spatial(ws));
  int64_t group = ctx.attrs().GetInt("group", 1);
  int64_t n_batch = xs[0], c_in = xs[1], m_out = ws[0], c_per_group = ws[1], m_per_group = m_out / group;
  Shape in_spatial = Spatial(xs), out_spatial = g.out, kernel = g.kernel;
  int64_t in_plane = NumElements(in_spatial), out_plane = NumElements(out_spatial), k_plane = NumElements(kernel);
  std::vector<double> out(out_type.numel(), 0.0);
  if (xs.size() == 4) {
    Conv2D(x, w, xs, ws, g, group, ctx.has(2) ? &ctx.in(2) : nullptr, &out);
    Tensor result = Tensor::FromDoubles(out_type.dtype, out_type.shape, out);
    return {out_block ? Block(result, out_block) : result};
  }
  std::vector<int64_t> in_idx(in_spatial.size());
  for (int64_t n = 0; n < n_batch; ++n) {
    for (int64_t m = 0; m < m_out; ++m) {
      int64_t gidx = m / m_per_group;
      double bias = ctx.has(2) ? ctx.in(2).GetDouble(m) : 0.0;
      ForEachIndex(out_spatial, [&](const std::vector<int64_t>& o, int64_t o_lin) {
        double acc = bias;
        for (int64_t c = 0; c < c_per_group; ++c) {
          const double* xp = &x[(n * c_in + gidx * c_per_group + c) * in_plane];
          const double* wp = &w[(m * c_per_group + c) * k_plane];
          ForEachIndex(kernel, [&](const std::vector<int64_t>& k, int64_t k_lin) {
            if (InputIndex(g, o, k, &in_idx)) acc += xp[SpatialOffset(in_idx, in_spatial)] * wp[k_lin];
          });
        }
        out[(n * m_out + m) * out_plane + o_lin] = acc;
      });
    }
  }
  Tensor result = Tensor::FromDoubles(out_type.dtype, out_type.shape, out);
  return {out_block ? Block(result, out_block) : result};
}

Tensors ConvTranspose(const KernelContext& ctx) {
  const Tensor& x_t = ctx.in(0);
  std::vector<double> x = x_t.ToDoubles(), w = ctx.in(1).ToDoubles();
  const Shape& xs = x_t.shape();
  const Shape& ws = ctx.in(1).shape();
  WindowGeometry g = ComputeTransposedWindow(ctx.node, xs, Spatial(ws));
  int64_t group = ctx.attrs().GetInt("group", 1);
  int64_t c_in = xs[1], c_per_group = c_in / group, m_per_group = ws[1], m_out = m_per_group * group;
  Shape in_spatial = Spatial(xs), out_spatial = g.out, kernel = g.kernel;
  int64_t in_plane = NumElements(in_spatial), out_plane = NumElements(out_spatial), k_plane = NumElements(kernel);
  std::vector<double> out(ctx.outputs[0].numel(), 0.0);
  for (int64_t n = 0; n < xs[0]; ++n) {
    for (int64_t m = 0; m < m_out; ++m) {
      double bias = ctx.has(2) ? ctx.in(2).GetDouble(m) : 0.0;
      for (int64_t o = 0; o < out_plane; ++o) out[(n * m_out + m) * out_plane + o] = bias;
    }
    for (int64_t c = 0; c < c_in; ++c) {
      int64_t gidx = c / c_per_group;
      ForEachIndex(in_spatial, [&](const std::vector<int64_t>& i, int64_t i_lin) {
        double xv = x[(n * c_in + c) * in_plane + i_lin];
        ForEachIndex(kernel, [&](const std::vector<int64_t>& k, int64_t k_lin) {
          int64_t o_lin = 0;
          for (size_t d = 0; d < i.size(); ++d) {
            int64_t o = i[d] * g.strides[d] + k[d] * g.dilations[d] - g.pad_begin[d];
            if (o < 0 || o >= out_spatial[d]) return;
            o_lin = o_lin * out_spatial[d] + o;
          }
          for (int64_t m = 0; m < m_per_group; ++m) {
            int64_t mo = gidx * m_per_group + m;
            out[(n * m_out + mo) * out_plane + o_lin] += xv * w[(c * m_per_group + m) * k_plane + k_lin];
          }
        });
      });
    }
  }
  return {Tensor::FromDoubles(ctx.outputs[0].dtype, ctx.outputs[0].shape, out)};
}

Tensors Gemm(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  bool ta = ctx.attrs().GetInt("transA", 0) != 0, tb = ctx.attrs().GetInt("transB", 0) != 0;
  double alpha = ctx.attrs().GetFloat("alpha", 1.0), beta = ctx.attrs().GetFloat("beta", 1.0);
  int64_t m = ctx.outputs[0].shape[0], n = ctx.outputs[0].shape[1];
  int64_t k = ta ? a.shape()[0] : a.shape()[1];
  std::vector<double> av = a.ToDoubles(), bv = b.ToDoubles();
  std::vector<int64_t> c_offsets;
  if (ctx.has(2)) c_offsets = BroadcastOffsets(ctx.outputs[0].shape, ctx.in(2).shape());
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = ta ? av[p * m + i] : av[i * k + p];
        double y = tb ? bv[j * k + p] : bv[p * n + j];
        acc += x * y;
      }
      double c = ctx.has(2) ? ctx.in(2).GetDouble(c_offsets[i * n + j]) : 0.0;
      out.SetDouble(i * n + j, alpha * acc + beta * c);
    }
  }
  return {out};
}

Tensors MatMul(const KernelContext& ctx) {
  Shape as = ctx.in(0).shape(), bs = ctx.in(1).shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Shape batch = BroadcastShapes(a_batch, b_batch, ctx.node.Describe());
  std::vector<int64_t> a_off = BroadcastOffsets(batch, a_batch), b_off = BroadcastOffsets(batch, b_batch);
  std::vector<double> av = ctx.in(0).ToDoubles(), bv = ctx.in(1).ToDoubles();
  bool is_float = ctx.outputs[0].dtype.is_float();
  std::vector<int64_t> ai, bi;
  if (!is_float) {
    ai = ctx.in(0).ToInts();
    bi = ctx.in(1).ToInts();
  }
  Tensor out = ctx.NewOutput(0);
  for (size_t bt = 0; bt < a_off.size(); ++bt) {
    int64_t a_base = a_off[bt] * m * k, b_base = b_off[bt] * k * n, o_base = static_cast<int64_t>(bt) * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (is_float) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p) acc += av[a_base + i * k + p] * bv[b_base + p * n + j];
          out.SetDouble(o_base + i * n + j, acc);
        } else {
          int64_t acc = 0;
          for (int64_t p = 0; p < k; ++p) acc += ai[a_base + i * k + p] * bi[b_base + p * n + j];
          out.SetInt(o_base + i * n + j, acc);
        }
      }
    }
  }
  return {out};
}

Tensors BatchNorm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  bool training = ctx.attrs().GetInt("training_mode", 0) != 0;
  double momentum = ctx.attrs().GetFloat("momentum", 0.9);
  int64_t channels = x.shape()[1];
  int64_t inner = x.numel() / std::max<int64_t>(1, x.shape()[0] * channels);
  std::vector<double> mean(channels), var(channels);
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = ctx.in(3).GetDouble(c);
    var[c] = ctx.in(4).GetDouble(c);
  }
  if (training) {  // normalize with the batch's own statistics (population variance)
    std::vector<double> sum(channels, 0), sq(channels, 0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t c = (i / inner) % channels;
      sum[c] += x.GetDouble(i);
      sq[c] += x.GetDouble(i) * x.GetDouble(i);
    }
    double count = static_cast<double>(x.numel() / std::max<int64_t>(channels, 1));
    for (int64_t c = 0; c < channels; ++c) {
      mean[c] = sum[c] / count;
      var[c] = sq[c] / count - mean[c] * mean[c];
    }
  }
  Tensors out{ctx.NewOutput(0)};
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = (i / inner) % channels;
    double norm = (x.GetDouble(i) - mean[c]) / std::sqrt(var[c] + eps);
    out[0].SetDouble(i, norm * ctx.in(1).GetDouble(c) + ctx.in(2).GetDouble(c));
  }
  for (size_t k = 1; k < ctx.outputs.size(); ++k) {  // running mean, running variance
    Tensor running = ctx.NewOutput(k);
    const std::vector<double>& batch = k == 1 ? mean : var;
    for (int64_t c = 0; c < channels; ++c)
      running.SetDouble(c, ctx.in(k + 2).GetDouble(c) * momentum + batch[c] * (1 - momentum));
    out.push_back(running);
  }
  return out;
}

Tensors InstanceNorm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  int64_t channels = x.shape()[1];
  int64_t inner = x.numel() / std::max<int64_t>(1, x.shape()[0] * channels);
  Tensor out = ctx.NewOutput(0);
  for (int64_t plane = 0; plane < x.shape()[0] * channels; ++plane) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += x.GetDouble(plane * inner + i);
    mean /= inner;
    for (int64_t i = 0; i < inner; ++i) var += std::pow(x.GetDouble(plane * inner + i) - mean, 2);
    var /= inner;
    int64_t c = plane % channels;
    for (int64_t i = 0; i < inner; ++i) {
      double norm = (x.GetDouble(plane * inner + i) - mean) / std::sqrt(var + eps);
      out.SetDouble(plane * inner + i, norm * ctx.in(1).GetDouble(c) + ctx.in(2).GetDouble(c));
    }
  }
  return {out};
}

// LayerNormalization with data_layout: each pixel of an NCHW (or blocked) activation over its channels.
Tensors ChannelLayerNorm(const KernelContext& ctx) {
  int64_t block = BlockOf(ctx.node);
  Tensor x = block ? Unblock(ctx.in(0), block) : ctx.in(0);
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  const Shape& s = x.shape();
  int64_t channels = s[1], plane = s[2] * s[3];
  Tensor y(x.dtype(), s);
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t p = 0; p < plane; ++p) {
      auto at = [&](int64_t c) { return (n * channels + c) * plane + p; };
      double mean = 0, var = 0;
      for (int64_t c = 0; c < channels; ++c) mean += x.GetDouble(at(c));
      mean /= channels;
      for (int64_t c = 0; c < channels; ++c) var += std::pow(x.GetDouble(at(c)) - mean, 2);
      double inv_std = 1.0 / std::sqrt(var / channels + eps);
      for (int64_t c = 0; c < channels; ++c) {
        double v = (x.GetDouble(at(c)) - mean) * inv_std * ctx.in(1).GetDouble(c);
        if (ctx.has(2)) v += ctx.in(2).GetDouble(c);
        y.SetDouble(at(c), v);
      }
    }
  return {block ? Block(y, block) : y};
}

Tensors LayerNorm(const KernelContext& ctx) {
  if (ctx.attrs().Has("data_layout")) return ChannelLayerNorm(ctx);
  const Tensor& x = ctx.in(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), x.rank(), ctx.node.Describe());
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  Shape normalized(x.shape().begin() + axis, x.shape().end());
  int64_t inner = NumElements(normalized);
  int64_t outer = inner == 0 ? 0 : x.numel() / inner;
  std::vector<int64_t> scale_off = BroadcastOffsets(normalized, ctx.in(1).shape());
  std::vector<int64_t> bias_off;
  if (ctx.has(2)) bias_off = BroadcastOffsets(normalized, ctx.in(2).shape());
  Tensors out{ctx.NewOutput(0)};
  for (size_t i = 1; i < ctx.outputs.size(); ++i) out.push_back(ctx.NewOutput(i));
  for (int64_t r = 0; r < outer; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += x.GetDouble(r * inner + i);
    mean /= inner;
    for (int64_t i = 0; i < inner; ++i) var += std::pow(x.GetDouble(r * inner + i) - mean, 2);
    var /= inner;
    double inv_std = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < inner; ++i) {
      double y = (x.GetDouble(r * inner + i) - mean) * inv_std * ctx.in(1).GetDouble(scale_off[i]);
      if (ctx.has(2)) y += ctx.in(2).GetDouble(bias_off[i]);
      out[0].SetDouble(r * inner + i, y);
    }
    if (out.size() > 1) out[1].SetDouble(r, mean);
    if (out.size() > 2) out[2].SetDouble(r, inv_std);
  }
  return out;
}

Tensors RmsNorm(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), x.rank(), ctx.node.Describe());
  double eps = ctx.attrs().GetFloat("epsilon", 1e-5);
  Shape normalized(x.shape().begin() + axis, x.shape().end());
  int64_t inner = NumElements(normalized);
  int64_t outer = inner == 0 ? 0 : x.numel() / inner;
  std::vector<int64_t> scale_off = BroadcastOffsets(normalized, ctx.in(1).shape());
  Tensor out = ctx.NewOutput(0);
  for (int64_t r = 0; r < outer; ++r) {
    double sq = 0;
    for (int64_t i = 0; i < inner; ++i) sq += std::pow(x.GetDouble(r * inner + i), 2);
    double inv = 1.0 / std::sqrt(sq / inner + eps);
    for (int64_t i = 0; i < inner; ++i)
      out.SetDouble(r * inner + i, x.GetDouble(r * inner + i) * inv * ctx.in(1).GetDouble(scale_off[i]));
  }
  return {out};
}

// softmax(Q K^T * scale + mask) V per batch and head; masked-out scores are -inf (a fully masked row is NaN).
Tensors Attention(const KernelContext& ctx) {
  const Tensor &q = ctx.in(0), &k = ctx.in(1), &v = ctx.in(2);
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  int64_t batch = qs[0], heads = qs[1], sq = qs[2], d = qs[3], kv_heads = ks[1], skv = ks[2], dv = vs[3];
  double scale = ctx.attrs().GetFloat("scale", 1.0 / std::sqrt(static_cast<double>(d)));
  bool causal = ctx.attrs().GetInt("is_causal", 0) != 0;
  Shape scores{batch, heads, sq, skv};
  std::vector<int64_t> mask_off;
  if (ctx.has(3)) mask_off = BroadcastOffsets(scores, ctx.in(3).shape());
  bool bool_mask = ctx.has(3) && ctx.in(3).dtype().is_bool();
  Tensor out = ctx.NewOutput(0);
  std::vector<double> row(skv);
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t hk = h / (heads / kv_heads);
      for (int64_t i = 0; i < sq; ++i) {
        double max = -inf;
        for (int64_t j = 0; j < skv; ++j) {
          double s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += q.GetDouble(((b * heads + h) * sq + i) * d + c) * k.GetDouble(((b * kv_heads + hk) * skv + j) * d + c);
          s *= scale;
          if (ctx.has(3)) {
            int64_t at = mask_off[((b * heads + h) * sq + i) * skv + j];
            if (bool_mask) s = ctx.in(3).GetInt(at) ? s : -inf;
            else s += ctx.in(3).GetDouble(at);
          }
          if (causal && j > i) s = -inf;
          row[j] = s;
          max = std::max(max, s);
        }
        double sum = 0;
        for (int64_t j = 0; j < skv; ++j) sum += row[j] = std::exp(row[j] - max);
        for (int64_t c = 0; c < dv; ++c) {
          double y = 0;
          for (int64_t j = 0; j < skv; ++j) y += row[j] * v.GetDouble(((b * kv_heads + hk) * skv + j) * dv + c);
          out.SetDouble(((b * heads + h) * sq + i) * dv + c, y / sum);
        }
      }
    }
  return {out};
}

enum class PoolKind { kMax, kAverage, kLp };

Tensors Pool(const KernelContext& ctx, PoolKind kind) {
  int64_t block = BlockOf(ctx.node);
  Tensor x_t = block ? Unblock(ctx.in(0), block) : ctx.in(0);
  TensorType out_type = LogicalType(ctx.outputs[0], block);
  const Shape& xs = x_t.shape();
  WindowGeometry g = ComputeWindow(ctx.node, xs, ctx.attrs().GetInts("kernel_shape"));
  bool count_include_pad = ctx.attrs().GetInt("count_include_pad", 0) != 0;
  bool column_major = ctx.attrs().GetInt("storage_order", 0) != 0;  // how MaxPool's indices are flattened
  double p = static_cast<double>(ctx.attrs().GetInt("p", 2));
  std::vector<double> x = x_t.ToDoubles();
  Shape in_spatial = Spatial(xs);
  int64_t in_plane = NumElements(in_spatial), out_plane = NumElements(g.out);
  std::vector<double> out(out_type.numel());
  std::vector<int64_t> indices(out_type.numel());
  std::vector<int64_t> in_idx(in_spatial.size());
  for (int64_t plane = 0; plane < xs[0] * xs[1]; ++plane) {
    const double* xp = &x[plane * in_plane];
    ForEachIndex(g.out, [&](const std::vector<int64_t>& o, int64_t o_lin) {
      double acc = kind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t arg = -1, count = 0, padded_count = 0;
      ForEachIndex(g.kernel, [&](const std::vector<int64_t>& k, int64_t) {
        bool in_padded = true;
        for (size_t d = 0; d < o.size(); ++d) {
          int64_t i = o[d] * g.strides[d] + k[d] * g.dilations[d] - g.pad_begin[d];
          if (i < -g.pad_begin[d] || i >= g.in[d] + g.pad_end[d]) in_padded = false;
        }
        if (in_padded) ++padded_count;
        if (!InputIndex(g, o, k, &in_idx)) return;
        int64_t off = SpatialOffset(in_idx, in_spatial);
        double v = xp[off];
        ++count;
        if (kind == PoolKind::kMax) {
          if (v > acc || arg < 0) {
            acc = v;
            int64_t flat = off;
            if (column_major) {
              flat = 0;
              for (int d = static_cast<int>(in_idx.size()) - 1; d >= 0; --d) flat = flat * in_spatial[d] + in_idx[d];
            }
            arg = plane * in_plane + flat;
          }
        } else if (kind == PoolKind::kAverage) {
          acc += v;
        } else {
          acc += std::pow(std::fabs(v), p);
        }
      });
      if (kind == PoolKind::kAverage) acc /= static_cast<double>(count_include_pad ? padded_count : count);
      if (kind == PoolKind::kLp) acc = std::pow(acc, 1.0 / p);
      out[plane * out_plane + o_lin] = acc;
      indices[plane * out_plane + o_lin] = arg;
    });
  }
  Tensor result = Tensor::FromDoubles(out_type.dtype, out_type.shape, out);
  Tensors results{block ? Block(result, block) : result};
  if (ctx.outputs.size() > 1) results.push_back(Tensor::FromInts(DType::Int(64), ctx.outputs[1].shape, indices));
  return results;
}

Tensors GlobalPool(const KernelContext& ctx, bool is_max) {
  int64_t block = BlockOf(ctx.node);
  Tensor x = block ? Unblock(ctx.in(0), block) : ctx.in(0);
  TensorType out_type = LogicalType(ctx.outputs[0], block);
  int64_t planes = x.shape()[0] * x.shape()[1];
  int64_t inner = NumElements(Spatial(x.shape()));
  Tensor out(out_type.dtype, out_type.shape);
  for (int64_t plane = 0; plane < planes; ++plane) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < inner; ++i) {
      double v = x.GetDouble(plane * inner + i);
      acc = is_max ? std::max(acc, v) : acc + v;
    }
    out.SetDouble(plane, is_max ? acc : acc / inner);
  }
  return {block ? Block(out, block) : out};
}

Tensors Lrn(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double alpha = ctx.attrs().GetFloat("alpha", 1e-4), beta = ctx.attrs().GetFloat("beta", 0.75);
  double bias = ctx.attrs().GetFloat("bias", 1.0);
  int64_t size = ctx.attrs().GetInt("size");
  int64_t channels = x.shape()[1];
  int64_t inner = x.numel() / std::max<int64_t>(1, x.shape()[0] * channels);
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = (i / inner) % channels;
    int64_t base = i - c * inner;
    double sum = 0;
    for (int64_t j = std::max<int64_t>(0, c - (size - 1) / 2); j <= std::min(channels - 1, c + size / 2); ++j) {
      sum += std::pow(x.GetDouble(base + j * inner), 2);
    }
    out.SetDouble(i, x.GetDouble(i) / std::pow(bias + alpha / size * sum, beta));
  }
  return {out};
}

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

Tensors Softmax(const KernelContext& ctx, SoftmaxKind kind) {
  const Tensor& x = ctx.in(0);
  int rank = x.rank();
  bool coerce = ctx.attrs().GetInt("coerce_2d", 0) != 0;
  int axis = NormalizeAxis(ctx.attrs().GetInt("axis", coerce ? 1 : -1), rank, ctx.node.Describe());
  // A line is `length` elements `stride` apart; lines start at every (outer, inner) pair.
  int64_t outer = 1, length = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape()[d];
  if (coerce) {
    for (int d = axis; d < rank; ++d) length *= x.shape()[d];
  } else {
    length = x.shape()[axis];
    for (int d = axis + 1; d < rank; ++d) inner *= x.shape()[d];
  }
  Tensor out = ctx.NewOutput(0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t j) { return (o * length + j) * inner + in; };
      double mx = -std::numeric_limits<double>::infinity();
      int64_t arg = 0;
      for (int64_t j = 0; j < length; ++j) {
        double v = x.GetDouble(at(j));
        if (v > mx) {
          mx = v;
          arg = j;
        }
      }
      double sum = 0;
      for (int64_t j = 0; j < length; ++j) sum += std::exp(x.GetDouble(at(j)) - mx);
      for (int64_t j = 0; j < length; ++j) {
        double v = x.GetDouble(at(j));
        double y = kind == SoftmaxKind::kSoftmax      ? std::exp(v - mx) / sum
                   : kind == SoftmaxKind::kLogSoftmax ? v - mx - std::log(sum)
                                                      : (j == arg ? 1.0 : 0.0);
        out.SetDouble(at(j), y);
      }
    }
  }
  return {out};
}

Tensors Mvn(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> raw = ctx.attrs().GetInts("axes", {0, 2, 3});
  std::vector<int> axes = NormalizeAxes(raw, x.rank(), ctx.node.Describe());
  Shape reduced = ReducedShape(x.shape(), axes, true);
  std::vector<int64_t> to_reduced = BroadcastOffsets(x.shape(), reduced);
  // BroadcastOffsets maps output -> input; here every x element maps to its reduced slot.
  int64_t slots = NumElements(reduced);
  std::vector<double> sum(slots, 0), sq(slots, 0), count(slots, 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.GetDouble(i);
    sum[to_reduced[i]] += v;
    sq[to_reduced[i]] += v * v;
    count[to_reduced[i]] += 1;
  }
  Tensor out = ctx.NewOutput(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t s = to_reduced[i];
    double mean = sum[s] / count[s];
    double var = sq[s] / count[s] - mean * mean;
    out.SetDouble(i, (x.GetDouble(i) - mean) / (std::sqrt(var) + 1e-9));
  }
  return {out};
}

}  // namespace

void RegisterNnKernels(KernelRegistry* r) {
  r->Register("Conv", Conv);
  r->Register("ConvTranspose", ConvTranspose);
  r->Register("Gemm", Gemm);
  r->Register("MatMul", MatMul);
  r->Register("BatchNormalization", BatchNorm);
  r->Register("InstanceNormalization", InstanceNorm);
  r->Register("LayerNormalization", LayerNorm);
  r->Register("RMSNormalization", RmsNorm);
  r->Register("Attention", Attention);
  r->Register("MaxPool", [](const KernelContext& ctx) { return Pool(ctx, PoolKind::kMax); });
  r->Register("AveragePool", [](const KernelContext& ctx) { return Pool(ctx, PoolKind::kAverage); });
  r->Register("LpPool", [](const KernelContext& ctx) { return Pool(ctx, PoolKind::kLp); });
  r->Register("GlobalAveragePool", [](const KernelContext& ctx) { return GlobalPool(ctx, false); });
  r->Register("GlobalMaxPool", [](const KernelContext& ctx) { return GlobalPool(ctx, true); });
  r->Register("LRN", Lrn);
  r->Register("Softmax", [](const KernelContext& ctx) { return Softmax(ctx, SoftmaxKind::kSoftmax); });
  r->Register("LogSoftmax", [](const KernelContext& ctx) { return Softmax(ctx, SoftmaxKind::kLogSoftmax); });
  r->Register("Hardmax", [](const KernelContext& ctx) { return Softmax(ctx, SoftmaxKind::kHardmax); });
  r->Register("MeanVarianceNormalization", Mvn);
}

}  // namespace graph_eval
}  // namespace agate
