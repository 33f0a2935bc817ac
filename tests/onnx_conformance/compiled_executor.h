// The compiled path for the conformance suite: each case is compiled by the real compiler
// (core/compiler: graph passes, one kernel per fused group, LLVM for the host), loaded from
// memory by the minimal runtime through its C ABI, and run — what a user's model goes through.
#ifndef AGATE_TESTS_ONNX_CONFORMANCE_COMPILED_EXECUTOR_H_
#define AGATE_TESTS_ONNX_CONFORMANCE_COMPILED_EXECUTOR_H_

#include <string>

#include "core/fusion/fusion.h"
#include "tests/onnx_conformance/conformance.h"

namespace agate {
namespace conformance {

// An Executor whose run() compiles the imported graph for `target` and executes the module.
Executor CompiledExecutor(fusion::FusionPolicy policy, const std::string& target = "llvm");

}  // namespace conformance
}  // namespace agate

#endif  // AGATE_TESTS_ONNX_CONFORMANCE_COMPILED_EXECUTOR_H_
