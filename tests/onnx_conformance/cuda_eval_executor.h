// The conformance suite compiled for a cuda target and run without a GPU: each
// case goes through the real compiler (cuda schedules, GPU lowering, CUDA C
// compiled by NVRTC into the module) and the module's plan runs on the loop-IR
// evaluator with GPU semantics (core/compiler/plan_evaluator.h), so the pass
// rate says what the cuda path computes before a GPU ever runs it.
#ifndef AGATE_TESTS_ONNX_CONFORMANCE_CUDA_EVAL_EXECUTOR_H_
#define AGATE_TESTS_ONNX_CONFORMANCE_CUDA_EVAL_EXECUTOR_H_

#include <string>

#include "core/fusion/fusion.h"
#include "tests/onnx_conformance/conformance.h"

namespace agate {
namespace conformance {

Executor CudaEvalExecutor(fusion::FusionPolicy policy, const std::string& target = "cuda -arch=sm_80");

}  // namespace conformance
}  // namespace agate

#endif  // AGATE_TESTS_ONNX_CONFORMANCE_CUDA_EVAL_EXECUTOR_H_
