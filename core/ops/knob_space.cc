#include "core/ops/knob_space.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "core/graph/shape_rules.h"
#include "core/ops/qlinear_mcu.h"
#include "core/ops/schedule_common.h"
#include "core/ops/vnni_common.h"
#include "core/ops/window.h"
#include "core/ops/winograd.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

// The default first, then the other values ascending, each once.
KnobDef MakeKnob(const std::string& name, int64_t default_value, const std::set<int64_t>& others) {
  KnobDef k{name, {default_value}};
  for (int64_t v : others)
    if (v != default_value) k.values.push_back(v);
  return k;
}

void AddIfChoice(KnobSpace* space, KnobDef knob) {
  if (knob.values.size() > 1) space->knobs.push_back(std::move(knob));
}

// Register-tile widths for an extent: its divisors in [2, limit] (no tail) and the
// least-waste tiles the template itself falls back to (LeastWastefulTile).
std::set<int64_t> TileWidths(int64_t extent, int64_t limit) {
  std::set<int64_t> widths;
  for (int64_t d = 2; d <= std::min(extent, limit); ++d)
    if (extent % d == 0) widths.insert(d);
  if (extent > limit) {
    for (int64_t hi : {int64_t{8}, int64_t{14}, limit})
      if (hi >= 4 && hi <= limit) widths.insert(LeastWastefulTile(extent, 4, hi));
  }
  return widths;
}

// Conv: the blocked NCHWc template (register tile: output-channel blocks x columns),
// Winograd and its tile where it applies, the depthwise NCHWc template (columns).
void ConvKnobs(const graph::Graph& graph, const graph::Node& node, const target::Target& target, KnobSpace* space) {
  const graph::Shape& xs = graph.TypeOf(node.inputs.at(0)).shape;
  const graph::Shape& ws = graph.TypeOf(node.inputs.at(1)).shape;
  const graph::Shape& os = graph.TypeOf(node.outputs.at(0)).shape;
  int64_t groups = node.attrs.GetInt("group", 1);
  int64_t block = LayoutBlock(node), out_block = graph::OutputLayoutBlock(node);
  if (!out_block || os.size() != 5 || ws.size() != 4) return;  // plain NCHW: the template has no tile knobs
  int64_t oc_chunks = os[1], ow = os[3];
  AddIfChoice(space, MakeKnob("conv_ow_block", 0, TileWidths(ow, 16)));
  if (groups > 1) return;  // depthwise: columns only
  int lanes = VectorLanes(target, ir::DType::Float(32));
  std::set<int64_t> oc;
  for (int64_t b = 1; b <= 4 && b * out_block <= 4 * std::max(lanes, 1); ++b)
    if (oc_chunks % b == 0) oc.insert(b * out_block);
  AddIfChoice(space, MakeKnob("conv_oc_block", 0, oc));
  space->knobs.push_back(MakeKnob("conv_parallel_rows", -1, {0, 1}));
  graph::Shape logical{xs[0], xs[1] * (block ? block : 1), xs[2], xs[3]};
  graph::WindowGeometry g = graph::ComputeWindow(node, logical, {ws[2], ws[3]});
  bool constant_weights = graph.IsConstant(node.inputs[1]) && graph.TypeOf(node.inputs[1]).dtype == ir::DType::Float(32);
  if (block && constant_weights && WinogradApplies(g, xs, ws, groups, out_block)) {
    space->knobs.push_back(MakeKnob("conv_winograd", -1, {0, 1}));
    if (g.kernel[0] != g.kernel[1] || g.kernel[0] == 3)  // 5x5 has one tile, 2x2 (winograd.h)
      space->knobs.push_back(MakeKnob("winograd_tile", 0, {2, 4}));
    space->knobs.push_back(MakeKnob("winograd_tile_block", 0, {4, 6, 8, 12, 16}));
  }
}

// Dense / MatMul / Gemm: the register tile (rows x columns; the columns also set the
// packed panel width of a constant right operand).
void DenseKnobs(const graph::Graph& graph, const graph::Node& node, const target::Target& target, KnobSpace* space) {
  const graph::Shape& os = graph.TypeOf(node.outputs.at(0)).shape;
  if (os.size() < 2) return;
  int64_t m = os[os.size() - 2], n = os[os.size() - 1];
  int lanes = std::max(1, VectorLanes(target, graph.TypeOf(node.outputs[0]).dtype));
  std::set<int64_t> nb;
  for (int64_t v : {int64_t{4}, int64_t{8}, int64_t{lanes}, int64_t{2} * lanes, int64_t{3} * lanes, int64_t{4} * lanes})
    if (v > 1 && n % v == 0) nb.insert(v);
  AddIfChoice(space, MakeKnob("dense_n_block", 0, nb));
  std::set<int64_t> mb;
  for (int64_t v : {1, 2, 4, 6, 8, 12, 16}) mb.insert(DivisorAtMost(m, v));
  AddIfChoice(space, MakeKnob("dense_m_block", 0, mb));
  if (m <= 1) return;
  // GEMMs with several rows (core/ops/gemm_plan.h): the K slice kept in cache and which loops run
  // in parallel; their defaults come from the target's cache sizes.
  const graph::Shape& as = graph.TypeOf(node.inputs.at(0)).shape;
  int64_t k = as.empty() ? 0 : (node.op == "Gemm" && node.attrs.GetInt("transA", 0) != 0 ? as.front() : as.back());
  std::set<int64_t> kc;
  for (int64_t v : {64, 128, 256, 512})
    if (v < k) kc.insert(v);
  AddIfChoice(space, MakeKnob("dense_k_block", 0, kc));
  space->knobs.push_back(MakeKnob("dense_parallel_rows", -1, {0, 1}));
}

void AppendTypes(std::ostringstream& os, const graph::Graph& graph, const std::vector<std::string>& values,
                 bool mark_constants) {
  os << "(";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) os << ",";
    if (values[i].empty()) {
      os << "-";
      continue;
    }
    if (mark_constants && graph.IsConstant(values[i])) os << "const ";
    os << graph.TypeOf(values[i]).ToString();
  }
  os << ")";
}

uint64_t Fnv1a64(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

int64_t KnobSpace::size() const {
  const int64_t cap = std::numeric_limits<int64_t>::max() / 2;
  int64_t n = 1;
  for (const KnobDef& k : knobs) {
    int64_t c = static_cast<int64_t>(k.values.size());
    n = n > cap / std::max<int64_t>(c, 1) ? cap : n * c;
  }
  return n;
}

KnobConfig KnobSpace::At(int64_t index) const {
  AGATE_REQUIRE(index >= 0 && index < size(), kInvalidArgument)
      << "knob space point " << index << " is outside [0, " << size() << ")";
  KnobConfig config;
  for (const KnobDef& k : knobs) {
    int64_t c = static_cast<int64_t>(k.values.size());
    config[k.name] = k.values[index % c];
    index /= c;
  }
  return config;
}

KnobConfig KnobSpace::Default() const {
  KnobConfig config;
  for (const KnobDef& k : knobs) config[k.name] = k.values.front();
  return config;
}

bool KnobSpace::Contains(const KnobConfig& config) const {
  // A plain pair, not a structured binding: lambdas may capture bindings only from C++20
  // (clang 14, used by the sanitizer and fuzzer builds, refuses it).
  for (const auto& entry : config) {
    auto it = std::find_if(knobs.begin(), knobs.end(), [&](const KnobDef& k) { return k.name == entry.first; });
    if (it == knobs.end() || std::find(it->values.begin(), it->values.end(), entry.second) == it->values.end()) {
      return false;
    }
  }
  return true;
}

std::string KnobSpace::ToString() const {
  std::ostringstream os;
  for (size_t i = 0; i < knobs.size(); ++i) {
    os << (i ? " " : "") << knobs[i].name << "{";
    for (size_t j = 0; j < knobs[i].values.size(); ++j) os << (j ? "," : "") << knobs[i].values[j];
    os << "}";
  }
  return os.str();
}

std::string KnobConfigToString(const KnobConfig& config) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, value] : config) {
    os << (first ? "" : " ") << name << "=" << value;
    first = false;
  }
  return first ? std::string("default") : os.str();
}

LowerGroupOptions ApplyKnobConfig(const KnobConfig& config, const LowerGroupOptions& base) {
  LowerGroupOptions options = base;
  for (const auto& [name, value] : config) SetScheduleKnob(&options, name, value);
  return options;
}

KnobSpace KnobSpaceOf(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target) {
  KnobSpace space;
  AGATE_REQUIRE(!group.nodes.empty(), kInvalidArgument) << "knob space of an empty fused group";
  const graph::Node& anchor = graph.nodes.at(group.anchor >= 0 ? group.anchor : group.nodes.front());
  if (group.anchor >= 0 && anchor.op == "Conv") {
    ConvKnobs(graph, anchor, target, &space);
  } else if (group.anchor >= 0 && (anchor.op == "QLinearConv" || anchor.op == "ConvInteger")) {
    // The int8 conv template's register tile (it reads them where it applies; elsewhere they
    // do nothing): 4 pixel vectors only with 32 vector registers.
    if (UseMcuIntegerConv(target) && target.HasFeature("dsp")) {
      // The microcontroller template (qlinear_mcu.h): SMLAD or int8 weights, and its oc block.
      space.knobs.push_back(MakeKnob("int8_mcu_smlad", -1, {0, 1}));
      space.knobs.push_back(MakeKnob("int8_mcu_oc_block", 0, {1, 2, 4}));
      space.knobs.push_back(MakeKnob("int8_mcu_packed", -1, {0, 1}));
    } else if (const vnni::Isa* isa = vnni::PickIsa(target)) {
      space.knobs.push_back(MakeKnob("int8_oc_block", 0, {4, 6, 8}));
      std::set<int64_t> vectors{1, 2, 3};
      if (isa->registers >= 32) vectors.insert(4);
      space.knobs.push_back(MakeKnob("int8_pixel_vectors", 0, vectors));
      space.knobs.push_back(MakeKnob("int8_tile_order", -1, {0, 1}));
    }
  } else if (group.anchor >= 0 && (anchor.op == "MatMul" || anchor.op == "Gemm")) {
    DenseKnobs(graph, anchor, target, &space);
  } else {
    // Elementwise, injective, pools, reductions, softmax, norms: the generic schedules'
    // vector width (schedule_common.h).
    int lanes = VectorLanes(target, ir::DType::Float(32));
    std::set<int64_t> widths;
    for (int64_t w = lanes / 2; w >= 4; w /= 2) widths.insert(w);
    AddIfChoice(&space, MakeKnob("vector_lanes", 0, widths));
  }
  // Whether the kernel runs its outer loop on the runtime's thread pool at all.
  if (ParallelAllowed(target)) space.knobs.push_back(MakeKnob("parallel", 1, {0}));
  return space;
}

bool IsThreadSplitKnob(const std::string& name) { return name == "parallel"; }

KnobSpace WithoutThreadSplitKnobs(KnobSpace space) {
  auto& k = space.knobs;
  k.erase(std::remove_if(k.begin(), k.end(), [](const KnobDef& d) { return IsThreadSplitKnob(d.name); }), k.end());
  return space;
}

std::string WorkloadOf(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target) {
  std::ostringstream os;
  os << "v" << kKnobSpaceVersion << ";" << target.ToString() << ";anchor="
     << (group.anchor >= 0 ? std::find(group.nodes.begin(), group.nodes.end(), group.anchor) - group.nodes.begin() : -1);
  for (int index : group.nodes) {
    const graph::Node& node = graph.nodes.at(index);
    os << ";" << node.op << "[" << node.attrs.ToString() << "]";
    AppendTypes(os, graph, node.inputs, true);
    os << "->";
    AppendTypes(os, graph, node.outputs, false);
  }
  os << ";outputs=";
  AppendTypes(os, graph, group.outputs, false);
  return os.str();
}

std::string TaskKeyOf(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target) {
  const graph::Node& anchor = graph.nodes.at(group.anchor >= 0 ? group.anchor : group.nodes.front());
  std::string op;
  for (char c : anchor.op) op += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(Fnv1a64(WorkloadOf(graph, group, target))));
  return op + "_" + hex;
}

}  // namespace ops
}  // namespace agate
