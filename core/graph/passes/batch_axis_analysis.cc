#include "core/graph/passes/batch_axis_analysis.h"

#include <map>
#include <sstream>

#include "core/graph/shape_inference.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

// True when `shape_a` / `shape_b` are [a, S...] / [b, S...].
bool RowsOnAxis0(const Shape& shape_a, int64_t a, const Shape& shape_b, int64_t b) {
  if (shape_a.empty() || shape_a.size() != shape_b.size() || shape_a[0] != a || shape_b[0] != b) return false;
  for (size_t i = 1; i < shape_a.size(); ++i) {
    if (shape_a[i] != shape_b[i]) return false;
  }
  return true;
}

// Operators whose output keeps its input's shape but combines the elements along their
// `axis` attribute (default `fallback`); with that axis normalized to 0, rows mix.
bool CombinesAlongAxisAttr(const std::string& op, int64_t* fallback) {
  static const std::map<std::string, int64_t> kOps = {
      {"Softmax", -1},  {"LogSoftmax", -1}, {"Hardmax", -1},           {"CumSum", 0},
      {"TopK", -1},     {"LpNormalization", -1}, {"LayerNormalization", -1}, {"ArgMax", 0},
      {"ArgMin", 0},    {"DFT", 1},
  };
  auto it = kOps.find(op);
  if (it == kOps.end()) return false;
  *fallback = it->second;
  return true;
}

// Operators that keep their inputs' shape yet combine elements along axes their attributes name
// other than by one `axis`: a scale over the whole tensor, normalization over `axes`
// (MeanVarianceNormalization's default {0, 2, 3}), a recurrence over the time axis (the recurrent
// layers' axis 0 in layout 0, axis 1 in layout 1; ReverseSequence's time_axis), batch statistics
// in training mode (every axis but the channels).
bool CombinesAlongByOtherAttrs(const Node& node, int axis, int64_t rank) {
  const std::string& op = node.op;
  auto normalized = [rank](int64_t a) { return a < 0 ? a + rank : a; };
  if (op == "DynamicQuantizeLinear") return true;
  if (op == "MeanVarianceNormalization") {
    for (int64_t a : node.attrs.GetInts("axes", {0, 2, 3}))
      if (normalized(a) == axis) return true;
    return false;
  }
  if (op == "LSTM" || op == "GRU" || op == "RNN") return axis == (node.attrs.GetInt("layout", 0) == 0 ? 0 : 1);
  if (op == "ReverseSequence") return normalized(node.attrs.GetInt("time_axis", 0)) == axis;
  if (op == "BatchNormalization") return node.attrs.GetInt("training_mode", 0) != 0 && axis != 1;
  return false;
}

// True when `node`, reading rows on `axis` of an input of rank `rank`, combines elements along
// that axis (Softmax over it, CumSum along it, ...).
bool CombinesAlong(const Node& node, int axis, int64_t rank) {
  if (CombinesAlongByOtherAttrs(node, axis, rank)) return true;
  int64_t fallback = 0;
  if (!CombinesAlongAxisAttr(node.op, &fallback)) return false;
  int64_t along = node.attrs.GetIntOrSingle("axis", fallback);
  if (along < 0) along += rank;
  return along == axis || (node.op == "LayerNormalization" && along <= axis);
}

// The one axis on which `at_longer` is `at_bound` with `rows` + 1 for `rows`; -1 when there is none.
int RowsAxis(const Shape& at_bound, const Shape& at_longer, int64_t rows) {
  if (at_bound.size() != at_longer.size()) return -1;
  int axis = -1;
  for (size_t d = 0; d < at_bound.size(); ++d) {
    if (at_bound[d] == at_longer[d]) continue;
    if (axis >= 0 || at_bound[d] != rows || at_longer[d] != rows + 1) return -1;
    axis = static_cast<int>(d);
  }
  return axis;
}

}  // namespace

std::string RowMixingReason(const Node& node, const std::map<std::string, int>& row_axes,
                            const std::map<std::string, TensorType>& types,
                            const std::map<std::string, Tensor>& constants, std::vector<int>* output_axes) {
  int64_t rows = -1;
  std::map<std::string, TensorType> longer = types;
  for (const std::string& in : node.inputs) {
    auto it = row_axes.find(in);
    if (it == row_axes.end()) continue;
    TensorType& type = longer.at(in);
    const int axis = it->second;
    if (axis < 0 || axis >= type.rank()) return "input '" + in + "' has no axis " + std::to_string(axis);
    if (rows >= 0 && type.shape[axis] != rows) {
      return "its inputs' rows have different upper bounds (" + std::to_string(rows) + " and " +
             std::to_string(type.shape[axis]) + ")";
    }
    rows = type.shape[axis];
    if (CombinesAlong(node, axis, type.rank()))
      return node.op + " combines elements along axis " + std::to_string(axis) + ", which holds the rows";
    type.shape[axis] = rows + 1;
  }
  if (output_axes != nullptr) output_axes->assign(node.outputs.size(), -1);
  if (rows < 0) return "";
  std::vector<TensorType> at_bound, at_longer;
  try {
    at_bound = InferNodeTypes(node, types, constants);
    at_longer = InferNodeTypes(node, longer, constants);
  } catch (const Error& e) {
    return "its output shapes do not follow the rows (" + e.message() + ")";
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) continue;
    const int axis = RowsAxis(at_bound[i].shape, at_longer[i].shape, rows);
    if (axis < 0) {
      std::ostringstream why;
      why << "output '" << node.outputs[i] << "' " << ShapeToString(at_bound[i].shape) << " "
          << (at_bound[i].shape == at_longer[i].shape ? "reduces or drops the rows" : "merges the rows with another axis");
      return why.str();
    }
    if (output_axes != nullptr) (*output_axes)[i] = axis;
  }
  return "";
}

BatchAxes AnalyzeBatchAxes(const Graph& at_a, int64_t a, const Graph& at_b, int64_t b, const std::string& symbol,
                           const std::set<std::string>& batch_inputs) {
  AGATE_CHECK(a != b) << "the batch-axis analysis needs two different extents of " << symbol;
  AGATE_REQUIRE(at_a.nodes.size() == at_b.nodes.size() && at_a.inputs == at_b.inputs && at_a.outputs == at_b.outputs,
                kUnsupported)
      << "the model imports to different graphs at " << symbol << " = " << a << " and " << b
      << " (" << at_a.nodes.size() << " and " << at_b.nodes.size()
      << " nodes): some shape computation depends on " << symbol << ", which cannot vary at run time";
  std::set<std::string> rows;  // values whose axis 0 carries the symbol
  BatchAxes axes;
  for (const std::string& in : at_a.inputs) {
    const Shape& sa = at_a.types.at(in).shape;
    const Shape& sb = at_b.types.at(in).shape;
    const bool batch = batch_inputs.count(in) > 0;
    if (batch) {
      AGATE_REQUIRE(RowsOnAxis0(sa, a, sb, b), kUnsupported)
          << "input '" << in << "' carries " << symbol << " but has shapes " << ShapeToString(sa) << " and "
          << ShapeToString(sb) << " at " << symbol << " = " << a << " and " << b << ": only axis 0 may carry it";
      rows.insert(in);
    }
    axes.inputs.push_back(batch);
  }
  for (size_t n = 0; n < at_a.nodes.size(); ++n) {
    const Node& node = at_a.nodes[n];
    AGATE_REQUIRE(node.op == at_b.nodes[n].op && node.outputs == at_b.nodes[n].outputs, kUnsupported)
        << node.Describe() << " imports differently at " << symbol << " = " << a << " and " << b
        << ": some shape computation depends on " << symbol << ", which cannot vary at run time";
    bool reads_rows = false;
    for (const std::string& in : node.inputs) reads_rows = reads_rows || rows.count(in) > 0;
    if (reads_rows) {
      const int64_t rank = static_cast<int64_t>(at_a.types.at(node.inputs[0]).shape.size());
      AGATE_REQUIRE(!CombinesAlong(node, 0, rank), kUnsupported)
          << node.op << " '" << node.name << "' combines elements along axis 0, which carries " << symbol << ": "
          << symbol << " cannot vary at run time";
    }
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      const Shape& sa = at_a.types.at(out).shape;
      const Shape& sb = at_b.types.at(out).shape;
      if (!reads_rows) {
        AGATE_REQUIRE(sa == sb, kUnsupported)
            << node.op << " '" << node.name << "' output '" << out << "' has shapes " << ShapeToString(sa) << " and "
            << ShapeToString(sb) << " at " << symbol << " = " << a << " and " << b << " without reading a tensor that carries "
            << symbol << ": " << symbol << " cannot vary at run time";
        continue;
      }
      AGATE_REQUIRE(RowsOnAxis0(sa, a, sb, b), kUnsupported)
          << node.op << " '" << node.name << "' output '" << out << "' has shapes " << ShapeToString(sa) << " and "
          << ShapeToString(sb) << " at " << symbol << " = " << a << " and " << b << ": it "
          << (sa == sb ? "reduces or drops axis 0, which carries " : "moves or merges axis 0, which carries ") << symbol
          << ", so " << symbol << " cannot vary at run time";
      rows.insert(out);
    }
  }
  for (const std::string& out : at_a.outputs) axes.outputs.push_back(rows.count(out) > 0);
  return axes;
}

}  // namespace graph
}  // namespace agate
