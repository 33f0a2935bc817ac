// Runs ONNX's own backend conformance cases (Debian libonnx-testdata:
// /usr/share/libonnx-testdata/data/node/<case>/model.onnx with
// test_data_set_*/input_*.pb and output_*.pb) through agate and tallies the
// results per operator.
//
// Each case: import, run the graph passes,
// execute, compare with ONNX's tolerances (rtol 1e-3, atol 1e-7; exact for
// integers and bools). Two ways to give the inputs (InputBinding): every input at run time, as
// `agate compile` + `agate run` give a user's model, or with the inputs that fix shapes (such as
// Reshape's shape) bound as compile-time constants from the test data (what `agate compile
// --input-value` does); reports say which. A case agate rejects with kUnsupported counts as
// unsupported; every other failure counts as failed. Nothing is skipped.
//
// A passed case whose every output was folded into a constant at compile time (Shape, Size,
// Constant, the window functions, any operator on constant inputs) tests the constant folder,
// not the kernels: it is counted as "folded", apart from the cases where arithmetic ran.
#ifndef AGATE_TESTS_ONNX_CONFORMANCE_CONFORMANCE_H_
#define AGATE_TESTS_ONNX_CONFORMANCE_CONFORMANCE_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace conformance {

enum class Outcome { kPassed, kFailed, kUnsupported };
const char* OutcomeName(Outcome outcome);

struct CaseResult {
  std::string name;    // directory name, e.g. test_conv_with_strides_padding
  std::string op;      // the operator under test (the model's first node)
  Outcome outcome = Outcome::kFailed;
  bool folded = false;  // passed with every output a compile-time constant: nothing ran
  std::string detail;   // why it failed or is unsupported
  // Under kShapeOperandsAtCompileTime: some input was bound as a constant (the case's outcome
  // may differ with every input at run time).
  bool bound_inputs_at_compile_time = false;
};

// How a case's test data reaches the model.
enum class InputBinding {
  // Every input at run time, the way a user's model receives them.
  kAllAtRunTime,
  // Inputs that feed a static operand (onnx_frontend::StaticOperandInputs: Reshape's shape,
  // TopK's k, Resize's sizes...) are compile-time constants from the test data, the rest run-time
  // inputs: what a user gets with `agate compile --input-value`.
  kShapeOperandsAtCompileTime,
};
const char* InputBindingName(InputBinding binding);

// What an executor's run returns: the outputs, and whether every one of them was a
// compile-time constant of the executed graph (no kernel or interpreter step computed it).
struct RunOutput {
  std::map<std::string, graph::Tensor> outputs;
  bool folded = false;
};

// True when every output of `graph` is a compile-time constant, or a copy of one (how the
// compiler writes a constant output).
bool AllOutputsFolded(const graph::Graph& graph);

// How a case is executed once imported: transform (the pass pipeline) then run.
struct Executor {
  std::string label;  // printed in the report, e.g. "reference interpreter"
  // Optional: told "<case>.<n>" before the run of the case's n-th test data set (executors that
  // keep files per run: cuda_gpu_executor.h).
  std::function<void(const std::string& run_key)> begin_run;
  std::function<graph::Graph(const graph::Graph&)> transform;
  std::function<RunOutput(const graph::Graph&, const std::map<std::string, graph::Tensor>&)> run;
};

// The case directories under `root` (sorted); without `include_expanded` the
// *_expanded variants (function-expanded duplicates) are left out.
std::vector<std::string> ListCases(const std::string& root, bool include_expanded);

CaseResult RunCase(const std::string& case_dir, const Executor& executor, InputBinding binding);

// Both reports over the same cases: `compile_time` (kShapeOperandsAtCompileTime) runs every case;
// `run_time` (kAllAtRunTime) re-runs only the cases that bound an input at compile time and
// takes the others' results unchanged (they are the same run).
struct BothBindings {
  std::vector<CaseResult> compile_time;
  std::vector<CaseResult> run_time;
};
BothBindings RunCasesBothWays(const std::vector<std::string>& case_dirs, const Executor& executor);

// Cases whose expected output agate deliberately does not reproduce, on the reference and the
// compiled path alike (each conformance test lets them fail, and only them). Float32 ->
// bfloat16 (test_cast_FLOAT_to_BFLOAT16, test_castlike_FLOAT_to_BFLOAT16): Cast-13 leaves the
// rounding of float -> float conversions unspecified (onnx/onnx#3876, #5004). ONNX 1.12's test
// data truncates; later ONNX test data (numpy/ml_dtypes astype), ONNX Runtime and the hardware
// conversions round to nearest even, and so do agate's code generators and its reference
// interpreter (one semantics, so constant folding agrees with run time): a deliberate choice of
// the unbiased rounding, not a bug (core/ops/elementwise_test.cc and
// core/graph_eval/reference_test.cc state it bit by bit).
const std::set<std::string>& KnownFailures();

// Executes with the reference interpreter (after `transform`).
RunOutput InterpretGraph(const graph::Graph& graph, const std::map<std::string, graph::Tensor>& inputs);

struct OpTally {
  int passed = 0, failed = 0, unsupported = 0;
  int folded = 0;  // of `passed`: cases where no arithmetic ran (outputs folded at compile time)
  int computed() const { return passed - folded; }
  int total() const { return passed + failed + unsupported; }
};

struct SuiteReport {
  std::vector<CaseResult> cases;
  std::map<std::string, OpTally> by_op;
  int passed = 0, failed = 0, unsupported = 0;
  int folded = 0;  // of `passed`
  int total() const { return passed + failed + unsupported; }
  int computed() const { return passed - folded; }
  double pass_rate() const { return total() ? static_cast<double>(passed) / total() : 0.0; }
};

SuiteReport Tally(std::vector<CaseResult> cases);

// A per-operator table (passed cases split into computed and folded), then the failures and unsupported cases with their reasons, then the total.
std::string FormatReport(const SuiteReport& report, const std::string& suite, const std::string& executor_label,
                         InputBinding binding, bool list_cases);

}  // namespace conformance
}  // namespace agate

#endif  // AGATE_TESTS_ONNX_CONFORMANCE_CONFORMANCE_H_
