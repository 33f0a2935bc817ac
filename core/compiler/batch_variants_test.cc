// A small CNN compiled once for N in 1..8 (variants 1, 2, 4) runs at N = 1, 3, 7 and 8 through
// the host runtime and matches the reference interpreter run on the graph at that N; the
// module's tensors carry the bounds; rows that would mix are refused at compile time.
#include "core/compiler/batch_variants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "agate/runtime.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/support/error.h"

namespace agate {
namespace compiler {
namespace {

using graph::Graph;
using graph::testing::Add;

// x [n, 3, 8, 8] -> conv 3x3 (4 channels) -> relu -> global average pool -> flatten -> matmul -> y
// [n, 5]; and a batch-free output s = sum of the matmul weights.
Graph Cnn(int64_t n, bool mix_rows = false) {
  Graph g;
  g.inputs = {"x"};
  g.types["x"] = graph::TensorType{graph::DType::Float(32), {n, 3, 8, 8}};
  g.constants["w"] = graph::testing::RandomTensor({4, 3, 3, 3}, 11);
  g.types["w"] = graph::TensorType{graph::DType::Float(32), {4, 3, 3, 3}};
  g.constants["fc"] = graph::testing::RandomTensor({4, 5}, 12);
  g.types["fc"] = graph::TensorType{graph::DType::Float(32), {4, 5}};
  Add(&g, "Conv", "conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Add(&g, "Relu", "relu", {"c"}, {"r"});
  Add(&g, "GlobalAveragePool", "gap", {"r"}, {"p"});
  Add(&g, "Flatten", "flat", {"p"}, {"f"});
  if (mix_rows) {
    Add(&g, "Softmax", "batch_softmax", {"f"}, {"f2"}, {{"axis", int64_t{0}}});
    Add(&g, "MatMul", "fc_mm", {"f2", "fc"}, {"y"});
  } else {
    Add(&g, "MatMul", "fc_mm", {"f", "fc"}, {"y"});
  }
  Add(&g, "ReduceSum", "fc_sum", {"fc"}, {"s"}, {{"keepdims", int64_t{0}}});
  return graph::testing::Finish(std::move(g), {"y", "s"});
}

std::string RuntimeError() { return agate_last_error_message(); }

TEST(BatchVariantsTest, ParsesBoundsAndPicksDefaultVariants) {
  BatchSymbol s = ParseBounds("N=1..32");
  EXPECT_EQ(s.name, "N");
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 32);
  EXPECT_EQ(s.variants, std::vector<int64_t>({1, 8, 32}));
  EXPECT_EQ(ParseBounds("B=2..20").variants, std::vector<int64_t>({1, 8}));
  EXPECT_EQ(ParseBounds("N=1..4").variants, std::vector<int64_t>({1, 4}));
  EXPECT_EQ(ParseBounds("N=1..32:4,16").variants, std::vector<int64_t>({1, 4, 16}));
  EXPECT_THROW(ParseBounds("N=1..32:16,4"), Error);
  EXPECT_THROW(ParseBounds("N=8..4"), Error);
  EXPECT_THROW(ParseBounds("N=1-4"), Error);
}

TEST(BatchVariantsTest, OneModuleRunsEveryBatchAndMatchesTheInterpreter) {
  CompileOptions options;
  options.target = "llvm";
  BatchSymbol symbol{"N", 1, 8, {1, 2, 4}};
  CompileResult result = CompileBatchVariants([](int64_t n) { return Cnn(n); }, {"x"}, symbol, options);
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(result.module.data(), result.module.size(), nullptr, &module), AGATE_OK)
      << RuntimeError();
  agate_dim_info dim;
  ASSERT_EQ(agate_module_input_dim(module, 0, 0, &dim), AGATE_OK);
  EXPECT_EQ(dim.kind, AGATE_DIM_SYMBOLIC);
  EXPECT_EQ(dim.max, 8);
  ASSERT_EQ(agate_module_output_dim(module, 0, 0, &dim), AGATE_OK);
  EXPECT_EQ(dim.kind, AGATE_DIM_SYMBOLIC);
  ASSERT_EQ(agate_module_output_dim(module, 1, 0, &dim), AGATE_OUT_OF_RANGE);  // s is a scalar
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  for (int64_t n : {1, 3, 7, 8}) {
    const Graph g = Cnn(n);
    const graph::Tensor x = graph::testing::RandomTensor({n, 3, 8, 8}, static_cast<uint32_t>(100 + n));
    const std::map<std::string, graph::Tensor> want = graph_eval::Interpret(g, {{"x", x}});
    int64_t shape[4] = {n, 3, 8, 8};
    DLTensor in;
    std::memset(&in, 0, sizeof(in));
    in.data = const_cast<void*>(x.raw_data());
    in.device = DLDevice{kDLCPU, 0};
    in.ndim = 4;
    in.dtype = DLDataType{kDLFloat, 32, 1};
    in.shape = shape;
    ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << RuntimeError();
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << RuntimeError();
    DLTensor y;
    ASSERT_EQ(agate_executor_get_output(executor, 0, &y), AGATE_OK);
    ASSERT_EQ(y.shape[0], n);
    ASSERT_EQ(y.shape[1], 5);
    const float* got = static_cast<const float*>(y.data);
    const float* ref = want.at("y").data<float>();
    for (int64_t i = 0; i < n * 5; ++i) EXPECT_NEAR(got[i], ref[i], 1e-4) << "n " << n << " element " << i;
    DLTensor s;
    ASSERT_EQ(agate_executor_get_output(executor, 1, &s), AGATE_OK);
    EXPECT_NEAR(*static_cast<const float*>(s.data), *want.at("s").data<float>(), 1e-4);
  }
  agate_executor_free(executor);
  agate_module_free(module);
}

TEST(BatchVariantsTest, RowsThatMixAreRefusedAtCompileTime) {
  CompileOptions options;
  options.target = "llvm";
  try {
    CompileBatchVariants([](int64_t n) { return Cnn(n, true); }, {"x"}, BatchSymbol{"N", 1, 4, {1, 2}}, options);
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("Softmax 'batch_softmax' combines elements along axis 0, which carries N"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace compiler
}  // namespace agate
