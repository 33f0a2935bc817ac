// interpret: runs an ONNX model on the reference interpreter (core/graph_eval) after the
// graph pipeline's passes (QDQ folding included), with .npz inputs and outputs.
//
// Why: the oracle for whole compiled models. The graph passes are what `agate compile`
// runs, so the interpreter sees the same integer operators (QLinearConv, ...) as the
// compiled kernels, and an integer model's compiled outputs must match it bit for bit
// (tools/ci/suites/quantized_models.sh).
//
//   interpret MODEL.onnx INPUTS.npz OUTPUTS.npz
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>

#include "core/graph/passes/pipeline.h"
#include "core/graph_eval/interpreter.h"
#include "core/support/error.h"
#include "frontends/onnx/importer.h"
#include "tools/npz/graph_tensor.h"
#include "tools/npz/npz.h"

namespace agate {
namespace {

int Main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.onnx INPUTS.npz OUTPUTS.npz\n", argv[0]);
    return 2;
  }
  graph::Graph g = onnx_frontend::ImportOnnxFile(argv[1]);
  graph::PipelineOptions options;
  g = graph::BuildPipeline(options).Run(g);
  std::map<std::string, graph::Tensor> inputs;
  for (const npz::Array& a : npz::Load(argv[2])) {
    inputs[a.name] = npz::TensorOf(a);
  }
  std::vector<npz::Array> outputs;
  for (const auto& [name, t] : graph_eval::Interpret(g, inputs)) outputs.push_back(npz::ArrayOf(name, t));
  npz::Save(argv[3], outputs);
  return 0;
}

}  // namespace
}  // namespace agate

int main(int argc, char** argv) {
  try {
    return agate::Main(argc, argv);
  } catch (const agate::Error& e) {
    std::fprintf(stderr, "interpret: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // bad_alloc and the like: a message, never std::terminate
    std::fprintf(stderr, "interpret: %s\n", e.what());
    return 1;
  }
}
