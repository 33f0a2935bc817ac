#include "frontends/onnx/importer.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <set>
#include <sstream>

#include "core/graph/op_registry.h"
#include "core/graph/passes/batch_axis_analysis.h"
#include "core/graph/run_time_shape_operand.h"
#include "core/graph/shape_rules.h"
#include "core/graph_eval/interpreter.h"
#include "core/graph/shape_inference.h"
#include "core/graph/value_selection.h"
#include "core/support/error.h"
#include "core/support/logging.h"
#include "core/support/parse_int.h"
#include "frontends/onnx/control_flow.h"
#include "frontends/onnx/expansions.h"
#include "frontends/onnx/import_steps.h"
#include "frontends/onnx/opset_forms.h"
#include "frontends/onnx/tensor_proto.h"

namespace agate {
namespace onnx_frontend {

using graph::Attribute;
using graph::Attributes;
using graph::Graph;
using graph::Node;
using graph::OpDef;
using graph::OpRegistry;
using graph::Shape;
using graph::Tensor;
using graph::TensorType;

namespace {

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

bool IsLegacyBroadcastOp(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Gemm" || op == "PRelu" ||
         op == "And" || op == "Or" || op == "Xor" || op == "Equal" || op == "Greater" || op == "Less";
}

// The graph-IR operator an ONNX operator maps to at this opset.
std::string GraphOp(const onnx::NodeProto& node) {
  if (node.op_type() == "Upsample") return "Resize";
  if (node.op_type() == "Scatter") return "ScatterElements";
  return node.op_type();
}

Attribute ConvertAttribute(const onnx::AttributeProto& a, const std::string& where, const std::string& base_dir) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return Attribute(static_cast<int64_t>(a.i()));
    case onnx::AttributeProto::FLOAT: return Attribute(static_cast<double>(a.f()));
    case onnx::AttributeProto::STRING: return Attribute(a.s());
    case onnx::AttributeProto::INTS: return Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case onnx::AttributeProto::FLOATS: return Attribute(std::vector<double>(a.floats().begin(), a.floats().end()));
    case onnx::AttributeProto::STRINGS:
      return Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case onnx::AttributeProto::TENSOR: return Attribute(TensorFromProto(a.t(), base_dir));
    default: break;
  }
  AGATE_THROW(kUnsupported) << where << ": attribute '" << a.name() << "' of type "
                            << onnx::AttributeProto::AttributeType_Name(a.type()) << " is not supported";
}

// The node translated to the graph IR's attribute conventions, before static
// operands are resolved. Throws kUnsupported for attributes it cannot express.
Node TranslateNode(const onnx::NodeProto& proto, const std::string& name, int opset, const std::string& base_dir) {
  Node node;
  node.name = name;
  node.op = GraphOp(proto);
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  std::string where = node.Describe();
  for (const auto& a : proto.attribute()) {
    // The importer's own marker (run_time_shape_operand.h): never taken from a model.
    AGATE_REQUIRE(a.name() != graph::kRunTimeOperandAttr, kUnsupported)
        << where << ": attribute '" << a.name() << "' is not an ONNX attribute";
    node.attrs.Set(a.name(), ConvertAttribute(a, where, base_dir));
  }
  const std::string& op = proto.op_type();
  if (op == "Cast" && node.attrs.Has("to")) {
    node.attrs.Set("to", DTypeFromOnnx(static_cast<int>(node.attrs.GetInt("to")), where).ToString());
  }
  bool has_output_dtype = op == "MelWeightMatrix" || (op.size() > 6 && op.compare(op.size() - 6, 6, "Window") == 0);
  if (has_output_dtype && node.attrs.Has("output_datatype")) {
    node.attrs.Set("output_datatype",
                   DTypeFromOnnx(static_cast<int>(node.attrs.GetInt("output_datatype")), where).ToString());
  }
  if (op == "EyeLike" && node.attrs.Has("dtype")) {
    node.attrs.Set("dtype", DTypeFromOnnx(static_cast<int>(node.attrs.GetInt("dtype")), where).ToString());
  }
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) {
    node.attrs.Set("coerce_2d", int64_t{1});
    if (!node.attrs.Has("axis")) node.attrs.Set("axis", int64_t{1});
  }
  if (op == "TopK" && node.attrs.Has("k")) node.attrs.Set("k", std::vector<int64_t>{node.attrs.GetInt("k")});
  if (op == "Upsample" || (op == "Resize" && opset < 11)) {
    // Upsample and Resize-10 index the input grid asymmetrically and round nearest down.
    node.attrs.Set("coordinate_transformation_mode", "asymmetric");
    if (node.attrs.GetString("mode", "nearest") == "nearest") node.attrs.Set("nearest_mode", "floor");
  }
  if ((op == "Dropout" || op == "BatchNormalization") && node.attrs.Has("is_test")) node.attrs.Erase("is_test");
  if (opset < 7 && IsLegacyBroadcastOp(op)) {
    // Opset < 7 broadcasting: `broadcast=1` with an optional `axis` where B's dims start in A.
    node.attrs.Erase("broadcast");
    if (node.attrs.Has("axis") && op != "Gemm") {
      node.attrs.Set("legacy_broadcast_axis", node.attrs.GetInt("axis"));
      node.attrs.Erase("axis");
    }
  }
  if (op == "BatchNormalization" && node.attrs.GetInt("spatial", 1) == 1) node.attrs.Erase("spatial");
  std::string newer_form = TranslateOpsetForm(proto, opset, &node);  // opsets 18-22 (opset_forms.h)
  AGATE_REQUIRE(newer_form.empty(), kUnsupported) << newer_form;
  return node;
}

// Static operands of a node at this opset (legacy Resize-10/Upsample-9 keep scales at input 1).
std::vector<graph::StaticOperand> StaticOperandsOf(const Node& node, const onnx::NodeProto& proto, int opset) {
  if (proto.op_type() == "Upsample" || (proto.op_type() == "Resize" && opset < 11)) return {{1, "scales", true}};
  if (proto.op_type() == "If") return {{0, ""}};  // the condition picks the branch to inline
  if (proto.op_type() == "Loop") return {{0, ""}, {1, ""}};  // trip count and condition: unrolled
  if (proto.op_type() == "Dropout") return {};  // NormalizeDropout
  const OpDef* def = OpRegistry::Global().Find(node.op);
  std::vector<graph::StaticOperand> operands = def ? def->static_operands : std::vector<graph::StaticOperand>{};
  for (const graph::StaticOperand& s : OpsetStaticOperands(proto.op_type(), opset)) operands.push_back(s);
  return operands;
}

// Why a translated node is unsupported, or "" (attribute names and values only:
// input counts are checked once static operands are resolved).
std::string UnsupportedAttributes(const Node& node) {
  const OpDef* def = OpRegistry::Global().Find(node.op);
  if (def == nullptr) return "operator not supported";
  if (!graph_eval::HasKernel(node.op)) return "operator has no reference kernel";
  for (const auto& [name, value] : node.attrs.all()) {
    if (name == "legacy_broadcast_axis") continue;  // resolved while importing
    if (IsDeferredAttribute(node.op, name)) continue;  // judged once static operands are known
    if (std::find(def->attributes.begin(), def->attributes.end(), name) == def->attributes.end()) {
      return "attribute '" + name + "' not supported";
    }
  }
  return def->check ? def->check(node) : "";
}

TensorType ValueInfoType(const onnx::ValueInfoProto& info, const ImportOptions& options) {
  std::string where = "graph input '" + info.name() + "'";
  AGATE_REQUIRE(info.type().has_tensor_type(), kUnsupported) << where << " is not a tensor (sequences, maps and "
                                                                "optionals are not supported)";
  const auto& tensor_type = info.type().tensor_type();
  TensorType type;
  type.dtype = DTypeFromOnnx(tensor_type.elem_type(), where);
  auto override_it = options.input_shapes.find(info.name());
  if (override_it != options.input_shapes.end()) {
    type.shape = override_it->second;
    if (tensor_type.has_shape() && tensor_type.shape().dim_size() != static_cast<int>(type.shape.size())) {
      AGATE_LOG(WARNING) << where << " is declared with rank " << tensor_type.shape().dim_size()
                         << "; using the overriding shape " << graph::ShapeToString(type.shape);
    }
    return type;
  }
  AGATE_REQUIRE(tensor_type.has_shape(), kInvalidArgument)
      << where << " has no shape; give one with --input-shape " << info.name() << ":<dims>";
  for (const auto& dim : tensor_type.shape().dim()) {
    AGATE_REQUIRE(dim.has_dim_value() && dim.dim_value() >= 0, kInvalidArgument)
        << where << " has a symbolic dimension '" << dim.dim_param() << "'; give a static shape with --input-shape "
        << info.name() << ":<dims>";
    type.shape.push_back(dim.dim_value());
  }
  return type;
}

// A value bound to a graph input (ImportOptions::input_values, `agate compile --input-value`) must
// have the input's element type and every dimension the model (or --input-shape) fixes: a frozen
// input of another type or shape would compile into a graph that no longer means the model.
void CheckBoundInputValue(const onnx::ValueInfoProto& info, const graph::Tensor& value, const ImportOptions& options) {
  const std::string where = "--input-value for graph input '" + info.name() + "'";
  AGATE_REQUIRE(info.type().has_tensor_type(), kUnsupported) << where << ": the input is not a tensor";
  const auto& tensor_type = info.type().tensor_type();
  const ir::DType declared = DTypeFromOnnx(tensor_type.elem_type(), "graph input '" + info.name() + "'");
  AGATE_REQUIRE(value.dtype() == declared, kInvalidArgument)
      << where << " has dtype " << value.dtype().ToString() << "; the model declares " << declared.ToString();
  auto override_it = options.input_shapes.find(info.name());
  if (override_it != options.input_shapes.end()) {
    AGATE_REQUIRE(value.shape() == override_it->second, kInvalidArgument)
        << where << " has shape " << graph::ShapeToString(value.shape()) << "; --input-shape gives "
        << graph::ShapeToString(override_it->second);
    return;
  }
  if (!tensor_type.has_shape()) return;  // the model leaves the shape open: the value decides it
  const auto& dims = tensor_type.shape().dim();
  AGATE_REQUIRE(dims.size() == value.rank(), kInvalidArgument)
      << where << " has rank " << value.rank() << " (shape " << graph::ShapeToString(value.shape())
      << "); the model declares rank " << dims.size();
  for (int axis = 0; axis < dims.size(); ++axis) {
    if (!dims[axis].has_dim_value()) continue;  // a symbolic dimension takes the value's extent
    AGATE_REQUIRE(dims[axis].dim_value() == value.shape()[axis], kInvalidArgument)
        << where << " has extent " << value.shape()[axis] << " on axis " << axis << " (shape "
        << graph::ShapeToString(value.shape()) << "); the model declares " << dims[axis].dim_value();
  }
}

// A node's inputs, including the outer values an If's branches read by name.
std::vector<std::string> NodeInputs(const onnx::NodeProto& node) {
  std::vector<std::string> inputs(node.input().begin(), node.input().end());
  for (const auto& a : node.attribute()) {
    if (a.type() != onnx::AttributeProto::GRAPH) continue;
    std::set<std::string> local;
    for (const auto& init : a.g().initializer()) local.insert(init.name());
    for (const auto& in : a.g().input()) local.insert(in.name());
    for (const auto& n : a.g().node()) local.insert(n.output().begin(), n.output().end());
    for (const auto& n : a.g().node())
      for (const std::string& in : NodeInputs(n))
        if (!local.count(in)) inputs.push_back(in);
    for (const auto& out : a.g().output())
      if (!local.count(out.name())) inputs.push_back(out.name());
  }
  return inputs;
}

// When a value that must be constant is a model input, the user can freeze it: say how.
std::string FreezeHint(const std::string& value, const Graph& g) {
  if (std::find(g.inputs.begin(), g.inputs.end(), value) == g.inputs.end()) return "";
  return "; '" + value + "' is a model input: to compile for one value of it, freeze it with agate compile "
         "--input-value " + value + "=FILE.npy";
}

// Moves static operands into attributes; throws kUnsupported when one is not a constant.
// `declarable_input`: the operand a declared output shape could stand for (DeclarableShapeOperand),
// whose refusal says so.
void ResolveStaticOperands(Node* node, const std::vector<graph::StaticOperand>& operands, const Graph& g,
                           int declarable_input = -1) {
  std::vector<bool> remove(node->inputs.size(), false);
  for (const graph::StaticOperand& s : operands) {
    if (s.input >= static_cast<int>(node->inputs.size()) || node->inputs[s.input].empty()) continue;
    const std::string& value = node->inputs[s.input];
    if (!s.required && !g.IsConstant(value)) {
      remove[s.input] = true;
      continue;
    }
    if (s.run_time && !g.IsConstant(value)) continue;  // the kernel reads it when the model runs
    AGATE_REQUIRE(g.IsConstant(value), kUnsupported)
        << node->Describe() << ": input " << s.input << " ('" << value
        << "') must be a compile-time constant (it decides the output shape); it is computed at run time"
        << (s.input == declarable_input ? "; or declare the static shape of output '" + node->outputs[0] +
                                              "' in the model (a graph output's or value_info's type): agate then "
                                              "compiles for that shape and checks the operand when the model runs"
                                        : "")
        << FreezeHint(value, g);
    if (s.attribute.empty()) continue;  // the whole node folds; keep the input
    const Tensor& t = g.ConstantOf(value);
    if (s.scalar) {
      AGATE_REQUIRE(t.numel() == 1, kInvalidArgument) << node->Describe() << ": input " << s.input << " must be a scalar";
      if (s.as_floats) node->attrs.Set(s.attribute, t.GetDouble(0));
      else node->attrs.Set(s.attribute, t.GetInt(0));
    } else if (s.as_floats) node->attrs.Set(s.attribute, t.ToDoubles());
    else node->attrs.Set(s.attribute, t.ToInts());
    remove[s.input] = true;
  }
  std::vector<std::string> kept;
  for (size_t i = 0; i < node->inputs.size(); ++i)
    if (!remove[i]) kept.push_back(node->inputs[i]);
  // Trailing absent optional inputs carry no meaning.
  while (!kept.empty() && kept.back().empty()) kept.pop_back();
  node->inputs = kept;
}

Tensor ConstantNodeValue(const Node& node) {
  const Attributes& a = node.attrs;
  if (a.Has("value")) return a.GetTensor("value");
  if (a.Has("value_float")) return Tensor::Scalar(ir::DType::Float(32), a.GetFloat("value_float"));
  if (a.Has("value_int")) return Tensor::FromInts(ir::DType::Int(64), {}, {a.GetInt("value_int")});
  if (a.Has("value_floats")) {
    std::vector<double> v = a.GetFloats("value_floats");
    return Tensor::FromDoubles(ir::DType::Float(32), {static_cast<int64_t>(v.size())}, v);
  }
  if (a.Has("value_ints")) {
    std::vector<int64_t> v = a.GetInts("value_ints");
    return Tensor::FromInts(ir::DType::Int(64), {static_cast<int64_t>(v.size())}, v);
  }
  AGATE_THROW(kUnsupported) << node.Describe() << ": only tensor, float(s) and int(s) constants are supported";
}

// Opset < 7 broadcasting aligned B's dims at `axis` of A (and PRelu's 1-D slope
// at the channel axis); rewrite B with a Reshape so numpy broadcasting applies.
void ApplyLegacyBroadcast(Node* node, Graph* g) {
  bool has_axis = node->attrs.Has("legacy_broadcast_axis");
  if (!has_axis && node->op != "PRelu") return;
  if (node->inputs.size() < 2 || !g->HasValue(node->inputs[0]) || !g->HasValue(node->inputs[1])) return;
  const TensorType& a = g->TypeOf(node->inputs[0]);
  const TensorType& b = g->TypeOf(node->inputs[1]);
  int64_t axis = has_axis ? node->attrs.GetInt("legacy_broadcast_axis") : 1;
  node->attrs.Erase("legacy_broadcast_axis");
  if (!has_axis && !(b.rank() == 1 && a.rank() > 2 && b.shape[0] == a.shape[1] && a.shape.back() != b.shape[0])) return;
  if (axis < 0) axis += a.rank();
  // Checked before it sizes anything: the axis comes from the model (found by the importer fuzzer).
  AGATE_REQUIRE(axis >= 0 && axis + b.rank() <= a.rank(), kInvalidArgument)
      << node->Describe() << ": broadcast axis " << (has_axis ? axis : 1) << " does not place B "
      << graph::ShapeToString(b.shape) << " inside A " << graph::ShapeToString(a.shape);
  int64_t trailing = a.rank() - axis - b.rank();
  if (trailing <= 0) return;
  Node reshape;
  reshape.name = g->FreshName(node->name + "_legacy_broadcast");
  reshape.op = "Reshape";
  reshape.inputs = {node->inputs[1]};
  reshape.outputs = {g->FreshName(node->inputs[1] + "_aligned")};
  Shape target = b.shape;
  target.insert(target.end(), trailing, 1);
  reshape.attrs.Set("shape", std::vector<int64_t>(target.begin(), target.end()));
  if (g->IsConstant(node->inputs[1])) {
    g->AddConstant(reshape.outputs[0], g->ConstantOf(node->inputs[1]).Reshaped(target));
  } else {
    g->types[reshape.outputs[0]] = TensorType{b.dtype, target};
    g->AddNode(reshape);
  }
  node->inputs[1] = reshape.outputs[0];
}

bool AllInputsConstant(const Node& node, const Graph& g) {
  for (const std::string& in : node.inputs)
    if (!in.empty() && !g.IsConstant(in)) return false;
  return true;
}

// Folds a node of constant inputs into constants; false (nothing changed) when folding it is
// not bounded (graph_eval::FoldingIsBounded) and it must run in the module instead.
bool TryFoldNode(const Node& node, Graph* g) {
  std::vector<const Tensor*> args;
  for (const std::string& in : node.inputs) args.push_back(in.empty() ? nullptr : &g->ConstantOf(in));
  std::optional<std::vector<Tensor>> outs = graph_eval::FoldNode(node, args);
  if (!outs) return false;
  for (size_t i = 0; i < outs->size(); ++i)
    if (!node.outputs[i].empty()) g->AddConstant(node.outputs[i], (*outs)[i]);
  return true;
}

// Shape and Size of a value whose type is static: no need to know its contents.
Tensor ShapeValue(const Node& node, const TensorType& type) {
  if (node.op == "Size") return Tensor::FromInts(ir::DType::Int(64), {}, {type.numel()});
  int64_t rank = type.rank();
  int64_t start = node.attrs.GetInt("start", 0), end = node.attrs.GetInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(type.shape[i]);
  return Tensor::FromInts(ir::DType::Int(64), {static_cast<int64_t>(dims.size())}, dims);
}

void CheckDeclaredOutput(const onnx::ValueInfoProto& info, const Graph& g) {
  if (!info.type().has_tensor_type()) return;
  const auto& tt = info.type().tensor_type();
  const TensorType& actual = g.TypeOf(info.name());
  std::string where = "graph output '" + info.name() + "'";
  if (tt.elem_type() != 0) {
    ir::DType declared = DTypeFromOnnx(tt.elem_type(), where);
    AGATE_REQUIRE(declared == actual.dtype, kInvalidArgument)
        << where << " is declared " << declared << " but the graph computes " << actual.ToString();
  }
  if (!tt.has_shape()) return;
  bool mismatch = tt.shape().dim_size() != actual.rank();
  // Extents known only at run time: the type holds upper bounds, so only the rank is checked here.
  const bool run_time = g.run_time_extents.count(info.name()) > 0;
  for (int i = 0; !mismatch && !run_time && i < tt.shape().dim_size(); ++i) {
    const auto& dim = tt.shape().dim(i);
    if (dim.has_dim_value() && dim.dim_value() != actual.shape[i]) mismatch = true;
  }
  if (mismatch) {
    std::ostringstream declared;
    declared << "[";
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& dim = tt.shape().dim(i);
      declared << (i ? "," : "") << (dim.has_dim_value() ? std::to_string(dim.dim_value()) : dim.dim_param());
    }
    declared << "]";
    AGATE_THROW(kInvalidArgument) << "shape mismatch: " << where << " is declared " << declared.str()
                                  << " but the graph computes " << actual.ToString();
  }
}

}  // namespace

int DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& op : model.opset_import())
    if (IsDefaultDomain(op.domain())) return static_cast<int>(op.version());
  std::string domains;
  for (const auto& op : model.opset_import()) domains += (domains.empty() ? "'" : ", '") + op.domain() + "'";
  AGATE_REQUIRE(!domains.empty(), kCorrupt) << "the model imports no opset";
  AGATE_THROW(kUnsupported) << "the model uses only the operator domains " << domains
                            << "; agate supports the default domain (ai.onnx)";
}

onnx::ModelProto ParseModel(const std::string& bytes, const std::string& where) {
  onnx::ModelProto model;
  AGATE_REQUIRE(!bytes.empty(), kCorrupt) << where << " is empty";
  AGATE_REQUIRE(model.ParseFromString(bytes), kCorrupt)
      << where << " is not a valid ONNX model (truncated or not a protobuf ModelProto)";
  // Arbitrary bytes sometimes decode as a protobuf; a real model has a version and a graph.
  AGATE_REQUIRE(model.ir_version() > 0 && model.has_graph() && model.opset_import_size() > 0, kCorrupt)
      << where << " is not an ONNX model: it lacks "
      << (model.ir_version() <= 0 ? "an ir_version" : !model.has_graph() ? "a graph" : "an opset_import");
  return model;
}

Graph ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  onnx::ModelProto model = ParseModel(ReadFile(path), "'" + path + "'");
  size_t slash = path.find_last_of('/');
  return ImportOnnxModel(model, options, slash == std::string::npos ? "" : path.substr(0, slash));
}

namespace {
Graph Import(const onnx::ModelProto& model, const ImportOptions& options, const std::string& base_dir);
}  // namespace

Graph ImportOnnxModel(const onnx::ModelProto& model, const ImportOptions& options, const std::string& base_dir) {
  try {
    return Import(model, options, base_dir);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A standard-library failure on malformed input (a number that does not parse, ...) is still the model's fault.
    AGATE_THROW(kCorrupt) << "malformed model: " << e.what();
  }
}

// ---- The import steps control_flow.cc shares (import_steps.h): a subgraph is imported like
// the main graph, node by node.

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
}

// Orders the nodes so each comes after the producers of its inputs. Throws when
// a node reads a tensor nothing defines, or when the nodes form a cycle.
std::vector<int> TopologicalOrder(const onnx::GraphProto& g, const std::set<std::string>& available) {
  int n = g.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : g.node(i).output()) {
      if (out.empty()) continue;
      AGATE_REQUIRE(!producer.count(out) && !available.count(out), kInvalidArgument)
          << "node '" << NodeLabel(g.node(i), i) << "' (" << g.node(i).op_type() << ") redefines tensor '" << out << "'";
      producer[out] = i;
    }
  }
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& in : NodeInputs(g.node(i))) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      AGATE_REQUIRE(it != producer.end(), kInvalidArgument)
          << "node '" << NodeLabel(g.node(i), i) << "' (" << g.node(i).op_type() << ") references tensor '" << in
          << "', which no node, graph input or initializer defines";
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push_back(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0) ready.push_back(u);
  }
  if (static_cast<int>(order.size()) != n) {
    std::ostringstream cycle;
    int listed = 0;
    for (int i = 0; i < n && listed < 8; ++i) {
      if (pending[i] == 0) continue;
      cycle << (listed++ ? ", " : "") << "'" << NodeLabel(g.node(i), i) << "' (" << g.node(i).op_type() << ")";
    }
    AGATE_THROW(kInvalidArgument) << "the graph has a cycle through nodes " << cycle.str();
  }
  return order;
}

// Step 1: translates every node, or throws one kUnsupported error listing every
// node that cannot be imported (name, op type, opset, reason).
std::vector<Node> TranslateAll(const onnx::GraphProto& g, int opset, const std::string& base_dir) {
  std::vector<Node> translated(g.node_size());
  std::vector<std::string> problems;
  std::set<std::string> used_names;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& proto = g.node(i);
    std::string name = NodeLabel(proto, i);
    if (!used_names.insert(name).second) {
      name = name + "_" + std::to_string(i);
      used_names.insert(name);
    }
    std::string reason;
    if (!IsDefaultDomain(proto.domain())) {
      reason = "domain '" + proto.domain() + "' not supported";
    } else if (proto.op_type() == "If" || proto.op_type() == "Loop" || proto.op_type() == "Scan") {
      reason = CheckControlFlow(proto, opset, base_dir);
      translated[i].name = name;
      translated[i].op = proto.op_type();
      translated[i].inputs.assign(proto.input().begin(), proto.input().end());
      translated[i].outputs.assign(proto.output().begin(), proto.output().end());
      for (const auto& a : proto.attribute()) {
        if (a.type() == onnx::AttributeProto::INT) translated[i].attrs.Set(a.name(), static_cast<int64_t>(a.i()));
        if (a.type() == onnx::AttributeProto::INTS)
          translated[i].attrs.Set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end()));
      }
    } else {
      try {
        translated[i] = TranslateNode(proto, name, opset, base_dir);
        if (IsExpandedOp(proto.op_type())) reason = CheckExpandedOp(translated[i], opset);
        else if (proto.op_type() != "Constant") reason = UnsupportedAttributes(translated[i]);
      } catch (const Error& e) {
        reason = e.message();
      }
    }
    if (!reason.empty()) {
      problems.push_back("  node '" + name + "' (" + proto.op_type() + ", opset " + std::to_string(opset) +
                         "): " + reason);
    }
  }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << problems.size() << " unsupported node" << (problems.size() == 1 ? "" : "s") << " in graph '" << g.name()
        << "':";
    for (const std::string& p : problems) msg << "\n" << p;
    AGATE_THROW(kUnsupported) << msg.str();
  }
  return translated;
}

// True for DequantizeLinear of a constant weight: kept for the graph pipeline's QDQ
// folding (core/graph/passes/qdq_folding.h), which needs the integer weight; constant
// folding turns it into floats there when it does not fold into an integer operator.
bool KeepForQDQFolding(const Node& node) { return node.op == "DequantizeLinear"; }

// Appends a graph-IR node: folded when its inputs are constants (and folding it is
// bounded), else shape-inferred.
void AppendNode(Node node, Graph* result) {
  if (AllInputsConstant(node, *result) && !KeepForQDQFolding(node) && TryFoldNode(node, result)) return;
  std::vector<TensorType> types = graph::InferNodeTypes(node, result->types, result->constants);
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) result->types[node.outputs[i]] = types[i];
  result->AddNode(node);
}

namespace {

// Operators whose output extents may be decided when the model runs, bounded at compile time:
// Reshape, Unsqueeze and Squeeze (same bytes; RunTimeReshape, core/ops/run_time_reshape.cc),
// Slice and Split (RunTimeSlice, RunTimeSplit: core/ops/run_time_slice.cc) and TopK (RunTimeTopK,
// core/ops/run_time_top_k.cc) with a shape, axes, starts, ends, steps, sizes or k operand that is
// not a constant; NonZero and Unique of a value computed at run time and Compress with a run-time
// condition (RunTimeNonZero, RunTimeUnique, RunTimeCompress: core/ops/run_time_selection.cc).
// Each output keeps its name, typed with upper bounds, and is followed by its extents, a fresh
// value (Graph::run_time_extents). Returns true when the node was imported here.
bool ImportRunTimeExtents(const onnx::NodeProto& proto, int opset, Node* node, Graph* result) {
  const std::string& op = proto.op_type();
  const bool reshape = op == "Reshape" || op == "Unsqueeze" || op == "Squeeze";
  const bool slice = op == "Slice" && opset >= 10;
  const bool top_k = op == "TopK" && opset >= 10;
  const bool split = op == "Split" && opset >= 13;
  const bool selection = op == "NonZero" || op == "Unique";  // the values decide the extents
  const bool compress = op == "Compress";
  if (!reshape && !slice && !top_k && !split && !selection && !compress) return false;
  // The inputs that decide the extents: [first, last].
  const size_t first = selection ? 0u : 1u, last = slice ? 4u : 1u;
  bool run_time = false;
  for (size_t i = first; i < node->inputs.size() && i <= last; ++i) {
    const std::string& in = node->inputs[i];
    run_time = run_time || (!in.empty() && result->HasValue(in) && !result->IsConstant(in));
  }
  const size_t outputs = top_k ? 2u : split ? node->outputs.size() : op == "Unique" ? 4u : 1u;
  if (!run_time || node->outputs.empty() || node->outputs.size() > outputs) return false;
  Node computed = *node;
  computed.op = reshape ? "RunTimeReshape" : slice ? "RunTimeSlice" : top_k ? "RunTimeTopK" : split ? "RunTimeSplit"
                                                                                          : "RunTime" + op;
  if (reshape) computed.attrs.Set("form", op);
  // Each data output is followed by its extents.
  computed.outputs.clear();
  for (size_t i = 0; i < outputs; ++i) {
    std::string data = i < node->outputs.size() && !node->outputs[i].empty()
                           ? node->outputs[i]
                           : result->FreshName(node->name + "_unused");
    computed.outputs.push_back(data);
    computed.outputs.push_back(result->FreshName(data + "_extents"));
  }
  std::string reason = graph::UnsupportedReason(computed);
  AGATE_REQUIRE(reason.empty(), kUnsupported) << node->Describe() << ": " << reason;
  AppendNode(computed, result);
  for (size_t i = 0; i < computed.outputs.size(); i += 2) {
    result->run_time_extents[computed.outputs[i]] = computed.outputs[i + 1];
  }
  return true;
}

// NonMaxSuppression (value_selection.h): constant operands (max_output_boxes_per_class,
// iou_threshold, score_threshold: inputs 2 to 4) become attributes, run-time ones keep their
// place, read by the kernel. Of constants it folds; otherwise RunTimeNonMaxSuppression writes the
// selected rows compact at an upper bound, followed by their extents (Graph::run_time_extents).
// A bound of no rows (no max_output_boxes_per_class or a constant one <= 0, or no boxes) leaves
// the empty result, whatever the values, as a constant. Returns true when the node was imported here.
// Dropout (opset 12 on: ratio and training_mode are inputs; before, attributes). Constant
// operands become the attributes. Inference (no training_mode, or a constant false one) is the
// identity and keeps no operand. A training_mode that arrives at run time stays input 2, and a
// ratio that does stays input 1 (also beside a constant true training_mode): the kernel is the
// identity and checks, when it runs, that the mode is inference or the ratio 0 (random masks
// are not supported), instead of refusing a model that runs in inference mode.
void NormalizeDropout(const onnx::NodeProto& proto, Node* node, const Graph& g) {
  if (proto.op_type() != "Dropout") return;
  AGATE_REQUIRE(!node->inputs.empty() && node->inputs.size() <= 3, kInvalidArgument)
      << node->Describe() << ": takes data and at most ratio and training_mode (" << node->inputs.size()
      << " inputs given)";
  node->inputs.resize(3);
  for (int k : {1, 2}) {
    std::string& in = node->inputs[k];
    if (in.empty() || !g.IsConstant(in)) continue;
    const Tensor& value = g.ConstantOf(in);
    AGATE_REQUIRE(value.numel() == 1, kInvalidArgument)
        << node->Describe() << ": input " << k << " ('" << in << "', " << (k == 1 ? "ratio" : "training_mode")
        << ") must hold one value, got shape " << graph::ShapeToString(value.shape());
    if (k == 1) node->attrs.Set("ratio", value.GetDouble(0));
    else node->attrs.Set("training_mode", value.GetInt(0));
    in.clear();
  }
  bool mode_at_run_time = !node->inputs[2].empty();
  if (!mode_at_run_time && node->attrs.GetInt("training_mode", 0) == 0) node->inputs[1].clear();  // unused
  while (node->inputs.size() > 1 && node->inputs.back().empty()) node->inputs.pop_back();
}

bool ImportNonMaxSuppression(const onnx::NodeProto& proto, Node* node, Graph* result) {
  if (proto.op_type() != "NonMaxSuppression") return false;
  AGATE_REQUIRE(node->inputs.size() >= 2 && node->inputs.size() <= 5 && node->outputs.size() == 1, kInvalidArgument)
      << node->Describe() << ": takes boxes, scores and up to three operands (" << node->inputs.size()
      << " inputs given) and gives selected_indices (" << node->outputs.size() << " outputs given)";
  node->inputs.resize(5);
  for (int k = 0; k < 3; ++k) {
    std::string& in = node->inputs[2 + k];
    if (in.empty() || !result->IsConstant(in)) continue;
    const Tensor& value = result->ConstantOf(in);
    AGATE_REQUIRE(value.numel() <= 1, kInvalidArgument)
        << node->Describe() << ": input " << 2 + k << " ('" << in << "', " << graph::kNmsOperands[k]
        << ") must hold one value, got shape " << graph::ShapeToString(value.shape());
    if (value.numel() == 1 && k == 0) node->attrs.Set(graph::kNmsOperands[k], value.GetInt(0));
    if (value.numel() == 1 && k > 0) node->attrs.Set(graph::kNmsOperands[k], value.GetDouble(0));
    in.clear();  // an empty operand is an absent one (ONNX's reference)
  }
  while (node->inputs.back().empty()) node->inputs.pop_back();
  std::string reason = graph::UnsupportedReason(*node);
  AGATE_REQUIRE(reason.empty(), kUnsupported) << node->Describe() << ": " << reason;
  if (AllInputsConstant(*node, *result)) {
    AppendNode(*node, result);
    return true;
  }
  Node computed = *node;
  computed.op = "RunTimeNonMaxSuppression";
  computed.outputs.push_back(result->FreshName(node->outputs[0] + "_extents"));
  std::vector<TensorType> types = graph::InferNodeTypes(computed, result->types, result->constants);
  if (types[0].numel() == 0) {
    result->AddConstant(node->outputs[0], Tensor(ir::DType::Int(64), {0, 3}));
    return true;
  }
  AppendNode(computed, result);
  result->run_time_extents[computed.outputs[0]] = computed.outputs[1];
  return true;
}

// A static operand without elements is known from its type alone, wherever it comes from (a
// model input of shape [0], as ReduceSum's empty axes often arrive): the node reads an empty
// constant instead, and the operand resolves like any constant.
void UseEmptyOperandsAsConstants(const std::vector<graph::StaticOperand>& operands, Node* node, Graph* result) {
  for (const graph::StaticOperand& s : operands) {
    if (s.input >= static_cast<int>(node->inputs.size())) continue;
    const std::string& value = node->inputs[s.input];
    if (value.empty() || !result->HasValue(value) || result->IsConstant(value)) continue;
    const TensorType& type = result->TypeOf(value);
    if (type.numel() != 0) continue;
    std::string empty = result->FreshName(value + "_empty");
    result->AddConstant(empty, Tensor(type.dtype, type.shape));
    node->inputs[s.input] = empty;
  }
}

// The shape operand of a node that a declared output shape can stand for: its ONNX input and
// its kind (run_time_shape_operand.h), or {-1, ""}.
std::pair<int, std::string> DeclarableShapeOperand(const onnx::NodeProto& proto, int opset) {
  const std::string& op = proto.op_type();
  if (op == "Upsample" || (op == "Resize" && opset < 11)) return {1, "scales"};
  if (op == "Resize") {
    if (proto.input_size() > 3 && !proto.input(3).empty()) return {3, "sizes"};
    return {2, "scales"};
  }
  if (op == "Expand") return {1, "shape"};
  if (op == "Tile") return {1, "repeats"};
  if (op == "ConstantOfShape") return {0, "shape"};
  if (op == "OneHot") return {1, "depth"};
  if (op == "Pad" && opset >= 11) return {1, "pads"};
  if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow") return {0, "size"};
  if (op == "STFT") return {1, "frame_step"};
  if (op == "MaxUnpool") return {2, "output_shape"};
  if (op == "Range") return {0, ""};  // ImportDeclaredRange: all three operands
  const bool reduce = op.rfind("Reduce", 0) == 0;
  if (reduce && (opset >= 18 || (op == "ReduceSum" && opset >= 13))) return {1, "axes"};
  return {-1, ""};
}

// When the node's shape operand is computed at run time and the model declares its output's
// static shape, takes the operand out of the node (BindDeclaredShape puts it back as the last
// input) and returns it; else "".
std::string TakeRunTimeShapeOperand(const onnx::NodeProto& proto, int opset, const DeclaredShapes* declared,
                                    Node* node, const Graph& g) {
  const auto [index, kind] = DeclarableShapeOperand(proto, opset);
  if (declared == nullptr || index < 0 || index >= static_cast<int>(node->inputs.size())) return "";
  const std::string operand = node->inputs[index];
  if (operand.empty() || !g.HasValue(operand) || g.IsConstant(operand)) return "";
  if (node->outputs.empty() || !declared->count(node->outputs[0])) return "";
  if (proto.op_type() == "Resize") {
    AGATE_REQUIRE(!node->attrs.Has("axes"), kUnsupported)
        << node->Describe() << ": " << kind << " ('" << operand << "') given at run time with the axes attribute; "
        << "give them as a constant" << FreezeHint(operand, g);
    AGATE_REQUIRE(kind != "sizes" || node->attrs.GetString("keep_aspect_ratio_policy", "stretch") == "stretch",
                  kUnsupported)
        << node->Describe() << ": sizes ('" << operand << "') given at run time with keep_aspect_ratio_policy="
        << node->attrs.GetString("keep_aspect_ratio_policy") << " (the scale depends on the sizes); give them as a "
        << "constant" << FreezeHint(operand, g);
  }
  if (proto.op_type() == "Pad") {
    AGATE_REQUIRE(proto.input_size() <= 3 || proto.input(3).empty(), kUnsupported)
        << node->Describe() << ": pads ('" << operand << "') given at run time with axes; give them as a constant"
        << FreezeHint(operand, g);
  }
  node->inputs[index] = "";
  return operand;
}

// STFT with its frame_step at run time: the declared frame count stands for the step. Shape
// inference sees the smallest step that gives it (attribute frame_step) and the frame length as
// an attribute (the window's when there is one); the kernel reads the run-time step for where each
// frame starts, after checking that it gives the declared count (several steps may).
void BindDeclaredStftFrames(const Shape& declared, const std::string& where, Node* node, const Graph& g) {
  const Shape signal = g.TypeOf(node->inputs[0]).shape;
  const bool windowed = node->inputs.size() > 2 && !node->inputs[2].empty();
  const int64_t frame = windowed ? graph::NumElements(g.TypeOf(node->inputs[2]).shape)
                                 : node->attrs.GetInt("frame_length", -1);
  AGATE_REQUIRE(signal.size() == 3 && frame > 0 && frame <= signal[1], kInvalidArgument)
      << where << "; the signal " << graph::ShapeToString(signal) << " and frame length " << frame
      << " give no frames";
  AGATE_REQUIRE(declared.size() == 4 && declared[0] == signal[0] && declared[1] >= 1, kInvalidArgument)
      << where << ", not [" << signal[0] << ", frames, bins, 2]";
  // floor(span / step) must be frames - 1: the smallest step with floor(span / step) <= frames - 1
  // is floor(span / frames) + 1, and it gives exactly frames - 1 unless no step does.
  const int64_t span = signal[1] - frame;
  const int64_t step = span / declared[1] + 1;
  AGATE_REQUIRE(span / step + 1 == declared[1], kInvalidArgument)
      << where << ", whose " << declared[1] << " frames no frame_step gives for " << signal[1]
      << " samples in frames of " << frame;
  node->attrs.Set("frame_step", step);
  node->attrs.Set("frame_length", frame);
}

// Compiles the node for its output's declared shape: sets the attributes that fix the output
// shape from it and appends the run-time operand as the last input (run_time_shape_operand.h).
// Throws kInvalidArgument when no operand value could give that shape.
void BindDeclaredShape(const std::string& kind, const std::string& operand, const Shape& declared, Node* node,
                       const Graph& g) {
  const std::string where = node->Describe() + ": the model declares output '" + node->outputs[0] + "' as " +
                            graph::ShapeToString(declared);
  const Shape in = node->inputs.empty() || node->inputs[0].empty() ? Shape{} : g.TypeOf(node->inputs[0]).shape;
  if (node->op == "Resize") {
    AGATE_REQUIRE(declared.size() == in.size(), kInvalidArgument) << where << ", not of the input's rank " << in.size();
    node->attrs.Set("sizes", std::vector<int64_t>(declared.begin(), declared.end()));
  } else if (node->op == "Expand") {
    AGATE_REQUIRE(declared.size() >= in.size() && graph::BroadcastShapes(in, declared, where) == declared,
                  kInvalidArgument)
        << where << ", which is no broadcast of the input " << graph::ShapeToString(in);
    node->attrs.Set("shape", std::vector<int64_t>(declared.begin(), declared.end()));
  } else if (node->op == "Tile") {
    AGATE_REQUIRE(declared.size() == in.size(), kInvalidArgument) << where << ", not of the input's rank " << in.size();
    std::vector<int64_t> repeats(in.size(), 1);
    for (size_t d = 0; d < in.size(); ++d) {
      AGATE_REQUIRE(in[d] == 0 ? declared[d] == 0 : declared[d] % in[d] == 0, kInvalidArgument)
          << where << ", which does not repeat the input " << graph::ShapeToString(in) << " on axis " << d;
      if (in[d] != 0) repeats[d] = declared[d] / in[d];
    }
    node->attrs.Set("repeats", repeats);
  } else if (node->op == "ConstantOfShape") {
    node->attrs.Set("shape", std::vector<int64_t>(declared.begin(), declared.end()));
  } else if (kind == "size") {  // the window operators
    AGATE_REQUIRE(declared.size() == 1, kInvalidArgument) << where << ", not of rank 1";
    node->attrs.Set("size", declared[0]);
  } else if (node->op == "OneHot") {
    AGATE_REQUIRE(declared.size() == in.size() + 1, kInvalidArgument)
        << where << ", not of rank " << in.size() + 1 << " (the indices' rank + 1)";
    int axis = graph::NormalizeAxis(node->attrs.GetInt("axis", -1), static_cast<int>(declared.size()), where);
    node->attrs.Set("depth", std::vector<double>{static_cast<double>(declared[axis])});
  } else if (node->op == "Pad") {
    // Shape inference sees the whole extension at the end; the kernel reads where each axis begins.
    AGATE_REQUIRE(declared.size() == in.size(), kInvalidArgument) << where << ", not of the input's rank " << in.size();
    std::vector<int64_t> pads(2 * in.size(), 0);
    for (size_t d = 0; d < in.size(); ++d) pads[d + in.size()] = declared[d] - in[d];
    node->attrs.Set("pads", pads);
  } else if (node->op == "MaxUnpool") {
    AGATE_REQUIRE(declared.size() == in.size(), kInvalidArgument) << where << ", not of the input's rank " << in.size();
    node->attrs.Set("output_shape", std::vector<int64_t>(declared.begin(), declared.end()));
  } else if (node->op == "STFT") {
    BindDeclaredStftFrames(declared, where, node, g);
  } else if (kind == "axes") {
    // Shape inference sees one set of axes that gives the declared shape; the kernel picks the
    // one the run-time axes name among every such set.
    std::vector<std::vector<int>> sets =
        graph::ReductionsGiving(in, declared, node->attrs.GetInt("keepdims", 1) != 0);
    AGATE_REQUIRE(!sets.empty(), kInvalidArgument)
        << where << ", which no set of axes reduces the input " << graph::ShapeToString(in) << " to";
    node->attrs.Set("axes", std::vector<int64_t>(sets[0].begin(), sets[0].end()));
  }
  node->attrs.Set(graph::kRunTimeOperandAttr, kind);
  // The operand's old place is empty ([indices, "", values] for OneHot, [x, "", value] for Pad):
  // the other static operands are attributes now, so the inputs left close up and the operand goes last.
  if (!node->inputs.empty()) {
    node->inputs.erase(std::remove(node->inputs.begin() + 1, node->inputs.end(), std::string()), node->inputs.end());
  }
  node->inputs.push_back(operand);
}

// A Range whose start, limit or delta is computed at run time, where the model declares the
// output's static length: compiled for that length, the kernel checks the values give it. Returns
// true when the node was imported here.
bool ImportDeclaredRange(const onnx::NodeProto& proto, const DeclaredShapes* declared, Node* node, Graph* result) {
  if (proto.op_type() != "Range" || declared == nullptr || node->outputs.empty() || node->inputs.size() != 3) {
    return false;
  }
  auto it = declared->find(node->outputs[0]);
  if (it == declared->end() || it->second.size() != 1 || AllInputsConstant(*node, *result)) return false;
  for (const std::string& in : node->inputs) {
    if (in.empty() || !result->HasValue(in)) return false;
    AGATE_REQUIRE(result->TypeOf(in).numel() == 1, kInvalidArgument)
        << node->Describe() << ": '" << in << "' is " << result->TypeOf(in).ToString() << ", not a scalar";
  }
  node->attrs.Set("length", it->second[0]);
  node->attrs.Set(graph::kRunTimeOperandAttr, "range");
  AppendNode(*node, result);
  return true;
}

}  // namespace

// Step 3, one node: constants fold, control flow is resolved (control_flow.h), the rest are
// shape-inferred and appended.
void ImportNode(const onnx::NodeProto& proto, Node node, int opset, const std::string& base_dir, Graph* result,
                const DeclaredShapes* declared) {
  // Every operator produces at least one value; a node without one would reach shape rules and
  // reference kernels that read their first output's type (found by the importer fuzzer: a Slice of
  // constants with no output read freed memory while it was folded).
  bool any_output = false;
  for (const std::string& out : node.outputs) any_output |= !out.empty();
  AGATE_REQUIRE(any_output, kInvalidArgument) << node.Describe() << " has no outputs";
  if (IsControlFlow(proto.op_type())) return ImportControlFlow(proto, node, opset, base_dir, result);
  if (proto.op_type() == "Constant") {
    AGATE_REQUIRE(node.outputs.size() == 1, kInvalidArgument) << node.Describe() << " must have one output";
    result->AddConstant(node.outputs[0], ConstantNodeValue(node));
    return;
  }
  if (IsExpandedOp(proto.op_type())) return ExpandNode(node, opset, result);
  const std::vector<graph::StaticOperand> operands = StaticOperandsOf(node, proto, opset);
  UseEmptyOperandsAsConstants(operands, &node, result);
  NormalizeDropout(proto, &node, *result);
  if (ImportNonMaxSuppression(proto, &node, result)) return;
  if (ImportRunTimeExtents(proto, opset, &node, result)) return;
  if (ImportDeclaredRange(proto, declared, &node, result)) return;
  const std::string run_time_operand = TakeRunTimeShapeOperand(proto, opset, declared, &node, *result);
  ResolveStaticOperands(&node, operands, *result, DeclarableShapeOperand(proto, opset).first);
  NormalizeResolvedForm(proto.op_type(), opset, &node, result);
  ApplyLegacyBroadcast(&node, result);
  if (!run_time_operand.empty()) {
    BindDeclaredShape(DeclarableShapeOperand(proto, opset).second, run_time_operand, declared->at(node.outputs[0]),
                      &node, *result);
  }
  std::string reason = graph::UnsupportedReason(node);
  AGATE_REQUIRE(reason.empty(), kUnsupported) << "node '" << node.name << "' (" << proto.op_type() << ", opset "
                                              << opset << "): " << reason;
  bool shape_only = (node.op == "Shape" || node.op == "Size") && result->HasValue(node.inputs[0]);
  if (shape_only && !result->IsConstant(node.inputs[0])) {
    result->AddConstant(node.outputs[0], ShapeValue(node, result->TypeOf(node.inputs[0])));
    return;
  }
  AppendNode(node, result);
}

namespace {

// Step 2: initializers and bound inputs become constants, the other inputs typed graph inputs.
void AddInputsAndInitializers(const onnx::GraphProto& g, const ImportOptions& options, const std::string& base_dir,
                              Graph* result) {
  std::set<std::string> initializer_names;
  for (const auto& init : g.initializer()) {
    result->AddConstant(init.name(), TensorFromProto(init, base_dir));
    initializer_names.insert(init.name());
  }
  for (const auto& init : g.sparse_initializer()) {
    AGATE_THROW(kUnsupported) << "sparse initializer '" << init.values().name() << "' is not supported";
  }
  std::set<std::string> declared_inputs;
  for (const auto& input : g.input()) declared_inputs.insert(input.name());
  for (const auto& [name, shape] : options.input_shapes) {
    AGATE_REQUIRE(declared_inputs.count(name), kNotFound)
        << "--input-shape names '" << name << "', which is not an input of the model";
  }
  for (const auto& [name, value] : options.input_values) {
    AGATE_REQUIRE(declared_inputs.count(name) && !initializer_names.count(name), kNotFound)
        << "--input-value names '" << name << "', which is not an input of the model";
  }
  for (const auto& input : g.input()) {
    if (initializer_names.count(input.name())) continue;  // IR < 4 lists initializers as inputs too
    auto bound = options.input_values.find(input.name());
    if (bound != options.input_values.end()) {
      CheckBoundInputValue(input, bound->second, options);
      result->AddConstant(input.name(), bound->second);
      continue;
    }
    result->AddInput(input.name(), ValueInfoType(input, options));
  }
}

// Which node computes `value` of run-time extents, and from what, for messages.
std::string RunTimeExtentsOrigin(const std::string& value, const Graph& g) {
  for (const Node& node : g.nodes) {
    if (std::find(node.outputs.begin(), node.outputs.end(), value) == node.outputs.end()) continue;
    if (node.op == "RunTimeSlice") {
      return "Slice '" + node.name + "' takes its starts, ends, axes or steps at run time; freeze them with agate "
             "compile --input-value";
    }
    if (node.op == "RunTimeSplit") {
      return "Split '" + node.name + "' takes its sizes from '" + node.inputs[1] + "' at run time" +
             FreezeHint(node.inputs[1], g);
    }
    if (node.op == "RunTimeTopK") {
      return "TopK '" + node.name + "' takes its k from '" + node.inputs[1] + "' at run time" +
             FreezeHint(node.inputs[1], g);
    }
    if (node.op == "RunTimeCompress") {
      return "Compress '" + node.name + "' takes its condition from '" + node.inputs[1] + "' at run time" +
             FreezeHint(node.inputs[1], g);
    }
    if (node.op == "RunTimeNonMaxSuppression") {
      return "NonMaxSuppression '" + node.name + "' selects boxes by the values of '" + node.inputs[0] + "' and '" +
             node.inputs[1] + "', known only when the model runs";
    }
    if (node.op == "RunTimeNonZero" || node.op == "RunTimeUnique") {
      return node.op.substr(7) + " '" + node.name + "' selects from the values of '" + node.inputs[0] +
             "', computed at run time" + FreezeHint(node.inputs[0], g);
    }
    if (node.op != "RunTimeReshape") break;
    return node.attrs.GetString("form") + " '" + node.name + "' takes its " +
           (node.attrs.GetString("form") == "Reshape" ? "shape" : "axes") + " from '" + node.inputs[1] +
           "' at run time" + FreezeHint(node.inputs[1], g);
  }
  return "";
}

// The axis of `value`, an output of `producer` with run-time extents, that alone varies at run
// time (the others are their bounds), or -1.
int RunTimeRowsAxis(const Node& producer, const std::string& value, const Graph& g) {
  const int rank = g.TypeOf(value).rank();
  if (rank == 1 || producer.op == "RunTimeNonMaxSuppression") return 0;  // [rows] / [rows, 3]
  if (producer.op == "RunTimeNonZero") return 1;                         // the positions: [input rank, rows]
  if ((producer.op == "RunTimeCompress" || producer.op == "RunTimeUnique" || producer.op == "RunTimeTopK" ||
       producer.op == "RunTimeSplit") &&
      producer.attrs.Has("axis")) {
    // Selections and splits along an axis vary on it alone (without one, Compress and Unique flatten).
    const int64_t fallback = producer.op == "RunTimeTopK" ? -1 : 0;
    return graph::NormalizeAxis(producer.attrs.GetInt("axis", fallback), rank, producer.Describe());
  }
  return -1;
}

// True when rows on `axis` of a value of upper bounds `bound` are a prefix of its buffer (every
// axis before it of extent 1): its compact layout and its bound layout are then the same bytes.
bool RowsArePrefix(const Shape& bound, int axis) {
  for (int d = 0; d < axis; ++d)
    if (bound[d] != 1) return false;
  return true;
}

// Where the rows of a value come from: the extents value that counts them, which of its
// elements holds the count, and the axis of the value that holds the rows.
struct CountedRows {
  std::string extents;
  int extents_axis = 0;
  int axis = 0;
  std::string source;  // the value of run-time extents they are the rows of (for messages)
};

// The readers of a value of run-time extents whose rows follow an axis longer than 1 (NonZero's
// positions of a mask of rank 2 or more, [rank, rows]; TopK along the last axis of [B, N]) read a
// copy in the bound layout (RunTimeToBoundLayout, placed right after the producer): computed row
// for row on the upper bound, element i of a row must sit where the bound shape puts it, not
// where the run-time extents pack it. Returns value -> its copy.
std::map<std::string, std::string> ReadInBoundLayout(Graph* result) {
  std::set<std::string> read;
  for (const Node& node : result->nodes) read.insert(node.inputs.begin(), node.inputs.end());
  const std::map<std::string, int> producers = result->Producers();
  std::map<std::string, std::string> copies;
  for (const auto& [value, extents] : result->run_time_extents) {
    const int axis = RunTimeRowsAxis(result->nodes.at(producers.at(value)), value, *result);
    if (axis < 0 || RowsArePrefix(result->TypeOf(value).shape, axis) || !read.count(value)) continue;
    copies[value] = result->FreshName(value + "_bound_layout");
  }
  if (copies.empty()) return copies;
  std::vector<Node> nodes;
  for (Node node : result->nodes) {
    for (std::string& in : node.inputs)
      if (copies.count(in)) in = copies.at(in);
    std::vector<std::string> outputs = node.outputs;
    nodes.push_back(std::move(node));
    for (const std::string& out : outputs) {
      if (!copies.count(out)) continue;
      Node copy;
      copy.op = "RunTimeToBoundLayout";
      copy.name = result->FreshName(out + "_to_bound_layout");
      copy.inputs = {out, result->run_time_extents.at(out)};
      copy.outputs = {copies.at(out)};
      result->types[copies.at(out)] = result->TypeOf(out);
      nodes.push_back(copy);
    }
  }
  result->nodes = std::move(nodes);
  return copies;
}

// Every use of value `from` (node outputs and inputs) becomes `to`, of the same type.
void RenameValue(const std::string& from, const std::string& to, Graph* result) {
  for (Node& node : result->nodes) {
    for (std::string& in : node.inputs)
      if (in == from) in = to;
    for (std::string& out : node.outputs)
      if (out == from) out = to;
  }
  result->types[to] = result->TypeOf(from);
}

// Values of run-time extents (Graph::run_time_extents) are model outputs, or read by operators
// that compute row for row on their upper bound, in the bound layout (ReadInBoundLayout): where
// one axis alone varies, a reader whose outputs keep those rows on one axis, row i from row i
// (graph::RowMixingReason: Gather of NonMaxSuppression's selected rows, the Transpose/Squeeze/
// GatherND of NonZero's positions of a mask, elementwise arithmetic, MatMul by a constant),
// computes rows past the count that nobody reads, and its outputs' rows are counted by the same
// extents. Anything else is refused naming the reader, the value, where its extents come from and
// why. A model output computed so gets a RunTimeRowExtents node for its extents and, where its
// rows follow an axis longer than 1, a RunTimeToCompactLayout node that packs it as every output
// of run-time extents is packed; unused extents are dropped; the extents of model outputs are
// appended to the graph outputs.
void FinishRunTimeExtents(Graph* result) {
  const std::map<std::string, std::string> copies = ReadInBoundLayout(result);
  std::map<std::string, CountedRows> counted;  // values whose rows are counted at run time
  std::map<std::string, std::string> sources;  // every value of run-time extents or rows -> its source
  const std::map<std::string, int> producers = result->Producers();
  for (const auto& [value, extents] : result->run_time_extents) {
    sources[value] = value;
    const Node& producer = result->nodes.at(producers.at(value));
    const int axis = RunTimeRowsAxis(producer, value, *result);
    if (axis < 0) continue;
    // TopK's values and indices have one count: both are counted by the values' extents, so a
    // reader may combine them (values - indices).
    const std::string& counter = producer.op == "RunTimeTopK" ? producer.outputs[1] : extents;
    auto copy = copies.find(value);
    if (copy == copies.end()) {
      counted[value] = CountedRows{counter, axis, axis, value};
    } else {
      counted[copy->second] = CountedRows{counter, axis, axis, value};
      sources[copy->second] = value;
    }
  }
  for (const Node& node : result->nodes) {
    if (node.op == "RunTimeToBoundLayout") continue;  // ReadInBoundLayout's copies, counted above
    std::map<std::string, int> rows;
    const CountedRows* counter = nullptr;
    std::string first, why;
    for (const std::string& in : node.inputs) {
      if (!sources.count(in)) continue;
      if (first.empty()) first = in;
      auto it = counted.find(in);
      if (it == counted.end()) {
        why = "more than one of its axes varies";
      } else if (node.op.rfind("RunTime", 0) == 0) {
        why = node.op.substr(7) + " takes its inputs' extents at their bounds";
      } else if (counter != nullptr && counter->extents != it->second.extents) {
        why = "it combines rows counted by two different operators";
      }
      if (!why.empty()) break;
      counter = &it->second;
      rows[in] = it->second.axis;
    }
    if (first.empty()) continue;
    std::vector<int> output_axes;
    if (why.empty()) why = graph::RowMixingReason(node, rows, result->types, result->constants, &output_axes);
    const std::string& source = sources.at(first);
    AGATE_REQUIRE(why.empty(), kUnsupported)
        << node.Describe() << " reads '" << first << "', whose extents are known only when the model runs ("
        << (source == first ? "" : "its rows are those of '" + source + "': ") << RunTimeExtentsOrigin(source, *result)
        << "); agate supports such a value as a model output, or read row for row (Gather, elementwise operators, "
        << "MatMul by a constant...), but " << why;
    const CountedRows from = *counter;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      counted[node.outputs[i]] = CountedRows{from.extents, from.extents_axis, output_axes[i], from.source};
      sources[node.outputs[i]] = from.source;
    }
  }
  std::map<std::string, std::string> kept;
  for (const std::string& out : result->outputs) {
    auto it = result->run_time_extents.find(out);
    if (it != result->run_time_extents.end()) {
      kept.insert(*it);
      continue;
    }
    auto rows = counted.find(out);
    if (rows == counted.end() || kept.count(out)) continue;
    Node extents;
    extents.op = "RunTimeRowExtents";
    extents.name = result->FreshName(out + "_rows");
    extents.inputs = {rows->second.extents};
    extents.outputs = {result->FreshName(out + "_extents")};
    extents.attrs.Set("shape", result->TypeOf(out).shape);
    extents.attrs.Set("axis", int64_t{rows->second.axis});
    extents.attrs.Set("source_axis", int64_t{rows->second.extents_axis});
    AppendNode(extents, result);
    kept[out] = extents.outputs[0];
    if (RowsArePrefix(result->TypeOf(out).shape, rows->second.axis)) continue;
    // Computed in the bound layout; the output is packed like every output of run-time extents.
    const std::string bound = result->FreshName(out + "_bound_layout");
    RenameValue(out, bound, result);
    Node compact;
    compact.op = "RunTimeToCompactLayout";
    compact.name = result->FreshName(out + "_to_compact_layout");
    compact.inputs = {bound, extents.outputs[0]};
    compact.outputs = {out};
    AppendNode(compact, result);
  }
  result->run_time_extents = kept;
  for (const auto& [value, extents] : kept) result->outputs.push_back(extents);
}

// Step 4: graph outputs, checked against their declared types (after FinishRunTimeExtents, which
// says which outputs have run-time extents).
void AddOutputs(const onnx::GraphProto& g, Graph* result) {
  for (const auto& output : g.output()) {
    AGATE_REQUIRE(result->HasValue(output.name()), kInvalidArgument)
        << "graph output '" << output.name() << "' is never computed";
    result->outputs.push_back(output.name());
  }
  FinishRunTimeExtents(result);
  for (const auto& output : g.output()) CheckDeclaredOutput(output, *result);
}

// The graph's outputs and value_info whose declared shape is fully static.
DeclaredShapes StaticDeclaredShapes(const onnx::GraphProto& g) {
  DeclaredShapes declared;
  auto add = [&declared](const onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    Shape shape;
    for (const auto& dim : info.type().tensor_type().shape().dim()) {
      if (!dim.has_dim_value() || dim.dim_value() < 0) return;
      shape.push_back(dim.dim_value());
    }
    declared[info.name()] = shape;
  };
  for (const auto& info : g.value_info()) add(info);
  for (const auto& info : g.output()) add(info);
  return declared;
}

Graph Import(const onnx::ModelProto& model, const ImportOptions& options, const std::string& base_dir) {
  int opset = DefaultOpset(model);
  AGATE_REQUIRE(opset >= kMinOpset && opset <= kMaxOpset, kUnsupported)
      << "the model uses opset " << opset << "; agate supports opsets " << kMinOpset << " to " << kMaxOpset;
  const onnx::GraphProto& g = model.graph();
  std::vector<Node> translated = TranslateAll(g, opset, base_dir);
  Graph result;
  result.name = g.name().empty() ? "main" : g.name();
  AddInputsAndInitializers(g, options, base_dir, &result);
  std::set<std::string> available;
  for (const auto& [name, type] : result.types) available.insert(name);
  for (const auto& input : g.input()) available.insert(input.name());
  const DeclaredShapes declared = StaticDeclaredShapes(g);
  for (int index : TopologicalOrder(g, available)) {
    ImportNode(g.node(index), translated[index], opset, base_dir, &result, &declared);
  }
  AddOutputs(g, &result);
  result.Verify();
  AGATE_LOG(INFO) << "imported ONNX graph '" << result.name << "' (opset " << opset << "): " << result.nodes.size()
                  << " nodes, " << result.constants.size() << " constants";
  return result;
}

}  // namespace

std::map<std::string, Shape> ParseInputShapes(const std::string& text) {
  std::map<std::string, Shape> shapes;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t colon = item.rfind(':');
    AGATE_REQUIRE(colon != std::string::npos && colon > 0, kInvalidArgument)
        << "--input-shape '" << item << "' must look like name:1x3x224x224";
    Shape shape;
    std::stringstream dims(item.substr(colon + 1));
    std::string dim;
    while (std::getline(dims, dim, 'x')) {
      int64_t value = 0;
      AGATE_REQUIRE(!dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos &&
                        ParseInt64(dim, &value),
                    kInvalidArgument)
          << "--input-shape '" << item << "': '" << dim << "' is not a dimension";
      shape.push_back(value);
    }
    shapes[item.substr(0, colon)] = shape;
  }
  return shapes;
}

std::set<std::string> StaticOperandInputs(const onnx::ModelProto& model) {
  int opset = DefaultOpset(model);
  std::set<std::string> inputs;
  for (const auto& in : model.graph().input()) inputs.insert(in.name());
  std::set<std::string> result;
  for (const auto& proto : model.graph().node()) {
    if (!IsDefaultDomain(proto.domain())) continue;
    Node node;
    node.op = GraphOp(proto);
    for (const graph::StaticOperand& s : StaticOperandsOf(node, proto, opset)) {
      if (s.input < proto.input_size() && inputs.count(proto.input(s.input))) result.insert(proto.input(s.input));
    }
  }
  return result;
}

}  // namespace onnx_frontend
}  // namespace agate
