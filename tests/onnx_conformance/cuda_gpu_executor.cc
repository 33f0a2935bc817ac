#include "tests/onnx_conformance/cuda_gpu_executor.h"

#include <filesystem>
#include <memory>

#include "core/compiler/compiler.h"
#include "core/compiler/plan_evaluator.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "tools/npz/graph_tensor.h"

namespace agate {
namespace conformance {
namespace {

namespace fs = std::filesystem;

void WriteText(const std::string& path, const std::string& text) {
  WriteFileAtomically(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string ReadText(const std::string& path) {
  std::vector<uint8_t> bytes = ReadFile(path);
  return std::string(bytes.begin(), bytes.end());
}

// "<code number> <message>" as written by the export for a case that did not compile.
[[noreturn]] void Rethrow(const std::string& text) {
  const size_t space = text.find(' ');
  const int code = std::atoi(text.substr(0, space).c_str());
  throw Error(static_cast<StatusCode>(code), space == std::string::npos ? "" : text.substr(space + 1));
}

}  // namespace

Executor CudaExportExecutor(fusion::FusionPolicy policy, const std::string& target, const std::string& dir) {
  fs::create_directories(dir);
  auto key = std::make_shared<std::string>();
  Executor executor;
  executor.label = std::string("compiled (") + target + ", fusion=" + fusion::FusionPolicyName(policy) +
                   ", exported to " + dir + "; plan on the loop-IR evaluator with GPU semantics)";
  executor.begin_run = [key](const std::string& run_key) { *key = run_key; };
  executor.transform = [](const graph::Graph& g) { return g; };  // the compiler runs the graph passes
  executor.run = [policy, target, dir, key](const graph::Graph& g,
                                            const std::map<std::string, graph::Tensor>& inputs) {
    const std::string base = dir + "/" + *key;
    compiler::CompileResult result;
    try {
      compiler::CompileOptions options;
      options.fusion = policy;
      options.target = target;
      result = compiler::CompileGraph(g, options);
    } catch (const Error& e) {
      WriteText(base + ".error", std::to_string(static_cast<int>(e.code())) + " " + e.message());
      throw;
    }
    std::vector<npz::Array> arrays;
    std::vector<graph::Tensor> in;
    for (const std::string& name : result.graph.inputs) {
      in.push_back(inputs.at(name));
      arrays.push_back(npz::ArrayOf(name, inputs.at(name)));
    }
    WriteFileAtomically(base + ".agm", result.module);
    npz::Save(base + ".inputs.npz", arrays);
    const bool folded = AllOutputsFolded(result.graph);
    if (folded) WriteText(base + ".folded", "every output is a compile-time constant\n");
    std::vector<graph::Tensor> out = compiler::EvaluatePlan(result, in);
    std::map<std::string, graph::Tensor> outputs;
    for (size_t i = 0; i < out.size(); ++i) outputs[result.graph.outputs[i]] = out[i];
    return RunOutput{std::move(outputs), folded};
  };
  return executor;
}

Executor CudaGpuResultsExecutor(const std::string& dir) {
  auto key = std::make_shared<std::string>();
  Executor executor;
  executor.label = "compiled (cuda, exported to " + dir + "), run on a GPU by agate-runtime";
  executor.begin_run = [key](const std::string& run_key) { *key = run_key; };
  executor.transform = [](const graph::Graph& g) { return g; };
  executor.run = [dir, key](const graph::Graph&, const std::map<std::string, graph::Tensor>&) {
    const std::string base = dir + "/" + *key;
    if (fs::exists(base + ".error")) Rethrow(ReadText(base + ".error"));
    if (fs::exists(base + ".gpu_error")) AGATE_THROW(kInternal) << "on the GPU: " << ReadText(base + ".gpu_error");
    AGATE_REQUIRE(fs::exists(base + ".outputs.npz"), kNotFound) << "no GPU outputs (" << base << ".outputs.npz)";
    RunOutput run;
    for (const npz::Array& a : npz::Load(base + ".outputs.npz"))
      run.outputs[a.name] = npz::TensorOf(a);
    run.folded = fs::exists(base + ".folded");
    return run;
  };
  return executor;
}

}  // namespace conformance
}  // namespace agate
