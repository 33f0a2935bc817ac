// Exporter-style models built with ModelBuilder, imported and compiled by the
// whole graph pipeline: results must match the unoptimized graph, and the
// passes must do what they exist for (shape subgraphs gone, batch norms folded,
// blocks fused).
#include <gtest/gtest.h>

#include <cmath>

#include "core/graph/passes/pipeline.h"
#include "core/graph/printer.h"
#include "core/graph_eval/interpreter.h"
#include "core/graph/testing/graph_builder.h"
#include "frontends/onnx/importer.h"
#include "frontends/onnx/model_builder.h"

namespace agate {
namespace onnx_frontend {
namespace {

using graph::DType;
using graph::Graph;
using graph::Tensor;
using graph::testing::MaxAbsDiff;
using graph::testing::RandomTensor;
constexpr int kFloat = onnx::TensorProto::FLOAT;

Tensor Ints(const std::vector<int64_t>& v) {
  return Tensor::FromInts(DType::Int(64), {static_cast<int64_t>(v.size())}, v);
}
Tensor Scalar(double v) { return Tensor::Scalar(DType::Float(32), v); }

int Count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op == op;
  return n;
}

double Compare(const Graph& original, const Graph& compiled, const std::map<std::string, Tensor>& inputs) {
  auto a = graph_eval::Interpret(original, inputs), b = graph_eval::Interpret(compiled, inputs);
  double worst = 0;
  for (const auto& out : original.outputs) worst = std::max(worst, MaxAbsDiff(a.at(out), b.at(out)));
  return worst;
}

// A small CNN as torchvision exports it: conv-bn-relu, maxpool, a residual block, global pool, flatten, fc.
onnx::ModelProto SmallResNet() {
  ModelBuilder b(13);
  b.Input("input", kFloat, {-1, 3, 16, 16});
  uint32_t seed = 100;
  auto conv_bn = [&](const std::string& name, const std::string& in, int64_t cin, int64_t cout, int64_t stride,
                     bool relu) {
    b.Initializer(name + ".w", RandomTensor({cout, cin, 3, 3}, seed++, -0.3, 0.3));
    b.Initializer(name + ".gamma", RandomTensor({cout}, seed++, 0.5, 1.5));
    b.Initializer(name + ".beta", RandomTensor({cout}, seed++));
    b.Initializer(name + ".mean", RandomTensor({cout}, seed++));
    b.Initializer(name + ".var", RandomTensor({cout}, seed++, 0.5, 2.0));
    b.Node("Conv", {in, name + ".w"}, {name + ".c"},
           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{stride, stride}},
            {"kernel_shape", std::vector<int64_t>{3, 3}}},
           name + "/conv");
    b.Node("BatchNormalization", {name + ".c", name + ".gamma", name + ".beta", name + ".mean", name + ".var"},
           {name + ".bn"}, {}, name + "/bn");
    if (!relu) return name + ".bn";
    b.Node("Relu", {name + ".bn"}, {name + ".out"}, {}, name + "/relu");
    return name + ".out";
  };
  std::string stem = conv_bn("stem", "input", 3, 8, 1, true);
  b.Node("MaxPool", {stem}, {"pool"},
         {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
          {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
         "maxpool");
  std::string a = conv_bn("block.a", "pool", 8, 8, 1, true);
  std::string c = conv_bn("block.b", a, 8, 8, 1, false);
  b.Node("Add", {c, "pool"}, {"sum"}, {}, "block/add");
  b.Node("Relu", {"sum"}, {"block.out"}, {}, "block/relu");
  b.Node("GlobalAveragePool", {"block.out"}, {"gap"}, {}, "gap");
  // torch.flatten exported through shape arithmetic.
  b.Initializer("zero", Tensor::FromInts(DType::Int(64), {}, {0}));
  b.Initializer("axes0", Ints({0}));
  b.Initializer("minus1", Ints({-1}));
  b.Node("Shape", {"gap"}, {"gap_shape"}, {}, "flatten/shape");
  b.Node("Gather", {"gap_shape", "zero"}, {"batch"}, {{"axis", int64_t{0}}}, "flatten/gather");
  b.Node("Unsqueeze", {"batch", "axes0"}, {"batch1"}, {}, "flatten/unsqueeze");
  b.Node("Concat", {"batch1", "minus1"}, {"flat_shape"}, {{"axis", int64_t{0}}}, "flatten/concat");
  b.Node("Reshape", {"gap", "flat_shape"}, {"flat"}, {}, "flatten/reshape");
  b.Initializer("fc.w", RandomTensor({10, 8}, seed++));
  b.Initializer("fc.b", RandomTensor({10}, seed++));
  b.Node("Gemm", {"flat", "fc.w", "fc.b"}, {"logits"}, {{"transB", int64_t{1}}}, "fc");
  b.Output("logits");
  return b.Build();
}

TEST(EndToEndTest, SmallResNet) {
  ImportOptions options;
  options.input_shapes = ParseInputShapes("input:2x3x16x16");
  Graph g = ImportOnnxModel(SmallResNet(), options);
  EXPECT_EQ(Count(g, "Shape"), 0) << "shape subgraphs fold while importing";
  std::map<std::string, Tensor> inputs{{"input", RandomTensor({2, 3, 16, 16}, 7)}};
  for (int64_t block : {0, 4}) {
    graph::PipelineOptions pipeline;
    pipeline.layout_block = block;
    Graph compiled = graph::BuildPipeline(pipeline).Run(g);
    EXPECT_EQ(Count(compiled, "BatchNormalization"), 0) << graph::PrintGraph(compiled);
    EXPECT_LT(Compare(g, compiled, inputs), 1e-4) << "layout block " << block;
    // Each conv with its elementwise tail is one kernel; the pool, gap and fc stand alone.
    int conv_groups = 0;
    for (const auto& group : compiled.groups) {
      if (group.anchor >= 0 && compiled.nodes[group.anchor].op == "Conv") ++conv_groups;
    }
    EXPECT_EQ(conv_groups, 3) << graph::PrintGraph(compiled);
    EXPECT_LT(compiled.memory_plan.arena_bytes, compiled.memory_plan.total_intermediate_bytes);
  }
}

// One transformer encoder layer as PyTorch exports it at opset 13: head split by
// Reshape/Transpose, scaled dot-product attention, decomposed LayerNorm, GELU via Erf.
onnx::ModelProto EncoderLayer() {
  const int64_t seq = 4, hidden = 8, heads = 2, head_dim = 4, ffn = 16;
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, seq, hidden});
  uint32_t seed = 200;
  auto linear = [&](const std::string& name, const std::string& in, int64_t k, int64_t n) {
    b.Initializer(name + ".w", RandomTensor({k, n}, seed++, -0.4, 0.4));
    b.Initializer(name + ".b", RandomTensor({n}, seed++));
    b.Node("MatMul", {in, name + ".w"}, {name + ".mm"}, {}, name + "/matmul");
    b.Node("Add", {name + ".mm", name + ".b"}, {name + ".out"}, {}, name + "/bias");
    return name + ".out";
  };
  auto split_heads = [&](const std::string& name, const std::string& in) {
    b.Node("Reshape", {in, "heads_shape"}, {name + ".r"}, {}, name + "/reshape");
    b.Node("Transpose", {name + ".r"}, {name + ".t"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}},
           name + "/transpose");
    return name + ".t";
  };
  auto layer_norm = [&](const std::string& name, const std::string& in) {
    b.Node("ReduceMean", {in}, {name + ".mu"}, {{"axes", std::vector<int64_t>{-1}}}, name + "/mean");
    b.Node("Sub", {in, name + ".mu"}, {name + ".c"}, {}, name + "/sub");
    b.Node("Pow", {name + ".c", "two"}, {name + ".sq"}, {}, name + "/pow");
    b.Node("ReduceMean", {name + ".sq"}, {name + ".var"}, {{"axes", std::vector<int64_t>{-1}}}, name + "/var");
    b.Node("Add", {name + ".var", "eps"}, {name + ".ve"}, {}, name + "/add_eps");
    b.Node("Sqrt", {name + ".ve"}, {name + ".sd"}, {}, name + "/sqrt");
    b.Node("Div", {name + ".c", name + ".sd"}, {name + ".n"}, {}, name + "/div");
    b.Initializer(name + ".gamma", RandomTensor({hidden}, seed++, 0.5, 1.5));
    b.Initializer(name + ".beta", RandomTensor({hidden}, seed++));
    b.Node("Mul", {name + ".n", name + ".gamma"}, {name + ".g"}, {}, name + "/scale");
    b.Node("Add", {name + ".g", name + ".beta"}, {name + ".out"}, {}, name + "/shift");
    return name + ".out";
  };
  b.Initializer("heads_shape", Ints({1, seq, heads, head_dim}));
  b.Initializer("merge_shape", Ints({1, seq, hidden}));
  b.Initializer("two", Scalar(2.0));
  b.Initializer("eps", Scalar(1e-5));
  b.Initializer("scale", Scalar(0.5));
  b.Initializer("sqrt2", Scalar(1.4142135623730951));
  b.Initializer("one", Scalar(1.0));
  b.Initializer("half", Scalar(0.5));
  std::string q = split_heads("q", linear("q_proj", "x", hidden, hidden));
  std::string k = split_heads("k", linear("k_proj", "x", hidden, hidden));
  std::string v = split_heads("v", linear("v_proj", "x", hidden, hidden));
  b.Node("Transpose", {k}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}, "attn/k_transpose");
  b.Node("MatMul", {q, "kt"}, {"scores"}, {}, "attn/qk");
  b.Node("Mul", {"scores", "scale"}, {"scaled"}, {}, "attn/scale");
  b.Node("Softmax", {"scaled"}, {"probs"}, {{"axis", int64_t{-1}}}, "attn/softmax");
  b.Node("Dropout", {"probs"}, {"probs_d"}, {}, "attn/dropout");
  b.Node("MatMul", {"probs_d", v}, {"ctx"}, {}, "attn/pv");
  b.Node("Transpose", {"ctx"}, {"ctx_t"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, "attn/merge_transpose");
  b.Node("Reshape", {"ctx_t", "merge_shape"}, {"ctx_m"}, {}, "attn/merge_reshape");
  std::string attn = linear("o_proj", "ctx_m", hidden, hidden);
  b.Node("Add", {attn, "x"}, {"res1"}, {}, "attn/residual");
  std::string ln1 = layer_norm("ln1", "res1");
  std::string h = linear("fc1", ln1, hidden, ffn);
  b.Node("Div", {h, "sqrt2"}, {"g.d"}, {}, "gelu/div");
  b.Node("Erf", {"g.d"}, {"g.e"}, {}, "gelu/erf");
  b.Node("Add", {"g.e", "one"}, {"g.p"}, {}, "gelu/add");
  b.Node("Mul", {h, "g.p"}, {"g.m"}, {}, "gelu/mul");
  b.Node("Mul", {"g.m", "half"}, {"g.out"}, {}, "gelu/half");
  std::string f = linear("fc2", "g.out", ffn, hidden);
  b.Node("Add", {f, ln1}, {"res2"}, {}, "ffn/residual");
  std::string out = layer_norm("ln2", "res2");
  b.Node("Identity", {out}, {"y"}, {}, "output");
  b.Output("y");
  return b.Build();
}

TEST(EndToEndTest, TransformerEncoderLayer) {
  Graph g = ImportOnnxModel(EncoderLayer());
  std::map<std::string, Tensor> inputs{{"x", RandomTensor({1, 4, 8}, 8)}};
  for (auto policy : {fusion::FusionPolicy::kRule, fusion::FusionPolicy::kNone, fusion::FusionPolicy::kAll}) {
    graph::PipelineOptions pipeline;
    pipeline.fusion = policy;
    Graph compiled = graph::BuildPipeline(pipeline).Run(g);
    EXPECT_LT(Compare(g, compiled, inputs), 1e-5);
    EXPECT_EQ(Count(compiled, "Dropout"), 0);
    EXPECT_EQ(Count(compiled, "Identity"), 0);
    if (policy == fusion::FusionPolicy::kNone) {
      EXPECT_EQ(compiled.groups.size(), compiled.nodes.size());
    } else {
      EXPECT_LT(compiled.groups.size(), compiled.nodes.size() / 2) << graph::PrintGraph(compiled);
    }
  }
  // The exporter's decompositions are fused (attention, both layer norms, GELU), and the GELU joins
  // fc1's matmul kernel under `rule`.
  Graph rule = graph::BuildPipeline(graph::PipelineOptions()).Run(g);
  EXPECT_EQ(Count(rule, "Attention"), 1);
  EXPECT_EQ(Count(rule, "Softmax"), 0);
  EXPECT_EQ(Count(rule, "LayerNormalization"), 2);
  EXPECT_EQ(Count(rule, "ReduceMean"), 0);
  EXPECT_EQ(Count(rule, "Gelu"), 1);
  EXPECT_EQ(Count(rule, "Erf"), 0);
  bool found = false;
  for (const auto& group : rule.groups) {
    if (group.anchor < 0 || rule.nodes[group.anchor].name != "fc1/matmul") continue;
    std::vector<std::string> ops;
    for (int n : group.nodes) ops.push_back(rule.nodes[n].op);
    EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "Add", "Gelu"}));
    found = true;
  }
  EXPECT_TRUE(found) << graph::PrintGraph(rule);
}

// The forms PyTorch 2.x's exporter emits (written by hand from its documented output, since Debian's
// PyTorch is 1.13), at opset 17: scaled_dot_product_attention with Q and K^T each multiplied by
// sqrt(scale) and an additive mask, LayerNormalization as one node, and the RMS norm of aten.rsqrt as
// Reciprocal(Sqrt(.)). (ONNX's own Gelu node is imported from opset 20 on, tests/onnx_opsets; Attention,
// opset 23, is a graph operator the fusion passes produce, above the newest opset imported, 22.)
onnx::ModelProto SdpaAsPyTorch2Exports() {
  ModelBuilder b(17);
  int64_t s = 6, heads = 2, d = 8;
  for (const char* in : {"q", "k", "v"}) b.Input(in, kFloat, {1, heads, s, d});
  b.Input("mask", kFloat, {1, 1, s, s});
  b.Initializer("ln_w", RandomTensor({d}, 30, 0.5, 1.5));
  b.Initializer("ln_b", RandomTensor({d}, 31));
  b.Initializer("two", Scalar(2));
  b.Initializer("eps", Scalar(1e-6));
  b.Initializer("sqrt_scale", Scalar(std::sqrt(1.0 / std::sqrt(8.0))));
  b.Node("Mul", {"q", "sqrt_scale"}, {"q_scaled"}, {}, "sdpa/q_scale");
  b.Node("Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}, "sdpa/k_transpose");
  b.Node("Mul", {"kt", "sqrt_scale"}, {"kt_scaled"}, {}, "sdpa/k_scale");
  b.Node("MatMul", {"q_scaled", "kt_scaled"}, {"scores"}, {}, "sdpa/qk");
  b.Node("Add", {"scores", "mask"}, {"masked"}, {}, "sdpa/mask");
  b.Node("Softmax", {"masked"}, {"probs"}, {{"axis", int64_t{-1}}}, "sdpa/softmax");
  b.Node("MatMul", {"probs", "v"}, {"ctx"}, {}, "sdpa/pv");
  b.Node("LayerNormalization", {"ctx", "ln_w", "ln_b"}, {"n"}, {{"axis", int64_t{-1}}, {"epsilon", 1e-5}}, "ln");
  b.Node("Pow", {"n", "two"}, {"sq"}, {}, "rms/pow");
  b.Node("ReduceMean", {"sq"}, {"ms"}, {{"axes", std::vector<int64_t>{-1}}}, "rms/mean");
  b.Node("Add", {"ms", "eps"}, {"ms_eps"}, {}, "rms/add");
  b.Node("Sqrt", {"ms_eps"}, {"rms"}, {}, "rms/sqrt");
  b.Node("Reciprocal", {"rms"}, {"inv"}, {}, "rms/rsqrt");
  b.Node("Mul", {"n", "inv"}, {"y"}, {}, "rms/mul");
  b.Output("y");
  return b.Build();
}

TEST(EndToEndTest, PyTorch2Forms) {
  std::map<std::string, Tensor> inputs;
  for (const char* in : {"q", "k", "v"}) inputs[in] = RandomTensor({1, 2, 6, 8}, in[0]);
  inputs["mask"] = RandomTensor({1, 1, 6, 6}, 40, -3, 0);
  Graph g = ImportOnnxModel(SdpaAsPyTorch2Exports());
  Graph compiled = graph::BuildPipeline(graph::PipelineOptions()).Run(g);
  EXPECT_EQ(Count(compiled, "Attention"), 1) << graph::PrintGraph(compiled);
  EXPECT_EQ(Count(compiled, "Softmax"), 0);
  EXPECT_EQ(Count(compiled, "LayerNormalization"), 1);
  EXPECT_EQ(Count(compiled, "RMSNormalization"), 1);
  EXPECT_EQ(Count(compiled, "ReduceMean"), 0);
  for (const auto& n : compiled.nodes)
    if (n.op == "Attention") EXPECT_NEAR(n.attrs.GetFloat("scale"), 1.0 / std::sqrt(8.0), 1e-6);
  EXPECT_LT(Compare(g, compiled, inputs), 1e-5);
}

}  // namespace
}  // namespace onnx_frontend
}  // namespace agate
