// libFuzzer target over the ONNX importer. Every input is used twice:
//   1. as protobuf bytes: parsed and imported (the byte-level view: truncations, bad tags,
//      huge varints, wrong wire types);
//   2. as a program of structured edits to one of the seed models (seed_models.h): dims of
//      inputs and initializers, attribute values and kinds, element types, op types, input
//      lists, the opset, and external data entries (location, offset, length), then imported.
//      Byte mutations alone rarely keep a protobuf valid; these edits reach the shape rules,
//      static operands and external data with valid models that say absurd things.
// Each import either succeeds or throws agate::Error. Anything else escapes and is a crash:
// another exception type (std::out_of_range, std::bad_alloc from an allocation above the
// fuzzer's -malloc_limit_mb), an abort, or a sanitizer report.
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/support/error.h"
#include "frontends/onnx/fuzz/seed_models.h"
#include "frontends/onnx/importer.h"

namespace agate {
namespace onnx_frontend {
namespace {

// A folder holding weights.bin for the models with external data.
const std::string& ExternalDataDir() {
  static const std::string dir = [] {
    const char* tmp = getenv("TEST_TMPDIR");
    std::string d = std::string(tmp ? tmp : "/tmp") + "/agate-importer-fuzz-" + std::to_string(getpid());
    std::string command = "mkdir -p '" + d + "'";
    if (system(command.c_str()) != 0) abort();
    std::ofstream weights(d + "/weights.bin", std::ios::binary);
    for (size_t i = 0; i < kExternalDataBytes; ++i) weights.put(static_cast<char>(i * 7));
    return d;
  }();
  return dir;
}

void Import(const onnx::ModelProto& model) {
  try {
    ImportOnnxModel(model, {}, ExternalDataDir());
  } catch (const Error&) {
    // A clean refusal.
  }
}

// Reads the edit program.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t Next() { return at_ < size_ ? data_[at_++] : 0; }
  size_t Pick(size_t n) { return n == 0 ? 0 : Next() % n; }
  // Small values, boundaries and absurd ones.
  int64_t Int() {
    static const int64_t kValues[] = {0, 1, 2, 3, -1, -2, 7, 64, 255, 1 << 16, int64_t{1} << 31, int64_t{1} << 40,
                                      int64_t{1} << 62, INT64_MAX, INT64_MIN, -(int64_t{1} << 40)};
    uint8_t b = Next();
    return b < 128 ? kValues[b % 16] : static_cast<int64_t>(b) - 192;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

const char* const kOps[] = {"Relu",    "Add",       "MatMul",  "Conv",      "Reshape", "Transpose", "Slice",
                            "Concat",  "Gather",    "Pad",     "ReduceSum", "CumSum",  "Trilu",     "TopK",
                            "OneHot",  "Cast",      "Resize",  "Softmax",   "Flatten", "Expand",    "Where",
                            "Squeeze", "Unsqueeze", "MaxPool", "Split",     "Tile",    "Range",     "Einsum"};
const char* const kAttributes[] = {"axis", "axes", "perm", "pads", "strides", "kernel_shape", "dilations", "k",
                                   "keepdims", "to", "mode", "group", "upper", "depth", "split", "equation"};

void SetDims(google::protobuf::RepeatedField<int64_t>* dims, Bytes* b) {
  switch (b->Pick(3)) {
    case 0: if (dims->size() > 0) dims->Set(static_cast<int>(b->Pick(dims->size())), b->Int()); break;
    case 1: dims->Add(b->Int()); break;
    default: if (dims->size() > 0) dims->RemoveLast(); break;
  }
}

void EditAttribute(onnx::NodeProto* node, Bytes* b) {
  onnx::AttributeProto* a = nullptr;
  if (node->attribute_size() > 0 && b->Pick(2) == 0) {
    a = node->mutable_attribute(static_cast<int>(b->Pick(node->attribute_size())));
  } else {
    a = node->add_attribute();
    a->set_name(kAttributes[b->Pick(sizeof(kAttributes) / sizeof(kAttributes[0]))]);
  }
  switch (b->Pick(6)) {
    case 0: a->clear_ints(); a->set_type(onnx::AttributeProto::INT); a->set_i(b->Int()); break;
    case 1: {
      a->set_type(onnx::AttributeProto::INTS);
      a->clear_ints();
      for (size_t n = b->Pick(5); n > 0; --n) a->add_ints(b->Int());  // possibly empty
      break;
    }
    case 2: a->set_type(onnx::AttributeProto::FLOAT); a->set_f(static_cast<float>(b->Int()) / 3.0f); break;
    case 3: a->set_type(onnx::AttributeProto::STRING); a->set_s(b->Pick(2) ? "nearest" : "linear"); break;
    case 4: a->set_type(onnx::AttributeProto::FLOATS); a->add_floats(static_cast<float>(b->Int())); break;
    default: {
      a->set_type(onnx::AttributeProto::TENSOR);
      onnx::TensorProto* t = a->mutable_t();
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(b->Pick(3));
      for (int64_t i = 0; i < t->dims(0); ++i) t->add_int64_data(b->Int());
      break;
    }
  }
}

void EditExternalData(onnx::ModelProto* model, Bytes* b) {
  onnx::GraphProto* g = model->mutable_graph();
  if (g->initializer_size() == 0) return;
  onnx::TensorProto* t = g->mutable_initializer(static_cast<int>(b->Pick(g->initializer_size())));
  t->clear_raw_data();
  t->clear_float_data();
  t->clear_int64_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  t->clear_external_data();
  static const char* const kLocations[] = {"weights.bin", "missing.bin", "../weights.bin", "/etc/passwd", ".", ""};
  static const char* const kNumbers[] = {"0", "4", "64", "256", "-8", "99999999999999999999", "1e3", "12abc",
                                         "4294967296", "1099511627776", " 8", ""};
  auto add = [t](const std::string& key, const std::string& value) {
    auto* e = t->add_external_data();
    e->set_key(key);
    e->set_value(value);
  };
  add("location", kLocations[b->Pick(6)]);
  if (b->Pick(2)) add("offset", kNumbers[b->Pick(12)]);
  if (b->Pick(2)) add("length", kNumbers[b->Pick(12)]);
}

void Edit(onnx::ModelProto* model, Bytes* b) {
  onnx::GraphProto* g = model->mutable_graph();
  switch (b->Pick(9)) {
    case 0:
      if (g->input_size() > 0) {
        auto* shape = g->mutable_input(static_cast<int>(b->Pick(g->input_size())))
                          ->mutable_type()->mutable_tensor_type()->mutable_shape();
        if (shape->dim_size() > 0 && b->Pick(2)) {
          shape->mutable_dim(static_cast<int>(b->Pick(shape->dim_size())))->set_dim_value(b->Int());
        } else {
          shape->add_dim()->set_dim_value(b->Int());
        }
      }
      break;
    case 1:
      if (g->initializer_size() > 0) SetDims(g->mutable_initializer(static_cast<int>(b->Pick(g->initializer_size())))->mutable_dims(), b);
      break;
    case 2:
      if (g->initializer_size() > 0) {
        g->mutable_initializer(static_cast<int>(b->Pick(g->initializer_size())))->set_data_type(static_cast<int>(b->Pick(24)));
      } else if (g->input_size() > 0) {
        g->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int>(b->Pick(24)));
      }
      break;
    case 3:
      if (g->node_size() > 0) EditAttribute(g->mutable_node(static_cast<int>(b->Pick(g->node_size()))), b);
      break;
    case 4:
      if (g->node_size() > 0) {
        g->mutable_node(static_cast<int>(b->Pick(g->node_size())))->set_op_type(kOps[b->Pick(sizeof(kOps) / sizeof(kOps[0]))]);
      }
      break;
    case 5: EditExternalData(model, b); break;
    case 6:
      if (model->opset_import_size() > 0) model->mutable_opset_import(0)->set_version(static_cast<int64_t>(b->Pick(24)));
      break;
    case 7:
      if (g->node_size() > 0) {
        onnx::NodeProto* n = g->mutable_node(static_cast<int>(b->Pick(g->node_size())));
        if (n->input_size() > 0 && b->Pick(2)) {
          n->mutable_input()->RemoveLast();
        } else {
          n->add_input(n->input_size() > 0 && b->Pick(2) ? n->input(0) : "");
        }
      }
      break;
    default:
      if (g->initializer_size() > 0) {  // raw data of another length
        onnx::TensorProto* t = g->mutable_initializer(static_cast<int>(b->Pick(g->initializer_size())));
        t->set_raw_data(std::string(b->Pick(40), '\x01'));
      }
      break;
  }
}

const std::vector<std::pair<std::string, onnx::ModelProto>>& Seeds() {
  static const auto seeds = SeedModels();
  return seeds;
}

}  // namespace
}  // namespace onnx_frontend
}  // namespace agate

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agate::onnx_frontend;  // NOLINT
  try {
    Import(ParseModel(std::string(reinterpret_cast<const char*>(data), size), "fuzz input"));
  } catch (const agate::Error&) {
    // Not a model: refused cleanly.
  }
  if (size < 2) return 0;
  Bytes program(data, size);
  onnx::ModelProto model = Seeds()[program.Pick(Seeds().size())].second;
  for (size_t edits = 1 + program.Pick(4); edits > 0 && !program.done(); --edits) Edit(&model, &program);
  Import(model);
  return 0;
}
