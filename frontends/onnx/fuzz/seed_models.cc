#include "frontends/onnx/fuzz/seed_models.h"

#include "core/graph/tensor.h"
#include "frontends/onnx/model_builder.h"

namespace agate {
namespace onnx_frontend {
namespace {

using graph::DType;
using graph::Tensor;
using Ints = std::vector<int64_t>;
constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

Tensor Floats(const graph::Shape& shape) {
  std::vector<double> v(graph::NumElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.125 * static_cast<double>(i % 17) - 1.0;
  return Tensor::FromDoubles(DType::Float(32), shape, v);
}

Tensor I64(const Ints& values) { return Tensor::FromInts(DType::Int(64), {static_cast<int64_t>(values.size())}, values); }

onnx::ModelProto ConvReluReshape() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 2, 6, 6}).Initializer("w", Floats({3, 2, 3, 3})).Initializer("shape", I64({1, -1}));
  b.Node("Conv", {"x", "w"}, {"c"}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{1, 1}}});
  b.Node("Relu", {"c"}, {"r"});
  b.Node("Reshape", {"r", "shape"}, {"y"});
  b.Output("y");
  return b.Build();
}

onnx::ModelProto PoolSoftmax() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 3, 8, 8});
  b.Node("MaxPool", {"x"}, {"p"}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  b.Node("AveragePool", {"p"}, {"a"}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
  b.Node("Flatten", {"a"}, {"f"}, {{"axis", int64_t{1}}});
  b.Node("Softmax", {"f"}, {"y"}, {{"axis", int64_t{-1}}});
  b.Output("y");
  return b.Build();
}

onnx::ModelProto GemmConcatSlice() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 4}).Initializer("w", Floats({4, 3})).Initializer("bias", Floats({3}));
  b.Initializer("starts", I64({0})).Initializer("ends", I64({2})).Initializer("axes", I64({1}));
  b.Node("Gemm", {"x", "w", "bias"}, {"g"}, {{"alpha", 0.5}});
  b.Node("Concat", {"g", "g"}, {"c"}, {{"axis", int64_t{1}}});
  b.Node("Slice", {"c", "starts", "ends", "axes"}, {"y"});
  b.Output("y");
  return b.Build();
}

onnx::ModelProto CumSumTriluTranspose() {
  ModelBuilder b(14);
  b.Input("x", kFloat, {3, 4}).Initializer("axis", I64({1})).Initializer("k", I64({0}));
  b.Node("CumSum", {"x", "axis"}, {"c"});
  b.Node("Trilu", {"c", "k"}, {"t"}, {{"upper", int64_t{1}}});
  b.Node("Transpose", {"t"}, {"y"}, {{"perm", Ints{1, 0}}});
  b.Output("y");
  return b.Build();
}

onnx::ModelProto PadGatherReduce() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3}).Initializer("pads", I64({0, 1, 0, 1})).Initializer("idx", I64({0, 2, 1}));
  b.Initializer("axes", I64({1}));
  b.Node("Pad", {"x", "pads"}, {"p"}, {{"mode", "constant"}});
  b.Node("Gather", {"p", "idx"}, {"g"}, {{"axis", int64_t{1}}});
  b.Node("ReduceSum", {"g", "axes"}, {"y"}, {{"keepdims", int64_t{0}}});
  b.Output("y");
  return b.Build();
}

onnx::ModelProto TopKOneHotCast() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 5}).Initializer("k", I64({2})).Initializer("depth", I64({4}));
  b.Initializer("values", Floats({2}));
  b.Node("TopK", {"x", "k"}, {"v", "i"}, {{"axis", int64_t{1}}});
  b.Node("OneHot", {"i", "depth", "values"}, {"o"}, {{"axis", int64_t{-1}}});
  b.Node("Cast", {"o"}, {"y"}, {{"to", int64_t{onnx::TensorProto::DOUBLE}}});
  b.Output("y");
  b.Output("v");
  return b.Build();
}

onnx::ModelProto ResizeUnsqueeze() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 1, 2, 2}).Initializer("roi", Floats({0})).Initializer("scales", Floats({4}));
  b.Initializer("axes", I64({0}));
  onnx::ModelProto m;
  b.Node("Resize", {"x", "roi", "scales"}, {"r"}, {{"mode", "nearest"}});
  b.Node("Unsqueeze", {"r", "axes"}, {"y"});
  b.Output("y");
  m = b.Build();
  // scales = [1, 1, 2, 2]
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (init.name() != "scales") continue;
    float s[4] = {1, 1, 2, 2};
    init.set_raw_data(std::string(reinterpret_cast<const char*>(s), sizeof(s)));
  }
  return m;
}

// An initializer in weights.bin (external data), added to a MatMul.
onnx::ModelProto ExternalWeights() {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 4});
  b.Node("MatMul", {"x", "w"}, {"y"});
  b.Output("y");
  onnx::ModelProto m = b.Build();
  onnx::TensorProto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(kFloat);
  w->add_dims(4);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] : {std::pair<const char*, const char*>{"location", "weights.bin"}, {"offset", "64"},
                            {"length", "64"}}) {
    auto* e = w->add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
  return m;
}

// Integer and boolean paths: Where, Equal, ArgMax, Expand.
onnx::ModelProto IntegerOps() {
  ModelBuilder b(13);
  b.Input("a", kInt64, {2, 3}).Input("x", kFloat, {2, 3}).Initializer("shape", I64({2, 2, 3}));
  b.Node("Equal", {"a", "a"}, {"e"});
  b.Node("Where", {"e", "x", "x"}, {"w"});
  b.Node("ArgMax", {"w"}, {"m"}, {{"axis", int64_t{1}}, {"keepdims", int64_t{1}}});
  b.Node("Expand", {"w", "shape"}, {"y"});
  b.Output("y");
  b.Output("m");
  return b.Build();
}

// RoiAlign of run-time regions into square bins, then each bin grid's determinant: the compiled
// kernels whose loops depend on values (an adaptive sample grid, pivoting).
onnx::ModelProto RoiAlignDet() {
  ModelBuilder b(16);
  b.Input("x", kFloat, {1, 2, 6, 6}).Input("rois", kFloat, {2, 4}).Initializer("batch", I64({0, 0}));
  b.Node("RoiAlign", {"x", "rois", "batch"}, {"r"},
         {{"output_height", int64_t{3}}, {"output_width", int64_t{3}}, {"sampling_ratio", int64_t{0}}});
  b.Node("Det", {"r"}, {"y"});
  b.Output("y");
  return b.Build();
}

// TfIdfVectorizer of run-time token rows: the packed pool attributes (ngram_counts, ngram_indexes,
// weights) a mutation can make inconsistent, and the compiled n-gram scan.
onnx::ModelProto TfIdf() {
  ModelBuilder b(9);
  b.Input("tokens", kInt64, {2, 7});
  b.Node("TfIdfVectorizer", {"tokens"}, {"y"},
         {{"mode", std::string("TFIDF")},
          {"min_gram_length", int64_t{1}},
          {"max_gram_length", int64_t{2}},
          {"max_skip_count", int64_t{2}},
          {"ngram_counts", Ints{0, 3}},
          {"ngram_indexes", Ints{0, 1, 2, 3, 4}},
          {"pool_int64s", Ints{1, 2, 3, 1, 2, 3, 1}},
          {"weights", std::vector<double>{0.5, 1.0, 1.5, 2.0, 2.5}}});
  b.Output("y");
  return b.Build();
}

}  // namespace

std::vector<std::pair<std::string, onnx::ModelProto>> SeedModels() {
  return {{"conv_relu_reshape", ConvReluReshape()}, {"pool_softmax", PoolSoftmax()},
          {"gemm_concat_slice", GemmConcatSlice()},  {"cumsum_trilu_transpose", CumSumTriluTranspose()},
          {"pad_gather_reduce", PadGatherReduce()},  {"topk_onehot_cast", TopKOneHotCast()},
          {"resize_unsqueeze", ResizeUnsqueeze()},   {"external_weights", ExternalWeights()},
          {"integer_ops", IntegerOps()},             {"roi_align_det", RoiAlignDet()},
          {"tfidf", TfIdf()}};
}

}  // namespace onnx_frontend
}  // namespace agate
