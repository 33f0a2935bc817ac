#include "core/graph/shape_inference.h"

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {
constexpr int64_t kMaxElements = int64_t{1} << 40;
}  // namespace

std::vector<TensorType> InferNodeTypes(const Node& node, const std::map<std::string, TensorType>& types,
                                       const std::map<std::string, Tensor>& constants) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  AGATE_REQUIRE(def != nullptr, kUnsupported) << node.Describe() << ": operator " << node.op << " is not supported";
  std::vector<const TensorType*> inputs;
  std::vector<const Tensor*> values;
  for (const std::string& in : node.inputs) {
    if (in.empty()) {
      inputs.push_back(nullptr);
      values.push_back(nullptr);
      continue;
    }
    auto t = types.find(in);
    AGATE_REQUIRE(t != types.end(), kInvalidArgument) << node.Describe() << " reads '" << in << "', which is undefined";
    inputs.push_back(&t->second);
    auto c = constants.find(in);
    values.push_back(c == constants.end() ? nullptr : &c->second);
  }
  InferContext ctx(node, inputs, values);
  std::vector<TensorType> out;
  try {
    out = def->infer(ctx);
  } catch (const Error& e) {
    // Rules name the node; make sure a message from a shared helper does too.
    if (e.message().find(node.name) != std::string::npos) throw;
    throw Error(e.code(), node.Describe() + ": " + e.message());
  } catch (const std::exception& e) {
    AGATE_THROW(kInvalidArgument) << node.Describe() << ": " << e.what();
  }
  // A corrupt model can ask for absurd shapes; refuse them before anything allocates.
  for (const TensorType& t : out) {
    int64_t n = 1;
    for (int64_t d : t.shape) {
      AGATE_REQUIRE(d >= 0, kInvalidArgument) << node.Describe() << " computes a negative dimension in "
                                              << ShapeToString(t.shape);
      // Each dimension too, not only the product: one empty axis beside an absurd one holds no
      // element, yet a pass sizing a table by that axis would allocate without bound.
      AGATE_REQUIRE(d <= kMaxElements && (d == 0 || n <= kMaxElements / d), kInvalidArgument)
          << node.Describe() << " computes an output of shape " << ShapeToString(t.shape) << ", too large";
      n *= d;
    }
  }
  AGATE_REQUIRE(node.outputs.size() <= out.size(), kUnsupported)
      << node.Describe() << " has " << node.outputs.size() << " outputs; agate computes only " << out.size();
  out.resize(node.outputs.size());
  return out;
}

Graph InferShapes(const Graph& graph) {
  Graph result = graph;
  for (const Node& node : result.nodes) {
    std::vector<TensorType> out = InferNodeTypes(node, result.types, result.constants);
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) result.types[node.outputs[i]] = out[i];
  }
  return result;
}

}  // namespace graph
}  // namespace agate
