// EvaluatePlan: a compile result's execution plan run on the loop-IR evaluator.
//
// Why: most of our machines have no GPU, yet a model compiled for cuda must be
// shown to compute what the model means before it reaches one. This runs the
// module's plan exactly as a runtime would (the arena and constants laid out as
// the module says, every call's arguments at their offsets), but each kernel is
// the group's loop IR interpreted with the evaluator's GPU semantics (blocks,
// threads in lockstep, shared memory, barriers, shuffles, the racecheck), so a
// test can compare a whole cuda-compiled model with the reference interpreter.
// It works for every target (the loop IR is target-independent) and is slow by
// design: keep models small.
#ifndef AGATE_CORE_COMPILER_PLAN_EVALUATOR_H_
#define AGATE_CORE_COMPILER_PLAN_EVALUATOR_H_

#include <vector>

#include "core/compiler/compiler.h"
#include "core/graph/tensor.h"

namespace agate {
namespace compiler {

// The model outputs for `inputs` (in the module's input order). Throws
// agate::Error: kInvalidArgument for inputs of the wrong dtype or shape,
// kInternal when a kernel fails or races.
std::vector<graph::Tensor> EvaluatePlan(const CompileResult& result, const std::vector<graph::Tensor>& inputs);

}  // namespace compiler
}  // namespace agate

#endif  // AGATE_CORE_COMPILER_PLAN_EVALUATOR_H_
