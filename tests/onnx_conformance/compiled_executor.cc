#include "tests/onnx_conformance/compiled_executor.h"

#include <cstring>
#include <memory>

#include "agate/runtime.h"
#include "c_api/dlpack_dtype.h"
#include "core/compiler/compiler.h"
#include "core/support/error.h"

namespace agate {
namespace conformance {
namespace {

void Check(agate_status_t status, const char* what) {
  if (status != AGATE_OK) throw Error(static_cast<StatusCode>(status), std::string(what) + ": " + agate_last_error_message());
}

struct ModuleDeleter {
  void operator()(agate_module_t* m) const { agate_module_free(m); }
};
struct ExecutorDeleter {
  void operator()(agate_executor_t* e) const { agate_executor_free(e); }
};

RunOutput CompileAndRun(const graph::Graph& graph, fusion::FusionPolicy policy,
                                                   const std::string& target,
                                                   const std::map<std::string, graph::Tensor>& inputs) {
  compiler::CompileOptions options;
  options.fusion = policy;
  options.target = target;
  compiler::CompileResult result = compiler::CompileGraph(graph, options);

  agate_module_t* raw_module = nullptr;
  Check(agate_module_load_from_memory(result.module.data(), result.module.size(), nullptr, &raw_module), "load");
  std::unique_ptr<agate_module_t, ModuleDeleter> module(raw_module);
  agate_executor_options executor_options{sizeof(agate_executor_options), 1};
  agate_executor_t* raw_executor = nullptr;
  Check(agate_executor_create(module.get(), &executor_options, &raw_executor), "executor");
  std::unique_ptr<agate_executor_t, ExecutorDeleter> executor(raw_executor);

  std::vector<std::vector<int64_t>> shapes;  // kept alive until the run
  shapes.reserve(result.graph.inputs.size());
  for (uint32_t i = 0; i < result.graph.inputs.size(); ++i) {
    const graph::Tensor& tensor = inputs.at(result.graph.inputs[i]);
    shapes.push_back(tensor.shape());
    DLTensor dl;
    std::memset(&dl, 0, sizeof(dl));
    dl.data = const_cast<void*>(tensor.raw_data());
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = tensor.rank();
    dl.dtype = ToDLPack(tensor.dtype());
    dl.shape = shapes.back().data();
    Check(agate_executor_set_input(executor.get(), i, &dl), "set input");
  }
  Check(agate_executor_run(executor.get()), "run");
  // The module's outputs at their run-time shapes (an output whose extents the run decides
  // reports them here; the data is compact at that shape).
  std::map<std::string, graph::Tensor> outputs;
  for (uint32_t i = 0; i < result.spec.outputs.size(); ++i) {
    const serialize::TensorSpec& spec = result.spec.outputs[i];
    DLTensor out;
    Check(agate_executor_get_output(executor.get(), i, &out), "get output");
    graph::Shape shape(out.shape, out.shape + out.ndim);
    graph::TensorType type{spec.dtype, shape};
    outputs[spec.name] = graph::Tensor::FromBytes(type.dtype, type.shape, out.data, static_cast<size_t>(type.bytes()));
  }
  // result.graph is the graph after every pass: its constant outputs were folded, not computed.
  return RunOutput{std::move(outputs), AllOutputsFolded(result.graph)};
}

}  // namespace

Executor CompiledExecutor(fusion::FusionPolicy policy, const std::string& target) {
  Executor executor;
  executor.label = std::string("compiled (") + target + ", fusion=" + fusion::FusionPolicyName(policy) +
                   ", minimal runtime)";
  executor.transform = [](const graph::Graph& g) { return g; };  // the compiler runs the graph passes
  executor.run = [policy, target](const graph::Graph& g, const std::map<std::string, graph::Tensor>& inputs) {
    return CompileAndRun(g, policy, target, inputs);
  };
  return executor;
}

}  // namespace conformance
}  // namespace agate
