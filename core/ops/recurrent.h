// Recurrent operators (ONNX RNN, GRU, LSTM) compiled into one kernel with a loop over time.
//
// Why a kernel builder of its own instead of an entry in the operator table: a
// recurrence is sequential (step t reads the state step t-1 wrote), which a
// tensor expression, a pure function of its inputs, cannot say. The kernel is
// therefore composed from pieces that each are ordinary tensor expressions
// lowered by core/lower, stitched together at the loop-IR level:
//
//   XW[d]  = X W[d]^T                 every time step of direction d at once: one
//                                     product through the operator library's GEMM
//                                     template (LowerGroup on a MatMul), into a
//                                     workspace buffer
//   state  = initial_h / initial_c (or 0)
//   for s in [0, T):                  the time loop (serial)
//     cell: hR = h R^T (a reduction over the hidden size), then gates,
//           biases, peepholes, clip, activations and the state update in
//           the same step, writing the state in place (each element reads its
//           own previous value; every stage that reads the whole previous h is
//           materialised before)
//     Y[time(s)] = h (0 where s is past the sequence's length)
//   Y_h, Y_c = state
//
// Every direction runs in the same step (a direction is an axis of the cell).
// With sequence_lens, a reverse direction starts at step length-1 of its batch
// row, and steps past a row's length leave its state unchanged and zero its Y,
// as ONNX (and core/graph_eval/rnn.cc, the oracle) say.
//
// One kernel with the time loop inside, rather than one plan call per step: a
// step of a small cell (hidden 32..256, batch 1..8) costs a few microseconds, on
// the order of one kernel dispatch, and the time loop inside keeps the state in
// the workspace (cache) and needs no per-step arguments in the module's plan.
#ifndef AGATE_CORE_OPS_RECURRENT_H_
#define AGATE_CORE_OPS_RECURRENT_H_

#include <string>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// True for the ops LowerRecurrentGroup builds (RNN, GRU, LSTM).
bool IsRecurrentOp(const std::string& op);

// Lowers a group holding one recurrent node to one kernel (see the header comment).
// kUnsupported for non-CPU targets, element types other than float32, and unknown
// activations; kInvalidArgument for malformed attributes.
GroupKernel LowerRecurrentGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                                const target::Target& target, const std::string& kernel_name,
                                const LowerGroupOptions& options);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_RECURRENT_H_
