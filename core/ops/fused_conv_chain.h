// A conv chain as one kernel: a blocked depthwise conv (and its elementwise
// epilogue) computed inside the 1x1 conv that consumes it.
//
// Why: in an inverted-residual block (MobileNetV2/V3, EfficientNet, MnasNet) the
// depthwise conv writes the expanded tensor (6x the block's channels) only for
// the projecting 1x1 conv to read it back. Scheduled as one kernel around the
// 1x1 conv (the anchor, a GEMM over pixels x channels with its register tile
// and epilogue as in conv2d.cc's blocked template), the depthwise output for
// one output row (all its channels x the row's columns: 21-32 KB for
// MobileNetV2's blocks) is computed into a buffer at the 1x1 conv's row loop,
// with the depthwise template's own vectorized register tile (one channel
// block per vector, ow_block columns unrolled, the epilogue applied before the
// store), and consumed by every output-channel tile of that row while it is in
// L1/L2. A 1x1 stride-1 consumer reads each producer row once: nothing is
// recomputed; the padded input rows the depthwise conv reads are built per
// channel block at the producer's channel loop.
//
// Which groups: core/fusion/conv_chain.h decides (the fusion policies and
// LowerGroup use that one predicate); LowerGroup hands the three stages here.
#ifndef AGATE_CORE_OPS_FUSED_CONV_CHAIN_H_
#define AGATE_CORE_OPS_FUSED_CONV_CHAIN_H_

#include <string>

#include "core/ops/op_context.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// The chain's stages, all in the request's schedule.
struct ConvChainStages {
  te::Tensor producer;      // the depthwise conv's reduction stage, [N, C/b, OH, OW, b]
  te::Tensor producer_out;  // what the 1x1 conv reads: the producer after its epilogue (may be `producer`)
  te::Tensor consumer;      // the 1x1 conv's reduction stage (the request's anchor)
};

// Schedules the group around the 1x1 conv (request.anchor) with the producer
// computed per output row; returns the one-line summary. kUnsupported when the
// request's stages are not a chain of that form (LowerGroup checked the graph
// with fusion::FindConvChainIn, so this names an internal inconsistency).
std::string ScheduleConvChain(const ScheduleRequest& request, const ConvChainStages& chain);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_FUSED_CONV_CHAIN_H_
