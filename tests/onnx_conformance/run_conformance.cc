// Prints ONNX conformance pass rates per operator.
//
//   bazel run //tests/onnx_conformance:run_conformance -- [--suite DIR] [--expanded] [--list] [--fusion P]
//                                                          [--compiled | --cuda-eval "cuda -arch=sm_80"]
//                                                          [--layout-block N] [--runtime-inputs | --both]
//                                                          [--cuda-export DIR TARGET | --gpu-results DIR]
//
// --runtime-inputs feeds every input at run time, as `agate compile` + `agate run` do; without it
// the inputs that fix shapes (Reshape's shape, TopK's k...) are compile-time constants from the
// test data, as `agate compile --input-value` makes them. --both prints both reports (the second
// re-runs only the cases that bound an input): how RESULTS_compiled.md is generated.
// --list adds every failed and unsupported case with its reason.
//
// --compiled compiles every case to a module and runs it in the minimal runtime (what a
// user's model goes through); without it, the graph pipeline and the reference interpreter.
// --cuda-eval TARGET compiles every case for a cuda target (NVRTC included) and runs the
// module's plan on the loop-IR evaluator with GPU semantics: no GPU needed.
// --cuda-export and --gpu-results run the cases on a real GPU over a folder carried between this
// machine and the GPU's (tests/onnx_conformance/cuda_gpu_executor.h says how).
// The report says which.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/graph_eval/interpreter.h"
#include "core/support/error.h"
#include "core/graph/passes/pipeline.h"
#include "tests/onnx_conformance/compiled_executor.h"
#include "tests/onnx_conformance/cuda_eval_executor.h"
#include "tests/onnx_conformance/cuda_gpu_executor.h"
#include "tests/onnx_conformance/conformance.h"

int main(int argc, char** argv) {
  std::string suite = "/usr/share/libonnx-testdata/data/node";
  bool expanded = false, list = false, compiled = false, runtime_inputs = false, both = false;
  std::string cuda_target;
  std::string export_dir, gpu_results_dir;
  std::string fusion = "rule";
  int layout_block = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--suite") && i + 1 < argc) suite = argv[++i];
    else if (!std::strcmp(argv[i], "--expanded")) expanded = true;
    else if (!std::strcmp(argv[i], "--list")) list = true;
    else if (!std::strcmp(argv[i], "--compiled")) compiled = true;
    else if (!std::strcmp(argv[i], "--runtime-inputs")) runtime_inputs = true;
    else if (!std::strcmp(argv[i], "--both")) both = true;
    else if (!std::strcmp(argv[i], "--cuda-eval") && i + 1 < argc) cuda_target = argv[++i];
    else if (!std::strcmp(argv[i], "--cuda-export") && i + 2 < argc) {
      export_dir = argv[++i];
      cuda_target = argv[++i];
    } else if (!std::strcmp(argv[i], "--gpu-results") && i + 1 < argc) gpu_results_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--fusion") && i + 1 < argc) fusion = argv[++i];
    else if (!std::strcmp(argv[i], "--layout-block") && i + 1 < argc) layout_block = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--suite DIR] [--expanded] [--list] [--compiled] [--cuda-eval TARGET] [--fusion rule|none|all] [--layout-block N] [--runtime-inputs | --both] [--cuda-export DIR TARGET | --gpu-results DIR]\n", argv[0]);
      return 2;
    }
  }
  try {
    agate::conformance::Executor executor;
    executor.label = "reference interpreter (graph passes, fusion=" + fusion +
                     (layout_block > 1 ? ", layout NCHW" + std::to_string(layout_block) + "c" : "") + ")";
    agate::graph::PipelineOptions options;
    options.layout_block = layout_block;
    options.fusion = agate::fusion::ParseFusionPolicy(fusion);
    executor.transform = [options](const agate::graph::Graph& g) {
      return agate::graph::BuildPipeline(options).Run(g);
    };
    executor.run = agate::conformance::InterpretGraph;
    if (compiled) executor = agate::conformance::CompiledExecutor(options.fusion);
    if (!cuda_target.empty()) executor = agate::conformance::CudaEvalExecutor(options.fusion, cuda_target);
    if (!export_dir.empty())
      executor = agate::conformance::CudaExportExecutor(options.fusion, cuda_target, export_dir);
    if (!gpu_results_dir.empty()) executor = agate::conformance::CudaGpuResultsExecutor(gpu_results_dir);
    if (both) {
      using agate::conformance::InputBinding;
      agate::conformance::BothBindings results =
          agate::conformance::RunCasesBothWays(agate::conformance::ListCases(suite, expanded), executor);
      agate::conformance::SuiteReport run_time = agate::conformance::Tally(std::move(results.run_time));
      agate::conformance::SuiteReport compile_time = agate::conformance::Tally(std::move(results.compile_time));
      std::printf("summary: %d of %d pass with every input at run time, %d of %d with the inputs that fix shapes "
                  "bound at compile time\n\n",
                  run_time.passed, run_time.total(), compile_time.passed, compile_time.total());
      std::fputs(agate::conformance::FormatReport(run_time, suite, executor.label, InputBinding::kAllAtRunTime, list)
                     .c_str(),
                 stdout);
      std::fputs("\n", stdout);
      std::fputs(agate::conformance::FormatReport(compile_time, suite, executor.label,
                                                  InputBinding::kShapeOperandsAtCompileTime, list)
                     .c_str(),
                 stdout);
      return 0;
    }
    const agate::conformance::InputBinding binding = runtime_inputs
                                                         ? agate::conformance::InputBinding::kAllAtRunTime
                                                         : agate::conformance::InputBinding::kShapeOperandsAtCompileTime;
    std::vector<agate::conformance::CaseResult> results;
    for (const std::string& dir : agate::conformance::ListCases(suite, expanded))
      results.push_back(agate::conformance::RunCase(dir, executor, binding));
    agate::conformance::SuiteReport report = agate::conformance::Tally(std::move(results));
    std::fputs(agate::conformance::FormatReport(report, suite, executor.label, binding, list).c_str(), stdout);
  } catch (const agate::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
