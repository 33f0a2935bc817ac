#include "core/ops/testing/reference_check.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>

#include "core/codegen/cuda/build_cuda.h"
#include "core/codegen/cuda/nvrtc.h"
#include "core/codegen/llvm/build_llvm.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/loop_eval/evaluator.h"
#include "core/fusion/fusion.h"
#include "core/graph_eval/interpreter.h"
#include "core/graph/testing/graph_builder.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace testing {

std::map<std::string, graph::Tensor> RunGroups(const graph::Graph& graph,
                                               const std::map<std::string, graph::Tensor>& inputs, Backend backend,
                                               const target::Target& target, const LowerGroupOptions& options,
                                               std::vector<std::string>* summaries, int threads) {
  std::map<std::string, graph::Tensor> values = inputs;
  for (const auto& kv : graph.constants) values[kv.first] = kv.second;
  std::vector<GroupKernel> kernels;
  for (size_t g = 0; g < graph.groups.size(); ++g) {
    kernels.push_back(LowerGroup(graph, graph.groups[g], target, "group" + std::to_string(g), options));
    if (std::getenv("AGATE_SHOW_IR")) std::cerr << ir::ToString(kernels.back().func);
    if (summaries) summaries->push_back(kernels.back().schedule_summary);
  }
  std::unique_ptr<codegen::HostKernels> host;
  if (backend == Backend::kLLVM) {
    std::vector<ir::LoweredFunc> funcs;
    for (const GroupKernel& k : kernels) funcs.push_back(k.func);
    host = std::make_unique<codegen::HostKernels>(codegen::HostKernels::Build(funcs, target));
  }
  for (size_t g = 0; g < kernels.size(); ++g) {
    const GroupKernel& k = kernels[g];
    std::vector<graph::Tensor> args;
    for (const KernelParam& p : k.params) {
      if (p.kind == KernelParam::Kind::kConstant) {
        args.push_back(p.constant);
        continue;
      }
      auto it = values.find(p.value);
      if (it != values.end()) {
        args.push_back(it->second);
      } else {
        const graph::TensorType& t = graph.TypeOf(p.value);
        args.push_back(graph::Tensor(t.dtype, t.shape));
      }
    }
    // Outputs are fresh tensors; fill them with garbage so unwritten elements show.
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelParam& p = k.params[i];
      bool is_output = false;
      for (const std::string& o : graph.groups[g].outputs) is_output |= p.kind == KernelParam::Kind::kValue && o == p.value;
      if (is_output) {
        const graph::TensorType& t = graph.TypeOf(p.value);
        args[i] = graph::Tensor(t.dtype, t.shape);
        std::memset(args[i].mutable_raw_data(), 0x7f, args[i].nbytes());
      }
    }
    int32_t status = 0;
    if (backend == Backend::kEval) {
      std::vector<loop_eval::ArgBuffer> buffers;
      for (graph::Tensor& a : args) buffers.push_back({a.mutable_raw_data(), a.nbytes()});
      status = loop_eval::Run(k.func, buffers);
    } else {
      std::vector<void*> pointers;
      for (graph::Tensor& a : args) pointers.push_back(a.mutable_raw_data());
      codegen::testing::TestContext context(threads, static_cast<size_t>(k.func.workspace_bytes));
      status = host->Get(k.func.name)(pointers.data(), &context.ctx);
    }
    AGATE_REQUIRE(status == 0, kInternal) << "kernel " << k.func.name << " returned " << status;
    for (size_t i = 0; i < args.size(); ++i)
      if (k.params[i].kind == KernelParam::Kind::kValue) values[k.params[i].value] = args[i];
  }
  std::map<std::string, graph::Tensor> outputs;
  for (const std::string& o : graph.outputs) outputs[o] = values.at(o);
  return outputs;
}

std::map<std::string, graph::Tensor> RandomInputs(const graph::Graph& graph, uint32_t seed) {
  std::map<std::string, graph::Tensor> inputs;
  std::mt19937 rng(seed);
  for (const std::string& name : graph.inputs) {
    const graph::TensorType& t = graph.TypeOf(name);
    if (t.dtype == ir::DType::Float(32)) {
      inputs[name] = graph::testing::RandomTensor(t.shape, seed++);
      continue;
    }
    graph::Tensor x(t.dtype, t.shape);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (t.dtype.is_float()) x.SetDouble(i, std::uniform_real_distribution<double>(-1, 1)(rng));
      else if (t.dtype.is_bool()) x.SetInt(i, rng() % 2);
      else x.SetInt(i, rng() % 4);
    }
    inputs[name] = x;
  }
  return inputs;
}

graph::Graph Fuse(const graph::Graph& graph, bool one_group) {
  if (!one_group) return fusion::FuseOperators(graph, fusion::FusionPolicy::kRule);
  graph::Graph g = graph;
  std::vector<int> all;
  for (size_t i = 0; i < g.nodes.size(); ++i) all.push_back(static_cast<int>(i));
  g.groups = fusion::MakeGroups(g, {all});
  return g;
}

::testing::AssertionResult TensorsClose(const graph::Tensor& got, const graph::Tensor& want, double tolerance) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "type differs: got " << got.ToString(0) << ", want " << want.ToString(0);
  }
  int bad = 0;
  std::ostringstream os;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.GetDouble(i), w = want.GetDouble(i);
    // An infinity matches only itself (the relative bound would be infinite and accept anything).
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
              (std::isfinite(g) && std::isfinite(w) && std::fabs(g - w) <= tolerance * (1 + std::fabs(w)));
    if (!ok && bad++ < 5) os << " [" << i << "] got " << g << " want " << w << ";";
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << got.numel() << " elements differ:" << os.str();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult CheckAgainstReference(const graph::Graph& graph, const CheckOptions& options) {
  graph::Graph fused = Fuse(graph, options.one_group);
  std::map<std::string, graph::Tensor> inputs = RandomInputs(graph, options.seed);
  for (const auto& kv : options.inputs) inputs[kv.first] = kv.second;
  std::map<std::string, graph::Tensor> want = graph_eval::Interpret(graph, inputs);
  target::Target host = target::Target::Host();
  target::Target cpu = options.cpu_target.empty() ? host : target::Target::Parse(options.cpu_target);
  bool host_runs_cpu = cpu.arch() == host.arch();
  for (const std::string& feature : cpu.features()) host_runs_cpu = host_runs_cpu && host.HasFeature(feature);
  for (int run = 0; run < 3; ++run) {
    Backend backend = run == 1 ? Backend::kLLVM : Backend::kEval;
    if (run == 0 && !options.eval) continue;
    if (run == 1 && (!options.llvm || !host_runs_cpu)) continue;
    if (run == 2 && options.cuda_target.empty()) continue;
    const char* name = run == 0 ? "eval" : run == 1 ? "llvm" : "cuda";
    target::Target target = run == 2 ? target::Target::Parse(options.cuda_target) : cpu;
    std::vector<std::string> summaries;
    std::map<std::string, graph::Tensor> got;
    try {
      got = RunGroups(fused, inputs, backend, target, options.lower, &summaries, options.threads);
      if (run == 2 && codegen::NvrtcAvailable()) {
        std::vector<ir::LoweredFunc> funcs;
        for (size_t g = 0; g < fused.groups.size(); ++g) {
          funcs.push_back(LowerGroup(fused, fused.groups[g], target, "group" + std::to_string(g), options.lower).func);
        }
        codegen::BuildCuda(funcs, target, "check");
      }
    } catch (const Error& e) {
      std::ostringstream os;
      for (const std::string& s : summaries) os << "\n  " << s;
      return ::testing::AssertionFailure() << name << ": " << e.what() << os.str();
    }
    for (const std::string& o : graph.outputs) {
      ::testing::AssertionResult r = TensorsClose(got.at(o), want.at(o), options.tolerance);
      if (!r) {
        std::ostringstream os;
        for (const std::string& s : summaries) os << "\n  " << s;
        return ::testing::AssertionFailure() << name << ", output " << o << ": " << r.message() << os.str();
      }
    }
  }
  return ::testing::AssertionSuccess();
}

void ExpectRunTimeOperandRefused(const graph::Graph& graph, const std::map<std::string, graph::Tensor>& inputs,
                                 const std::string& node_quote, StatusCode reference_code) {
  try {
    graph_eval::Interpret(graph, inputs);
    ADD_FAILURE() << "the reference accepted the operand";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), reference_code) << e.what();
    EXPECT_NE(std::string(e.what()).find(node_quote), std::string::npos) << e.what();
  }
  graph::Graph fused = Fuse(graph);
  for (Backend backend : {Backend::kEval, Backend::kLLVM}) {
    try {
      RunGroups(fused, inputs, backend, target::Target::Parse("llvm"));
      ADD_FAILURE() << "backend " << static_cast<int>(backend) << " ran";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInternal) << e.what();
      EXPECT_NE(std::string(e.what()).find("returned"), std::string::npos) << e.what();
    }
  }
}

}  // namespace testing
}  // namespace ops
}  // namespace agate
