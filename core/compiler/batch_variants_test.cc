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
#include "core/serialize/serialize_module.h"
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

// A compact float32 CPU tensor over `data` (borrowed) of `ndim` axes `shape` (borrowed).
DLTensor Float32Tensor(void* data, int32_t ndim, int64_t* shape) {
  DLTensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  return t;
}

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
    DLTensor in = Float32Tensor(const_cast<void*>(x.raw_data()), 4, shape);
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

// x [1, s, 8] -> self-attention (scores over s, softmax, a product over s) -> y [1, s, 8], and the
// mean over s -> m [1, 8].
Graph Attention(int64_t s) {
  Graph g;
  g.inputs = {"x"};
  g.types["x"] = graph::TensorType{graph::DType::Float(32), {1, s, 8}};
  g.constants["wq"] = graph::testing::RandomTensor({8, 8}, 21);
  g.types["wq"] = graph::TensorType{graph::DType::Float(32), {8, 8}};
  Add(&g, "MatMul", "q", {"x", "wq"}, {"q"});
  Add(&g, "Transpose", "kt", {"x"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Add(&g, "MatMul", "scores", {"q", "kt"}, {"s"});
  Add(&g, "Softmax", "probs", {"s"}, {"p"}, {{"axis", int64_t{-1}}});
  Add(&g, "MatMul", "mix", {"p", "x"}, {"y"});
  Add(&g, "ReduceMean", "mean", {"y"}, {"m"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  return graph::testing::Finish(std::move(g), {"y", "m"});
}

Graph AttentionAt(const std::map<std::string, int64_t>& at) { return Attention(at.at("S")); }

TEST(PaddedVariantsTest, DefaultVariantsDoubleUpToTheBound) {
  EXPECT_EQ(DefaultPaddedVariants(1, 128), std::vector<int64_t>({16, 32, 64, 128}));
  EXPECT_EQ(DefaultPaddedVariants(1, 16), std::vector<int64_t>({16}));
  EXPECT_EQ(DefaultPaddedVariants(1, 48), std::vector<int64_t>({16, 32, 48}));
  EXPECT_EQ(DefaultPaddedVariants(40, 512), std::vector<int64_t>({64, 128, 256, 512}));
  EXPECT_EQ(DefaultPaddedVariants(1, 8), std::vector<int64_t>({8}));
}

TEST(PaddedVariantsTest, OneModuleRunsEverySequenceLengthAndMatchesTheInterpreter) {
  CompileOptions options;
  options.target = "llvm";
  BatchSymbol symbol = ParseBounds("S=1..8:4");
  CompileResult result = CompileSymbolVariants(AttentionAt, {"x"}, {symbol}, options);
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(result.module.data(), result.module.size(), nullptr, &module), AGATE_OK)
      << RuntimeError();
  agate_dim_info dim;
  ASSERT_EQ(agate_module_input_dim(module, 0, 1, &dim), AGATE_OK);
  EXPECT_EQ(dim.kind, AGATE_DIM_SYMBOLIC);
  EXPECT_EQ(dim.max, 8);
  ASSERT_EQ(agate_module_input_dim(module, 0, 0, &dim), AGATE_OK);
  EXPECT_EQ(dim.kind, AGATE_DIM_STATIC);
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  for (int64_t n : {5, 1, 3, 4, 8, 2}) {  // variant 8, then 4, then 8 again: no stale padding
    const graph::Tensor x = graph::testing::RandomTensor({1, n, 8}, static_cast<uint32_t>(200 + n));
    const std::map<std::string, graph::Tensor> want = graph_eval::Interpret(Attention(n), {{"x", x}});
    int64_t shape[3] = {1, n, 8};
    DLTensor in = Float32Tensor(const_cast<void*>(x.raw_data()), 3, shape);
    ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << RuntimeError();
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << RuntimeError();
    for (const char* name : {"y", "m"}) {
      DLTensor out;
      ASSERT_EQ(agate_executor_get_output(executor, name[0] == 'y' ? 0 : 1, &out), AGATE_OK);
      const graph::Tensor& ref = want.at(name);
      ASSERT_EQ(out.ndim, ref.rank());
      for (int d = 0; d < out.ndim; ++d) ASSERT_EQ(out.shape[d], ref.shape()[d]) << name << " n " << n;
      const float* got = static_cast<const float*>(out.data);
      for (int64_t i = 0; i < ref.numel(); ++i) EXPECT_NEAR(got[i], ref.data<float>()[i], 1e-4) << name << " n " << n;
    }
  }
  int64_t too_long[3] = {1, 9, 8};
  std::vector<float> nine(72, 0.0f);
  DLTensor in = Float32Tensor(nine.data(), 3, too_long);
  EXPECT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_INVALID_ARGUMENT);
  EXPECT_NE(RuntimeError().find("input 0 'x' has extent 9 on axis 1 (symbol S), outside its bounds 1..8"),
            std::string::npos)
      << RuntimeError();
  uint64_t call_ns = 0;
  EXPECT_EQ(agate_executor_run_profiled(executor, &call_ns, 0), AGATE_UNSUPPORTED);
  EXPECT_NE(RuntimeError().find("each run runs one of its 2 plan variants, which are not profiled"), std::string::npos)
      << RuntimeError();
  agate_executor_free(executor);
  agate_module_free(module);
}

// x [b, s, 8] -> per item, attention over s -> y [b, s, 8], and the mean over s -> m [b, 8].
Graph BatchedAttention(const std::map<std::string, int64_t>& at) {
  const int64_t b = at.at("B"), s = at.at("S");
  Graph g;
  g.inputs = {"x"};
  g.types["x"] = graph::TensorType{graph::DType::Float(32), {b, s, 8}};
  g.constants["wq"] = graph::testing::RandomTensor({8, 8}, 22);
  g.types["wq"] = graph::TensorType{graph::DType::Float(32), {8, 8}};
  Add(&g, "MatMul", "q", {"x", "wq"}, {"q"});
  Add(&g, "Transpose", "kt", {"x"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  Add(&g, "MatMul", "scores", {"q", "kt"}, {"s"});
  Add(&g, "Softmax", "probs", {"s"}, {"p"}, {{"axis", int64_t{-1}}});
  Add(&g, "MatMul", "mix", {"p", "x"}, {"y"});
  Add(&g, "ReduceMean", "mean", {"y"}, {"m"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  return graph::testing::Finish(std::move(g), {"y", "m"});
}

TEST(PaddedVariantsTest, ABatchAndASequenceLengthAtOnce) {
  CompileOptions options;
  options.target = "llvm";
  const CompileResult result =
      CompileSymbolVariants(BatchedAttention, {"x"}, {ParseBounds("B=1..3:1"), ParseBounds("S=1..8:4")}, options);
  ASSERT_EQ(result.spec.dynamic_shapes.variants.size(), 4u);  // B in {1, 3} x S in {4, 8}
  agate_module_t* module = nullptr;
  ASSERT_EQ(agate_module_load_from_memory(result.module.data(), result.module.size(), nullptr, &module), AGATE_OK)
      << RuntimeError();
  agate_dim_info dim;
  ASSERT_EQ(agate_module_input_dim(module, 0, 0, &dim), AGATE_OK);
  EXPECT_EQ(std::string(dim.symbol), "B");
  ASSERT_EQ(agate_module_input_dim(module, 0, 1, &dim), AGATE_OK);
  EXPECT_EQ(std::string(dim.symbol), "S");
  agate_executor_t* executor = nullptr;
  ASSERT_EQ(agate_executor_create(module, nullptr, &executor), AGATE_OK);
  for (auto [b, s] : {std::make_pair(2, 5), std::make_pair(1, 1), std::make_pair(3, 8), std::make_pair(1, 4)}) {
    const graph::Tensor x = graph::testing::RandomTensor({b, s, 8}, static_cast<uint32_t>(300 + 10 * b + s));
    const auto want = graph_eval::Interpret(BatchedAttention({{"B", b}, {"S", s}}), {{"x", x}});
    int64_t shape[3] = {b, s, 8};
    DLTensor in = Float32Tensor(const_cast<void*>(x.raw_data()), 3, shape);
    ASSERT_EQ(agate_executor_set_input(executor, 0, &in), AGATE_OK) << RuntimeError();
    ASSERT_EQ(agate_executor_run(executor), AGATE_OK) << RuntimeError();
    for (uint32_t o = 0; o < 2; ++o) {
      DLTensor out;
      ASSERT_EQ(agate_executor_get_output(executor, o, &out), AGATE_OK);
      const graph::Tensor& ref = want.at(o == 0 ? "y" : "m");
      ASSERT_EQ(out.ndim, ref.rank());
      for (int d = 0; d < out.ndim; ++d) ASSERT_EQ(out.shape[d], ref.shape()[d]) << "B " << b << " S " << s;
      for (int64_t i = 0; i < ref.numel(); ++i) {
        EXPECT_NEAR(static_cast<const float*>(out.data)[i], ref.data<float>()[i], 1e-4) << "B " << b << " S " << s;
      }
    }
  }
  agate_executor_free(executor);
  agate_module_free(module);
  serialize::ModuleSpec missing = result.spec;
  missing.dynamic_shapes.variants.erase(missing.dynamic_shapes.variants.begin() + 1);  // B=1, S=8
  const std::vector<uint8_t> bytes = serialize::SerializeModuleUnverifiedForTesting(missing);
  EXPECT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_CORRUPT);
  EXPECT_NE(RuntimeError().find("has 3 variants, not the 4 combinations of its symbols' extents"), std::string::npos)
      << RuntimeError();
}

TEST(PaddedVariantsTest, CorruptPaddedDescriptionsAreRefusedWhenLoading) {
  CompileOptions options;
  options.target = "llvm";
  const CompileResult result = CompileSymbolVariants(AttentionAt, {"x"}, {ParseBounds("S=1..8:4")}, options);
  auto load_fails = [](serialize::ModuleSpec spec, const std::string& expected) {
    const std::vector<uint8_t> bytes = serialize::SerializeModuleUnverifiedForTesting(spec);
    agate_module_t* module = nullptr;
    EXPECT_EQ(agate_module_load_from_memory(bytes.data(), bytes.size(), nullptr, &module), AGATE_CORRUPT) << expected;
    EXPECT_NE(RuntimeError().find(expected), std::string::npos) << RuntimeError();
    agate_module_free(module);
  };
  serialize::ModuleSpec spec = result.spec;
  spec.dynamic_shapes.inputs[0].staging += 8;
  load_fails(spec, "'x' (3 dimensions) has its staging buffer at");
  spec = result.spec;
  spec.dynamic_shapes.extent_slots[0] = spec.arena_bytes;
  load_fails(spec, "extent slot");
  spec = result.spec;
  spec.dynamic_shapes.variants.pop_back();
  load_fails(spec, "largest variant extent is 4, not its upper bound 8");
  spec = result.spec;
  spec.dynamic_shapes.variants[0].plan[0].args[0] = serialize::ArgSpec::Input(0, 4);
  load_fails(spec, "passes input 0, which carries the padded symbol, other than through its staging buffer");
}

}  // namespace
}  // namespace compiler
}  // namespace agate
