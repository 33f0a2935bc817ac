#include "core/ops/fused_conv_chain.h"

#include <sstream>

#include "core/ops/conv2d.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using te::Expr;
using te::Tensor;

// The padding stage a conv reads, or undefined when it reads its input unpadded.
Tensor PadStageOf(const Tensor& conv) {
  for (const Tensor& in : conv.op()->InputTensors())
    if (in.op()->tag == tag::kPad) return in;
  return Tensor();
}

// The depthwise producer's output row, [1, C/b, 1, OW, b] per consumer row: the
// accumulator tile (ow_block columns x one channel block) at the row's column
// blocks, reductions outside, the epilogue applied when the row is stored.
// `accum` is the depthwise reduction stage (chain.producer, or its local cache when the row is the conv itself).
std::string ScheduleProducerRow(te::Schedule& s, const ConvChainStages& chain, const Tensor& accum, int lanes,
                                const LowerGroupOptions& o) {
  Tensor row = chain.producer_out;
  graph::Shape rs = StaticShape(row);
  int64_t limit = o.conv_ow_block > 0 ? o.conv_ow_block : 8;
  int64_t ow_block = DivisorAtMost(rs[3], limit);
  if (ow_block < 4 && rs[3] > limit) ow_block = LeastWastefulTile(rs[3], 4, limit);
  te::Stage p = s[row];
  auto [owo, owi] = p.split(p.axis(3), Expr(ow_block));
  p.reorder({p.axis(0), p.axis(2), p.axis(1), owo, owi, p.axis(4)});
  if (lanes > 1) p.vectorize(p.axis(4));
  // The padded input rows of one channel block, built at the channel loop (L1-sized).
  Tensor pad = PadStageOf(chain.producer);
  if (pad.defined()) {
    te::Stage ps = s[pad];
    ps.compute_at(p, p.axis(1));
    if (lanes > 1 && pad.ndim() == 5) ps.vectorize(ps.axis(4));
  }
  te::Stage acc = s[accum];
  acc.compute_at(p, owo);
  acc.reorder({acc.axis(0), acc.axis(1), acc.axis(2), acc.reduce_axis(0), acc.reduce_axis(1), acc.axis(3),
               acc.axis(4)});
  acc.unroll(acc.axis(3));
  if (lanes > 1) acc.vectorize(acc.axis(4));
  int64_t kh = ConstExtent(acc.reduce_axis(0)), kw = ConstExtent(acc.reduce_axis(1));
  std::ostringstream text;
  text << "depthwise_nchwc " << kh << "x" << kw << " ow_block=" << ow_block << (pad.defined() ? " padded per block" : "");
  return text.str();
}

}  // namespace

std::string ScheduleConvChain(const ScheduleRequest& r, const ConvChainStages& chain) {
  te::Schedule s = r.schedule;
  AGATE_REQUIRE(chain.producer.defined() && chain.producer_out.defined() && chain.consumer.same_as(r.anchor) &&
                    chain.producer.ndim() == 5 && chain.producer_out.ndim() == 5 && r.anchor.ndim() == 5,
                kUnsupported)
      << "conv chain: the stages are not a blocked depthwise conv into a blocked 1x1 conv";
  // The stage written at the root: the 1x1 conv's epilogue, or the conv itself (then a local accumulator).
  Tensor out, accum = r.anchor;
  if (r.epilogue.defined()) {
    AGATE_REQUIRE(StaticShape(r.epilogue) == StaticShape(r.anchor), kUnsupported)
        << "conv chain: the epilogue " << r.epilogue.name() << " changes the conv's shape";
    out = r.epilogue;
  } else {
    AGATE_REQUIRE(r.outputs.size() == 1 && r.outputs[0].same_as(r.anchor), kUnsupported)
        << "conv chain: the group writes " << r.outputs.size() << " stages, not the 1x1 conv's output";
    accum = s.cache_write(r.anchor, ir::MemoryScope::kLocal);
    out = r.anchor;
  }
  // A producer without epilogue accumulates in a local tile too (cache_write precedes every other primitive).
  Tensor producer_accum = chain.producer;
  if (chain.producer_out.same_as(chain.producer)) producer_accum = s.cache_write(chain.producer, ir::MemoryScope::kLocal);
  graph::Shape os = StaticShape(out);
  int lanes = VectorLanes(*r.target, out.dtype());
  NCHWcTile tile = ChooseNCHWcTile(os, lanes, r.target->vector_registers(), *r.options);

  // Output: (n, oh | oc_chunk.outer, ow.outer | oc_chunk.inner, ow.inner, lane); rows in parallel.
  te::Stage o = s[out];
  auto [oco, oci] = o.split(o.axis(1), Expr(tile.oc_blocks));
  auto [owo, owi] = o.split(o.axis(3), Expr(tile.ow_block));
  o.reorder({o.axis(0), o.axis(2), oco, owo, oci, owi, o.axis(4)});
  ir::IterVar row = o.fuse(o.axis(0), o.axis(2));
  if (ParallelAllowed(*r.target) && r.options->allow_parallel) o.parallel(row);
  if (lanes > 1) o.vectorize(o.axis(4));

  // The producer's row (every channel block) once per output row, before the row's channel tiles.
  s[chain.producer_out].compute_at(o, row);
  std::string producer = ScheduleProducerRow(s, chain, producer_accum, lanes, *r.options);

  // The 1x1 conv's register tile at ow.outer, as in the blocked conv template (conv2d.cc).
  te::Stage acc = s[accum];
  acc.compute_at(o, owo);
  acc.reorder({acc.axis(0), acc.axis(2), acc.reduce_axis(0), acc.reduce_axis(1), acc.reduce_axis(2),
               acc.reduce_axis(3), acc.axis(1), acc.axis(3), acc.axis(4)});
  acc.unroll(acc.axis(1));
  acc.unroll(acc.axis(3));
  if (lanes > 1) acc.vectorize(acc.axis(4));
  std::ostringstream text;
  text << "conv_chain: " << producer << " per output row into conv2d_nchwc 1x1 oc_tile=" << tile.oc_blocks * os[4]
       << " ow_block=" << tile.ow_block << (r.epilogue.defined() ? ", epilogue at the register tile" : "");
  return text.str();
}

}  // namespace ops
}  // namespace agate
