// MaxUnpool (ONNX MaxUnpool-11) compiled into one kernel of hand-written loop IR.
//
// Why a kernel builder of its own instead of an entry in the operator table: MaxUnpool writes
// each input element to the output position its index names (the positions MaxPool's Indices
// output gave), a scatter with data-dependent targets. A tensor expression is a pure function
// of the output index, so it could only search every input element for each output element
// (quadratic; ScatterElements does that for small operands); the scatter itself is linear. The
// kernel, serially:
//
//   check every index against the unpooled shape (the input's spatial extents unpooled by the
//     kernel, strides and pads: (in - 1) * stride - pad_begin - pad_end + kernel), and, when an
//     explicit output_shape is larger, each coordinate against the output: a bad index fails
//     the kernel naming the node before anything is written
//   fill the output with zeros
//   write x[e] at the output position of index[e], in input order (a repeated index: the last
//     write wins, as in ONNX's reference)
//
// Indices are flat over the whole unpooled tensor (batch and channel included), as MaxPool's
// Indices output (storage_order 0) gives them; an output_shape larger than the unpooled shape
// pads at the end of each axis. output_shape must be a compile-time constant (the graph's shape
// rule refuses it otherwise: it decides the output's type).
#ifndef AGATE_CORE_OPS_MAX_UNPOOL_H_
#define AGATE_CORE_OPS_MAX_UNPOOL_H_

#include <string>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// True for the op LowerMaxUnpoolGroup builds.
bool IsMaxUnpoolOp(const std::string& op);

// Lowers a group holding one MaxUnpool node to one kernel (see the header comment). kUnsupported
// for cuda targets (a serial scatter: CPU targets only).
GroupKernel LowerMaxUnpoolGroup(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target,
                                const std::string& kernel_name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_MAX_UNPOOL_H_
