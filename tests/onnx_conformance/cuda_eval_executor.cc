#include "tests/onnx_conformance/cuda_eval_executor.h"

#include "core/compiler/compiler.h"
#include "core/compiler/plan_evaluator.h"

namespace agate {
namespace conformance {

Executor CudaEvalExecutor(fusion::FusionPolicy policy, const std::string& target) {
  Executor executor;
  executor.label = std::string("compiled (") + target + ", fusion=" + fusion::FusionPolicyName(policy) +
                   ", plan on the loop-IR evaluator with GPU semantics)";
  executor.transform = [](const graph::Graph& g) { return g; };  // the compiler runs the graph passes
  executor.run = [policy, target](const graph::Graph& g, const std::map<std::string, graph::Tensor>& inputs) {
    compiler::CompileOptions options;
    options.fusion = policy;
    options.target = target;
    compiler::CompileResult result = compiler::CompileGraph(g, options);
    std::vector<graph::Tensor> in;
    for (const std::string& name : result.graph.inputs) in.push_back(inputs.at(name));
    std::vector<graph::Tensor> out = compiler::EvaluatePlan(result, in);
    std::map<std::string, graph::Tensor> outputs;
    for (size_t i = 0; i < out.size(); ++i) outputs[result.graph.outputs[i]] = out[i];
    return RunOutput{std::move(outputs), AllOutputsFolded(result.graph)};
  };
  return executor;
}

}  // namespace conformance
}  // namespace agate
