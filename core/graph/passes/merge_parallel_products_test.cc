// Sibling products merged into one: BERT's Q, K and V projections (MatMul +
// bias Add, as PyTorch exports nn.Linear on [B, S, d]), Gemm siblings with C
// and transposed weights, and the cases that must stay apart. Every merge is
// checked on the reference interpreter for bit-identical outputs.
#include "core/graph/passes/merge_parallel_products.h"

#include <gtest/gtest.h>

#include "core/graph/passes/pipeline.h"
#include "core/graph/passes/testing/rewrite_check.h"
#include "core/graph/printer.h"
#include "core/graph/testing/graph_builder.h"

namespace agate {
namespace graph {
namespace {

using testing::Add;
using testing::CountOps;
using testing::Finish;
using testing::OutputDifference;
using testing::RandomTensor;
using Ints = std::vector<int64_t>;

TensorType F32(Shape shape) { return TensorType{DType::Float(32), std::move(shape)}; }

const Node* Find(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return &n;
  return nullptr;
}

// An elementwise reader of `y` (which reads a slice in place), writing r_<y>.
std::string ReadBy(Graph* g, const std::string& y) {
  Add(g, "Relu", "relu_" + y, {y}, {"r_" + y});
  return "r_" + y;
}

// x [1, S, K] -> MatMul(x, w_<name>) [+ b_<name>] -> relu_<name> -> graph output, one per entry of `columns`.
struct Projection {
  std::string name;
  int64_t n = 8;
  bool bias = true;
};
Graph Projections(const std::vector<Projection>& ps, int64_t k = 8) {
  Graph g;
  g.AddInput("x", F32({1, 6, k}));
  std::vector<std::string> outputs;
  uint32_t seed = 11;
  for (const Projection& p : ps) {
    g.AddConstant("w_" + p.name, RandomTensor({k, p.n}, seed++));
    Add(&g, "MatMul", p.name, {"x", "w_" + p.name}, {p.name + "_mm"});
    std::string y = p.name + "_mm";
    if (p.bias) {
      g.AddConstant("b_" + p.name, RandomTensor({p.n}, seed++));
      Add(&g, "Add", p.name + "_bias", {y, "b_" + p.name}, {p.name + "_y"});
      y = p.name + "_y";
    }
    Add(&g, "Relu", "relu_" + p.name, {y}, {"out_" + p.name});
    outputs.push_back("out_" + p.name);
  }
  return Finish(g, outputs);
}

TEST(MergeParallelProductsTest, QkvBecomeOneProductAndOneBiasAdd) {
  Graph g = Projections({{"q"}, {"k"}, {"v", 4}});
  Graph merged = MergeParallelProducts(g);
  EXPECT_EQ(CountOps(merged, "MatMul"), 1);
  EXPECT_EQ(CountOps(merged, "Add"), 1);
  EXPECT_EQ(CountOps(merged, "Slice"), 3);
  const Node* mm = Find(merged, "MatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(merged.TypeOf(mm->inputs[1]).shape, (Shape{8, 20}));
  EXPECT_EQ(merged.TypeOf(mm->outputs[0]).shape, (Shape{1, 6, 20}));
  // The members' weights and biases are gone; the slices write the original values.
  EXPECT_FALSE(merged.IsConstant("w_q"));
  EXPECT_FALSE(merged.IsConstant("b_v"));
  EXPECT_EQ(merged.TypeOf("v_y").shape, (Shape{1, 6, 4}));
  // The printer shows the merged product and its concatenated weight.
  std::string printed = PrintGraph(merged);
  EXPECT_NE(printed.find("q_merged"), std::string::npos) << printed;
  EXPECT_NE(printed.find("[8,20]"), std::string::npos) << printed;
  // Exact: the same sums in the same order.
  EXPECT_EQ(OutputDifference(g, merged), 0.0);
  EXPECT_EQ(OutputDifference(g, merged, 3), 0.0);
}

TEST(MergeParallelProductsTest, BiasesMergeOnlyWhenEveryMemberHasOne) {
  Graph g = Projections({{"q"}, {"k", 8, false}, {"v"}});
  Graph merged = MergeParallelProducts(g);
  EXPECT_EQ(CountOps(merged, "MatMul"), 1);
  EXPECT_EQ(CountOps(merged, "Add"), 2);  // q's and v's, each reading its slice
  EXPECT_EQ(CountOps(merged, "Slice"), 3);
  EXPECT_EQ(OutputDifference(g, merged), 0.0);
}

TEST(MergeParallelProductsTest, RunTimeWeightsStayApart) {
  Graph g = Projections({{"q"}, {"k"}});
  g.AddInput("w_run", F32({8, 8}));
  Add(&g, "MatMul", "run", {"x", "w_run"}, {"run_y"});
  g = Finish(g, {"out_q", "out_k", "run_y"});
  Graph merged = MergeParallelProducts(g);
  EXPECT_EQ(CountOps(merged, "MatMul"), 2);  // q + k merged, the run-time one alone
  const Node* run = nullptr;
  for (const Node& n : merged.nodes)
    if (n.name == "run") run = &n;
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->inputs[1], "w_run");
  EXPECT_EQ(OutputDifference(g, merged), 0.0);
  // Only one constant-weight product left: nothing to merge.
  Graph single = Projections({{"q"}});
  single.AddInput("w_run", F32({8, 8}));
  Add(&single, "MatMul", "run", {"x", "w_run"}, {"run_y"});
  single = Finish(single, {"out_q", "run_y"});
  EXPECT_EQ(CountOps(MergeParallelProducts(single), "Slice"), 0);
}

TEST(MergeParallelProductsTest, DifferentActivationsStayApart) {
  Graph g;
  g.AddInput("x", F32({1, 6, 8}));
  g.AddInput("z", F32({1, 6, 8}));
  g.AddInput("u", F32({1, 6, 16}));  // another K
  g.AddConstant("w1", RandomTensor({8, 8}, 1));
  g.AddConstant("w2", RandomTensor({8, 8}, 2));
  g.AddConstant("w3", RandomTensor({16, 8}, 3));
  Add(&g, "MatMul", "m1", {"x", "w1"}, {"y1"});
  Add(&g, "MatMul", "m2", {"z", "w2"}, {"y2"});
  Add(&g, "MatMul", "m3", {"u", "w3"}, {"y3"});
  g = Finish(g, {ReadBy(&g, "y1"), ReadBy(&g, "y2"), ReadBy(&g, "y3")});
  Graph merged = MergeParallelProducts(g);
  EXPECT_EQ(CountOps(merged, "MatMul"), 3);
  EXPECT_EQ(CountOps(merged, "Slice"), 0);
}

TEST(MergeParallelProductsTest, SharedWeightsAndBiasesStayApart) {
  // w_q is also read by another node: concatenating it would keep two copies.
  Graph g = Projections({{"q"}, {"k"}});
  Add(&g, "Relu", "reads_w_q", {"w_q"}, {"w_q_relu"});
  g = Finish(g, {"out_q", "out_k", "w_q_relu"});
  EXPECT_EQ(CountOps(MergeParallelProducts(g), "MatMul"), 2);
  // A weight that is a graph output.
  Graph out = Projections({{"q"}, {"k"}});
  out = Finish(out, {"out_q", "out_k", "w_k"});
  EXPECT_EQ(CountOps(MergeParallelProducts(out), "MatMul"), 2);
  // One weight read twice by the siblings.
  Graph twice;
  twice.AddInput("x", F32({1, 6, 8}));
  twice.AddConstant("w", RandomTensor({8, 8}, 1));
  Add(&twice, "MatMul", "a", {"x", "w"}, {"ya"});
  Add(&twice, "MatMul", "b", {"x", "w"}, {"yb"});
  twice = Finish(twice, {ReadBy(&twice, "ya"), ReadBy(&twice, "yb")});
  EXPECT_EQ(CountOps(MergeParallelProducts(twice), "MatMul"), 2);
  // A shared bias: the products merge, the Adds stay (each reads its slice and the bias).
  Graph bias = Projections({{"q"}, {"k"}});
  Add(&bias, "Relu", "reads_b_k", {"b_k"}, {"b_k_relu"});
  bias = Finish(bias, {"out_q", "out_k", "b_k_relu"});
  Graph merged = MergeParallelProducts(bias);
  EXPECT_EQ(CountOps(merged, "MatMul"), 1);
  EXPECT_EQ(CountOps(merged, "Add"), 2);
  EXPECT_EQ(OutputDifference(bias, merged), 0.0);
}

TEST(MergeParallelProductsTest, MembersWhoseSliceWouldBeACopyStayApart) {
  // v's result feeds another product and is a graph output: its slice would be a copy kernel.
  Graph g = Projections({{"q"}, {"k"}, {"v"}});
  g.AddInput("other", F32({8, 3}));
  Add(&g, "MatMul", "reads_v", {"v_y", "other"}, {"vz"});
  g = Finish(g, {"out_q", "out_k", "out_v", "vz"});
  Graph merged = MergeParallelProducts(g);
  EXPECT_EQ(CountOps(merged, "MatMul"), 3);  // q + k merged, v alone, reads_v
  EXPECT_EQ(CountOps(merged, "Slice"), 2);
  EXPECT_EQ(OutputDifference(g, merged), 0.0);
  Graph outputs = Projections({{"q"}, {"k"}, {"v"}});
  outputs = Finish(outputs, {"out_q", "out_k", "out_v", "v_y"});
  EXPECT_EQ(CountOps(MergeParallelProducts(outputs), "Slice"), 2);
  // k without a bias keeps q's and v's Adds (reading their slices): then the product k feeds decides.
  Graph unbiased = Projections({{"q"}, {"k", 8, false}, {"v"}});
  Add(&unbiased, "MatMul", "reads_k", {"k_mm", "w_q"}, {"kz"});
  unbiased = Finish(unbiased, {"out_q", "out_v", "kz"});
  Graph m2 = MergeParallelProducts(unbiased);
  EXPECT_EQ(CountOps(m2, "Slice"), 0);  // q and v alone; w_q is shared with reads_k
}

TEST(MergeParallelProductsTest, MixedDtypesStayApart) {
  // One activation has one dtype, and MatMul's operands must share it, so siblings of mixed
  // dtypes read different activations: an fp16 copy of x here.
  Graph g;
  g.AddInput("x", F32({1, 6, 8}));
  g.AddConstant("w1", RandomTensor({8, 8}, 1));
  Tensor w2(DType::Float(16), {8, 8});
  g.AddConstant("w2", w2);
  Add(&g, "Cast", "to_half", {"x"}, {"xh"}, {{"to", Attribute("float16")}});
  Add(&g, "MatMul", "m1", {"x", "w1"}, {"y1"});
  Add(&g, "MatMul", "m2", {"xh", "w2"}, {"y2"});
  g = Finish(g, {ReadBy(&g, "y1"), ReadBy(&g, "y2")});
  EXPECT_EQ(CountOps(MergeParallelProducts(g), "MatMul"), 2);
}

TEST(MergeParallelProductsTest, GemmSiblingsWithCAndTransposedWeights) {
  Graph g;
  g.AddInput("x", F32({5, 8}));
  const int64_t ns[] = {8, 6, 8};
  for (int i = 0; i < 3; ++i) {
    std::string s = std::to_string(i);
    g.AddConstant("w" + s, RandomTensor({ns[i], 8}, 20 + i));  // [N, K]: nn.Linear's layout
    g.AddConstant("c" + s, RandomTensor({ns[i]}, 30 + i));
    Add(&g, "Gemm", "fc" + s, {"x", "w" + s, "c" + s}, {"y" + s}, {{"transB", int64_t{1}}});
  }
  // transA (K = x's rows, not its columns) and another alpha stay apart.
  g.AddConstant("wt", RandomTensor({5, 4}, 40));
  Add(&g, "Gemm", "fc_ta", {"x", "wt"}, {"yt"}, {{"transA", int64_t{1}}});
  g.AddConstant("wa", RandomTensor({4, 8}, 41));
  Add(&g, "Gemm", "fc_alpha", {"x", "wa"}, {"ya"}, {{"transB", int64_t{1}}, {"alpha", 0.5}});
  g = Finish(g, {ReadBy(&g, "y0"), ReadBy(&g, "y1"), ReadBy(&g, "y2"), ReadBy(&g, "yt"), ReadBy(&g, "ya")});
  Graph merged = MergeParallelProducts(g);
  EXPECT_EQ(CountOps(merged, "Gemm"), 3);  // fc0-2 merged, fc_ta, fc_alpha
  const Node* gemm = Find(merged, "Gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->name, "fc0_merged");
  EXPECT_EQ(merged.TypeOf(gemm->inputs[1]).shape, (Shape{22, 8}));
  EXPECT_EQ(merged.TypeOf(gemm->inputs[2]).shape, (Shape{22}));
  EXPECT_EQ(OutputDifference(g, merged), 0.0);
}

// BERT's self-attention through the whole pipeline: the three projections become one
// product, and the slices join the Attention node's kernel with the head split (index
// arithmetic there), so no kernel copies a slice.
TEST(MergeParallelProductsTest, PipelineReadsSlicesInsideTheAttentionKernel) {
  const int64_t seq = 6, heads = 2, head = 4, d = heads * head;
  Graph g;
  g.AddInput("x", F32({1, seq, d}));
  g.AddConstant("divisor", Tensor::Scalar(DType::Float(32), 2.0));
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    std::string n = names[i];
    g.AddConstant("w_" + n, RandomTensor({d, d}, 50 + i));
    g.AddConstant("b_" + n, RandomTensor({d}, 60 + i));
    Add(&g, "MatMul", n + "_proj", {"x", "w_" + n}, {n + "_mm"});
    Add(&g, "Add", n + "_bias", {"b_" + n, n + "_mm"}, {n + "_in"});  // bias first, as exporters often write it
    Add(&g, "Reshape", n + "_reshape", {n + "_in"}, {n + "4"}, {{"shape", Ints{1, seq, heads, head}}});
    Add(&g, "Transpose", n + "_t", {n + "4"}, {n}, {{"perm", i == 1 ? Ints{0, 2, 3, 1} : Ints{0, 2, 1, 3}}});
  }
  Add(&g, "MatMul", "scores", {"q", "k"}, {"s"});
  Add(&g, "Div", "scale", {"s", "divisor"}, {"ss"});
  Add(&g, "Softmax", "softmax", {"ss"}, {"p"}, {{"axis", int64_t{-1}}});
  Add(&g, "MatMul", "context", {"p", "v"}, {"c"});
  g = Finish(g, {"c"});

  PipelineOptions options;
  Graph compiled = BuildPipeline(options).Run(g);
  EXPECT_EQ(CountOps(compiled, "MatMul"), 1);
  EXPECT_EQ(CountOps(compiled, "Attention"), 1);
  EXPECT_EQ(CountOps(compiled, "Slice"), 3);
  for (const FusedGroup& group : compiled.groups) {
    bool has_slice = false, has_attention = false;
    for (int i : group.nodes) {
      has_slice = has_slice || compiled.nodes[i].op == "Slice";
      has_attention = has_attention || compiled.nodes[i].op == "Attention";
    }
    EXPECT_EQ(has_slice, has_attention) << "a slice outside the attention's kernel";
  }
  EXPECT_LT(OutputDifference(g, compiled), 1e-5);

  options.merge_parallel_products = false;
  EXPECT_EQ(CountOps(BuildPipeline(options).Run(g), "MatMul"), 3);
}

}  // namespace
}  // namespace graph
}  // namespace agate
