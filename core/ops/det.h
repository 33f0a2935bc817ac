// Det (ONNX Det-11) compiled into one kernel of hand-written loop IR.
//
// Why a kernel builder of its own instead of an entry in the operator table: a determinant is
// computed by elimination, a loop whose every step depends on the values the last one wrote
// (which row pivots, whether the matrix turned out singular). A tensor expression is a pure
// function of the output index; the closed forms (a sum over n! permutations) are no kernel. The
// kernel, serially for each matrix of the batch ([..., n, n] -> [...]):
//
//   copy the matrix into a float64 workspace
//   for each column: pick as pivot the row at or below the diagonal with the largest magnitude
//     (the first one on ties); a zero pivot makes the determinant 0 and ends the elimination;
//     otherwise swap it to the diagonal (negating the determinant), multiply the determinant by
//     it and subtract it from the rows below
//   store the determinant, rounded to the output's type
//
// This is the reference interpreter's algorithm (core/graph_eval/linalg.cc), step for step and in
// the same precision, so both give the same value. Float types only; CPU targets (serial).
#ifndef AGATE_CORE_OPS_DET_H_
#define AGATE_CORE_OPS_DET_H_

#include <string>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// True for the op LowerDetGroup builds.
bool IsDetOp(const std::string& op);

// Lowers a group holding one Det node to one kernel (see the header comment). kUnsupported for
// cuda targets and for inputs that are not floating point, naming the node.
GroupKernel LowerDetGroup(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target,
                          const std::string& kernel_name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_DET_H_
