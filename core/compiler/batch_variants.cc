#include "core/compiler/batch_variants.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/codegen/llvm/build_llvm.h"
#include "core/graph/passes/batch_axis_analysis.h"
#include "core/graph/passes/symbol_padding.h"
#include "core/serialize/kernel_fingerprint.h"
#include "core/serialize/serialize_module.h"
#include "core/support/error.h"
#include "core/support/parse_int.h"
#include "core/support/version.h"
#include "core/target/target.h"

namespace agate {
namespace compiler {
namespace {

int64_t ParseExtent(const std::string& text, const std::string& where) {
  int64_t value = 0;
  AGATE_REQUIRE(ParseInt64(text, &value) && value >= 1, kInvalidArgument)
      << "--bounds '" << where << "': '" << text << "' is not a positive integer";
  return value;
}

uint64_t AlignUp64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

std::string VariantPrefix(const std::string& prefix, int64_t extent) {
  return (prefix.empty() ? "" : prefix + "_") + "n" + std::to_string(extent);
}

// Identical constants of several variants stored once.
class SharedConstants {
 public:
  explicit SharedConstants(serialize::ModuleSpec* spec) : spec_(spec) {}
  uint32_t Add(const serialize::ConstantSpec& c) {
    const std::string key(c.data.begin(), c.data.end());
    auto [it, inserted] = index_.emplace(std::make_pair(key, c.alignment), spec_->constants.size());
    if (inserted) spec_->constants.push_back(c);
    return static_cast<uint32_t>(it->second);
  }

 private:
  serialize::ModuleSpec* spec_;
  std::map<std::pair<std::string, uint32_t>, size_t> index_;
};

}  // namespace

std::vector<int64_t> DefaultVariants(int64_t max) {
  std::vector<int64_t> variants = {1};
  if (std::min<int64_t>(max, 8) > 1) variants.push_back(std::min<int64_t>(max, 8));
  if (max > 8 && max <= 64 && (max & (max - 1)) == 0) variants.push_back(max);
  return variants;
}

BatchSymbol ParseBounds(const std::string& text) {
  BatchSymbol symbol;
  const size_t eq = text.find('=');
  const size_t dots = text.find("..");
  AGATE_REQUIRE(eq != std::string::npos && eq > 0 && dots != std::string::npos && dots > eq, kInvalidArgument)
      << "--bounds '" << text << "': expected SYMBOL=MIN..MAX[:V1,V2,...], e.g. N=1..32 or N=1..32:1,8,32";
  symbol.name = text.substr(0, eq);
  const size_t colon = text.find(':', dots);
  symbol.min = ParseExtent(text.substr(eq + 1, dots - eq - 1), text);
  symbol.max = ParseExtent(text.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2), text);
  AGATE_REQUIRE(symbol.min <= symbol.max, kInvalidArgument)
      << "--bounds '" << text << "': min " << symbol.min << " is above max " << symbol.max;
  if (colon != std::string::npos) {
    std::stringstream list(text.substr(colon + 1));
    std::string item;
    while (std::getline(list, item, ',')) symbol.variants.push_back(ParseExtent(item, text));
    for (size_t i = 0; i < symbol.variants.size(); ++i) {
      AGATE_REQUIRE(symbol.variants[i] <= symbol.max && (i == 0 || symbol.variants[i] > symbol.variants[i - 1]),
                    kInvalidArgument)
          << "--bounds '" << text << "': variants must ascend and stay within 1.." << symbol.max;
    }
    symbol.given = symbol.variants;
    if (symbol.variants.empty() || symbol.variants.front() != 1) symbol.variants.insert(symbol.variants.begin(), 1);
  } else {
    symbol.variants = DefaultVariants(symbol.max);
  }
  return symbol;
}

CompileResult CompileBatchVariants(const std::function<graph::Graph(int64_t)>& graph_at,
                                   const std::set<std::string>& batch_inputs, const BatchSymbol& symbol,
                                   const CompileOptions& options) {
  const std::vector<int64_t> extents = symbol.variants.empty() ? DefaultVariants(symbol.max) : symbol.variants;
  AGATE_REQUIRE(!batch_inputs.empty(), kInvalidArgument)
      << "no input carries symbol " << symbol.name << " (name it in --input-shape, e.g. input:" << symbol.name
      << "x3x224x224, or as the model's dim_param)";
  std::vector<graph::Graph> graphs;
  for (int64_t v : extents) graphs.push_back(graph_at(v));
  // The analysis compares the smallest variant with the upper bound (which need not be a variant).
  const graph::Graph at_max = symbol.max == extents.back() ? graphs.back() : graph_at(symbol.max);
  const graph::BatchAxes axes =
      symbol.max != extents.front()
          ? graph::AnalyzeBatchAxes(graphs.front(), extents.front(), at_max, symbol.max, symbol.name, batch_inputs)
          : graph::BatchAxes{std::vector<bool>(at_max.inputs.size(), false),
                             std::vector<bool>(at_max.outputs.size(), false)};

  CompileResult merged;
  serialize::ModuleSpec& spec = merged.spec;
  SharedConstants constants(&spec);
  std::vector<ir::LoweredFunc> funcs;
  for (size_t i = 0; i < extents.size(); ++i) {
    CompileOptions variant_options = options;
    variant_options.kernel_prefix = VariantPrefix(options.kernel_prefix, extents[i]);
    CompileResult r = CompileGraph(graphs[i], variant_options);
    AGATE_REQUIRE(r.graph.run_time_extents.empty(), kUnsupported)
        << "--bounds: output '" << r.graph.run_time_extents.begin()->first << "' has extents known only when the model "
        << "runs; a module with a batch symbol supports only outputs of static or symbolic extents";
    AGATE_REQUIRE(r.spec.target_kind == serialize::TargetKind::kHostCpu, kUnsupported)
        << "--bounds: symbolic batch dimensions are supported for host CPU targets (llvm with an OS); target '"
        << options.target << "' is not one";
    if (i == 0) {
      spec.target = r.spec.target;
      spec.target_kind = r.spec.target_kind;
      spec.cpu_features = r.spec.cpu_features;
      spec.inputs = r.spec.inputs;
      spec.outputs = r.spec.outputs;
      spec.has_dynamic_shapes = true;
      spec.dynamic_shapes.symbols = {serialize::SymbolSpec{symbol.name, symbol.min, symbol.max}};
      auto dims_of = [&](const serialize::TensorSpec& t, bool rows) {
        serialize::TensorDimsSpec dims;
        dims.kinds.assign(t.shape.size(), serialize::DimKind::kStatic);
        if (rows) dims.kinds[0] = serialize::DimKind::kSymbolic;
        return dims;
      };
      for (size_t k = 0; k < spec.inputs.size(); ++k) {
        spec.dynamic_shapes.inputs.push_back(dims_of(spec.inputs[k], axes.inputs[k]));
        if (axes.inputs[k]) spec.inputs[k].shape[0] = symbol.max;
      }
      for (size_t k = 0; k < spec.outputs.size(); ++k) {
        spec.dynamic_shapes.outputs.push_back(dims_of(spec.outputs[k], axes.outputs[k]));
        if (axes.outputs[k]) spec.outputs[k].shape[0] = symbol.max;
      }
    }
    spec.arena_bytes = std::max(spec.arena_bytes, r.spec.arena_bytes);
    spec.arena_alignment = std::max(spec.arena_alignment, r.spec.arena_alignment);
    spec.workspace_bytes = std::max(spec.workspace_bytes, r.spec.workspace_bytes);
    const uint32_t first_kernel = static_cast<uint32_t>(spec.kernels.size());
    for (const serialize::KernelSpec& k : r.spec.kernels) spec.kernels.push_back(k);
    serialize::VariantSpec variant{extents[i], r.spec.plan};
    for (serialize::CallSpec& call : variant.plan) {
      call.kernel += first_kernel;
      for (serialize::ArgSpec& arg : call.args) {
        if (arg.kind == serialize::ArgSpec::Kind::kConstant) arg.index = constants.Add(r.spec.constants.at(arg.index));
      }
    }
    spec.dynamic_shapes.variants.push_back(std::move(variant));
    funcs.insert(funcs.end(), r.funcs.begin(), r.funcs.end());
    for (KernelSummary& k : r.kernels) merged.kernels.push_back(std::move(k));
    for (const PhaseTiming& t : r.timings) merged.timings.push_back({t.phase + " n=" + std::to_string(extents[i]), t.milliseconds});
    if (i + 1 == extents.size()) merged.graph = std::move(r.graph);
  }
  const target::Target target = target::Target::Parse(options.target);
  if (!funcs.empty()) {
    const std::string object = codegen::BuildLLVMSharedObject(funcs, target);
    spec.host_object.assign(object.begin(), object.end());
  }
  spec.kernel_fingerprint = serialize::KernelFingerprint(
      options.kernel_prefix, spec.kernels, std::string(spec.host_object.begin(), spec.host_object.end()));
  spec.metadata.compiler_version = AGATE_VERSION_STRING;
  spec.metadata.options = options.recorded_options;
  merged.funcs = std::move(funcs);
  merged.module = serialize::SerializeModule(spec);
  return merged;
}

std::vector<int64_t> DefaultPaddedVariants(int64_t min, int64_t max) {
  std::vector<int64_t> variants;
  for (int64_t e = 16; e < max; e *= 2) {
    if (e >= min) variants.push_back(e);
  }
  variants.push_back(max);
  return variants;
}

namespace {

std::vector<int64_t> PaddedVariants(const BatchSymbol& symbol) {
  if (symbol.given.empty()) return DefaultPaddedVariants(symbol.min, symbol.max);
  std::vector<int64_t> variants;
  for (int64_t e : symbol.given) {
    AGATE_REQUIRE(e >= symbol.min, kInvalidArgument)
        << "--bounds " << symbol.name << "=" << symbol.min << ".." << symbol.max << ": variant " << e
        << " is below the lower bound (a padded symbol runs each extent on the smallest variant at or above it)";
    variants.push_back(e);
  }
  if (variants.back() != symbol.max) variants.push_back(symbol.max);
  return variants;
}

struct PaddedVariant {
  int64_t extent = 0;
  CompileResult result;
  graph::PaddedAxes axes;
};

// Module inputs / outputs of a padded variant: its tensors with the symbol's axes at `max`,
// Symbolic dims and a staging buffer each from `*arena_end` on.
void DescribePaddedTensors(const std::vector<serialize::TensorSpec>& tensors, const std::vector<std::vector<int>>& axes,
                           int64_t max, uint64_t* arena_end, std::vector<serialize::TensorSpec>* out,
                           std::vector<serialize::TensorDimsSpec>* dims) {
  for (size_t k = 0; k < axes.size(); ++k) {
    serialize::TensorSpec t = tensors.at(k);
    serialize::TensorDimsSpec d;
    d.kinds.assign(t.shape.size(), serialize::DimKind::kStatic);
    for (int a : axes[k]) {
      d.kinds[a] = serialize::DimKind::kSymbolic;
      t.shape[a] = max;
    }
    if (!axes[k].empty()) {
      d.staging = *arena_end;
      *arena_end += AlignUp64(t.bytes());
    }
    out->push_back(t);
    dims->push_back(d);
  }
}

}  // namespace

CompileResult CompilePaddedVariants(const std::function<graph::Graph(int64_t)>& graph_at,
                                    const std::set<std::string>& symbolic_inputs, const BatchSymbol& symbol,
                                    const CompileOptions& options) {
  AGATE_REQUIRE(!symbolic_inputs.empty(), kInvalidArgument)
      << "no input carries symbol " << symbol.name << " (name it in --input-shape, e.g. input_ids:1x" << symbol.name
      << ", or as the model's dim_param)";
  const std::string extent_input = "__agate_extent_" + symbol.name;
  std::vector<PaddedVariant> variants;
  for (int64_t v : PaddedVariants(symbol)) {
    PaddedVariant variant;
    variant.extent = v;
    const graph::Graph padded =
        graph::PadSymbolAxes(graph_at(v), v, graph_at(v + 1), v + 1, symbol.name, symbol.min, extent_input, &variant.axes);
    CompileOptions variant_options = options;
    variant_options.kernel_prefix = VariantPrefix(options.kernel_prefix, v);
    variant.result = CompileGraph(padded, variant_options);
    AGATE_REQUIRE(variant.result.spec.target_kind == serialize::TargetKind::kHostCpu, kUnsupported)
        << "--bounds: symbolic dimensions are supported for host CPU targets (llvm with an OS); target '"
        << options.target << "' is not one";
    AGATE_REQUIRE(variant.result.graph.run_time_extents.empty(), kUnsupported)
        << "--bounds: output '" << variant.result.graph.run_time_extents.begin()->first
        << "' has extents known only when the model runs; a module with a padded symbol supports only outputs of "
        << "static or symbolic extents";
    variants.push_back(std::move(variant));
  }
  const PaddedVariant& first = variants.front();
  const serialize::ModuleSpec& first_spec = first.result.spec;
  // The extent input is the padded graph's last; the module's inputs are the model's (the
  // PaddedAxes list has one entry per model input, so it is left out below).
  AGATE_CHECK(!first_spec.inputs.empty() && first_spec.inputs.back().name == extent_input)
      << "the padded graph's last input is not " << extent_input;
  const uint32_t extent_index = static_cast<uint32_t>(first_spec.inputs.size() - 1);

  CompileResult merged;
  serialize::ModuleSpec& spec = merged.spec;
  spec.target = first_spec.target;
  spec.target_kind = first_spec.target_kind;
  spec.cpu_features = first_spec.cpu_features;
  spec.has_dynamic_shapes = true;
  serialize::DynamicShapesSpec& d = spec.dynamic_shapes;
  d.symbols = {serialize::SymbolSpec{symbol.name, symbol.min, symbol.max}};
  d.padded = true;
  for (const PaddedVariant& v : variants) {
    spec.arena_bytes = std::max(spec.arena_bytes, v.result.spec.arena_bytes);
    spec.arena_alignment = std::max(spec.arena_alignment, v.result.spec.arena_alignment);
    spec.workspace_bytes = std::max(spec.workspace_bytes, v.result.spec.workspace_bytes);
  }
  // Staging buffers and the extent slot live past every variant's arena.
  uint64_t arena_end = AlignUp64(spec.arena_bytes);
  DescribePaddedTensors(first_spec.inputs, first.axes.inputs, symbol.max, &arena_end, &spec.inputs, &d.inputs);
  DescribePaddedTensors(first_spec.outputs, first.axes.outputs, symbol.max, &arena_end, &spec.outputs, &d.outputs);
  d.extent_slot = arena_end;
  spec.arena_bytes = arena_end + 64;
  spec.arena_alignment = std::max<uint32_t>(spec.arena_alignment, 64);

  SharedConstants constants(&spec);
  std::vector<ir::LoweredFunc> funcs;
  for (PaddedVariant& v : variants) {
    AGATE_CHECK(v.axes.inputs == first.axes.inputs && v.axes.outputs == first.axes.outputs)
        << "the symbol's axes differ between variants " << first.extent << " and " << v.extent;
    const uint32_t first_kernel = static_cast<uint32_t>(spec.kernels.size());
    for (const serialize::KernelSpec& k : v.result.spec.kernels) spec.kernels.push_back(k);
    serialize::VariantSpec variant{v.extent, v.result.spec.plan};
    for (serialize::CallSpec& call : variant.plan) {
      call.kernel += first_kernel;
      for (serialize::ArgSpec& arg : call.args) {
        if (arg.kind == serialize::ArgSpec::Kind::kConstant) {
          arg.index = constants.Add(v.result.spec.constants.at(arg.index));
        } else if (arg.kind == serialize::ArgSpec::Kind::kInput && arg.index == extent_index) {
          arg = serialize::ArgSpec::Arena(d.extent_slot + arg.offset, arg.bytes);
        } else if (arg.kind == serialize::ArgSpec::Kind::kInput && !first.axes.inputs[arg.index].empty()) {
          arg = serialize::ArgSpec::Arena(d.inputs[arg.index].staging + arg.offset, arg.bytes);
        } else if (arg.kind == serialize::ArgSpec::Kind::kOutput && !first.axes.outputs[arg.index].empty()) {
          arg = serialize::ArgSpec::Arena(d.outputs[arg.index].staging + arg.offset, arg.bytes);
        }
      }
    }
    d.variants.push_back(std::move(variant));
    funcs.insert(funcs.end(), v.result.funcs.begin(), v.result.funcs.end());
    for (KernelSummary& k : v.result.kernels) merged.kernels.push_back(std::move(k));
    for (const PhaseTiming& t : v.result.timings) {
      merged.timings.push_back({t.phase + " " + symbol.name + "=" + std::to_string(v.extent), t.milliseconds});
    }
  }
  merged.graph = std::move(variants.back().result.graph);
  const target::Target target = target::Target::Parse(options.target);
  if (!funcs.empty()) {
    const std::string object = codegen::BuildLLVMSharedObject(funcs, target);
    spec.host_object.assign(object.begin(), object.end());
  }
  spec.kernel_fingerprint = serialize::KernelFingerprint(
      options.kernel_prefix, spec.kernels, std::string(spec.host_object.begin(), spec.host_object.end()));
  spec.metadata.compiler_version = AGATE_VERSION_STRING;
  spec.metadata.options = options.recorded_options;
  merged.funcs = std::move(funcs);
  merged.module = serialize::SerializeModule(spec);
  return merged;
}

CompileResult CompileSymbolVariants(const std::function<graph::Graph(int64_t)>& graph_at,
                                    const std::set<std::string>& symbolic_inputs, const BatchSymbol& symbol,
                                    const CompileOptions& options) {
  AGATE_REQUIRE(!symbolic_inputs.empty(), kInvalidArgument)
      << "no input carries symbol " << symbol.name << " (name it in --input-shape, e.g. input:" << symbol.name
      << "x3x224x224, or as the model's dim_param)";
  // Where the symbol sits in the inputs: only on axis 0 may it be a batch.
  const graph::Graph at_a = graph_at(symbol.min), at_b = graph_at(symbol.min + 1);
  bool rows_only = true;
  for (const std::string& in : symbolic_inputs) {
    if (!at_a.HasValue(in) || !at_b.HasValue(in)) continue;
    const graph::Shape& sa = at_a.TypeOf(in).shape;
    const graph::Shape& sb = at_b.TypeOf(in).shape;
    for (size_t d = 0; d < sa.size() && d < sb.size(); ++d) rows_only = rows_only && (sa[d] == sb[d] || d == 0);
  }
  std::string batch_refusal;
  if (rows_only) {
    try {
      return CompileBatchVariants(graph_at, symbolic_inputs, symbol, options);
    } catch (const Error& e) {
      if (e.code() != StatusCode::kUnsupported) throw;
      batch_refusal = e.message();
    }
  }
  try {
    return CompilePaddedVariants(graph_at, symbolic_inputs, symbol, options);
  } catch (const Error& e) {
    if (batch_refusal.empty() || e.code() != StatusCode::kUnsupported) throw;
    AGATE_THROW(kUnsupported) << "--bounds " << symbol.name << ": the symbol can be neither a batch split into chunks ("
                              << batch_refusal << ") nor padded (" << e.message() << ")";
  }
}

}  // namespace compiler
}  // namespace agate
