#include "frontends/onnx/importer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>

#include "core/graph/printer.h"
#include "core/graph_eval/interpreter.h"
#include "core/ir/float16.h"
#include "core/support/error.h"
#include "core/support/testing/memory_cap.h"
#include "frontends/onnx/model_builder.h"
#include "frontends/onnx/tensor_proto.h"

namespace agate {
namespace onnx_frontend {
namespace {

using graph::DType;
using graph::Graph;
using graph::Shape;
using graph::Tensor;
constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

Tensor Floats(const Shape& shape, double start = 0.0) {
  std::vector<double> v(graph::NumElements(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + 0.25 * static_cast<double>(i);
  return Tensor::FromDoubles(DType::Float(32), shape, v);
}

Tensor Ints(const std::vector<int64_t>& values) {
  return Tensor::FromInts(DType::Int(64), {static_cast<int64_t>(values.size())}, values);
}

// Expects `fn` to throw an agate::Error with `code` whose message contains every fragment.
template <typename Fn>
void ExpectError(Fn fn, StatusCode code, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& f : fragments) EXPECT_NE(e.message().find(f), std::string::npos) << e.what();
  }
}

TEST(ImporterTest, ImportsAConvWithInitializers) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 2, 5, 5}).Initializer("w", Floats({3, 2, 3, 3})).Initializer("bias", Floats({3}));
  b.Node("Conv", {"x", "w", "bias"}, {"y"},
         {{"pads", std::vector<int64_t>{1, 0, 1, 0}}, {"strides", std::vector<int64_t>{2, 1}}}, "conv");
  b.Output("y", kFloat, {1, 3, 3, 3}, true);
  Graph g = ImportOnnxModel(b.Build());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "Conv");
  EXPECT_TRUE(g.IsConstant("w"));
  EXPECT_EQ(g.TypeOf("y").shape, (Shape{1, 3, 3, 3}));
  EXPECT_NE(graph::PrintGraph(g).find("%y: float32[1,3,3,3] = Conv(%x, %w, %bias)"), std::string::npos)
      << graph::PrintGraph(g);
}

TEST(ImporterTest, FoldsShapeSubgraphsIntoAttributes) {
  // The flatten PyTorch exports: Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape.
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3, 4});
  b.Initializer("zero", Tensor::FromInts(DType::Int(64), {}, {0}));
  b.Initializer("axes", Ints({0}));
  b.Initializer("minus_one", Ints({-1}));
  b.Node("Shape", {"x"}, {"shape"});
  b.Node("Gather", {"shape", "zero"}, {"batch"}, {{"axis", int64_t{0}}});
  b.Node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  b.Node("Concat", {"batch1", "minus_one"}, {"target"}, {{"axis", int64_t{0}}});
  b.Node("Reshape", {"x", "target"}, {"y"});
  b.Output("y");
  Graph g = ImportOnnxModel(b.Build());
  ASSERT_EQ(g.nodes.size(), 1u) << graph::PrintGraph(g);
  EXPECT_EQ(g.nodes[0].op, "Reshape");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(g.nodes[0].attrs.GetInts("shape"), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(g.TypeOf("y").shape, (Shape{2, 12}));
}

// A Reshape whose shape arrives at run time: a RunTimeReshape whose output's extents are known
// after the run, bounded at compile time (every extent at most the 6 elements), the extents a
// second graph output that callers do not see.
TEST(ImporterTest, RuntimeShapeOperandGivesRunTimeExtents) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3}).Input("shape", kInt64, {2});
  b.Node("Reshape", {"x", "shape"}, {"y"}, {}, "reshape");
  b.Output("y");
  Graph run_time = ImportOnnxModel(b.Build());
  ASSERT_EQ(run_time.nodes.size(), 1u);
  EXPECT_EQ(run_time.nodes[0].op, "RunTimeReshape");
  EXPECT_EQ(run_time.nodes[0].attrs.GetString("form"), "Reshape");
  EXPECT_EQ(run_time.run_time_extents, (std::map<std::string, std::string>{{"y", "y_extents"}}));
  EXPECT_EQ(run_time.outputs, (std::vector<std::string>{"y", "y_extents"}));
  EXPECT_EQ(run_time.VisibleOutputs(), (std::vector<std::string>{"y"}));
  EXPECT_EQ(run_time.TypeOf("y").shape, (Shape{6, 6}));
  EXPECT_EQ(run_time.TypeOf("y_extents").shape, (Shape{2}));
  EXPECT_EQ(StaticOperandInputs(b.Build()), (std::set<std::string>{"shape"}));
  ImportOptions options;
  options.input_values["shape"] = Ints({3, 2});
  Graph g = ImportOnnxModel(b.Build(), options);
  EXPECT_EQ(g.TypeOf("y").shape, (Shape{3, 2}));
  EXPECT_EQ(g.inputs, (std::vector<std::string>{"x"}));
}

// `agate compile --input-value`: a frozen input must be an input and match its declaration.
TEST(ImporterTest, BoundInputValuesAreChecked) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3}).Input("shape", kInt64, {2});
  b.Node("Reshape", {"x", "shape"}, {"y"}, {}, "reshape");
  b.Output("y");
  ImportOptions options;
  options.input_values["shape"] = Floats({2});
  ExpectError([&] { ImportOnnxModel(b.Build(), options); }, StatusCode::kInvalidArgument,
              {"--input-value", "'shape'", "float32", "int64"});
  options.input_values["shape"] = Ints({3, 2, 1});
  ExpectError([&] { ImportOnnxModel(b.Build(), options); }, StatusCode::kInvalidArgument,
              {"--input-value", "'shape'", "extent 3 on axis 0", "declares 2"});
  options.input_values.clear();
  options.input_values["nope"] = Ints({3, 2});
  ExpectError([&] { ImportOnnxModel(b.Build(), options); }, StatusCode::kNotFound, {"--input-value", "'nope'"});
  // A symbolic dimension takes the value's extent.
  ModelBuilder open_shape(13);
  open_shape.Input("x", kFloat, {2, 3}).Input("shape", kInt64, {-1});
  open_shape.Node("Reshape", {"x", "shape"}, {"y"}, {}, "reshape");
  open_shape.Output("y");
  options.input_values.clear();
  options.input_values["shape"] = Ints({3, 1, 2});
  EXPECT_EQ(ImportOnnxModel(open_shape.Build(), options).TypeOf("y").shape, (Shape{3, 1, 2}));
}

TEST(ImporterTest, InputShapeOverridesSymbolicDimensions) {
  ModelBuilder b(13);
  b.Input("data", kFloat, {-1, 3, 8, 8});
  b.Node("Relu", {"data"}, {"y"});
  b.Output("y");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kInvalidArgument, {"data", "--input-shape"});
  ImportOptions options;
  options.input_shapes = ParseInputShapes("data:4x3x8x8");
  EXPECT_EQ(ImportOnnxModel(b.Build(), options).TypeOf("y").shape, (Shape{4, 3, 8, 8}));
  options.input_shapes = ParseInputShapes("other:1x2");
  ExpectError([&] { ImportOnnxModel(b.Build(), options); }, StatusCode::kNotFound, {"other"});
}

TEST(ImporterTest, ParsesInputShapeFlags) {
  auto shapes = ParseInputShapes("data:1x3x224x224,mask:1x128");
  EXPECT_EQ(shapes.at("data"), (Shape{1, 3, 224, 224}));
  EXPECT_EQ(shapes.at("mask"), (Shape{1, 128}));
  EXPECT_THROW(ParseInputShapes("data"), Error);
  EXPECT_THROW(ParseInputShapes("data:1xax3"), Error);
}

TEST(ImporterTest, ListsEveryUnsupportedNodeAtOnce) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3});
  b.Node("Relu", {"x"}, {"a"}, {}, "fine");
  b.Node("Bernoulli", {"a"}, {"b"}, {}, "first_bad");
  b.Node("Relu", {"b"}, {"c"}, {{"bogus", int64_t{1}}}, "bad_attr");
  b.Node("StringNormalizer", {"c"}, {"d"}, {}, "second_bad");
  b.Output("d");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kUnsupported,
              {"3 unsupported nodes", "'first_bad' (Bernoulli, opset 13)", "'bad_attr' (Relu, opset 13): attribute 'bogus'",
               "'second_bad' (StringNormalizer, opset 13)"});
}

TEST(ImporterTest, MalformedBytesAreCleanErrors) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3}).Initializer("w", Floats({3, 3}));
  b.Node("MatMul", {"x", "w"}, {"y"});
  b.Output("y");
  std::string bytes = b.Serialize();
  // Truncated: cut inside the initializer's raw data.
  ExpectError([&] { ParseModel(bytes.substr(0, bytes.size() / 2), "truncated.onnx"); }, StatusCode::kCorrupt,
              {"truncated.onnx"});
  // Wrong magic: a PNG header, then text.
  ExpectError([&] { ParseModel(std::string("\x89PNG\r\n\x1a\n", 8) + "not a model", "image.png"); },
              StatusCode::kCorrupt, {"image.png"});
  ExpectError([&] { ParseModel("", "empty.onnx"); }, StatusCode::kCorrupt, {"empty.onnx"});
  ExpectError([&] { ParseModel("hello world", "text.onnx"); }, StatusCode::kCorrupt, {"text.onnx"});
  EXPECT_NO_THROW(ParseModel(bytes, "model.onnx"));
}

TEST(ImporterTest, MissingTensorIsNamed) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2});
  b.Node("Add", {"x", "ghost"}, {"y"}, {}, "adder");
  b.Output("y");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kInvalidArgument, {"adder", "ghost"});
}

TEST(ImporterTest, CycleIsNamed) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2});
  b.Node("Add", {"x", "c"}, {"a"}, {}, "first");
  b.Node("Relu", {"a"}, {"c"}, {}, "second");
  b.Output("c");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kInvalidArgument, {"cycle", "first", "second"});
}

TEST(ImporterTest, ShapeMismatchIsNamed) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3}).Input("z", kFloat, {4, 3});
  b.Node("Add", {"x", "z"}, {"y"}, {}, "bad_add");
  b.Output("y");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kInvalidArgument, {"bad_add", "[2,3]", "[4,3]"});
  ModelBuilder c(13);
  c.Input("x", kFloat, {2, 3});
  c.Node("Relu", {"x"}, {"y"});
  c.Output("y", kFloat, {3, 2}, true);
  ExpectError([&] { ImportOnnxModel(c.Build()); }, StatusCode::kInvalidArgument, {"shape mismatch", "'y'", "[3,2]"});
}

TEST(ImporterTest, OpsetOutOfRangeIsUnsupported) {
  ModelBuilder b(kMaxOpset + 1);
  b.Input("x", kFloat, {2});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kUnsupported,
              {"opset " + std::to_string(kMaxOpset + 1), "1 to " + std::to_string(kMaxOpset)});
}

TEST(ImporterTest, FollowsExternalData) {
  std::string dir = ::testing::TempDir() + "/external_model";
  std::filesystem::create_directories(dir);
  Tensor w = Floats({2, 2}, 1.0);
  {
    std::ofstream file(dir + "/weights.bin", std::ios::binary);
    file << "PAD!";  // the tensor starts at offset 4
    file.write(static_cast<const char*>(w.raw_data()), static_cast<std::streamsize>(w.nbytes()));
  }
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 2});
  b.Node("Add", {"x", "w"}, {"y"});
  b.Output("y");
  onnx::ModelProto model = b.Build();
  onnx::TensorProto* init = model.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(kFloat);
  init->add_dims(2);
  init->add_dims(2);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_entry = [init](const std::string& key, const std::string& value) {
    auto* e = init->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  add_entry("location", "weights.bin");
  add_entry("offset", "4");
  add_entry("length", std::to_string(w.nbytes()));
  {
    std::ofstream file(dir + "/model.onnx", std::ios::binary);
    file << model.SerializeAsString();
  }
  Graph g = ImportOnnxFile(dir + "/model.onnx");
  EXPECT_TRUE(graph::BitwiseEqual(g.ConstantOf("w"), w));
  // A missing external file is an I/O error naming it.
  std::filesystem::remove(dir + "/weights.bin");
  ExpectError([&] { ImportOnnxFile(dir + "/model.onnx"); }, StatusCode::kIo, {"weights.bin"});
}

// External data whose declared offset, length or shape is hostile: each is a kCorrupt error
// naming the tensor, decided before anything of the declared size is allocated.
class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/hostile_external";
    std::filesystem::create_directories(dir_);
    std::ofstream file(dir_ + "/weights.bin", std::ios::binary);
    file << "0123456789abcdef";  // 16 bytes
  }
  // A model whose initializer 'w' (float32, `dims`) lives in weights.bin with these entries.
  std::string WriteModel(const std::vector<int64_t>& dims, const std::vector<std::pair<std::string, std::string>>& entries) {
    ModelBuilder b(13);
    b.Input("x", kFloat, dims);
    b.Node("Add", {"x", "w"}, {"y"});
    b.Output("y");
    onnx::ModelProto model = b.Build();
    onnx::TensorProto* init = model.mutable_graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(kFloat);
    for (int64_t d : dims) init->add_dims(d);
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : entries) {
      auto* e = init->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    std::string path = dir_ + "/model.onnx";
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << model.SerializeAsString();
    return path;
  }
  // Imports under a 512 MiB allocation cap: the outcome must be an agate::Error with `code`.
  void ExpectCappedError(const std::string& path, StatusCode code) {
    agate::testing::CappedOutcome outcome = agate::testing::RunWithMemoryCap([&] { ImportOnnxFile(path); });
    EXPECT_TRUE(outcome.threw_agate_error && outcome.code == code) << outcome.description;
  }
  std::string dir_;
};

TEST_F(ExternalDataTest, OffsetThatDoesNotFitIsCorrupt) {
  std::string path = WriteModel({2, 2}, {{"location", "weights.bin"}, {"offset", "99999999999999999999"}});
  ExpectError([&] { ImportOnnxFile(path); }, StatusCode::kCorrupt, {"'w'", "offset"});
  path = WriteModel({2, 2}, {{"location", "weights.bin"}, {"offset", "-4"}});
  ExpectError([&] { ImportOnnxFile(path); }, StatusCode::kCorrupt, {"'w'", "offset"});
  path = WriteModel({2, 2}, {{"location", "weights.bin"}, {"offset", "4x"}});
  ExpectError([&] { ImportOnnxFile(path); }, StatusCode::kCorrupt, {"'w'", "offset"});
}

TEST_F(ExternalDataTest, HugeLengthIsNotAllocated) {
  std::string path = WriteModel({2, 2}, {{"location", "weights.bin"}, {"length", "1099511627776"}});
  ExpectCappedError(path, StatusCode::kCorrupt);
  ExpectError([&] { ImportOnnxFile(path); }, StatusCode::kCorrupt, {"'w'", "length"});
}

TEST_F(ExternalDataTest, HugeShapeIsCheckedAgainstTheFileSize) {
  // 2^38 float32 (1 TiB) declared, 16 bytes in the file.
  std::string path = WriteModel({int64_t{1} << 20, int64_t{1} << 18}, {{"location", "weights.bin"}});
  ExpectCappedError(path, StatusCode::kCorrupt);
  path = WriteModel({2, 2}, {{"location", "weights.bin"}, {"offset", "8"}});  // 16 bytes needed, 8 left
  ExpectError([&] { ImportOnnxFile(path); }, StatusCode::kCorrupt, {"'w'", "weights.bin"});
}

TEST_F(ExternalDataTest, DirectoryAsDataFileIsAnError) {
  std::filesystem::create_directories(dir_ + "/folder");
  std::string path = WriteModel({2, 2}, {{"location", "folder"}});
  ExpectError([&] { ImportOnnxFile(path); }, StatusCode::kIo, {"'w'", "folder"});
}

// A raw_data tensor declaring 2^39 elements with 4 bytes of data: refused before allocation.
TEST(ImporterTest, RawDataShapeIsCheckedBeforeAllocating) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2});
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  onnx::ModelProto model = b.Build();
  onnx::TensorProto* init = model.mutable_graph()->add_initializer();
  init->set_name("unused");
  init->set_data_type(kFloat);
  init->add_dims(int64_t{1} << 20);
  init->add_dims(int64_t{1} << 19);
  init->set_raw_data("abcd");
  agate::testing::CappedOutcome outcome = agate::testing::RunWithMemoryCap([&] { ImportOnnxModel(model); });
  EXPECT_TRUE(outcome.threw_agate_error && outcome.code == StatusCode::kCorrupt) << outcome.description;
}

// The compiler-ABI fuzzer's out-of-memory report: a OneHot of initializers with depth 2^28 was
// folded at import into a 2.75 GB constant. It stays a node, computed when the module runs;
// the import allocates nothing of its size (under a 512 MiB cap).
TEST(ImporterTest, ConstantNodesThatCreateHugeDataStayNodes) {
  ModelBuilder b(13);
  b.Initializer("indices", Ints({3, 1, 2}));
  b.Initializer("depth", Ints({int64_t{1} << 28}));
  b.Initializer("values", Floats({2}));
  b.Node("OneHot", {"indices", "depth", "values"}, {"y"});
  b.Output("y");
  onnx::ModelProto model = b.Build();
  std::string ops;
  agate::testing::CappedOutcome outcome = agate::testing::RunWithMemoryCap([&] {
    Graph g = ImportOnnxModel(model);
    AGATE_REQUIRE(g.nodes.size() == 1 && g.nodes[0].op == "OneHot" && !g.IsConstant("y"), kInternal)
        << graph::PrintGraph(g);
  });
  EXPECT_EQ(outcome.description, "no exception");
}

// A value whose extents are known only at run time may only be a model output: an operator
// reading it is refused, naming the reader, the value, the reshape and how to freeze its shape.
TEST(ImporterTest, RunTimeExtentsFeedingAnOperatorAreRefused) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2, 3}).Input("axes", kInt64, {1});
  b.Node("Unsqueeze", {"x", "axes"}, {"u"}, {}, "widen");
  b.Node("Relu", {"u"}, {"y"}, {}, "act");
  b.Output("y");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kUnsupported,
              {"act", "'u'", "known only when the model runs", "Unsqueeze 'widen'", "--input-value axes=FILE.npy"});
  // An empty operand decides nothing at run time: a static Squeeze of every extent-1 axis.
  ModelBuilder empty(13);
  empty.Input("x", kFloat, {2, 1, 3}).Input("axes", kInt64, {0});
  empty.Node("Squeeze", {"x", "axes"}, {"y"}, {}, "narrow");
  empty.Output("y");
  Graph g = ImportOnnxModel(empty.Build());
  EXPECT_TRUE(g.run_time_extents.empty());
  EXPECT_EQ(g.TypeOf("y").shape, (Shape{2, 3}));
}

// Slice, Split and TopK with run-time operands: each output typed with the input's shape (an
// upper bound) and followed by its extents, which callers do not see.
TEST(ImporterTest, SliceSplitAndTopKWithRunTimeOperands) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {4, 6}).Input("starts", kInt64, {1}).Input("sizes", kInt64, {2}).Input("k", kInt64, {1});
  b.Initializer("ends", Ints({3}));
  b.Node("Slice", {"x", "starts", "ends"}, {"sliced"}, {}, "cut");
  b.Node("Split", {"x", "sizes"}, {"top", "bottom"}, {{"axis", int64_t{0}}}, "halves");
  b.Node("TopK", {"x", "k"}, {"values", "indices"}, {}, "best");
  for (const char* out : {"sliced", "top", "bottom", "values", "indices"}) b.Output(out);
  Graph g = ImportOnnxModel(b.Build());
  std::vector<std::string> ops;
  for (const graph::Node& node : g.nodes) ops.push_back(node.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"RunTimeSlice", "RunTimeSplit", "RunTimeTopK"}));
  EXPECT_EQ(g.VisibleOutputs(), (std::vector<std::string>{"sliced", "top", "bottom", "values", "indices"}));
  EXPECT_EQ(g.run_time_extents.size(), 5u);
  EXPECT_EQ(g.outputs.size(), 10u);
  for (const char* out : {"sliced", "top", "bottom", "values"}) EXPECT_EQ(g.TypeOf(out).shape, (Shape{4, 6})) << out;
  EXPECT_EQ(g.TypeOf("indices").dtype, DType::Int(64));
}

// NonZero and Unique of a run-time value and Compress with a run-time condition: outputs typed
// with upper bounds (every element selected), each followed by its extents; of a constant they
// fold; a consumer that reduces the rows is refused naming it and the selection.
TEST(ImporterTest, NonZeroCompressAndUniqueWithRunTimeValues) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {3, 4}).Input("keep", onnx::TensorProto::BOOL, {3});
  b.Node("NonZero", {"x"}, {"where"}, {}, "nz");
  b.Node("Compress", {"x", "keep"}, {"rows"}, {{"axis", int64_t{0}}}, "pick");
  b.Node("Unique", {"x"}, {"values", "", "inverse", "counts"}, {{"sorted", int64_t{1}}}, "distinct");
  for (const char* out : {"where", "rows", "values", "inverse", "counts"}) b.Output(out);
  Graph g = ImportOnnxModel(b.Build());
  std::vector<std::string> ops;
  for (const graph::Node& node : g.nodes) ops.push_back(node.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"RunTimeNonZero", "RunTimeCompress", "RunTimeUnique"}));
  EXPECT_EQ(g.VisibleOutputs(), (std::vector<std::string>{"where", "rows", "values", "inverse", "counts"}));
  EXPECT_EQ(g.run_time_extents.size(), 5u);
  EXPECT_EQ(g.TypeOf("where").shape, (Shape{2, 12}));
  EXPECT_EQ(g.TypeOf("rows").shape, (Shape{3, 4}));
  EXPECT_EQ(g.TypeOf("values").shape, (Shape{12}));
  EXPECT_EQ(g.TypeOf("inverse").shape, (Shape{12}));

  ModelBuilder folded(13);
  folded.Input("x", kFloat, {4}).Initializer("c", Ints({0, 3, 0, 3, 5}));
  folded.Node("NonZero", {"c"}, {"where"}, {}, "nz");
  folded.Node("Unique", {"c"}, {"values"}, {}, "distinct");
  folded.Output("where").Output("values");
  Graph f = ImportOnnxModel(folded.Build());
  EXPECT_TRUE(f.nodes.empty());
  EXPECT_EQ(f.ConstantOf("where").ToInts(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(f.ConstantOf("values").ToInts(), (std::vector<int64_t>{0, 3, 5}));

  ModelBuilder consumed(13);
  consumed.Input("x", kFloat, {3, 4});
  consumed.Node("NonZero", {"x"}, {"where"}, {}, "nz");
  consumed.Initializer("axes", Ints({1}));  // along the positions (over axis 0, the coordinates, it would be row for row)
  consumed.Node("ReduceMax", {"where", "axes"}, {"largest"}, {{"keepdims", int64_t{0}}}, "reduce");
  consumed.Output("largest");
  ExpectError([&] { ImportOnnxModel(consumed.Build()); }, StatusCode::kUnsupported,
              {"ReduceMax 'reduce'", "'where'", "known only when the model runs", "NonZero 'nz'", "'x'",
               "as a model output", "reduces or drops the rows"});
}

// The positions of a 2-D mask, [2, count], have their rows after an axis longer than 1: the
// readers (here PyTorch's torch.nonzero, NonZero -> Transpose) read a copy in the bound layout;
// a model output so computed whose rows follow a longer axis is packed again (Neg's [2, count]).
TEST(ImporterTest, PositionsOfA2DMaskAreReadInTheBoundLayout) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {3, 4});
  b.Node("NonZero", {"x"}, {"where"}, {}, "nz");
  b.Node("Transpose", {"where"}, {"pairs"}, {}, "flip");
  b.Node("Neg", {"where"}, {"negated"}, {}, "negate");
  b.Output("pairs").Output("negated").Output("where");
  Graph g = ImportOnnxModel(b.Build());
  std::vector<std::string> ops;
  for (const graph::Node& node : g.nodes) ops.push_back(node.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"RunTimeNonZero", "RunTimeToBoundLayout", "Transpose", "Neg",
                                           "RunTimeRowExtents", "RunTimeRowExtents", "RunTimeToCompactLayout"}));
  EXPECT_EQ(g.VisibleOutputs(), (std::vector<std::string>{"pairs", "negated", "where"}));
  EXPECT_EQ(g.TypeOf("pairs").shape, (Shape{12, 2}));
  std::vector<double> x(12, 0.0);
  x[1] = x[4] = x[6] = x[11] = 1.0;  // (0, 1), (1, 0), (1, 2), (2, 3)
  auto results = graph_eval::Interpret(g, {{"x", Tensor::FromDoubles(DType::Float(32), {3, 4}, x)}});
  auto front = [&](const std::string& value, size_t n) {
    std::vector<int64_t> all = results.at(value).ToInts();
    return std::vector<int64_t>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
  };
  EXPECT_EQ(results.at(g.run_time_extents.at("pairs")).ToInts(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(front("pairs", 8), (std::vector<int64_t>{0, 1, 1, 0, 1, 2, 2, 3}));
  EXPECT_EQ(results.at(g.run_time_extents.at("negated")).ToInts(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(front("negated", 8), (std::vector<int64_t>{0, -1, -1, -2, -1, 0, -2, -3}));
  EXPECT_EQ(front("where", 8), (std::vector<int64_t>{0, 1, 1, 2, 1, 0, 2, 3}));
}

// NonMaxSuppression: constant operands become attributes, run-time ones stay inputs 2 to 4 (read
// by the kernel); boxes known only at run time make it RunTimeNonMaxSuppression with an upper
// bound of B * C * min(N, max) rows; every input constant folds; a bound of no rows is the empty
// constant; an operand of more than one value is refused naming the node and the operand.
TEST(ImporterTest, NonMaxSuppressionOperandsAndBounds) {
  const Tensor one_float = Tensor::FromDoubles(DType::Float(32), {1}, {0.5});
  ModelBuilder b(11);
  b.Input("boxes", kFloat, {2, 6, 4}).Input("scores", kFloat, {2, 3, 6}).Input("score_min", kFloat, {1});
  b.Initializer("max", Tensor::FromInts(DType::Int(64), {1}, {4})).Initializer("iou", one_float);
  b.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou", "score_min"}, {"sel"}, {}, "nms");
  b.Output("sel");
  Graph g = ImportOnnxModel(b.Build());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "RunTimeNonMaxSuppression");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"boxes", "scores", "", "", "score_min"}));
  EXPECT_EQ(g.nodes[0].attrs.GetInt("max_output_boxes_per_class"), 4);
  EXPECT_FLOAT_EQ(g.nodes[0].attrs.GetFloat("iou_threshold"), 0.5f);
  EXPECT_EQ(g.TypeOf("sel").shape, (Shape{2 * 3 * 4, 3}));
  EXPECT_EQ(g.run_time_extents.count("sel"), 1u);

  // A run-time max_output_boxes_per_class bounds each class by N.
  ModelBuilder run_time_max(11);
  run_time_max.Input("boxes", kFloat, {1, 5, 4}).Input("scores", kFloat, {1, 2, 5}).Input("max", kInt64, {1});
  run_time_max.Node("NonMaxSuppression", {"boxes", "scores", "max"}, {"sel"}, {}, "nms");
  run_time_max.Output("sel");
  g = ImportOnnxModel(run_time_max.Build());
  EXPECT_EQ(g.TypeOf("sel").shape, (Shape{1 * 2 * 5, 3}));

  // Without max_output_boxes_per_class nothing is selected, whatever the boxes.
  ModelBuilder none(11);
  none.Input("boxes", kFloat, {1, 5, 4}).Input("scores", kFloat, {1, 2, 5});
  none.Node("NonMaxSuppression", {"boxes", "scores"}, {"sel"}, {}, "nms");
  none.Output("sel");
  g = ImportOnnxModel(none.Build());
  EXPECT_TRUE(g.nodes.empty());
  EXPECT_EQ(g.ConstantOf("sel").shape(), (Shape{0, 3}));

  // Every input constant: folded. Two overlapping boxes (IoU 0.81 > 0.5) and a disjoint one.
  ModelBuilder folded(11);
  folded.Input("x", kFloat, {1});
  folded.Initializer("boxes", Tensor::FromDoubles(DType::Float(32), {1, 3, 4},
                                                  {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 5, 1, 6}));
  folded.Initializer("scores", Tensor::FromDoubles(DType::Float(32), {1, 1, 3}, {0.9, 0.8, 0.7}));
  folded.Initializer("max", Tensor::FromInts(DType::Int(64), {1}, {3})).Initializer("iou", one_float);
  folded.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou"}, {"sel"}, {}, "nms");
  folded.Output("sel");
  g = ImportOnnxModel(folded.Build());
  EXPECT_TRUE(g.nodes.empty());
  EXPECT_EQ(g.ConstantOf("sel").ToInts(), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));

  ModelBuilder two(11);
  two.Input("boxes", kFloat, {1, 5, 4}).Input("scores", kFloat, {1, 2, 5});
  two.Initializer("max", Ints({1, 2}));
  two.Node("NonMaxSuppression", {"boxes", "scores", "max"}, {"sel"}, {}, "nms");
  two.Output("sel");
  ExpectError([&] { ImportOnnxModel(two.Build()); }, StatusCode::kInvalidArgument,
              {"nms", "'max'", "max_output_boxes_per_class", "one value"});

  ModelBuilder mismatched(11);
  mismatched.Input("boxes", kFloat, {1, 5, 4}).Input("scores", kFloat, {1, 2, 6}).Input("max", kInt64, {1});
  mismatched.Node("NonMaxSuppression", {"boxes", "scores", "max"}, {"sel"}, {}, "nms");
  mismatched.Output("sel");
  ExpectError([&] { ImportOnnxModel(mismatched.Build()); }, StatusCode::kInvalidArgument, {"nms", "scores", "[1,2,6]"});
}

// A detector's tail: NonMaxSuppression's selected rows read row for row (the box index column,
// the boxes it selects, scaled) compute on the rows' upper bound; the model output's extents
// come from a RunTimeRowExtents node counting the same rows. The interpreter's rows before the
// count are the boxes selected.
TEST(ImporterTest, RowsCountedAtRunTimeMayBeReadRowForRow) {
  auto detector = [](const std::function<void(ModelBuilder&)>& tail) {
    ModelBuilder b(13);
    b.Input("boxes", kFloat, {1, 3, 4}).Input("scores", kFloat, {1, 1, 3});
    b.Initializer("max", Tensor::FromInts(DType::Int(64), {1}, {3}));
    b.Initializer("iou", Tensor::FromDoubles(DType::Float(32), {1}, {0.5}));
    b.Initializer("column", Tensor::FromInts(DType::Int(64), {}, {2}));
    b.Initializer("first", Tensor::FromInts(DType::Int(64), {1}, {0}));
    b.Node("NonMaxSuppression", {"boxes", "scores", "max", "iou"}, {"sel"}, {}, "nms");
    b.Node("Gather", {"sel", "column"}, {"box"}, {{"axis", int64_t{1}}}, "which_box");
    b.Node("Squeeze", {"boxes", "first"}, {"all_boxes"}, {}, "drop_batch");
    b.Node("Gather", {"all_boxes", "box"}, {"picked"}, {{"axis", int64_t{0}}}, "pick");
    tail(b);
    return b.Build();
  };
  Graph g = ImportOnnxModel(detector([](ModelBuilder& b) {
    b.Initializer("two", Tensor::FromDoubles(DType::Float(32), {}, {2.0}));
    b.Node("Mul", {"picked", "two"}, {"scaled"}, {}, "scale");
    b.Output("scaled").Output("sel");
  }));
  EXPECT_EQ(g.TypeOf("scaled").shape, (Shape{3, 4}));
  ASSERT_EQ(g.run_time_extents.count("scaled"), 1u);
  ASSERT_EQ(g.run_time_extents.count("sel"), 1u);
  int row_extents = 0;
  for (const graph::Node& node : g.nodes) {
    if (node.op != "RunTimeRowExtents") continue;
    ++row_extents;
    EXPECT_EQ(node.inputs, (std::vector<std::string>{g.run_time_extents.at("sel")}));
    EXPECT_EQ(node.outputs, (std::vector<std::string>{g.run_time_extents.at("scaled")}));
  }
  EXPECT_EQ(row_extents, 1);
  // Boxes 0 and 1 overlap (IoU 0.81), box 2 does not: boxes 0 and 2 are selected.
  std::map<std::string, Tensor> inputs = {
      {"boxes", Tensor::FromDoubles(DType::Float(32), {1, 3, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 5, 1, 6})},
      {"scores", Tensor::FromDoubles(DType::Float(32), {1, 1, 3}, {0.9, 0.8, 0.7})}};
  auto results = graph_eval::Interpret(g, inputs);
  EXPECT_EQ(results.at(g.run_time_extents.at("scaled")).ToInts(), (std::vector<int64_t>{2, 4}));
  std::vector<double> scaled = results.at("scaled").ToDoubles();
  EXPECT_EQ(std::vector<double>(scaled.begin(), scaled.begin() + 8), (std::vector<double>{0, 0, 2, 2, 0, 10, 2, 12}));

  // Readers that mix, reduce or move the rows are refused, naming the reader and why.
  auto refused = [&](const std::function<void(ModelBuilder&)>& tail, const std::vector<std::string>& fragments) {
    ExpectError([&] { ImportOnnxModel(detector(tail)); }, StatusCode::kUnsupported, fragments);
  };
  refused([](ModelBuilder& b) {
    b.Node("ReduceSum", {"picked"}, {"total"}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}}, "sum");
    b.Output("total");
  }, {"ReduceSum 'sum'", "'picked'", "NonMaxSuppression 'nms'", "reduces or drops the rows"});
  refused([](ModelBuilder& b) {
    b.Node("Softmax", {"picked"}, {"p"}, {{"axis", int64_t{0}}}, "norm");
    b.Output("p");
  }, {"Softmax 'norm'", "combines elements along axis 0"});
  refused([](ModelBuilder& b) {
    b.Node("Flatten", {"picked"}, {"flat"}, {{"axis", int64_t{0}}}, "flatten");
    b.Output("flat");
  }, {"Flatten 'flatten'", "merges the rows with another axis"});
  refused([](ModelBuilder& b) {
    b.Node("Add", {"picked", "all_boxes"}, {"sum"}, {}, "mix");
    b.Output("sum");
  }, {"Add 'mix'", "do not follow the rows"});
  refused([](ModelBuilder& b) {
    b.Initializer("max2", Tensor::FromInts(DType::Int(64), {1}, {3}));
    b.Node("NonMaxSuppression", {"boxes", "scores", "max2"}, {"sel2"}, {}, "nms2");
    b.Node("Add", {"sel", "sel2"}, {"both"}, {}, "join");
    b.Output("both");
  }, {"Add 'join'", "two different operators"});
}

// Operands that decide behaviour but not a shape (Trilu's k, CumSum's axis) may arrive at run
// time: they stay node inputs, which the kernels read (still listed as inputs a caller may bind).
TEST(ImporterTest, RunTimeBehaviourOperandsStayInputs) {
  ModelBuilder trilu(14);
  trilu.Input("x", kFloat, {3, 4}).Input("k", kInt64, {});
  trilu.Node("Trilu", {"x", "k"}, {"y"}, {}, "triangle");
  trilu.Output("y");
  Graph g = ImportOnnxModel(trilu.Build());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "k"}));
  EXPECT_FALSE(g.nodes[0].attrs.Has("k"));
  EXPECT_EQ(g.TypeOf("y").shape, (Shape{3, 4}));
  EXPECT_EQ(StaticOperandInputs(trilu.Build()), (std::set<std::string>{"k"}));

  ModelBuilder cumsum(14);
  cumsum.Input("x", kFloat, {2, 3}).Input("axis", onnx::TensorProto::INT32, {1});
  cumsum.Node("CumSum", {"x", "axis"}, {"y"}, {}, "running");
  cumsum.Output("y");
  g = ImportOnnxModel(cumsum.Build());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "axis"}));

  // A constant operand is still an attribute.
  ModelBuilder folded(14);
  folded.Input("x", kFloat, {2, 3}).Initializer("axis", Ints({1}));
  folded.Node("CumSum", {"x", "axis"}, {"y"}, {}, "running");
  folded.Output("y");
  g = ImportOnnxModel(folded.Build());
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(g.nodes[0].attrs.GetInts("axis"), (std::vector<int64_t>{1}));
}

// A run-time operand that cannot be one integer is refused naming the node and the input.
TEST(ImporterTest, RunTimeBehaviourOperandMustBeOneInteger) {
  ModelBuilder floats(14);
  floats.Input("x", kFloat, {3, 4}).Input("k", kFloat, {});
  floats.Node("Trilu", {"x", "k"}, {"y"}, {}, "triangle");
  floats.Output("y");
  ExpectError([&] { ImportOnnxModel(floats.Build()); }, StatusCode::kInvalidArgument, {"triangle", "'k'", "one integer"});
  ModelBuilder two(14);
  two.Input("x", kFloat, {2, 3}).Input("axis", kInt64, {2});
  two.Node("CumSum", {"x", "axis"}, {"y"}, {}, "running");
  two.Output("y");
  ExpectError([&] { ImportOnnxModel(two.Build()); }, StatusCode::kInvalidArgument, {"running", "'axis'", "one integer"});
}

// A shape operand computed at run time with a declared static output shape: the node is
// compiled for that shape and keeps the operand as its last input (run_time_shape_operand.h);
// the reference interpreter checks the operand's values against it.
TEST(ImporterTest, DeclaredShapesStandForRunTimeShapeOperands) {
  ModelBuilder resize(13);
  resize.Input("x", kFloat, {1, 1, 5, 5}).Input("scales", kFloat, {4});
  resize.Node("Resize", {"x", "", "scales"}, {"y"}, {{"mode", std::string("linear")}}, "up");
  resize.Output("y", kFloat, {1, 1, 3, 10}, true);
  Graph g = ImportOnnxModel(resize.Build());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "scales"}));
  EXPECT_EQ(g.nodes[0].attrs.GetString("run_time_operand"), "scales");
  EXPECT_EQ(g.TypeOf("y").shape, (Shape{1, 1, 3, 10}));
  Tensor x = Floats({1, 1, 5, 5});
  auto scales = [](std::vector<double> v) { return Tensor::FromDoubles(DType::Float(32), {4}, v); };
  EXPECT_EQ(graph_eval::Interpret(g, {{"x", x}, {"scales", scales({1, 1, 0.6, 2})}}).at("y").shape(),
            (Shape{1, 1, 3, 10}));
  ExpectError([&] { graph_eval::Interpret(g, {{"x", x}, {"scales", scales({1, 1, 2, 2})}}); },
              StatusCode::kInvalidArgument, {"'up'", "scales ('scales')", "[1,1,10,10]", "[1,1,3,10]"});

  ModelBuilder expand(13);
  expand.Input("x", kFloat, {3, 1}).Input("shape", kInt64, {2});
  expand.Node("Expand", {"x", "shape"}, {"y"}, {}, "wide");
  expand.Output("y", kFloat, {3, 4}, true);
  g = ImportOnnxModel(expand.Build());
  EXPECT_EQ(g.nodes[0].attrs.GetInts("shape"), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(graph_eval::Interpret(g, {{"x", Floats({3, 1})}, {"shape", Ints({1, 4})}}).at("y").shape(), (Shape{3, 4}));

  // A declared shape no operand value could give is refused when importing.
  ModelBuilder bad(13);
  bad.Input("x", kFloat, {3, 2}).Input("shape", kInt64, {2});
  bad.Node("Expand", {"x", "shape"}, {"y"}, {}, "wide");
  bad.Output("y", kFloat, {3, 4}, true);
  ExpectError([&] { ImportOnnxModel(bad.Build()); }, StatusCode::kInvalidArgument, {"'wide'", "[3,4]", "broadcast"});

  // Reduction axes at run time: keepdims=0 [3,2,2] -> [3,2] is axis 1 or 2, decided by the values.
  ModelBuilder reduce(13);
  reduce.Input("x", kFloat, {3, 2, 2}).Input("axes", kInt64, {1});
  reduce.Node("ReduceSum", {"x", "axes"}, {"y"}, {{"keepdims", int64_t{0}}}, "sum");
  reduce.Output("y", kFloat, {3, 2}, true);
  g = ImportOnnxModel(reduce.Build());
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "axes"}));
  Tensor cube = Floats({3, 2, 2});
  Tensor by1 = graph_eval::Interpret(g, {{"x", cube}, {"axes", Ints({1})}}).at("y");
  Tensor by2 = graph_eval::Interpret(g, {{"x", cube}, {"axes", Ints({-1})}}).at("y");
  EXPECT_EQ(by1.GetDouble(0), 0.0 + 0.5);   // x[0,0,0] + x[0,1,0]
  EXPECT_EQ(by2.GetDouble(0), 0.0 + 0.25);  // x[0,0,0] + x[0,0,1]
  ExpectError([&] { graph_eval::Interpret(g, {{"x", cube}, {"axes", Ints({0})}}); }, StatusCode::kInvalidArgument,
              {"'sum'", "axes ('axes')", "[2,2]", "[3,2]"});

  // STFT's frame_step at run time: 3 declared frames of 8 in 30 samples stand for steps 8..11,
  // compiled with the smallest; the kernel reads the step for where frames start.
  ModelBuilder stft(17);
  stft.Input("x", kFloat, {1, 30, 1}).Input("step", kInt64, {});
  stft.Initializer("len", Tensor::FromInts(DType::Int(64), {}, {8}));
  stft.Node("STFT", {"x", "step", "", "len"}, {"y"}, {}, "spectrum");
  stft.Output("y", kFloat, {1, 3, 5, 2}, true);
  g = ImportOnnxModel(stft.Build());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "step"}));
  EXPECT_EQ(g.nodes[0].attrs.GetInt("frame_step"), 8);
  EXPECT_EQ(g.nodes[0].attrs.GetInt("frame_length"), 8);
  auto step = [](int64_t v) { return Tensor::FromInts(DType::Int(64), {}, {v}); };
  Tensor wave = Floats({1, 30, 1});
  Tensor at8 = graph_eval::Interpret(g, {{"x", wave}, {"step", step(8)}}).at("y");
  Tensor at11 = graph_eval::Interpret(g, {{"x", wave}, {"step", step(11)}}).at("y");
  EXPECT_EQ(at11.shape(), (Shape{1, 3, 5, 2}));
  EXPECT_EQ(at8.GetDouble(0), at11.GetDouble(0));           // frame 0 starts at 0 either way
  EXPECT_NE(at8.GetDouble(2 * 5 * 2), at11.GetDouble(2 * 5 * 2));  // frame 2 at 16 or at 22
  ExpectError([&] { graph_eval::Interpret(g, {{"x", wave}, {"step", step(5)}}); }, StatusCode::kInvalidArgument,
              {"'spectrum'", "frame_step ('step')", "[1,5,5,2]", "[1,3,5,2]"});
  // 4 frames of 8 in 30 samples: steps 6 and 7; 9 frames: none.
  ModelBuilder no_step(17);
  no_step.Input("x", kFloat, {1, 30, 1}).Input("step", kInt64, {});
  no_step.Initializer("len", Tensor::FromInts(DType::Int(64), {}, {8}));
  no_step.Node("STFT", {"x", "step", "", "len"}, {"y"}, {}, "spectrum");
  no_step.Output("y", kFloat, {1, 9, 5, 2}, true);
  ExpectError([&] { ImportOnnxModel(no_step.Build()); }, StatusCode::kInvalidArgument,
              {"'spectrum'", "9 frames no frame_step gives"});
}

// Without a declared shape (or with one that is not static) the refusal says what would do.
TEST(ImporterTest, RunTimeShapeOperandWithoutDeclaredShapeIsRefused) {
  ModelBuilder tile(13);
  tile.Input("x", kFloat, {2, 3}).Input("repeats", kInt64, {2});
  tile.Node("Tile", {"x", "repeats"}, {"y"}, {}, "tiles");
  tile.Output("y");
  ExpectError([&] { ImportOnnxModel(tile.Build()); }, StatusCode::kUnsupported,
              {"'tiles'", "'repeats'", "declare the static shape of output 'y'", "--input-value repeats="});
  ModelBuilder symbolic(13);
  symbolic.Input("x", kFloat, {2, 3}).Input("repeats", kInt64, {2});
  symbolic.Node("Tile", {"x", "repeats"}, {"y"}, {}, "tiles");
  symbolic.Output("y", kFloat, {-1, 6}, true);
  ExpectError([&] { ImportOnnxModel(symbolic.Build()); }, StatusCode::kUnsupported, {"'tiles'", "declare"});
  // The importer's marker attribute is never taken from a model.
  ModelBuilder marker(13);
  marker.Input("x", kFloat, {2, 3}).Initializer("repeats", Ints({1, 2}));
  marker.Node("Tile", {"x", "repeats"}, {"y"}, {{"run_time_operand", std::string("repeats")}}, "tiles");
  marker.Output("y");
  ExpectError([&] { ImportOnnxModel(marker.Build()); }, StatusCode::kUnsupported, {"run_time_operand"});
}

// One-element operands (CumSum's axis, Trilu's k) given as empty tensors: named errors, not
// std::out_of_range from .at(0).
TEST(ImporterTest, EmptySingleValueOperandsAreNamedErrors) {
  ModelBuilder cumsum(14);
  cumsum.Input("x", kFloat, {2, 3}).Initializer("axis", Tensor::FromInts(DType::Int(64), {0}, {}));
  cumsum.Node("CumSum", {"x", "axis"}, {"y"}, {}, "running");
  cumsum.Output("y");
  ExpectError([&] { ImportOnnxModel(cumsum.Build()); }, StatusCode::kInvalidArgument, {"axis", "exactly one"});
  ModelBuilder trilu(14);
  trilu.Input("x", kFloat, {3, 3}).Initializer("k", Tensor::FromInts(DType::Int(64), {0}, {}));
  trilu.Node("Trilu", {"x", "k"}, {"y"}, {}, "triangle");
  trilu.Output("y");
  ExpectError([&] { ImportOnnxModel(trilu.Build()); }, StatusCode::kInvalidArgument, {"'k'", "exactly one"});
  ModelBuilder attr(14);  // the same through an attribute written into the model
  attr.Input("x", kFloat, {3, 3});
  attr.Node("Trilu", {"x"}, {"y"}, {{"k", std::vector<int64_t>{}}}, "triangle");
  attr.Output("y");
  ExpectError([&] { ImportOnnxModel(attr.Build()); }, StatusCode::kInvalidArgument, {"'k'", "exactly one"});
}

// Found by the importer fuzzer (10M-execution run): a Slice of constants with no output was folded at
// import, and its reference kernel read the type of an output that does not exist (freed memory).
TEST(ImporterTest, NodesWithoutOutputsAreRefused) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {4});
  b.Initializer("starts", Tensor::FromInts(DType::Int(64), {1}, {1}));
  b.Initializer("ends", Tensor::FromInts(DType::Int(64), {1}, {3}));
  b.Node("Slice", {"starts", "starts", "ends"}, {}, {}, "no_output");
  b.Node("Relu", {"x"}, {"y"});
  b.Output("y");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kInvalidArgument, {"no_output", "no outputs"});
}

// Found by the compiler ABI fuzzer: an AveragePool with a second (named) output passed shape
// inference as if it were MaxPool's Indices, and lowering then crashed on the missing tensor.
TEST(ImporterTest, SecondOutputOnlyForMaxPool) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 1, 4, 4});
  b.Node("AveragePool", {"x"}, {"y", "extra"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}, "avg");
  b.Output("y");
  ExpectError([&] { ImportOnnxModel(b.Build()); }, StatusCode::kUnsupported, {"avg", "2 outputs"});
  ModelBuilder m(13);
  m.Input("x", kFloat, {1, 1, 4, 4});
  m.Node("MaxPool", {"x"}, {"y", "indices"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  m.Output("y");
  m.Output("indices");
  EXPECT_NO_THROW(ImportOnnxModel(m.Build()));
}

// Found by the importer fuzzer: a legacy (opset < 7) broadcast axis of -2^40 sized a shape of
// 2^40 dimensions (an 8 TiB allocation). The axis is checked against the ranks first.
TEST(ImporterTest, LegacyBroadcastAxisOutOfRangeIsAnError) {
  ModelBuilder b(6);
  b.Input("a", kFloat, {2, 3, 4}).Input("b", kFloat, {3});
  b.Node("Add", {"a", "b"}, {"y"}, {{"broadcast", int64_t{1}}, {"axis", -(int64_t{1} << 40)}}, "legacy");
  b.Output("y");
  agate::testing::CappedOutcome outcome = agate::testing::RunWithMemoryCap([&] { ImportOnnxModel(b.Build()); });
  EXPECT_TRUE(outcome.threw_agate_error && outcome.code == StatusCode::kInvalidArgument) << outcome.description;
  ModelBuilder c(6);
  c.Input("a", kFloat, {2, 3, 4}).Input("b", kFloat, {3});
  c.Node("Add", {"a", "b"}, {"y"}, {{"broadcast", int64_t{1}}, {"axis", int64_t{1}}});
  c.Output("y");
  EXPECT_NO_THROW(ImportOnnxModel(c.Build()));
}

TEST(ImporterTest, InputShapeFlagThatDoesNotFitIsAnError) {
  ExpectError([&] { ParseInputShapes("x:1x99999999999999999999"); }, StatusCode::kInvalidArgument,
              {"99999999999999999999"});
}

TEST(ImporterTest, LegacyOpsetForms) {
  // Opset 11: Squeeze axes and Split sizes are attributes; Softmax flattens at axis.
  ModelBuilder b(11);
  b.Input("x", kFloat, {1, 4, 3});
  b.Node("Squeeze", {"x"}, {"s"}, {{"axes", std::vector<int64_t>{0}}});
  b.Node("Split", {"s"}, {"p", "q"}, {{"axis", int64_t{0}}, {"split", std::vector<int64_t>{1, 3}}});
  b.Node("Softmax", {"q"}, {"y"}, {{"axis", int64_t{0}}});
  b.Output("p").Output("y");
  Graph g = ImportOnnxModel(b.Build());
  EXPECT_EQ(g.TypeOf("p").shape, (Shape{1, 3}));
  auto out = graph_eval::Interpret(g, {{"x", Floats({1, 4, 3})}});
  // With opset < 13 semantics the softmax spans all 9 values of q.
  double sum = 0;
  for (int64_t i = 0; i < 9; ++i) sum += out.at("y").GetDouble(i);
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

// If with a constant condition: the taken branch is inlined; its nodes read outer values by name.
TEST(ImporterTest, InlinesIfWithAConstantCondition) {
  auto model = [](bool runtime_condition) {
    ModelBuilder b(13);
    b.Input("x", kFloat, {3});
    if (runtime_condition) b.Input("cond", onnx::TensorProto::BOOL, {});
    else b.Initializer("cond", Tensor::FromInts(DType::Bool(), {}, {0}));
    onnx::ModelProto m = b.Build();
    onnx::NodeProto* node = m.mutable_graph()->add_node();
    node->set_op_type("If");
    node->set_name("choose");
    node->add_input("cond");
    node->add_output("y");
    for (const char* branch : {"then_branch", "else_branch"}) {
      onnx::AttributeProto* a = node->add_attribute();
      a->set_name(branch);
      a->set_type(onnx::AttributeProto::GRAPH);
      onnx::NodeProto* inner = a->mutable_g()->add_node();
      inner->set_op_type(std::string(branch) == "then_branch" ? "Relu" : "Neg");
      inner->add_input("x");
      inner->add_output("branch_out");
      a->mutable_g()->add_output()->set_name("branch_out");
    }
    m.mutable_graph()->add_output()->set_name("y");
    return m;
  };
  Graph g = ImportOnnxModel(model(false));
  ASSERT_EQ(g.nodes.size(), 1u) << graph::PrintGraph(g);
  EXPECT_EQ(g.nodes[0].op, "Neg");  // cond is false
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"y"}));
  ExpectError([&] { ImportOnnxModel(model(true)); }, StatusCode::kUnsupported, {"choose", "compile-time constant"});
  EXPECT_EQ(StaticOperandInputs(model(true)), (std::set<std::string>{"cond"}));
}

// Loop with a constant trip count: the body is unrolled; scan outputs are stacked.
TEST(ImporterTest, UnrollsLoopsWithAConstantTripCount) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {2}).Input("v0", kFloat, {2});
  b.Initializer("trip", Tensor::FromInts(DType::Int(64), {}, {3}));
  onnx::ModelProto m = b.Build();
  onnx::NodeProto* loop = m.mutable_graph()->add_node();
  loop->set_op_type("Loop");
  loop->set_name("accumulate");
  for (const char* in : {"trip", "", "v0"}) loop->add_input(in);
  loop->add_output("v_final");
  loop->add_output("v_all");
  onnx::AttributeProto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* body = a->mutable_g();
  for (const char* in : {"i", "cond_in", "v_in"}) body->add_input()->set_name(in);
  onnx::NodeProto* add = body->add_node();
  add->set_op_type("Add");
  add->add_input("v_in");
  add->add_input("x");  // an outer value, read by name
  add->add_output("v_out");
  onnx::NodeProto* keep = body->add_node();
  keep->set_op_type("Identity");
  keep->add_input("cond_in");
  keep->add_output("cond_out");
  for (const char* out : {"cond_out", "v_out", "v_out"}) body->add_output()->set_name(out);
  m.mutable_graph()->add_output()->set_name("v_final");
  m.mutable_graph()->add_output()->set_name("v_all");
  Graph g = ImportOnnxModel(m);
  auto out = graph_eval::Interpret(g, {{"x", Floats({2}, 1.0)}, {"v0", Floats({2}, 10.0)}});
  EXPECT_EQ(out.at("v_final").ToDoubles(), (std::vector<double>{13.0, 14.0}));  // v0 + 3x
  EXPECT_EQ(out.at("v_all").shape(), (Shape{3, 2}));
  EXPECT_EQ(out.at("v_all").ToDoubles(), (std::vector<double>{11.0, 11.5, 12.0, 12.75, 13.0, 14.0}));
}

// Scan of opset 8 (batch axis 0, sequence axis 1, sequence_lens first): each batch element is
// scanned on its own and the results stacked; a reversed scan input is read from its end while
// the scan output keeps step order. sequence_lens equal to the length is accepted; a shorter
// one, or one given at run time, is refused by name.
TEST(ImporterTest, UnrollsOpset8ScansPerBatchElement) {
  auto model = [](const std::string& lens, bool lens_input, int64_t direction) {
    ModelBuilder b(8);
    b.Input("init", kFloat, {2, 2}).Input("x", kFloat, {2, 3, 2});
    if (lens_input) b.Input("lens", onnx::TensorProto::INT64, {2});
    else if (!lens.empty()) b.Initializer("lens", Tensor::FromInts(DType::Int(64), {2}, {3, lens == "short" ? 2 : 3}));
    onnx::ModelProto m = b.Build();
    onnx::NodeProto* scan = m.mutable_graph()->add_node();
    scan->set_op_type("Scan");
    scan->set_name("running_sum");
    for (const char* in : {lens.empty() && !lens_input ? "" : "lens", "init", "x"}) scan->add_input(in);
    scan->add_output("sum");
    scan->add_output("sums");
    onnx::AttributeProto* n = scan->add_attribute();
    n->set_name("num_scan_inputs");
    n->set_type(onnx::AttributeProto::INT);
    n->set_i(1);
    onnx::AttributeProto* d = scan->add_attribute();
    d->set_name("directions");
    d->set_type(onnx::AttributeProto::INTS);
    d->add_ints(direction);
    onnx::AttributeProto* a = scan->add_attribute();
    a->set_name("body");
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = a->mutable_g();
    for (const char* in : {"sum_in", "next"}) body->add_input()->set_name(in);
    onnx::NodeProto* add = body->add_node();
    add->set_op_type("Add");
    add->add_input("sum_in");
    add->add_input("next");
    add->add_output("sum_out");
    onnx::NodeProto* copy = body->add_node();
    copy->set_op_type("Identity");
    copy->add_input("sum_out");
    copy->add_output("scan_out");
    for (const char* out : {"sum_out", "scan_out"}) body->add_output()->set_name(out);
    m.mutable_graph()->add_output()->set_name("sum");
    m.mutable_graph()->add_output()->set_name("sums");
    return m;
  };
  Tensor init = Tensor::FromDoubles(DType::Float(32), {2, 2}, {0, 0, 100, 200});
  Tensor x = Tensor::FromDoubles(DType::Float(32), {2, 3, 2}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60});
  for (int64_t direction : {0, 1}) {
    for (const char* lens : {"", "full"}) {
      Graph g = ImportOnnxModel(model(lens, false, direction));
      auto out = graph_eval::Interpret(g, {{"init", init}, {"x", x}});
      EXPECT_EQ(out.at("sum").shape(), (Shape{2, 2}));
      EXPECT_EQ(out.at("sum").ToDoubles(), (std::vector<double>{9, 12, 190, 320}));
      EXPECT_EQ(out.at("sums").shape(), (Shape{2, 3, 2}));
      std::vector<double> want = direction == 0
                                     ? std::vector<double>{1, 2, 4, 6, 9, 12, 110, 220, 140, 260, 190, 320}
                                     : std::vector<double>{5, 6, 8, 10, 9, 12, 150, 260, 180, 300, 190, 320};
      EXPECT_EQ(out.at("sums").ToDoubles(), want) << "direction " << direction << ", lens '" << lens << "'";
    }
  }
  ExpectError([&] { ImportOnnxModel(model("short", false, 0)); }, StatusCode::kUnsupported,
              {"running_sum", "sequence_lens[1] = 2"});
  ExpectError([&] { ImportOnnxModel(model("", true, 0)); }, StatusCode::kUnsupported,
              {"running_sum", "sequence_lens must be a compile-time constant"});
}

TEST(ImporterTest, TensorProtoStorageFields) {
  onnx::TensorProto proto;
  proto.set_name("t");
  proto.set_data_type(onnx::TensorProto::FLOAT16);
  proto.add_dims(2);
  proto.add_int32_data(ir::FloatToHalf(1.5f));
  proto.add_int32_data(ir::FloatToHalf(-2.0f));
  Tensor t = TensorFromProto(proto, "");
  EXPECT_EQ(t.dtype(), DType::Float(16));
  EXPECT_EQ(t.GetDouble(0), 1.5);
  EXPECT_EQ(t.GetDouble(1), -2.0);
  proto.add_int32_data(7);  // three values for two elements
  EXPECT_THROW(TensorFromProto(proto, ""), Error);
  proto.clear_int32_data();
  proto.set_raw_data(std::string(3, '\0'));  // 3 bytes for 4
  EXPECT_THROW(TensorFromProto(proto, ""), Error);
  proto.set_data_type(onnx::TensorProto::STRING);
  ExpectError([&] { TensorFromProto(proto, ""); }, StatusCode::kUnsupported, {"STRING"});
}

}  // namespace
}  // namespace onnx_frontend
}  // namespace agate

namespace agate {
namespace onnx_frontend {
namespace {

// Every truncation and many byte corruptions of a real model: each is imported
// successfully or rejected with an agate::Error, never a crash.
TEST(ImporterFuzzTest, CorruptedModelsNeverCrash) {
  ModelBuilder b(13);
  b.Input("x", kFloat, {1, 2, 4, 4}).Initializer("w", Floats({2, 2, 3, 3})).Initializer("shape", Ints({1, -1}));
  b.Node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.Node("Relu", {"c"}, {"r"});
  b.Node("Reshape", {"r", "shape"}, {"y"});
  b.Output("y");
  std::string bytes = b.Serialize();
  int imported = 0, rejected = 0;
  auto attempt = [&](const std::string& data) {
    try {
      ImportOnnxModel(ParseModel(data, "fuzz.onnx"));
      ++imported;
    } catch (const Error&) {
      ++rejected;
    }
  };
  for (size_t n = 0; n < bytes.size(); ++n) attempt(bytes.substr(0, n));
  uint32_t state = 12345;
  for (int i = 0; i < 3000; ++i) {
    std::string data = bytes;
    for (int flips = 0; flips < 3; ++flips) {
      state = state * 1664525u + 1013904223u;
      data[(state >> 8) % data.size()] ^= static_cast<char>(1 + (state >> 24) % 255);
    }
    attempt(data);
  }
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(imported + rejected, static_cast<int>(bytes.size()) + 3000);
}

}  // namespace
}  // namespace onnx_frontend
}  // namespace agate
