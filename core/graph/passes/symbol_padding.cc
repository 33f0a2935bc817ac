#include "core/graph/passes/symbol_padding.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/graph/op_registry.h"
#include "core/graph/shape_inference.h"
#include "core/graph/shape_rules.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

using AxisList = std::vector<int>;

constexpr double kInf = std::numeric_limits<double>::infinity();

bool Contains(const AxisList& axes, int axis) { return std::find(axes.begin(), axes.end(), axis) != axes.end(); }

// The axes carrying the symbol in a value of shape `sa` at v and `sb` at w: those of extent v
// and w. False when the shapes differ otherwise (a rank, S + 1, 2 * S, S merged with an axis).
bool SymbolAxes(const Shape& sa, int64_t v, const Shape& sb, int64_t w, AxisList* axes) {
  axes->clear();
  if (sa.size() != sb.size()) return false;
  for (size_t d = 0; d < sa.size(); ++d) {
    if (sa[d] == sb[d]) continue;
    if (sa[d] != v || sb[d] != w) return false;
    axes->push_back(static_cast<int>(d));
  }
  return true;
}

// True when `a` and `b` (equal dtypes, shapes differing only on `axes`) hold the same elements
// on the positions both have.
bool AgreeOnCommonPositions(const Tensor& a, const Tensor& b, const AxisList& axes) {
  if (a.dtype() != b.dtype() || a.rank() != b.rank()) return false;
  Shape common = a.shape();
  for (int d : axes) common[d] = std::min(a.shape()[d], b.shape()[d]);
  const std::vector<int64_t> sa = RowMajorStrides(a.shape()), sb = RowMajorStrides(b.shape());
  const int bytes = a.dtype().element_bytes();
  const auto* pa = static_cast<const uint8_t*>(a.raw_data());
  const auto* pb = static_cast<const uint8_t*>(b.raw_data());
  const int64_t count = NumElements(common);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, oa = 0, ob = 0;
    for (int d = a.rank() - 1; d >= 0; --d) {
      const int64_t x = rest % common[d];
      rest /= common[d];
      oa += x * sa[d];
      ob += x * sb[d];
    }
    if (std::memcmp(pa + oa * bytes, pb + ob * bytes, bytes) != 0) return false;
  }
  return true;
}

int64_t Product(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= shape[d];
  return p;
}

std::string AxisText(int axis) { return "axis " + std::to_string(axis); }

class Padder {
 public:
  Padder(const Graph& at_v, int64_t v, const Graph& at_w, int64_t w, const std::string& symbol, int64_t min_extent,
         const std::string& extent_input)
      : at_v_(at_v), at_w_(at_w), v_(v), w_(w), symbol_(symbol), min_extent_(min_extent), extent_(extent_input) {}

  Graph Run(PaddedAxes* axes) {
    AGATE_CHECK(v_ != w_) << "symbol padding needs two different extents of " << symbol_;
    AGATE_REQUIRE(at_v_.nodes.size() == at_w_.nodes.size() && at_v_.inputs == at_w_.inputs &&
                      at_v_.outputs == at_w_.outputs,
                  kUnsupported)
        << "the model imports to different graphs at " << symbol_ << " = " << v_ << " and " << w_ << " ("
        << at_v_.nodes.size() << " and " << at_w_.nodes.size() << " nodes): some computation other than a shape "
        << "depends on " << symbol_ << ", which cannot vary at run time";
    AGATE_REQUIRE(at_v_.run_time_extents.empty(), kUnsupported)
        << "value '" << at_v_.run_time_extents.begin()->first << "' has extents known only when the model runs; "
        << "a module whose symbol " << symbol_ << " is padded supports only static and symbolic extents";
    out_ = at_v_;
    out_.nodes.clear();
    out_.groups.clear();
    ClassifyInputs(axes);
    ClassifyConstants();
    for (size_t n = 0; n < at_v_.nodes.size(); ++n) {
      const Node& node = at_v_.nodes[n];
      AGATE_REQUIRE(node.op == at_w_.nodes[n].op && node.outputs == at_w_.nodes[n].outputs, kUnsupported)
          << node.Describe() << " imports differently at " << symbol_ << " = " << v_ << " and " << w_
          << ": some computation other than a shape depends on " << symbol_ << ", which cannot vary at run time";
      PadNode(node);
    }
    for (const std::string& o : out_.outputs) {
      auto it = symbolic_.find(o);
      axes->outputs.push_back(it == symbolic_.end() ? AxisList{} : it->second);
    }
    out_.inputs.push_back(extent_);
    out_.types[extent_] = TensorType{DType::Int(64), {}};
    return InferShapes(out_);
  }

 private:
  [[noreturn]] void Refuse(const Node& node, const std::string& why) const {
    throw Error(StatusCode::kUnsupported, node.Describe() + " " + why + ": " + symbol_ +
                                              " cannot vary at run time (it is padded to a compiled extent)");
  }

  void ClassifyInputs(PaddedAxes* axes) {
    for (const std::string& in : at_v_.inputs) {
      AxisList list;
      const Shape& sa = at_v_.TypeOf(in).shape;
      const Shape& sb = at_w_.TypeOf(in).shape;
      AGATE_REQUIRE(SymbolAxes(sa, v_, sb, w_, &list), kUnsupported)
          << "input '" << in << "' has shapes " << ShapeToString(sa) << " and " << ShapeToString(sb) << " at "
          << symbol_ << " = " << v_ << " and " << w_ << ": an input's axis may be " << symbol_ << " or fixed";
      if (!list.empty()) symbolic_[in] = list;
      axes->inputs.push_back(list);
    }
  }

  // Constants folded from the symbol's extent: those that hold the same values on the positions
  // both imports have (a mask or a position table sliced to S) are padded like any value; the
  // others (a folded S used as a number) are refused where a node reads them.
  void ClassifyConstants() {
    for (const auto& [name, a] : at_v_.constants) {
      auto it = at_w_.constants.find(name);
      if (it == at_w_.constants.end()) {
        derived_[name] = "it exists only at " + symbol_ + " = " + std::to_string(v_);
        continue;
      }
      const Tensor& b = it->second;
      AxisList list;
      if (!SymbolAxes(a.shape(), v_, b.shape(), w_, &list)) {
        derived_[name] = "its shape is " + ShapeToString(a.shape()) + " at " + symbol_ + " = " + std::to_string(v_) +
                         " and " + ShapeToString(b.shape()) + " at " + std::to_string(w_);
        continue;
      }
      if (!AgreeOnCommonPositions(a, b, list)) {
        derived_[name] = "its values differ at " + symbol_ + " = " + std::to_string(v_) + " and " + std::to_string(w_);
        continue;
      }
      if (!list.empty()) symbolic_[name] = list;
    }
  }

  // The output axes carrying the symbol, from the shapes at v and w.
  std::vector<AxisList> OutputAxes(const Node& node) const {
    std::vector<AxisList> result(node.outputs.size());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string& out = node.outputs[i];
      if (out.empty()) continue;
      const Shape& sa = at_v_.TypeOf(out).shape;
      const Shape& sb = at_w_.TypeOf(out).shape;
      if (!SymbolAxes(sa, v_, sb, w_, &result[i])) {
        Refuse(node, "output '" + out + "' has shapes " + ShapeToString(sa) + " and " + ShapeToString(sb) + " at " +
                         symbol_ + " = " + std::to_string(v_) + " and " + std::to_string(w_) +
                         ": an extent derived from " + symbol_ + " other than " + symbol_ +
                         " itself (S + 1, 2 * S, or S merged with another axis) cannot be padded");
      }
    }
    return result;
  }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    while (out_.HasValue(name) || used_.count(name)) name = base + "_" + std::to_string(++counter_);
    used_.insert(name);
    return name;
  }

  // The bool [1.., v @ axis, ..1] value "position < n" along `axis` of a rank-`rank` value.
  std::string MaskOf(int rank, int axis) {
    const auto key = std::make_pair(rank, axis);
    auto it = masks_.find(key);
    if (it != masks_.end()) return it->second;
    Shape shape(rank, 1);
    shape[axis] = v_;
    std::vector<int64_t> positions(v_);
    for (int64_t i = 0; i < v_; ++i) positions[i] = i;
    const std::string iota = Fresh(symbol_ + "_positions_r" + std::to_string(rank) + "a" + std::to_string(axis));
    out_.AddConstant(iota, Tensor::FromInts(DType::Int(64), shape, positions));
    const std::string mask = Fresh(symbol_ + "_valid_r" + std::to_string(rank) + "a" + std::to_string(axis));
    out_.AddNode(Node{Fresh(mask + "_less"), "Less", {iota, extent_}, {mask}, {}});
    masks_[key] = mask;
    return mask;
  }

  // The scalar `fill` in `dtype`; +-inf are an integer dtype's extremes.
  Tensor FillTensor(const Node& node, DType dtype, double fill) const {
    if (!dtype.is_integer()) return Tensor::Scalar(dtype, fill);
    if (dtype.is_uint() && dtype.bits() >= 64) Refuse(node, "would need a uint64 input masked");
    int64_t value = static_cast<int64_t>(fill);
    if (std::isinf(fill)) {
      const int bits = dtype.bits();
      if (dtype.is_uint()) {
        value = fill < 0 ? 0 : static_cast<int64_t>((uint64_t{1} << bits) - 1);
      } else if (bits >= 64) {
        value = fill < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
      } else {
        value = fill < 0 ? -(int64_t{1} << (bits - 1)) : (int64_t{1} << (bits - 1)) - 1;
      }
    }
    return Tensor::FromInts(dtype, {}, {value});
  }

  // `value` (dtype, rank) with its positions >= n along `axis` replaced by `fill` (+-inf become
  // the dtype's extremes for integers).
  std::string Masked(const Node& node, const std::string& value, DType dtype, int rank, int axis, double fill) {
    if (dtype.is_bool()) Refuse(node, "would need its bool input '" + value + "' masked along " + AxisText(axis));
    const std::string constant = Fresh(value + "_padding_fill");
    out_.AddConstant(constant, FillTensor(node, dtype, fill));
    const std::string masked = Fresh(value + "_masked");
    out_.AddNode(Node{Fresh(node.name + "_mask"), "Where", {MaskOf(rank, axis), value, constant}, {masked}, {}});
    return masked;
  }

  // Input `i` of `node` masked along every axis of `along` that carries the symbol there.
  void MaskInput(Node* node, size_t i, const AxisList& along, double fill) {
    const std::string original = node->inputs[i];
    auto it = symbolic_.find(original);
    if (it == symbolic_.end()) return;
    const TensorType& type = at_v_.TypeOf(original);
    for (int axis : along) {
      if (Contains(it->second, axis)) node->inputs[i] = Masked(*node, node->inputs[i], type.dtype, type.rank(), axis, fill);
    }
  }

  // The scalar (v / n)^k in `dtype`, which turns a mean over k padded axes into the mean over n.
  std::string MeanRescale(DType dtype, int k) {
    const std::string key = dtype.ToString() + "^" + std::to_string(k);
    auto it = rescales_.find(key);
    if (it != rescales_.end()) return it->second;
    const std::string n = Fresh(symbol_ + "_extent_" + dtype.ToString());
    out_.AddNode(Node{Fresh(n + "_cast"), "Cast", {extent_}, {n}, {}});
    out_.nodes.back().attrs.Set("to", dtype.ToString());
    const std::string v = Fresh(symbol_ + "_padded_extent_" + dtype.ToString());
    out_.AddConstant(v, Tensor::Scalar(dtype, static_cast<double>(v_)));
    std::string ratio = Fresh(symbol_ + "_mean_rescale");
    out_.AddNode(Node{Fresh(ratio + "_div"), "Div", {v, n}, {ratio}, {}});
    const std::string base = ratio;
    for (int p = 1; p < k; ++p) {
      const std::string next = Fresh(symbol_ + "_mean_rescale");
      out_.AddNode(Node{Fresh(next + "_mul"), "Mul", {ratio, base}, {next}, {}});
      ratio = next;
    }
    rescales_[key] = ratio;
    return ratio;
  }

  // Appends `node` computing a mean over `reduced` axes of its input 0 (masked to 0 already):
  // its output is scaled by (v / n) per padded axis reduced.
  void AppendMean(Node node, int padded_axes) {
    if (padded_axes == 0) {
      out_.AddNode(std::move(node));
      return;
    }
    const std::string output = node.outputs[0];
    const DType dtype = at_v_.TypeOf(output).dtype;
    if (!dtype.is_float()) Refuse(node, "averages integers over " + symbol_);
    const std::string partial = Fresh(output + "_over_padded");
    node.outputs[0] = partial;
    const std::string name = node.name;
    out_.AddNode(std::move(node));
    out_.AddNode(Node{Fresh(name + "_rescale"), "Mul", {partial, MeanRescale(dtype, padded_axes)}, {output}, {}});
  }

  // True when `value` is known to hold exactly 0 at the positions >= n along `axis`.
  bool ZeroPast(const std::string& value, int axis) const {
    auto it = zero_past_.find(value);
    return it != zero_past_.end() && Contains(it->second, axis);
  }

  static int CountIn(const AxisList& reduced, const AxisList& symbolic) {
    int count = 0;
    for (int a : reduced) count += Contains(symbolic, a) ? 1 : 0;
    return count;
  }

  // Reshape-like operators keep each position along the symbol's axis only when the extents
  // before and after that axis multiply to the same in the input and the output.
  void CheckReshape(const Node& node, const AxisList& in_axes, const AxisList& out_axes) const {
    const Shape& in = at_v_.TypeOf(node.inputs[0]).shape;
    const Shape& out = at_v_.TypeOf(node.outputs[0]).shape;
    bool keeps = in_axes.size() == out_axes.size();
    for (size_t k = 0; keeps && k < in_axes.size(); ++k) {
      const size_t a = in_axes[k], b = out_axes[k];
      keeps = Product(in, 0, a) == Product(out, 0, b) && Product(in, a + 1, in.size()) == Product(out, b + 1, out.size());
    }
    if (!keeps) {
      Refuse(node, "reshapes " + ShapeToString(in) + " to " + ShapeToString(out) + " so that positions along " +
                       symbol_ + " move");
    }
  }

  // Slice keeps the symbol's positions when it starts at 0 with step 1 on that axis (the output
  // then carries the symbol), or takes positions below the symbol's lower bound only.
  void CheckSlice(const Node& node, const AxisList& in_axes, const AxisList& out_axes) const {
    const std::vector<int64_t> starts = node.attrs.GetInts("starts", {});
    const std::vector<int64_t> ends = node.attrs.GetInts("ends", {});
    std::vector<int64_t> axes = node.attrs.GetInts("axes", {});
    const std::vector<int64_t> steps = node.attrs.GetInts("steps", std::vector<int64_t>(starts.size(), 1));
    const int rank = at_v_.TypeOf(node.inputs[0]).rank();
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    for (size_t k = 0; k < axes.size() && k < starts.size() && k < ends.size(); ++k) {
      const int axis = static_cast<int>(axes[k] < 0 ? axes[k] + rank : axes[k]);
      if (!Contains(in_axes, axis)) continue;
      const int64_t step = k < steps.size() ? steps[k] : 1;
      int64_t start = starts[k] < 0 ? starts[k] + v_ : starts[k];
      int64_t end = ends[k] < 0 ? ends[k] + v_ : ends[k];
      start = std::max<int64_t>(0, std::min(start, v_));
      end = std::max<int64_t>(0, std::min(end, v_));
      const bool whole = Contains(out_axes, axis) && start == 0 && step == 1;
      const bool below_min = !Contains(out_axes, axis) && step > 0 && end <= min_extent_;
      if (!whole && !below_min) {
        Refuse(node, "slices " + AxisText(axis) + ", which carries " + symbol_ + ", other than from position 0 " +
                         "(or within its lower bound " + std::to_string(min_extent_) + ")");
      }
    }
  }

  // A Gather along the symbol reads constant positions: those from the start must lie below the
  // symbol's lower bound; those from the end (negative, as x[:, -1] exports: a decoder's last
  // token) count from n, so they become n + k, computed from the extent input when the model runs.
  void PadGatherAlongSymbol(Node* node) {
    const std::string& indices = node->inputs[1];
    auto it = at_v_.constants.find(indices);
    if (it == at_v_.constants.end() || symbolic_.count(indices)) {
      Refuse(*node, "gathers along an axis that carries " + symbol_ + " with indices known only at run time");
    }
    const std::vector<int64_t> values = it->second.ToInts();
    const bool from_end = !values.empty() && values.front() < 0;
    for (int64_t index : values) {
      const bool fits = from_end ? index < 0 && index >= -min_extent_ : index >= 0 && index < min_extent_;
      if (!fits) {
        Refuse(*node, "gathers position " + std::to_string(index) + " along an axis that carries " + symbol_ +
                          ", which is not within its lower bound " + std::to_string(min_extent_) +
                          " from the start or from the end (positions from both ends at once neither)");
      }
    }
    if (!from_end) return;
    const DType dtype = it->second.dtype();
    std::string extent = extent_;
    if (dtype != DType::Int(64)) {
      extent = Fresh(symbol_ + "_extent_" + dtype.ToString());
      out_.AddNode(Node{Fresh(extent + "_cast"), "Cast", {extent_}, {extent}, {}});
      out_.nodes.back().attrs.Set("to", dtype.ToString());
    }
    const std::string positions = Fresh(indices + "_from_extent");
    out_.AddNode(Node{Fresh(node->name + "_positions"), "Add", {extent, indices}, {positions}, {}});
    node->inputs[1] = positions;
  }

  // Ops without inputs that carry the symbol may still create an axis of extent S, if what they
  // put at each position does not depend on the extent.
  bool FillsPositionByPosition(const Node& node, const AxisList& out_axes) const {
    if (node.op == "Expand" || node.op == "ConstantOfShape" || node.op == "Tile") return true;
    if (node.op != "Slice") return false;
    const std::vector<int64_t> starts = node.attrs.GetInts("starts", {});
    std::vector<int64_t> axes = node.attrs.GetInts("axes", {});
    const std::vector<int64_t> steps = node.attrs.GetInts("steps", std::vector<int64_t>(starts.size(), 1));
    const int rank = at_v_.TypeOf(node.inputs[0]).rank();
    for (size_t k = 0; k < starts.size(); ++k) {
      const int axis = static_cast<int>(axes.empty() ? k : (axes[k] < 0 ? axes[k] + rank : axes[k]));
      if (Contains(out_axes, axis) && (starts[k] != 0 || (k < steps.size() && steps[k] != 1))) return false;
    }
    return true;
  }

  void PadNode(const Node& original) {
    Node node = original;
    std::vector<AxisList> in_axes(node.inputs.size());
    bool reads_symbol = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& in = node.inputs[i];
      if (in.empty()) continue;
      auto derived = derived_.find(in);
      if (derived != derived_.end()) {
        Refuse(node, "reads constant '" + in + "', which the importer computed from " + symbol_ + "'s extent (" +
                         derived->second + "): its value at the compiled extent is not its value at the run-time one");
      }
      auto it = symbolic_.find(in);
      if (it != symbolic_.end()) {
        in_axes[i] = it->second;
        reads_symbol = true;
      }
    }
    const std::vector<AxisList> out_axes = OutputAxes(node);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!out_axes[i].empty()) symbolic_[node.outputs[i]] = out_axes[i];
    }
    if (!reads_symbol) {
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        if (!out_axes[i].empty() && !FillsPositionByPosition(node, out_axes[i])) {
          Refuse(node, "gives output '" + node.outputs[i] + "' an axis of extent " + symbol_ +
                           " without reading a tensor that carries it, and may fill it differently at each extent");
        }
      }
      out_.AddNode(std::move(node));
      return;
    }
    const std::string& op = node.op;
    const AxisList& x_axes = in_axes[0];
    const int rank = node.inputs[0].empty() ? 0 : at_v_.TypeOf(node.inputs[0]).rank();
    const AxisList first_out = out_axes.empty() ? AxisList{} : out_axes[0];
    const OpKind kind = KindOf(node);
    if (op == "Shape" || op == "Size") {
      Refuse(node, "reads the extent of a tensor that carries " + symbol_ + " as data");
    } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
      CheckReshape(node, x_axes, first_out);
    } else if (op == "MatMul" || op == "MatMulInteger") {
      // A product over the symbol (attention's probabilities times values) sees zeros on both
      // sides past n, whatever the padding held. A Softmax over a masked axis is exactly 0 there
      // already (and left unmasked, attention fusion still recognizes it).
      const int ra = rank, rb = at_v_.TypeOf(node.inputs[1]).rank();
      const int ka = ra - 1, kb = rb >= 2 ? rb - 2 : 0;
      if (Contains(x_axes, ka) || Contains(in_axes[1], kb)) {
        if (!ZeroPast(node.inputs[0], ka)) MaskInput(&node, 0, {ka}, 0.0);
        if (!ZeroPast(node.inputs[1], kb)) MaskInput(&node, 1, {kb}, 0.0);
      }
    } else if (op == "Gemm") {
      const int ka = node.attrs.GetInt("transA", 0) ? 0 : 1;
      const int kb = node.attrs.GetInt("transB", 0) ? 1 : 0;
      if (Contains(x_axes, ka) || Contains(in_axes[1], kb)) {
        MaskInput(&node, 0, {ka}, 0.0);
        MaskInput(&node, 1, {kb}, 0.0);
      }
    } else if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
      const int axis = NormalizeAxis(node.attrs.GetIntOrSingle("axis", -1), rank, node.Describe());
      AxisList reduced = {axis};
      if (node.attrs.GetInt("coerce_2d", 0) != 0) {
        for (int a = axis + 1; a < rank; ++a) reduced.push_back(a);
      }
      if (CountIn(reduced, x_axes) > 0) {
        if (op == "Hardmax") Refuse(node, "takes a Hardmax along " + symbol_);
        MaskInput(&node, 0, reduced, -kInf);
        // exp(-inf) = 0: the probabilities past n are exactly 0 (a LogSoftmax's are -inf).
        if (op == "Softmax" && reduced.size() == 1) zero_past_[node.outputs[0]] = reduced;
      }
    } else if (kind == OpKind::kReduction && op.rfind("Reduce", 0) == 0) {
      const std::vector<int> reduced_int = ReduceAxes(node, rank);
      const AxisList reduced(reduced_int.begin(), reduced_int.end());
      const int padded = CountIn(reduced, x_axes);
      if (padded > 0) {
        static const std::map<std::string, double> kFill = {
            {"ReduceSum", 0.0},  {"ReduceSumSquare", 0.0}, {"ReduceL1", 0.0},   {"ReduceL2", 0.0},
            {"ReduceMean", 0.0}, {"ReduceLogSum", 0.0},    {"ReduceMax", -kInf}, {"ReduceMin", kInf},
            {"ReduceLogSumExp", -kInf}, {"ReduceProd", 1.0}};
        auto fill = kFill.find(op);
        if (fill == kFill.end()) Refuse(node, "reduces along " + symbol_ + " in a way agate cannot mask");
        MaskInput(&node, 0, reduced, fill->second);
        if (op == "ReduceMean") {
          AppendMean(std::move(node), padded);
          return;
        }
      }
    } else if (op == "ArgMax" || op == "ArgMin") {
      const int axis = NormalizeAxis(node.attrs.GetIntOrSingle("axis", 0), rank, node.Describe());
      if (Contains(x_axes, axis)) {
        if (node.attrs.GetInt("select_last_index", 0) != 0) {
          Refuse(node, "selects the last extreme along " + symbol_ + ", which a masked padding could be");
        }
        MaskInput(&node, 0, {axis}, op == "ArgMax" ? -kInf : kInf);
      }
    } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      AxisList spatial;
      for (int a = 2; a < rank; ++a) spatial.push_back(a);
      const int padded = CountIn(spatial, x_axes);
      if (Contains(x_axes, 0) || Contains(x_axes, 1)) Refuse(node, "pools a tensor whose batch or channels carry " + symbol_);
      MaskInput(&node, 0, spatial, op == "GlobalMaxPool" ? -kInf : 0.0);
      if (op == "GlobalAveragePool") {
        AppendMean(std::move(node), padded);
        return;
      }
    } else if (op == "Conv") {
      for (size_t i = 1; i < node.inputs.size(); ++i) {
        if (!in_axes[i].empty()) Refuse(node, "has weights or a bias that carry " + symbol_);
      }
      const std::vector<int64_t> strides = node.attrs.GetInts("strides", {});
      for (int a : x_axes) {
        if (a < 2) Refuse(node, "convolves a tensor whose " + AxisText(a) + " (batch or channels) carries " + symbol_);
        if (static_cast<size_t>(a - 2) < strides.size() && strides[a - 2] != 1) {
          Refuse(node, "strides along " + AxisText(a) + ", which carries " + symbol_);
        }
      }
      // Positions past n read as zeros: the zeros the convolution's own padding gives at n.
      MaskInput(&node, 0, x_axes, 0.0);
    } else if (op == "MaxPool") {
      const std::vector<int64_t> strides = node.attrs.GetInts("strides", {});
      for (int a : x_axes) {
        if (a < 2 || (static_cast<size_t>(a - 2) < strides.size() && strides[a - 2] != 1)) {
          Refuse(node, "pools along " + AxisText(a) + ", which carries " + symbol_ + ", with a stride or over batch or channels");
        }
      }
      if (node.outputs.size() > 1 && !node.outputs[1].empty()) Refuse(node, "returns pooling indices along " + symbol_);
      MaskInput(&node, 0, x_axes, -kInf);
    } else if (op == "LayerNormalization") {
      const int axis = NormalizeAxis(node.attrs.GetIntOrSingle("axis", -1), rank, node.Describe());
      for (int a : x_axes) {
        if (a >= axis) Refuse(node, "normalizes over " + AxisText(a) + ", which carries " + symbol_);
      }
      for (size_t i = 1; i < node.inputs.size(); ++i) {
        if (!in_axes[i].empty()) Refuse(node, "has a scale or bias that carries " + symbol_);
      }
    } else if (op == "Gather") {
      const int axis = NormalizeAxis(node.attrs.GetIntOrSingle("axis", 0), rank, node.Describe());
      if (Contains(x_axes, axis)) PadGatherAlongSymbol(&node);
    } else if (op == "Slice") {
      CheckSlice(node, x_axes, first_out);
    } else if (op == "Concat" || op == "Split") {
      const int axis = NormalizeAxis(node.attrs.GetIntOrSingle("axis", 0), rank, node.Describe());
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (Contains(in_axes[i], axis)) Refuse(node, (op == "Concat" ? "concatenates" : "splits") + std::string(" along ") +
                                                        AxisText(axis) + ", which carries " + symbol_);
      }
    } else if (op == "CumSum") {
      const int axis = NormalizeAxis(node.attrs.GetIntOrSingle("axis", 0), rank, node.Describe());
      if (Contains(x_axes, axis) && node.attrs.GetInt("reverse", 0) != 0) {
        Refuse(node, "sums along " + symbol_ + " from its end");
      }
    } else if (op == "Pad") {
      const std::vector<int64_t> pads = node.attrs.GetInts("pads", {});
      for (int a : x_axes) {
        if ((static_cast<size_t>(a) < pads.size() && pads[a] != 0) ||
            (static_cast<size_t>(a + rank) < pads.size() && pads[a + rank] != 0)) {
          Refuse(node, "pads " + AxisText(a) + ", which carries " + symbol_);
        }
      }
    } else if (op == "Transpose" || op == "Expand" || op == "Tile" || op == "Identity" || op == "Dropout" ||
               op == "Trilu") {
      // Positions move with their axis (the shapes proved each carried axis stays whole).
    } else if (kind == OpKind::kElemWise || kind == OpKind::kBroadcast) {
      // Position for position.
    } else {
      Refuse(node, "reads a tensor that carries " + symbol_ + " (" + AxisText(x_axes.empty() ? -1 : x_axes[0]) +
                       "), and agate does not know how " + op + " treats the positions past its run-time extent");
    }
    out_.AddNode(std::move(node));
  }

  const Graph& at_v_;
  const Graph& at_w_;
  const int64_t v_, w_;
  const std::string symbol_;
  const int64_t min_extent_;
  const std::string extent_;
  Graph out_;
  std::map<std::string, AxisList> symbolic_;    // value -> the axes carrying the symbol
  std::map<std::string, std::string> derived_;  // constant -> why its values depend on the extent
  std::map<std::string, AxisList> zero_past_;   // value -> axes along which it is exactly 0 past n
  std::map<std::pair<int, int>, std::string> masks_;
  std::map<std::string, std::string> rescales_;
  std::set<std::string> used_;
  int counter_ = 0;
};

}  // namespace

Graph PadSymbolAxes(const Graph& at_v, int64_t v, const Graph& at_w, int64_t w, const std::string& symbol,
                    int64_t min_extent, const std::string& extent_input, PaddedAxes* axes) {
  *axes = PaddedAxes{};
  return Padder(at_v, v, at_w, w, symbol, min_extent, extent_input).Run(axes);
}

}  // namespace graph
}  // namespace agate
