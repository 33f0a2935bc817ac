// conv2d NCHW on a GPU as an implicit GEMM (cuda_schedules.h).
#include <sstream>

#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/schedule_common.h"

namespace agate {
namespace ops {
namespace cuda {

using te::Expr;
using te::Tensor;

// Output [N, OC, OH, OW] = sum over (ic, kh, kw): the GEMM's rows are output
// channels, its columns output pixels and its depth ic * kh * kw. A block
// computes 64 (or 32, 16) channels of a 4x16 (or 4x8) pixel tile; each thread 4
// channels of 4 adjacent pixels. Per step of 8 input channels the block stages
// their weights and the input window its pixels read in shared memory.
std::string ScheduleConv2d(const ScheduleRequest& r, const Tensor& conv) {
  te::Schedule s = r.schedule;
  auto* op = static_cast<const te::ComputeOpNode*>(conv.op().get());
  if (op->axis.size() != 4 || op->reduce_axis.size() != 3) return cuda::ScheduleAnchorDefault(r, "conv2d");
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
  const int64_t oc = os[1], oh = os[2], ow = os[3];
  int64_t tm = 4, tn = 4, th = 4;
  int64_t bm = oc >= 64 ? 64 : (oc >= 32 ? 32 : 16);
  int64_t tw = ow >= 16 ? 16 : 8;
  // Batch-1 convolutions late in a CNN have few pixels (7x7, 14x14): 64-channel blocks would
  // leave most of a GPU idle (ResNet-50's 3x3 convs at 7x7 had 16 blocks for 132 SMs on an H100,
  // each thread walking all 4608 input channel x tap products for 16 outputs). Narrower channel
  // blocks until the grid has kMinBlocks; if 16 channels are still too few blocks, 2-row pixel
  // tiles and 2x2 outputs per thread: four times the threads, each a quarter of the work.
  auto blocks = [&](int64_t channels) {
    return os[0] * CeilDiv(oc, channels) * CeilDiv(oh, th) * CeilDiv(ow, tw);
  };
  while (bm > 16 && blocks(bm) < kMinBlocks) bm /= 2;
  if (blocks(bm) < kMinBlocks && r.options->cuda_tile <= 0) {
    tm = tn = th = 2;
    tw = 8;
  }
  if (r.options->cuda_tile > 0) bm = r.options->cuda_tile;
  const int64_t ty = bm / tm, tx = th * (tw / tn);
  te::Stage o = s[out];
  auto [oco, oci] = o.split(o.axis(1), Expr(bm));
  auto [thread_y, reg_m] = o.split(oci, Expr(tm));
  auto [oho, ohi] = o.split(o.axis(2), Expr(th));
  auto [owo, owi] = o.split(o.axis(3), Expr(tw));
  auto [thread_w, reg_n] = o.split(owi, Expr(tn));
  o.reorder({oco, o.axis(0), oho, owo, thread_y, ohi, thread_w, reg_m, reg_n});
  ir::IterVar pixels = FuseRange(o, {o.axis(0), oho, owo});
  ir::IterVar thread_x = o.fuse(ohi, thread_w);
  o.bind(oco, "blockIdx.y").bind(pixels, "blockIdx.x").bind(thread_y, "threadIdx.y").bind(thread_x, "threadIdx.x");

  te::Stage a = s[acc];
  a.compute_at(o, thread_x);
  int64_t ic = ConstExtent(a.reduce_axis(0));
  int64_t step = r.options->cuda_k_step > 0 ? r.options->cuda_k_step : 8;
  int64_t bk = ic >= step ? step : ic;
  auto [rco, rci] = a.split(a.reduce_axis(0), Expr(bk));
  a.reorder({rco, rci, a.reduce_axis(1), a.reduce_axis(2), a.axis(0), a.axis(1), a.axis(2), a.axis(3)});
  a.unroll(a.axis(1)).unroll(a.axis(3));
  int staged = 0;
  for (const Tensor& in : s[acc]->op->InputTensors()) {
    if (in.ndim() != 4) continue;
    Tensor copy = s.cache_read(in, ir::MemoryScope::kShared, {acc});
    te::Stage c = s[copy];
    c.compute_at(a, rco);
    FetchCooperatively(c, ty, tx);
    ++staged;
  }
  std::ostringstream text;
  text << "conv2d (cuda): implicit GEMM, " << bm << " channels x " << th << "x" << tw << " pixels per block, " << tm
       << "x" << tn << " per thread, " << bk << " input channels per shared-memory step (" << staged << " operands)"
       << (r.epilogue.defined() ? ", epilogue fused" : "");
  return text.str();
}

}  // namespace cuda
}  // namespace ops
}  // namespace agate
