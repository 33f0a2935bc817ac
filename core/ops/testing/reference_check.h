// Test helpers: run every fused group of a graph through LowerGroup, on the
// loop-IR interpreter (core/loop_eval) or as LLVM host code, and compare with the
// reference interpreter (core/graph_eval), the oracle.
#ifndef AGATE_CORE_OPS_TESTING_REFERENCE_CHECK_H_
#define AGATE_CORE_OPS_TESTING_REFERENCE_CHECK_H_

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/support/error.h"
#include "core/target/target.h"

namespace agate {
namespace ops {
namespace testing {

enum class Backend { kEval, kLLVM };

// Runs the graph's groups in order (graph.groups must be set) with `backend`;
// returns the graph outputs. `summaries` receives each group's schedule summary.
std::map<std::string, graph::Tensor> RunGroups(const graph::Graph& graph, const std::map<std::string, graph::Tensor>& inputs,
                                               Backend backend, const target::Target& target,
                                               const LowerGroupOptions& options = {},
                                               std::vector<std::string>* summaries = nullptr, int threads = 1);

// A run-time operand the graph's node rejects: the reference interpreter refuses it with
// `reference_code` naming `node_quote` (e.g. "'r'"), and the compiled kernels fail (kInternal) on
// both backends, the loop-IR interpreter and LLVM host code.
void ExpectRunTimeOperandRefused(const graph::Graph& graph, const std::map<std::string, graph::Tensor>& inputs,
                                 const std::string& node_quote,
                                 StatusCode reference_code = StatusCode::kInvalidArgument);

// Random inputs for every graph input (floats in [-1, 1), ints in [0, 4), bools).
std::map<std::string, graph::Tensor> RandomInputs(const graph::Graph& graph, uint32_t seed);

// Groups the graph with the rule fusion policy (or one group holding every node when `one_group`).
graph::Graph Fuse(const graph::Graph& graph, bool one_group = false);

struct CheckOptions {
  bool eval = true;   // run on the loop-IR interpreter (slow: keep shapes small)
  bool llvm = true;   // run as LLVM host code
  // Non-empty: also lower for this cuda target and run the kernels on the
  // evaluator with GPU semantics (races and divergent barriers are errors), and,
  // when NVRTC is installed, compile their CUDA source for it.
  std::string cuda_target;
  // Empty: the host. Otherwise a CPU target of the host's architecture (e.g. another
  // instruction set's templates, "llvm -mcpu=haswell"): the loop-IR interpreter runs its
  // kernels, and LLVM host code runs only where this CPU has every feature the target
  // names (otherwise that run is skipped: the code would die of an illegal instruction).
  std::string cpu_target;
  double tolerance = 1e-4;  // |got - want| <= tol * (1 + |want|)
  int threads = 1;
  LowerGroupOptions lower;
  bool one_group = false;
  uint32_t seed = 1;
  // Inputs given here replace the random ones (e.g. 8-bit data over its whole range).
  std::map<std::string, graph::Tensor> inputs;
};

// Fuses, lowers, runs and compares with the reference interpreter. The failure
// names the backend ("eval", "llvm", "cuda") and lists the groups' schedules.
::testing::AssertionResult CheckAgainstReference(const graph::Graph& graph, const CheckOptions& options = {});

// Compares two tensors of the same type within `tolerance` (relative and absolute); NaN
// matches NaN and an infinity only the same infinity.
::testing::AssertionResult TensorsClose(const graph::Tensor& got, const graph::Tensor& want, double tolerance);

}  // namespace testing
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_TESTING_REFERENCE_CHECK_H_
