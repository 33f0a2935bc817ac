// Recurrent operators: RNN, GRU, LSTM (ONNX semantics, both layouts, all directions).
#include <algorithm>
#include <iterator>

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

std::vector<TensorType> RecurrentInfer(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& w = ctx.input(1);
  std::string where = ctx.node().Describe();
  AGATE_REQUIRE(x.rank() == 3 && w.rank() == 3, kInvalidArgument)
      << where << ": X and W must be 3-D, got " << x.ToString() << " and " << w.ToString();
  AGATE_REQUIRE(x.dtype.is_float(), kUnsupported) << where << ": X is " << x.dtype;
  bool batch_major = ctx.attrs().GetInt("layout", 0) != 0;
  int64_t seq = batch_major ? x.shape[1] : x.shape[0];
  int64_t batch = batch_major ? x.shape[0] : x.shape[1];
  std::string direction = ctx.attrs().GetString("direction", "forward");
  AGATE_REQUIRE(direction == "forward" || direction == "reverse" || direction == "bidirectional", kInvalidArgument)
      << where << ": direction=" << direction;
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t hidden = ctx.attrs().GetInt("hidden_size", ctx.input(2).shape.back());
  int64_t gates = ctx.node().op == "LSTM" ? 4 : ctx.node().op == "GRU" ? 3 : 1;
  AGATE_REQUIRE(w.shape[0] == dirs && w.shape[1] == gates * hidden && w.shape[2] == x.shape[2], kInvalidArgument)
      << where << ": W " << ShapeToString(w.shape) << " should be [" << dirs << "," << gates * hidden << ","
      << x.shape[2] << "]";
  AGATE_REQUIRE(ctx.input(2).shape == (Shape{dirs, gates * hidden, hidden}), kInvalidArgument)
      << where << ": R " << ShapeToString(ctx.input(2).shape) << " should be [" << dirs << "," << gates * hidden
      << "," << hidden << "]";
  Shape y = batch_major ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden};
  Shape state = batch_major ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  std::vector<TensorType> out{TensorType{x.dtype, y}};
  for (int i = 1; i < ctx.num_outputs(); ++i) out.push_back(TensorType{x.dtype, state});
  return out;
}

// The activation functions ONNX lists for recurrent operators (alpha/beta: activation_alpha/beta).
std::string ActivationCheck(const Node& node) {
  static const char* known[] = {"Sigmoid", "Tanh",       "Relu",        "Affine", "LeakyRelu", "ThresholdedRelu",
                                "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  for (const std::string& a : node.attrs.GetStrings("activations", {})) {
    if (std::find(std::begin(known), std::end(known), a) == std::end(known)) return "activation " + a;
  }
  return "";
}

}  // namespace

void RegisterRecurrentOps(OpRegistry* r) {
  const std::vector<std::string> common{"activation_alpha", "activation_beta", "activations", "clip", "direction",
                                        "hidden_size", "layout"};
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    OpDef def;
    def.op = op;
    def.kind = OpKind::kOpaque;
    def.min_inputs = 3;
    def.max_inputs = std::string(op) == "LSTM" ? 8 : 6;
    def.attributes = common;
    if (std::string(op) == "GRU") def.attributes.push_back("linear_before_reset");
    if (std::string(op) == "LSTM") def.attributes.push_back("input_forget");
    def.infer = RecurrentInfer;
    def.check = ActivationCheck;
    r->Register(def);
  }
}

}  // namespace graph
}  // namespace agate
