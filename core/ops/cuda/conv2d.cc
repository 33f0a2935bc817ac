// conv2d NCHW on a GPU as an implicit GEMM (cuda_schedules.h).
#include <sstream>

#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/schedule_common.h"

namespace agate {
namespace ops {
namespace cuda {

using te::Expr;
using te::Tensor;

namespace {

// The output tile of a block (bm channels x th x tw pixels) and of a thread (tm
// channels x tn adjacent pixels of one row). Threads: ty along the channels, tx
// along the pixels, tz slices of the input channels (split-K, 1 without).
struct ConvTile {
  int64_t bm = 64, th = 4, tw = 16;
  int64_t tm = 4, tn = 4;
  int64_t tz = 1;
  int64_t ty() const { return bm / tm; }
  int64_t tx() const { return th * (tw / tn); }
  int64_t threads() const { return ty() * tx() * tz; }
};

// Split-K inside a block. A grid still short of kMinBlocks after the narrowing
// below leaves most SMs idle, and each of its threads walks the whole reduction
// (ResNet-50's 3x3 convs at 7x7: 128 blocks of 64 threads, each thread 4608
// input channel x tap products for its 2x2 outputs, 0.5-0.6 ms each on an H100).
// The grid cannot grow without shrinking the tiles further, so the block does:
// tz slices of its input channels on threadIdx.z, each accumulating its own
// partial tile in registers over 1/tz of the channels, summed through shared
// memory before the epilogue writes the output once (one launch, a fixed
// summation order: no atomics). The thresholds are hypotheses until measured on
// a GPU (benchmarks/cuda):
//  * kDeepReduction: below ~1024 products per output the serial walk is short
//    and the extra barrier plus the partial tiles' shared-memory round trip are
//    not paid back;
//  * kSplitThreads: 256 threads per block, four times the 64 of the 2x2 tiles on
//    2x8 pixels, keeps registers per thread unchanged and still lets two blocks
//    share an SM;
//  * kSharedBudget: 48 KiB, what a block gets on every architecture without the
//    opt-in, so the split never costs an SM its second resident block;
//  * each slice keeps at least kMinStepsPerSlice shared-memory steps, so the
//    staging of one step overlaps the products of the previous one.
constexpr int64_t kDeepReduction = 1024;
constexpr int64_t kSplitThreads = 256;
constexpr int64_t kMaxSlices = 8;
constexpr int64_t kSharedBudget = 48 * 1024;
constexpr int64_t kMinStepsPerSlice = 2;

// Output [N, OC, OH, OW]: 64 (or 32, 16) channels of a 4x16 (or 4x8) pixel tile
// per block, 4x4 per thread.
ConvTile PickTile(const graph::Shape& os, const LowerGroupOptions& options) {
  const int64_t oc = os[1], ow = os[3];
  ConvTile t;
  t.bm = oc >= 64 ? 64 : (oc >= 32 ? 32 : 16);
  t.tw = ow >= 16 ? 16 : 8;
  // Batch-1 convolutions late in a CNN have few pixels (7x7, 14x14): 64-channel blocks would
  // leave most of a GPU idle (ResNet-50's 3x3 convs at 7x7 had 16 blocks for 132 SMs on an H100,
  // each thread walking all 4608 input channel x tap products for 16 outputs). Narrower channel
  // blocks until the grid has kMinBlocks; if 16 channels are still too few blocks, 2-row pixel
  // tiles and 2x2 outputs per thread: four times the threads, each a quarter of the work.
  auto blocks = [&](int64_t channels) {
    return os[0] * CeilDiv(oc, channels) * CeilDiv(os[2], t.th) * CeilDiv(ow, t.tw);
  };
  while (t.bm > 16 && blocks(t.bm) < kMinBlocks) t.bm /= 2;
  if (blocks(t.bm) < kMinBlocks && options.cuda_tile <= 0) {
    t.tm = t.tn = t.th = 2;
    t.tw = 8;
  }
  if (options.cuda_tile > 0) t.bm = options.cuda_tile;
  return t;
}

int64_t Blocks(const graph::Shape& os, const ConvTile& t) {
  return os[0] * CeilDiv(os[1], t.bm) * CeilDiv(os[2], t.th) * CeilDiv(os[3], t.tw);
}

// The block's shared memory with `slices` slices: per step the weights (bm
// channels x taps) and the input window of slices * bk input channels, and the
// partial tiles (slices x the block's outputs).
int64_t SharedBytes(const ConvTile& t, int64_t slices, int64_t bk, const graph::WindowGeometry& g,
                    int64_t element_bytes) {
  int64_t kh = g.kernel[0], kw = g.kernel[1];
  int64_t rows = (t.th - 1) * g.strides[0] + (kh - 1) * g.dilations[0] + 1;
  int64_t cols = (t.tw - 1) * g.strides[1] + (kw - 1) * g.dilations[1] + 1;
  int64_t staged = slices * bk * (t.bm * kh * kw + rows * cols);
  int64_t partials = slices > 1 ? slices * t.bm * t.th * t.tw : 0;
  return (staged + partials) * element_bytes;
}

// The input-channel slices per block: the knob cuda_k_split when set (1: none),
// otherwise the most (a power of two up to kMaxSlices) that a small grid with a
// deep reduction takes within kSplitThreads threads, kSharedBudget bytes and
// kMinStepsPerSlice steps of bk channels per slice.
int64_t PickSlices(const graph::Shape& os, const ConvTile& t, int64_t ic, int64_t bk, const graph::WindowGeometry& g,
                   int64_t element_bytes, const LowerGroupOptions& options) {
  if (options.cuda_k_split > 0) return options.cuda_k_split;
  int64_t depth = ic * g.kernel[0] * g.kernel[1];
  if (Blocks(os, t) >= kMinBlocks || depth < kDeepReduction) return 1;
  int64_t slices = 1;
  for (int64_t next = 2; next <= kMaxSlices; next *= 2) {
    bool fits = t.ty() * t.tx() * next <= kSplitThreads && ic >= next * bk * kMinStepsPerSlice &&
                SharedBytes(t, next, bk, g, element_bytes) <= kSharedBudget;
    if (!fits) break;
    slices = next;
  }
  return slices;
}

// The register tile: `acc` (computed per thread) accumulates over its input
// channels (its first reduce axis) in steps of bk, each step's weights and input
// window staged in shared memory by all the block's threads; its channel and
// column axes (the 2nd and 4th of its last four data axes) unrolled into
// registers. Returns the number of staged operands.
int AccumulateInSteps(te::Schedule& s, const Tensor& acc, int64_t bk, const ConvTile& t) {
  te::Stage a = s[acc];
  const size_t n = a->root_iter_vars.size() - 3;  // data axes; the reduce axes are ic, kh, kw
  auto [rco, rci] = a.split(a.reduce_axis(0), Expr(bk));
  std::vector<ir::IterVar> order = {rco, rci, a.reduce_axis(1), a.reduce_axis(2)};
  for (size_t i = 0; i < n; ++i) order.push_back(a.axis(i));
  a.reorder(order);
  a.unroll(a.axis(n - 3)).unroll(a.axis(n - 1));
  int staged = 0;
  for (const Tensor& in : a->op->InputTensors()) {
    if (in.ndim() != 4) continue;
    Tensor copy = s.cache_read(in, ir::MemoryScope::kShared, {acc});
    te::Stage c = s[copy];
    c.compute_at(a, rco);
    FetchCooperatively(c, t.ty(), t.tx(), t.tz);
    ++staged;
  }
  return staged;
}

// Split-K: `acc` (the block's thread tiles, bound to o's thread_x) becomes the sum
// over tz slices of partial tiles in shared memory, computed at o's block loop
// `pixels` by threads (threadIdx.z = the slice, threadIdx.y/x as o's) whose
// registers accumulate input channels slice, slice + tz, ... (interleaved: each
// shared-memory step stages tz * bk consecutive channels, one contiguous window
// for all slices). Returns the register-tile stage.
Tensor SplitInputChannels(te::Schedule& s, const Tensor& acc, const te::Stage& o, const ir::IterVar& pixels,
                          const ConvTile& t) {
  te::Stage a = s[acc];
  auto [icq, slice] = a.split(a.reduce_axis(0), Expr(t.tz));
  Tensor partials = s.rfactor(acc, slice);  // [slice, n, oc, oh, ow]; acc now sums over slice
  Tensor regs = s.cache_write(partials, ir::MemoryScope::kLocal);
  te::Stage p = s[partials];
  p.set_scope(ir::MemoryScope::kShared);
  p.compute_at(o, pixels);
  auto [thread_y, reg_m] = p.split(p.axis(2), Expr(t.tm));
  auto [thread_w, reg_n] = p.split(p.axis(4), Expr(t.tn));
  p.reorder({p.axis(1), p.axis(0), thread_y, p.axis(3), thread_w, reg_m, reg_n});
  ir::IterVar thread_x = p.fuse(p.axis(3), thread_w);
  p.bind(p.axis(0), "threadIdx.z").bind(thread_y, "threadIdx.y").bind(thread_x, "threadIdx.x");
  // Constant register indices: a loop over the tile would index the registers at run
  // time and put them in local memory.
  p.unroll(reg_m).unroll(reg_n);
  s[regs].compute_at(p, thread_x);
  te::Stage sum = s[acc];
  sum.unroll(sum.axis(1)).unroll(sum.axis(3)).unroll(sum.reduce_axis(0));
  return regs;
}

}  // namespace

// Output [N, OC, OH, OW] = sum over (ic, kh, kw): the GEMM's rows are output
// channels, its columns output pixels and its depth ic * kh * kw. A block
// computes 64 (or 32, 16) channels of a 4x16 (or 4x8) pixel tile; each thread 4
// channels of 4 adjacent pixels. Per step of 8 input channels the block stages
// their weights and the input window its pixels read in shared memory.
std::string ScheduleConv2d(const ScheduleRequest& r, const Tensor& conv, const graph::WindowGeometry& window) {
  te::Schedule s = r.schedule;
  auto* op = static_cast<const te::ComputeOpNode*>(conv.op().get());
  if (op->axis.size() != 4 || op->reduce_axis.size() != 3 || window.kernel.size() != 2) {
    return cuda::ScheduleAnchorDefault(r, "conv2d");
  }
  Tensor out, acc;
  if (r.epilogue.defined() && StaticShape(r.epilogue) == StaticShape(conv)) {
    out = r.epilogue;
    acc = conv;
  } else if (r.outputs.size() == 1 && r.outputs[0].same_as(conv)) {
    out = conv;
    acc = s.cache_write(conv, ir::MemoryScope::kLocal);
  } else {
    return cuda::ScheduleAnchorDefault(r, "conv2d");
  }
  graph::Shape os = StaticShape(out);
  ConvTile t = PickTile(os, *r.options);
  const int64_t ic = ConstExtent(s[acc].reduce_axis(0));
  const int64_t step = r.options->cuda_k_step > 0 ? r.options->cuda_k_step : 8;
  const int64_t bk = ic >= step ? step : ic;
  t.tz = PickSlices(os, t, ic, bk, window, conv.dtype().element_bytes(), *r.options);

  te::Stage o = s[out];
  auto [oco, oci] = o.split(o.axis(1), Expr(t.bm));
  auto [thread_y, reg_m] = o.split(oci, Expr(t.tm));
  auto [oho, ohi] = o.split(o.axis(2), Expr(t.th));
  auto [owo, owi] = o.split(o.axis(3), Expr(t.tw));
  auto [thread_w, reg_n] = o.split(owi, Expr(t.tn));
  o.reorder({oco, o.axis(0), oho, owo, thread_y, ohi, thread_w, reg_m, reg_n});
  ir::IterVar pixels = FuseRange(o, {o.axis(0), oho, owo});
  ir::IterVar thread_x = o.fuse(ohi, thread_w);
  o.bind(oco, "blockIdx.y").bind(pixels, "blockIdx.x").bind(thread_y, "threadIdx.y").bind(thread_x, "threadIdx.x");

  // Without a split the thread's tile accumulates in `acc` itself; with one, `acc`
  // sums the slices' partial tiles (every slice's thread runs the epilogue, the first
  // one stores it: core/lower/gpu_bind.h).
  Tensor regs = t.tz > 1 ? SplitInputChannels(s, acc, o, pixels, t) : acc;
  s[acc].compute_at(o, thread_x);
  int staged = AccumulateInSteps(s, regs, bk, t);
  std::ostringstream text;
  text << "conv2d (cuda): implicit GEMM, " << t.bm << " channels x " << t.th << "x" << t.tw << " pixels per block, "
       << t.tm << "x" << t.tn << " per thread, " << bk * t.tz << " input channels per shared-memory step (" << staged
       << " operands)";
  if (t.tz > 1) {
    text << ", split-K: input channels in " << t.tz << " slices over threadIdx.z (" << bk << " each per step, "
         << t.threads() << " threads per block, partial tiles summed in shared memory)";
  }
  text << (r.epilogue.defined() ? ", epilogue fused" : "");
  return text.str();
}

}  // namespace cuda
}  // namespace ops
}  // namespace agate
