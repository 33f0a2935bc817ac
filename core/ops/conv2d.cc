#include "core/ops/conv2d.h"

#include <sstream>

#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/ops/weight_precision.h"
#include "core/ops/window.h"
#include "core/ops/winograd.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

Tensor ConvNCHW(const Tensor& x, const Tensor& w, const graph::WindowGeometry& g, int64_t groups,
                const std::string& name, bool split_column_phases) {
  graph::Shape xs = StaticShape(x), ws = StaticShape(w);
  size_t nsp = g.kernel.size();
  int64_t oc_total = ws[0], ic_per_group = ws[1], oc_per_group = oc_total / groups;
  bool phase_split = split_column_phases && nsp == 2 && g.strides[1] > 1;
  Tensor padded = phase_split ? x : PadSpatial(x, 2, g.pad_begin, g.pad_end, ir::make_zero(x.dtype()), name + "_pad");
  std::vector<ir::IterVar> reduce;
  ir::IterVar ric;
  if (ic_per_group > 1) {
    ric = te::reduce_axis({Expr(int64_t{0}), Expr(ic_per_group)}, "ric");
    reduce.push_back(ric);
  }
  std::vector<ir::IterVar> rk;
  for (size_t d = 0; d < nsp; ++d) {
    rk.push_back(te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[d])}, "rk" + std::to_string(d)));
    reduce.push_back(rk.back());
  }
  graph::Shape out{xs[0], oc_total};
  out.insert(out.end(), g.out.begin(), g.out.end());
  // A 2-D conv strided along the columns reads a copy of the padded input split
  // by column phase (column % stride), so vectors along the output columns are
  // contiguous loads instead of gathers.
  int64_t sw = phase_split ? g.strides[1] : 1;
  Tensor phased;
  if (sw > 1) {
    int64_t needed = (g.out[1] - 1) * sw + (g.kernel[1] - 1) * g.dilations[1] + 1;
    int64_t cols = (needed + sw - 1) / sw;
    int64_t hp = xs[2] + g.pad_begin[0] + g.pad_end[0];
    std::vector<int64_t> in{xs[2], xs[3]};
    phased = te::compute(ToExprShape({xs[0], xs[1], hp, sw, cols}), [&](const std::vector<Var>& i) {
      return PaddedRead(x, {i[0], i[1], i[2] - g.pad_begin[0], i[4] * sw + i[3] - g.pad_begin[1]}, 2, in,
                        ir::make_zero(x.dtype()));
    }, name + "_pad", tag::kPad);
  }
  return te::compute(
      ToExprShape(out),
      [&](const std::vector<Var>& o) {
        Expr ic = ric.defined() ? Expr(ric) : Expr(int64_t{0});
        Expr channel = groups == 1 ? ic : ir::floordiv(o[1], Expr(oc_per_group)) * ic_per_group + ic;
        std::vector<Expr> xi{o[0], channel};
        std::vector<Expr> wi{o[1], ic};
        for (size_t d = 0; d < nsp; ++d) wi.push_back(rk[d]);
        if (phased.defined()) {
          Expr col = rk[1] * g.dilations[1];
          return te::sum(phased(o[0], channel, o[2] * g.strides[0] + rk[0] * g.dilations[0], ir::floormod(col, Expr(sw)),
                                o[3] + ir::floordiv(col, Expr(sw))) * w(wi), reduce);
        }
        for (size_t d = 0; d < nsp; ++d) xi.push_back(o[2 + d] * g.strides[d] + rk[d] * g.dilations[d]);
        return te::sum(padded(xi) * w(wi), reduce);
      },
      name, tag::kConv2dNCHW);
}

Tensor ConvNCHWc(const Tensor& x, const Tensor& packed_w, const graph::WindowGeometry& g, const std::string& name) {
  graph::Shape xs = StaticShape(x), ws = StaticShape(packed_w);
  // A 4-D (NCHW) input is read as NCHW1c: one input channel per block.
  bool nchw = xs.size() == 4;
  int64_t ib = nchw ? 1 : xs[4], ob = ws[5];
  Tensor padded = PadSpatial(x, 2, g.pad_begin, g.pad_end, ir::make_zero(x.dtype()), name + "_pad");
  ir::IterVar icc = te::reduce_axis({Expr(int64_t{0}), Expr(xs[1])}, "icc");
  ir::IterVar kh = te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[0])}, "kh");
  ir::IterVar kw = te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[1])}, "kw");
  ir::IterVar ibi = te::reduce_axis({Expr(int64_t{0}), Expr(ib)}, "ibi");
  graph::Shape out{xs[0], ws[0], g.out[0], g.out[1], ob};
  return te::compute(
      ToExprShape(out),
      [&](const std::vector<Var>& o) {
        Expr h = o[2] * g.strides[0] + kh * g.dilations[0];
        Expr w = o[3] * g.strides[1] + kw * g.dilations[1];
        Expr in = nchw ? padded(o[0], icc + ibi, h, w) : padded(o[0], icc, h, w, ibi);
        return te::sum(in * WidenedWeight(packed_w(o[1], icc, kh, kw, ibi, o[4]), x.dtype()), {icc, kh, kw, ibi});
      },
      name, tag::kConv2dNCHWc);
}

graph::Tensor PackConvWeightsNCHWc(const graph::Tensor& w, int64_t in_block, int64_t out_block) {
  const graph::Shape& s = w.shape();
  AGATE_REQUIRE(s.size() == 4 && in_block > 0 && out_block > 0 && s[0] % out_block == 0 && s[1] % in_block == 0,
                kInvalidArgument)
      << "weights " << graph::ShapeToString(s) << " cannot be packed by " << in_block << " input and " << out_block
      << " output channels";
  int64_t oc = s[0], ic = s[1], kh = s[2], kw = s[3];
  graph::Tensor packed(w.dtype(), {oc / out_block, ic / in_block, kh, kw, in_block, out_block});
  AGATE_REQUIRE(w.dtype() == ir::DType::Float(32), kUnsupported) << "weights of dtype " << w.dtype();
  const float* src = w.data<float>();
  float* dst = packed.mutable_data<float>();
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < ic; ++i)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) {
          int64_t d = ((((o / out_block) * (ic / in_block) + i / in_block) * kh + y) * kw + x) * in_block * out_block +
                      (i % in_block) * out_block + o % out_block;
          dst[d] = src[((o * ic + i) * kh + y) * kw + x];
        }
  return packed;
}

namespace {

// The padding stage of a conv (if any) is computed once, at the root.
void SchedulePadRoot(te::Schedule& s, const Tensor& conv, const target::Target& target, const LowerGroupOptions& o) {
  for (const Tensor& in : conv.op()->InputTensors()) {
    if (in.op()->tag != tag::kPad) continue;
    s[in].compute_root();
    InjectiveKnobs knobs;
    if (!o.allow_parallel) knobs.min_parallel_elements = INT64_MAX;
    ScheduleInjectiveStage(s, in, target, knobs);
  }
}

// The stage that writes the group's output for an anchor `conv`: its epilogue,
// or the conv itself (then a local cache_write stage becomes the accumulator).
struct TileStages {
  Tensor out;    // root stage written once
  Tensor accum;  // reduction stage computed per output tile
};

bool PrepareTile(const ScheduleRequest& r, TileStages* t) {
  te::Schedule s = r.schedule;
  if (r.epilogue.defined()) {
    if (StaticShape(r.epilogue) != StaticShape(r.anchor)) return false;
    t->out = r.epilogue;
    t->accum = r.anchor;
    return true;
  }
  if (r.outputs.size() != 1 || !r.outputs[0].same_as(r.anchor)) return false;
  t->accum = s.cache_write(r.anchor, ir::MemoryScope::kLocal);
  t->out = r.anchor;
  return true;
}

// How many output-channel tiles a thread computes per output row, i.e. the
// parallel loop's order. Each thread takes a contiguous range of (channel
// group, row) pairs and computes every tile of its group for a row before the
// next row: it reads its rows of the input once per group and the group's
// weights once per row. Groups are as large as half the L2 allows (the group's
// weights stay in L2 across rows), so small weights make one group (rows lead:
// each thread reads only its rows of the input, which the producer wrote on the
// same core) and weights of a tile or more per half L2 make one tile per group
// (channel tiles lead, each thread reading only its tiles' weights). Measured on
// ResNet-50 (2 threads, Zen 5): with channel tiles always leading, the 1x1 convs
// that reduce 256 -> 64 and 512 -> 128 channels ran 1.7-2x SLOWER on 2 threads
// than on 1 (each thread streamed the whole 1.6-3.2 MB input, half of it
// written on the other core).
int64_t ConvTilesPerGroup(const TileStages& t, int64_t tiles, int64_t oc_tile, const target::Target& target,
                          const LowerGroupOptions& o) {
  if (o.conv_parallel_rows == 0) return 1;
  if (o.conv_parallel_rows == 1) return tiles;
  auto* accum = static_cast<const te::ComputeOpNode*>(t.accum.op().get());
  int64_t tile_weight_bytes = oc_tile * t.out.dtype().bytes();
  for (const ir::IterVar& k : accum->reduce_axis) tile_weight_bytes *= ConstExtent(k);
  int64_t l2 = target.l2_cache_bytes() > 0 ? target.l2_cache_bytes() : (256 << 10);
  int64_t fit = std::max<int64_t>(1, l2 / 2 / std::max<int64_t>(1, tile_weight_bytes));
  return DivisorAtMost(tiles, fit);
}

std::string ScheduleNCHWc(const ScheduleRequest& r, const Tensor& conv, int64_t kh, int64_t kw) {
  te::Schedule s = r.schedule;
  TileStages t;
  if (!PrepareTile(r, &t)) return ScheduleAnchorDefault(r, "conv2d_nchwc (multi-output: default schedule)");
  SchedulePadRoot(s, conv, *r.target, *r.options);
  graph::Shape os = StaticShape(t.out);
  int lanes = VectorLanes(*r.target, t.out.dtype());
  NCHWcTile tile = ChooseNCHWcTile(os, lanes, r.target->vector_registers(), *r.options);

  // Output: (n, channel group, oh, oc_chunk.outer in the group, ow.outer | oc_chunk.inner,
  // ow.inner, oc_lane), the first three parallel (ConvTilesPerGroup).
  te::Stage out = s[t.out];
  auto [oco, oci] = out.split(out.axis(1), Expr(tile.oc_blocks));
  int64_t tiles = os[1] / tile.oc_blocks;
  int64_t group = ConvTilesPerGroup(t, tiles, tile.oc_blocks * os[4], *r.target, *r.options);
  auto [ocg, oct] = out.split(oco, Expr(group));
  auto [owo, owi] = out.split(out.axis(3), Expr(tile.ow_block));
  out.reorder({out.axis(0), ocg, out.axis(2), oct, owo, oci, owi, out.axis(4)});
  ir::IterVar fused = out.fuse(out.fuse(out.axis(0), ocg), out.axis(2));
  if (ParallelAllowed(*r.target) && r.options->allow_parallel) out.parallel(fused);
  if (lanes > 1) out.vectorize(out.axis(4));

  // Accumulator tile at ow.outer: reductions outside, the register tile (oc_chunk, ow, lane) inside.
  te::Stage acc = s[t.accum];
  acc.compute_at(out, owo);
  acc.reorder({acc.axis(0), acc.axis(2), acc.reduce_axis(0), acc.reduce_axis(1), acc.reduce_axis(2),
               acc.reduce_axis(3), acc.axis(1), acc.axis(3), acc.axis(4)});
  acc.unroll(acc.axis(1));
  acc.unroll(acc.axis(3));
  if (lanes > 1) acc.vectorize(acc.axis(4));
  std::ostringstream os_text;
  os_text << "conv2d_nchwc " << kh << "x" << kw << " oc_tile=" << tile.oc_blocks * os[4] << " ow_block=" << tile.ow_block
          << " tiles_per_row=" << group << "/" << tiles << (r.epilogue.defined() ? ", epilogue at the register tile" : "");
  return os_text.str();
}

}  // namespace

NCHWcTile ChooseNCHWcTile(const graph::Shape& out, int lanes, int registers, const LowerGroupOptions& o) {
  NCHWcTile t;
  int64_t block = out[4], oc_chunks = out[1], ow = out[3];
  if (o.conv_oc_block > 0 && o.conv_oc_block % block == 0 && oc_chunks % (o.conv_oc_block / block) == 0) {
    t.oc_blocks = o.conv_oc_block / block;
  } else if ((lanes >= 16 || registers <= 16) && block == lanes && oc_chunks % 2 == 0) {
    // AVX-512, and AVX2 (measured on Zen 3: ResNet-50's NCHWc convs 10-25% faster each with
    // 2 x 8 channels by 4-6 columns than 8 channels by 8). 32-register NEON keeps one
    // block (not measured).
    t.oc_blocks = 2;
  } else if (block < lanes) {
    // Blocks narrower than the registers (8 channels on AVX-512): up to two
    // registers' worth of channels per tile, e.g. 24 = 3 blocks of 8.
    t.oc_blocks = DivisorAtMost(oc_chunks, std::max<int64_t>(1, 2 * lanes / block));
  }
  // Two blocks: 16 of 32 accumulators, or 12 of 16 (AVX2: 12 + 2 weight vectors + the broadcast).
  int64_t two_blocks = registers <= 16 ? 6 : 8;
  int64_t limit = o.conv_ow_block > 0 ? o.conv_ow_block : (t.oc_blocks >= 2 ? two_blocks : (lanes >= 16 ? 14 : 8));
  t.ow_block = DivisorAtMost(ow, limit);
  if (t.ow_block < 4 && ow > limit) {
    // A guarded tail beats a tiny tile. With two blocks on 16 registers it takes at most 5
    // columns: the 6-column tile (15 of 16 registers) under the tail's guard ran at 0.66-0.93x
    // of 5 columns on Inception-v3's 17-wide convs (Zen 3, conv_benchmark, 1 thread).
    int64_t guarded = o.conv_ow_block <= 0 && t.oc_blocks >= 2 && registers <= 16 ? std::min<int64_t>(limit, 5) : limit;
    t.ow_block = LeastWastefulTile(ow, 4, guarded);
  }
  return t;
}

std::string ScheduleDirectNCHW(const ScheduleRequest& r, const Tensor& conv, int lanes) {
  te::Schedule s = r.schedule;
  TileStages t;
  if (conv.ndim() != 4 || !PrepareTile(r, &t)) return ScheduleAnchorDefault(r, "conv_nchw (default schedule)");
  SchedulePadRoot(s, conv, *r.target, *r.options);
  graph::Shape os = StaticShape(t.out);
  if (lanes <= 0) lanes = VectorLanes(*r.target, t.out.dtype());
  int64_t vec = 1;
  for (int64_t v : {int64_t{lanes}, int64_t{8}, int64_t{4}})
    if (lanes >= v && v > 1 && os[3] % v == 0) {
      vec = v;
      break;
    }
  int64_t oc_block = DivisorAtMost(os[1], vec >= 16 ? 8 : 4);
  te::Stage out = s[t.out];
  auto [oco, oci] = out.split(out.axis(1), Expr(oc_block));
  auto [owo, owi] = out.split(out.axis(3), Expr(vec));
  out.reorder({out.axis(0), oco, out.axis(2), owo, oci, owi});
  ir::IterVar fused = out.fuse(out.fuse(out.axis(0), oco), out.axis(2));
  if (ParallelAllowed(*r.target) && r.options->allow_parallel) out.parallel(fused);
  if (vec > 1) out.vectorize(owi);

  te::Stage acc = s[t.accum];
  acc.compute_at(out, owo);
  std::vector<ir::IterVar> order{acc.axis(0), acc.axis(2)};
  auto* compute = static_cast<const te::ComputeOpNode*>(t.accum.op().get());
  for (size_t i = 0; i < compute->reduce_axis.size(); ++i) order.push_back(acc.reduce_axis(i));
  order.push_back(acc.axis(1));
  order.push_back(acc.axis(3));
  acc.reorder(order);
  acc.unroll(acc.axis(1));
  if (vec > 1) acc.vectorize(acc.axis(3));
  std::ostringstream text;
  text << "conv_nchw direct oc_block=" << oc_block << " ow_vector=" << vec
       << (r.epilogue.defined() ? ", epilogue at the register tile" : "");
  return text.str();
}

namespace {

// Depthwise 2-D conv (group == input channels): one plane per channel,
// vectorized along output columns. When the columns do not fill whole vectors
// the conv is computed over a width rounded up to the vector (the padded input
// is widened to match) into a buffer and the output reads its valid columns,
// so every FMA is a full vector; otherwise the row is computed at the output's
// row loop and never leaves registers/cache.
struct DepthwisePlan {
  int64_t vector = 1;    // columns per vector
  int64_t out_width = 0; // computed columns (>= OW, a multiple of `vector`)
};

DepthwisePlan PlanDepthwise(int64_t ow, int lanes) {
  DepthwisePlan p;
  p.vector = lanes >= 16 && ow > 8 ? 16 : (lanes >= 8 ? 8 : std::max(1, lanes));
  p.out_width = (ow + p.vector - 1) / p.vector * p.vector;
  return p;
}

std::string ScheduleDepthwise(const ScheduleRequest& r, const Tensor& conv, int64_t ow) {
  te::Schedule s = r.schedule;
  Tensor out = r.epilogue.defined() ? r.epilogue : (r.outputs.size() == 1 ? r.outputs[0] : Tensor());
  if (!out.defined() || out.same_as(conv) || out.ndim() != 4) return ScheduleAnchorDefault(r, "depthwise (default)");
  SchedulePadRoot(s, conv, *r.target, *r.options);
  graph::Shape cs = StaticShape(conv);
  int64_t vec = PlanDepthwise(ow, VectorLanes(*r.target, conv.dtype())).vector;
  bool parallel = ParallelAllowed(*r.target) && r.options->allow_parallel;
  Tensor acc = s.cache_write(conv, ir::MemoryScope::kLocal);
  te::Stage o = s[out];
  ir::IterVar row = o.fuse(o.fuse(o.axis(0), o.axis(1)), o.axis(2));
  if (parallel) o.parallel(row);
  if (vec > 1 && ow % vec == 0) {
    auto [oo, oi] = o.split(o.axis(3), Expr(vec));
    o.vectorize(oi);
  }
  te::Stage c = s[conv];
  std::string where;
  if (cs[3] == ow) {
    c.compute_at(o, row);
    where = "row at the output's row loop";
  } else {
    ir::IterVar crow = c.fuse(c.fuse(c.axis(0), c.axis(1)), c.axis(2));
    if (parallel) c.parallel(crow);
    where = "rows over-computed to whole vectors";
  }
  auto [co, ci] = c.split(c.axis(3), Expr(vec));
  if (vec > 1) c.vectorize(ci);
  te::Stage a = s[acc];
  a.compute_at(c, co);
  a.reorder({a.axis(0), a.axis(1), a.axis(2), a.reduce_axis(0), a.reduce_axis(1), a.axis(3)});
  if (vec > 1) a.vectorize(a.axis(3));
  std::ostringstream text;
  text << "depthwise_conv2d vector=" << vec << " width=" << cs[3] << ", " << where;
  return text.str();
}

Tensor DepthwiseConv(const Tensor& x, const Tensor& w, const graph::WindowGeometry& g, int64_t computed_width,
                     const std::string& name) {
  graph::Shape xs = StaticShape(x), ws = StaticShape(w);
  int64_t multiplier = ws[0] / xs[1];
  int64_t sw = g.strides[1];
  // Columns the computed width reads, from the first padded column.
  int64_t needed = (computed_width - 1) * sw + (g.kernel[1] - 1) * g.dilations[1] + 1;
  ir::IterVar kh = te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[0])}, "kh");
  ir::IterVar kw = te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[1])}, "kw");
  graph::Shape out{xs[0], ws[0], g.out[0], computed_width};
  int64_t hp = xs[2] + g.pad_begin[0] + g.pad_end[0];
  std::vector<int64_t> in{xs[2], xs[3]};
  // The padded input with its columns split by phase (column % stride): a strided
  // conv then reads contiguous columns of one phase per tap, so its vector loads
  // stay contiguous instead of becoming gathers. Stride 1 has one phase.
  int64_t cols = (needed + sw - 1) / sw;
  Tensor padded = te::compute(ToExprShape({xs[0], xs[1], hp, sw, cols}), [&](const std::vector<Var>& i) {
    return PaddedRead(x, {i[0], i[1], i[2] - g.pad_begin[0], i[4] * sw + i[3] - g.pad_begin[1]}, 2, in,
                      ir::make_zero(x.dtype()));
  }, name + "_pad", tag::kPad);
  return te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    Expr channel = multiplier == 1 ? Expr(o[1]) : ir::floordiv(o[1], Expr(multiplier));
    Expr col = kw * g.dilations[1];
    Expr phase = sw == 1 ? Expr(int64_t{0}) : ir::floormod(col, Expr(sw));
    Expr shift = sw == 1 ? col : ir::floordiv(col, Expr(sw));
    return te::sum(padded(o[0], channel, o[2] * g.strides[0] + kh * g.dilations[0], phase, o[3] + shift) *
                       w(o[1], Expr(int64_t{0}), kh, kw),
                   {kh, kw});
  }, name, tag::kDepthwise);
}

// Computes the conv's padding stage (if any) at the output's `row` loop, vectorized
// along the channel lanes; false when the conv reads its input unpadded.
bool PadRowsAt(te::Schedule& s, const Tensor& conv, te::Stage& out, const ir::IterVar& row, int lanes) {
  for (const Tensor& in : conv.op()->InputTensors()) {
    if (in.op()->tag != tag::kPad) continue;
    te::Stage pad = s[in];
    pad.compute_at(out, row);
    if (lanes > 1 && in.ndim() == 5) pad.vectorize(pad.axis(4));
    return true;
  }
  return false;
}

// Depthwise conv in the blocked layout: each channel block is one vector, so
// every tap is a contiguous vector load times a vector of per-channel weights
// (pre-packed to [C/b, KH, KW, b]), with an (ow_block x b) register tile.
Tensor DepthwiseNCHWc(const Tensor& x, const Tensor& packed_w, const graph::WindowGeometry& g, const std::string& name) {
  graph::Shape xs = StaticShape(x);
  Tensor padded = PadSpatial(x, 2, g.pad_begin, g.pad_end, ir::make_zero(x.dtype()), name + "_pad");
  ir::IterVar kh = te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[0])}, "kh");
  ir::IterVar kw = te::reduce_axis({Expr(int64_t{0}), Expr(g.kernel[1])}, "kw");
  graph::Shape out{xs[0], xs[1], g.out[0], g.out[1], xs[4]};
  return te::compute(ToExprShape(out), [&](const std::vector<Var>& o) {
    return te::sum(padded(o[0], o[1], o[2] * g.strides[0] + kh * g.dilations[0], o[3] * g.strides[1] + kw * g.dilations[1],
                          o[4]) * WidenedWeight(packed_w(o[1], kh, kw, o[4]), x.dtype()),
                   {kh, kw});
  }, name, tag::kDepthwise);
}

std::string ScheduleDepthwiseNCHWc(const ScheduleRequest& r, const Tensor& conv) {
  te::Schedule s = r.schedule;
  TileStages t;
  if (!PrepareTile(r, &t)) return ScheduleAnchorDefault(r, "depthwise_nchwc (default schedule)");
  graph::Shape os = StaticShape(t.out);
  int lanes = VectorLanes(*r.target, t.out.dtype());
  int64_t limit = r.options->conv_ow_block > 0 ? r.options->conv_ow_block : 8;
  int64_t ow_block = DivisorAtMost(os[3], limit);
  if (ow_block < 4 && os[3] > limit) ow_block = LeastWastefulTile(os[3], 4, limit);
  te::Stage out = s[t.out];
  auto [owo, owi] = out.split(out.axis(3), Expr(ow_block));
  out.reorder({out.axis(0), out.axis(1), out.axis(2), owo, owi, out.axis(4)});
  // The padded input one task reads is built in L1 by the task, instead of a padded copy of the
  // whole input: depthwise convs do only KH*KW FMAs per input element, so a full copy would double
  // their memory traffic, which is what bounds them. A channel block's whole padded plane when it
  // fits in L1 (each row padded once: large kernels over small maps, ConvNeXt's 7x7 at 14x14 and
  // 7x7, pad 3, would otherwise pad every row KH times), else the KH rows of one output row.
  graph::Shape cs = StaticShape(conv);
  int64_t kh = ConstExtent(s[t.accum].reduce_axis(0)), kw = ConstExtent(s[t.accum].reduce_axis(1));
  int64_t plane_bytes = (cs[2] + kh) * (os[3] + kw) * os[4] * 4;
  bool plane = kh * kw >= 25 && plane_bytes <= 32 * 1024 && os[0] * os[1] >= 2;
  ir::IterVar task = out.fuse(out.axis(0), out.axis(1));
  if (!plane) task = out.fuse(task, out.axis(2));
  if (ParallelAllowed(*r.target) && r.options->allow_parallel) out.parallel(task);
  if (lanes > 1) out.vectorize(out.axis(4));
  bool padded = PadRowsAt(s, conv, out, task, lanes);
  te::Stage acc = s[t.accum];
  acc.compute_at(out, owo);
  acc.reorder({acc.axis(0), acc.axis(1), acc.axis(2), acc.reduce_axis(0), acc.reduce_axis(1), acc.axis(3), acc.axis(4)});
  acc.unroll(acc.axis(3));
  if (lanes > 1) acc.vectorize(acc.axis(4));
  std::ostringstream text;
  text << "depthwise_nchwc " << kh << "x" << kw << " block=" << os[4] << " ow_block=" << ow_block
       << (padded ? (plane ? ", padding per channel plane" : ", padding per row") : "")
       << (r.epilogue.defined() ? ", epilogue at the register tile" : "");
  return text.str();
}

// Bias (input 2) added per output channel after the reduction.
Tensor AddBias(const OpContext& ctx, const Tensor& conv, int64_t block) {
  if (!ctx.has_input(2)) return conv;
  const Tensor& bias = ctx.input(2);
  return te::compute(conv.shape(), [&](const std::vector<Var>& o) {
    Expr channel = block ? o[1] * block + o[4] : Expr(o[1]);
    return conv(std::vector<Expr>(o.begin(), o.end())) + bias(channel);
  }, ctx.node().outputs[0], tag::kBroadcast);
}

// cuda targets: constant float32 weights stored as --precision asks in their own OIHW layout
// (GPU convs read it unpacked), through a stage that widens them and that LowerGroup inlines
// into the conv. `w` itself for float32 weights, other targets, or weights a float16 cannot hold.
Tensor NarrowGpuWeights(const OpContext& ctx, const Tensor& w) {
  const ir::DType precision = ctx.options().weight_precision;
  const graph::Tensor* c = ctx.constant(1);
  if (ctx.target().kind() != target::TargetKind::kCUDA || precision == ir::DType::Float(32) || c == nullptr ||
      c->dtype() != ir::DType::Float(32)) {
    return w;
  }
  graph::Tensor narrow = NarrowWeights(*c, precision);
  if (narrow.dtype() != precision) return w;
  Tensor stored = ctx.AddConstant(ctx.node().outputs[0] + "_w_narrow", narrow);
  return te::compute(w.shape(), [&](const std::vector<Var>& i) {
    return WidenedWeight(stored(std::vector<Expr>(i.begin(), i.end())), ir::DType::Float(32));
  }, ctx.node().outputs[0] + "_w_wide", tag::kInjective);
}

std::vector<Tensor> ConvOp(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  int64_t groups = ctx.attrs().GetInt("group", 1);
  int64_t block = LayoutBlock(ctx.node()), out_block = graph::OutputLayoutBlock(ctx.node());
  graph::Shape xs = StaticShape(x), ws = StaticShape(w);
  AGATE_REQUIRE(x.dtype() == ir::DType::Float(32) && w.dtype() == x.dtype(), kUnsupported)
      << ctx.Describe() << ": only float32 convolutions are implemented";
  std::string name = ctx.node().outputs[0];
  if (block && block == out_block && groups > 1 && xs.size() == 5 && groups == xs[1] * block && ws[0] == groups &&
      ws[1] == 1) {
    graph::Shape logical{xs[0], xs[1] * block, xs[2], xs[3]};
    graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), logical, {ws[2], ws[3]});
    // Weights [C, 1, KH, KW] -> [C/b, KH, KW, b], at compile time when constant.
    Tensor packed;
    if (const graph::Tensor* wc = ctx.constant(1); wc && wc->dtype() == ir::DType::Float(32)) {
      graph::Tensor p(wc->dtype(), {ws[0] / block, ws[2], ws[3], block});
      const float* src = wc->data<float>();
      float* dst = p.mutable_data<float>();
      for (int64_t c = 0; c < ws[0]; ++c)
        for (int64_t k = 0; k < ws[2] * ws[3]; ++k) dst[((c / block) * ws[2] * ws[3] + k) * block + c % block] = src[c * ws[2] * ws[3] + k];
      packed = ctx.AddConstant(name + "_packed_w", NarrowWeights(p, ctx.options().weight_precision));
    } else {
      packed = te::compute(ToExprShape({ws[0] / block, ws[2], ws[3], block}), [&](const std::vector<Var>& i) {
        return w(i[0] * block + i[3], Expr(int64_t{0}), i[1], i[2]);
      }, name + "_pack_w", tag::kInjective);
    }
    Tensor conv = DepthwiseNCHWc(x, packed, g, ctx.has_input(2) ? name + "_conv" : name);
    ctx.SetSchedule([conv](const ScheduleRequest& r) { return ScheduleDepthwiseNCHWc(r, conv); }, conv);
    return {AddBias(ctx, conv, block)};
  }
  if (block || out_block) {
    // Blocked output; the input blocked by `block`, or NCHW (read as one channel per block).
    int64_t ib = block ? block : 1;
    AGATE_REQUIRE(out_block && groups == 1 && xs.size() == (block ? 5u : 4u) && ws.size() == 4 &&
                      ws[0] % out_block == 0 && ws[1] % ib == 0,
                  kUnsupported)
        << ctx.Describe() << ": blocked layout needs a group-1 2-D conv with output channels divisible by "
        << out_block << " and input channels by " << ib;
    graph::Shape logical{xs[0], xs[1] * (block ? block : 1), xs[2], xs[3]};
    graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), logical, {ws[2], ws[3]});
    if (UseWinograd(ctx, g, xs, ws, groups, out_block)) {  // 3x3, 5x5, 1xr, rx1 stride 1, constant weights (winograd.h)
      Tensor conv = ConvWinogradNCHWc(ctx, x, *ctx.constant(1), g, out_block, ctx.has_input(2) ? name + "_conv" : name);
      return {AddBias(ctx, conv, out_block)};
    }
    Tensor packed;
    if (const graph::Tensor* wc = ctx.constant(1)) {
      packed = ctx.AddConstant(name + "_packed_w",
                               NarrowWeights(PackConvWeightsNCHWc(*wc, ib, out_block), ctx.options().weight_precision));
    } else {
      packed = te::compute(ToExprShape({ws[0] / out_block, ws[1] / ib, ws[2], ws[3], ib, out_block}),
                           [&](const std::vector<Var>& i) {
                             return w(i[0] * out_block + i[5], i[1] * ib + i[4], i[2], i[3]);
                           }, name + "_pack_w", tag::kInjective);
    }
    Tensor conv = ConvNCHWc(x, packed, g, ctx.has_input(2) ? name + "_conv" : name);
    int64_t kh = ws[2], kw = ws[3];
    ctx.SetSchedule([conv, kh, kw](const ScheduleRequest& r) { return ScheduleNCHWc(r, conv, kh, kw); }, conv);
    return {AddBias(ctx, conv, out_block)};
  }
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), xs, kernel);
  if (xs.size() == 4 && groups == xs[1] && ws[1] == 1 && groups > 1) {
    int64_t ow = g.out[1];
    DepthwisePlan plan = PlanDepthwise(ow, VectorLanes(ctx.target(), x.dtype()));
    Tensor dw = DepthwiseConv(x, w, g, plan.out_width, name + "_dw");
    // The output (with bias) reads the valid columns.
    Tensor out = te::compute(ToExprShape(ctx.output_type(0).shape), [&](const std::vector<Var>& o) {
      Expr v = dw(std::vector<Expr>(o.begin(), o.end()));
      return ctx.has_input(2) ? v + ctx.input(2)(o[1]) : v;
    }, name, tag::kBroadcast);
    ctx.SetSchedule([dw, ow](const ScheduleRequest& r) { return ScheduleDepthwise(r, dw, ow); }, dw);
    ctx.SetCudaSchedule([](const ScheduleRequest& r) { return cuda::ScheduleAnchorDefault(r, "depthwise_conv2d"); });
    return {out};
  }
  bool gpu = ctx.target().kind() == target::TargetKind::kCUDA;
  Tensor conv = ConvNCHW(x, NarrowGpuWeights(ctx, w), g, groups, ctx.has_input(2) ? name + "_conv" : name, !gpu);
  ctx.SetSchedule([conv](const ScheduleRequest& r) { return ScheduleDirectNCHW(r, conv); }, conv);
  if (groups == 1 && xs.size() == 4) {
    ctx.SetCudaSchedule([conv, g](const ScheduleRequest& r) { return cuda::ScheduleConv2d(r, conv, g); });
  } else {
    ctx.SetCudaSchedule([](const ScheduleRequest& r) { return cuda::ScheduleAnchorDefault(r, "grouped_conv"); });
  }
  return {AddBias(ctx, conv, 0)};
}

}  // namespace

void RegisterConvOps(OpTable* t) { t->Register("Conv", ConvOp); }

}  // namespace ops
}  // namespace agate
