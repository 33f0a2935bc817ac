#include "frontends/onnx/model_builder.h"

#include "frontends/onnx/tensor_proto.h"

namespace agate {
namespace onnx_frontend {

ModelBuilder::ModelBuilder(int opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("agate-test");
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

namespace {
void SetType(onnx::ValueInfoProto* info, int elem_type, const std::vector<int64_t>& dims, bool with_shape) {
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (!with_shape) return;
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0) dim->set_dim_param("N");
    else dim->set_dim_value(d);
  }
}
}  // namespace

ModelBuilder& ModelBuilder::Input(const std::string& name, int elem_type, const std::vector<int64_t>& dims) {
  auto* info = model_.mutable_graph()->add_input();
  info->set_name(name);
  SetType(info, elem_type, dims, true);
  return *this;
}

ModelBuilder& ModelBuilder::Initializer(const std::string& name, const graph::Tensor& value) {
  *model_.mutable_graph()->add_initializer() = TensorToProto(value, name);
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                                   bool with_shape) {
  auto* info = model_.mutable_graph()->add_output();
  info->set_name(name);
  if (elem_type != 0) SetType(info, elem_type, dims, with_shape);
  return *this;
}

ModelBuilder& ModelBuilder::Node(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::vector<std::pair<std::string, graph::Attribute>>& attrs,
                                 const std::string& name) {
  auto* node = model_.mutable_graph()->add_node();
  node->set_op_type(op);
  node->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size() - 1) : name);
  for (const auto& in : inputs) node->add_input(in);
  for (const auto& out : outputs) node->add_output(out);
  for (const auto& [key, value] : attrs) {
    auto* a = node->add_attribute();
    a->set_name(key);
    switch (value.kind()) {
      case graph::Attribute::Kind::kInt:
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(value.i());
        break;
      case graph::Attribute::Kind::kFloat:
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(static_cast<float>(value.f()));
        break;
      case graph::Attribute::Kind::kString:
        a->set_type(onnx::AttributeProto::STRING);
        a->set_s(value.s());
        break;
      case graph::Attribute::Kind::kInts:
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : value.ints()) a->add_ints(v);
        break;
      case graph::Attribute::Kind::kFloats:
        a->set_type(onnx::AttributeProto::FLOATS);
        for (double v : value.floats()) a->add_floats(static_cast<float>(v));
        break;
      case graph::Attribute::Kind::kStrings:
        a->set_type(onnx::AttributeProto::STRINGS);
        for (const auto& v : value.strings()) a->add_strings(v);
        break;
      case graph::Attribute::Kind::kTensor:
        a->set_type(onnx::AttributeProto::TENSOR);
        *a->mutable_t() = TensorToProto(value.t(), key);
        break;
    }
  }
  return *this;
}

}  // namespace onnx_frontend
}  // namespace agate
