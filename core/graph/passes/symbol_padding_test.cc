#include "core/graph/passes/symbol_padding.h"

#include <gtest/gtest.h>

#include <functional>

#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;

constexpr int64_t kV = 6;  // the compiled extent
constexpr int64_t kW = 7;  // the second import
const char* const kExtent = "S_extent";

// x [1, s, 8] (or as `x_shape` gives it, with -1 for s) -> body -> outputs.
using Body = std::function<std::vector<std::string>(Graph*, int64_t s)>;

Graph At(int64_t s, const Body& body, Shape x_shape = {1, -1, 8}) {
  Graph g;
  g.inputs = {"x"};
  for (int64_t& d : x_shape) d = d < 0 ? s : d;
  g.types["x"] = TensorType{DType::Float(32), x_shape};
  for (const char* w : {"wq", "wk", "wv"}) {
    g.constants[w] = testing::RandomTensor({8, 8}, static_cast<uint32_t>(w[1]));
    g.types[w] = TensorType{DType::Float(32), {8, 8}};
  }
  std::vector<std::string> outputs = body(&g, s);
  return testing::Finish(std::move(g), outputs);
}

Graph Padded(const Body& body, PaddedAxes* axes, Shape x_shape = {1, -1, 8}, int64_t min_extent = 1) {
  return PadSymbolAxes(At(kV, body, x_shape), kV, At(kW, body, x_shape), kW, "S", min_extent, kExtent, axes);
}

std::string Refusal(const Body& body, Shape x_shape = {1, -1, 8}, int64_t min_extent = 1) {
  try {
    PaddedAxes axes;
    Padded(body, &axes, x_shape, min_extent);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    return e.what();
  }
  return "";
}

// `t` (shape with `axes` at extent n) copied into a tensor with those axes at `to`, the rest
// filled with `fill` (what the padding holds must not matter).
Tensor Resize(const Tensor& t, const std::vector<int>& axes, int64_t to, double fill) {
  Shape shape = t.shape();
  for (int a : axes) shape[a] = to;
  Tensor out = Tensor::FromDoubles(t.dtype(), shape, std::vector<double>(NumElements(shape), fill));
  const std::vector<int64_t> from_strides = RowMajorStrides(t.shape()), to_strides = RowMajorStrides(shape);
  const Shape& common = to >= t.shape()[axes[0]] ? t.shape() : shape;
  for (int64_t i = 0; i < NumElements(common); ++i) {
    int64_t rest = i, a = 0, b = 0;
    for (int d = static_cast<int>(common.size()) - 1; d >= 0; --d) {
      const int64_t x = rest % common[d];
      rest /= common[d];
      a += x * from_strides[d];
      b += x * to_strides[d];
    }
    out.SetDouble(b, t.GetDouble(a));
  }
  return out;
}

// The padded graph at n (inputs padded with `fill`) agrees with the model imported at n.
void ExpectAgreesAt(const Body& body, int64_t n, double fill, Shape x_shape = {1, -1, 8}) {
  PaddedAxes axes;
  const Graph padded = Padded(body, &axes, x_shape);
  const Graph at_n = At(n, body, x_shape);
  const Tensor x = testing::RandomTensor(at_n.TypeOf("x").shape, 11);
  const auto want = graph_eval::Interpret(at_n, {{"x", x}});
  const auto got = graph_eval::Interpret(
      padded, {{"x", Resize(x, axes.inputs[0], kV, fill)}, {kExtent, Tensor::FromInts(DType::Int(64), {}, {n})}});
  for (size_t o = 0; o < at_n.outputs.size(); ++o) {
    const std::string& name = at_n.outputs[o];
    const Tensor& g = got.at(name);
    const Tensor valid = axes.outputs[o].empty() ? g : Resize(g, axes.outputs[o], n, 0.0);
    EXPECT_LT(testing::MaxAbsDiff(valid, want.at(name)), 1e-5) << name << " at n = " << n << ", padding " << fill;
  }
}

// Attention over the sequence with mean, max and sum pooling: every rule that masks.
std::vector<std::string> Attention(Graph* g, int64_t) {
  Add(g, "MatMul", "q", {"x", "wq"}, {"q"});
  Add(g, "MatMul", "k", {"x", "wk"}, {"k"});
  Add(g, "MatMul", "v", {"x", "wv"}, {"v"});
  Add(g, "Transpose", "kt", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Add(g, "MatMul", "scores", {"q", "kt"}, {"s"});
  Add(g, "Softmax", "probs", {"s"}, {"p"}, {{"axis", int64_t{-1}}});
  Add(g, "MatMul", "mix", {"p", "v"}, {"o"});
  Add(g, "ReduceMean", "mean", {"o"}, {"mean"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  Add(g, "ReduceMax", "max", {"o"}, {"max"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  Add(g, "Transpose", "ot", {"o"}, {"ot"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Add(g, "MatMul", "gram", {"ot", "o"}, {"gram"});  // a product over S as K
  return {"o", "mean", "max", "gram"};
}

TEST(SymbolPaddingTest, AttentionAndPoolingAgreeWithTheModelAtEveryExtent) {
  PaddedAxes axes;
  const Graph padded = Padded(Attention, &axes);
  EXPECT_EQ(axes.inputs, (std::vector<std::vector<int>>{{1}}));
  EXPECT_EQ(axes.outputs, (std::vector<std::vector<int>>{{1}, {}, {}, {}}));
  EXPECT_EQ(padded.inputs.back(), kExtent);
  for (int64_t n : {1, 4, 6}) {
    for (double fill : {0.0, 1e3}) ExpectAgreesAt(Attention, n, fill);
  }
}

TEST(SymbolPaddingTest, PositionWiseModelsGetNoMask) {
  PaddedAxes axes;
  const Graph padded = Padded(
      [](Graph* g, int64_t) {
        Add(g, "MatMul", "q", {"x", "wq"}, {"q"});
        Add(g, "Relu", "r", {"q"}, {"y"});
        return std::vector<std::string>{"y"};
      },
      &axes);
  for (const Node& n : padded.nodes) EXPECT_NE(n.op, "Where") << n.Describe();
}

TEST(SymbolPaddingTest, AConvolutionAlongTheSymbolSeesItsOwnZeroPadding) {
  const Body conv = [](Graph* g, int64_t) {
    g->constants["cw"] = testing::RandomTensor({4, 8, 3}, 5);
    g->types["cw"] = TensorType{DType::Float(32), {4, 8, 3}};
    Add(g, "Conv", "conv", {"x", "cw"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1}}});
    Add(g, "GlobalAveragePool", "gap", {"c"}, {"g"});
    return std::vector<std::string>{"c", "g"};
  };
  for (int64_t n : {1, 2, 5, 6}) ExpectAgreesAt(conv, n, 7.0, {1, 8, -1});
}

TEST(SymbolPaddingTest, ConstantsSlicedToTheSymbolArePadded) {
  // A causal mask folded to [S, S] by the importer: the positions both extents have agree.
  const Body causal = [](Graph* g, int64_t s) {
    std::vector<double> mask(s * s);
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < s; ++j) mask[i * s + j] = j <= i ? 0.0 : -1e9;
    g->constants["causal"] = Tensor::FromDoubles(DType::Float(32), {s, s}, mask);
    g->types["causal"] = TensorType{DType::Float(32), {s, s}};
    Add(g, "MatMul", "q", {"x", "wq"}, {"q"});
    Add(g, "Transpose", "kt", {"x"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
    Add(g, "MatMul", "scores", {"q", "kt"}, {"s"});
    Add(g, "Add", "masked", {"s", "causal"}, {"sm"});
    Add(g, "Softmax", "probs", {"sm"}, {"p"}, {{"axis", int64_t{-1}}});
    Add(g, "MatMul", "mix", {"p", "x"}, {"o"});
    return std::vector<std::string>{"o"};
  };
  for (int64_t n : {1, 3, 6}) ExpectAgreesAt(causal, n, -2.0);
}

TEST(SymbolPaddingTest, AFoldedExtentUsedAsANumberIsRefusedWhereRead) {
  const std::string message = Refusal([](Graph* g, int64_t s) {
    g->constants["len"] = Tensor::Scalar(DType::Float(32), static_cast<double>(s));
    g->types["len"] = TensorType{DType::Float(32), {}};
    Add(g, "ReduceSum", "sum", {"x"}, {"sum"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
    Add(g, "Div", "mean", {"sum", "len"}, {"y"});
    return std::vector<std::string>{"y"};
  });
  EXPECT_NE(message.find("Div 'mean' reads constant 'len', which the importer computed from S's extent"),
            std::string::npos)
      << message;
}

TEST(SymbolPaddingTest, ExtentsDerivedFromTheSymbolAreRefusedNamingTheNode) {
  std::string message = Refusal([](Graph* g, int64_t s) {
    Add(g, "Reshape", "flat", {"x"}, {"y"}, {{"shape", std::vector<int64_t>{1, s * 8}}});
    return std::vector<std::string>{"y"};
  });
  EXPECT_NE(message.find("Reshape 'flat' output 'y' has shapes [1,48] and [1,56] at S = 6 and 7"), std::string::npos)
      << message;
  message = Refusal([](Graph* g, int64_t) {
    Add(g, "Concat", "cat", {"x", "x"}, {"y"}, {{"axis", int64_t{1}}});
    return std::vector<std::string>{"y"};
  });
  EXPECT_NE(message.find("Concat 'cat' output 'y'"), std::string::npos) << message;
  message = Refusal([](Graph* g, int64_t s) {
    Add(g, "Reshape", "swap", {"x"}, {"y"}, {{"shape", std::vector<int64_t>{s, 1, 8}}});
    Add(g, "Reshape", "back", {"y"}, {"z"}, {{"shape", std::vector<int64_t>{8, s}}});
    return std::vector<std::string>{"z"};
  });
  EXPECT_NE(message.find("Reshape 'back' reshapes [6,1,8] to [8,6] so that positions along S move"), std::string::npos)
      << message;
}

TEST(SymbolPaddingTest, OperatorsThatCombinePositionsWithoutAMaskAreRefused) {
  std::string message = Refusal([](Graph* g, int64_t) {
    Add(g, "CumSum", "rev", {"x"}, {"y"}, {{"axis", std::vector<int64_t>{1}}, {"reverse", int64_t{1}}});
    return std::vector<std::string>{"y"};
  });
  EXPECT_NE(message.find("CumSum 'rev' sums along S from its end: S cannot vary at run time"), std::string::npos)
      << message;
  message = Refusal(
      [](Graph* g, int64_t s) {
        g->constants["gamma"] = Tensor::FromDoubles(DType::Float(32), {s}, std::vector<double>(s, 1.0));
        g->types["gamma"] = TensorType{DType::Float(32), {s}};
        Add(g, "LayerNormalization", "ln", {"x", "gamma"}, {"y"}, {{"axis", int64_t{-1}}});
        return std::vector<std::string>{"y"};
      },
      {1, 8, -1});
  EXPECT_NE(message.find("normalizes over axis 2, which carries S"), std::string::npos) << message;
  message = Refusal([](Graph* g, int64_t) {
    Add(g, "TopK", "top", {"x"}, {"vals", "idx"}, {{"axis", int64_t{1}}, {"k", std::vector<int64_t>{1}}});
    return std::vector<std::string>{"vals"};
  });
  EXPECT_NE(message.find("agate does not know how TopK treats the positions past its run-time extent"),
            std::string::npos)
      << message;
}

TEST(SymbolPaddingTest, GatheringAPositionNeedsItBelowTheLowerBound) {
  const Body first_token = [](Graph* g, int64_t) {
    g->constants["at"] = Tensor::FromInts(DType::Int(64), {}, {2});
    g->types["at"] = TensorType{DType::Int(64), {}};
    Add(g, "Gather", "cls", {"x", "at"}, {"y"}, {{"axis", int64_t{1}}});
    return std::vector<std::string>{"y"};
  };
  EXPECT_NE(Refusal(first_token).find("gathers position 2 along an axis that carries S, which is not within its "
                                      "lower bound 1"),
            std::string::npos);
  EXPECT_EQ(Refusal(first_token, {1, -1, 8}, 3), "");
}

TEST(SymbolPaddingTest, TheLastPositionCountsFromTheRunTimeExtent) {
  // A decoder's next-token logits read x[:, -1]: position n - 1, not v - 1.
  const Body last_token = [](Graph* g, int64_t) {
    g->constants["last"] = Tensor::FromInts(DType::Int(64), {}, {-1});
    g->types["last"] = TensorType{DType::Int(64), {}};
    Add(g, "MatMul", "q", {"x", "wq"}, {"q"});
    Add(g, "Gather", "pick", {"q", "last"}, {"y"}, {{"axis", int64_t{1}}});
    return std::vector<std::string>{"y"};
  };
  for (int64_t n : {1, 2, 6}) ExpectAgreesAt(last_token, n, 3.0);
  const Body second_to_last = [](Graph* g, int64_t) {
    g->constants["at"] = Tensor::FromInts(DType::Int(64), {}, {-2});
    g->types["at"] = TensorType{DType::Int(64), {}};
    Add(g, "Gather", "pick", {"x", "at"}, {"y"}, {{"axis", int64_t{1}}});
    return std::vector<std::string>{"y"};
  };
  EXPECT_NE(Refusal(second_to_last).find("gathers position -2"), std::string::npos);  // n may be 1
}

}  // namespace
}  // namespace graph
}  // namespace agate
