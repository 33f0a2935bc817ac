#include "core/compiler/batch_variants.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "core/codegen/llvm/build_llvm.h"
#include "core/graph/passes/batch_axis_analysis.h"
#include "core/graph/passes/symbol_padding.h"
#include "core/serialize/kernel_fingerprint.h"
#include "core/serialize/serialize_module.h"
#include "core/support/error.h"
#include "core/support/parse_int.h"
#include "core/support/version.h"
#include "core/target/target.h"
#include "runtime_minimal/core/verify.h"

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

// Kernel names of a variant: "n8_k3_conv" for extent 8, "n16_4_k3_conv" for extents 16 and 4.
std::string VariantPrefix(const std::string& prefix, const std::vector<int64_t>& extents) {
  std::string name = (prefix.empty() ? "" : prefix + "_") + "n";
  for (size_t s = 0; s < extents.size(); ++s) name += (s ? "_" : "") + std::to_string(extents[s]);
  return name;
}

// Identical constants of several variants stored once. Keyed by a hash of the bytes (a model's
// weights are hundreds of megabytes: a copy of each as a key would double the compiler's memory);
// equal hashes are compared byte for byte.
class SharedConstants {
 public:
  explicit SharedConstants(serialize::ModuleSpec* spec) : spec_(spec) {}
  uint32_t Add(serialize::ConstantSpec&& c) {
    std::vector<size_t>& same_hash =
        index_[std::make_tuple(rt::Fnv1a64(c.data.data(), c.data.size()), c.data.size(), c.alignment)];
    for (size_t i : same_hash) {
      if (spec_->constants[i].data == c.data) return static_cast<uint32_t>(i);
    }
    same_hash.push_back(spec_->constants.size());
    spec_->constants.push_back(std::move(c));
    return static_cast<uint32_t>(same_hash.back());
  }

 private:
  serialize::ModuleSpec* spec_;
  std::map<std::tuple<uint64_t, size_t, uint32_t>, std::vector<size_t>> index_;
};

// A variant's constants added to the module's (moved out of `constants`): the module index of each.
std::vector<uint32_t> AddVariantConstants(std::vector<serialize::ConstantSpec>* constants, SharedConstants* shared) {
  std::vector<uint32_t> index;
  for (serialize::ConstantSpec& c : *constants) index.push_back(shared->Add(std::move(c)));
  constants->clear();
  return index;
}

// Appends a compiled variant's kernels, kernel summaries, functions and timings (named with
// `where`) to `merged`; returns its plan calling them, its constants at `constant_index`.
std::vector<serialize::CallSpec> AppendVariant(CompileResult* r, const std::vector<uint32_t>& constant_index,
                                               const std::string& where, std::vector<ir::LoweredFunc>* funcs,
                                               CompileResult* merged) {
  const uint32_t first_kernel = static_cast<uint32_t>(merged->spec.kernels.size());
  for (const serialize::KernelSpec& k : r->spec.kernels) merged->spec.kernels.push_back(k);
  std::vector<serialize::CallSpec> plan = r->spec.plan;
  for (serialize::CallSpec& call : plan) {
    call.kernel += first_kernel;
    for (serialize::ArgSpec& arg : call.args) {
      if (arg.kind == serialize::ArgSpec::Kind::kConstant) arg.index = constant_index.at(arg.index);
    }
  }
  funcs->insert(funcs->end(), r->funcs.begin(), r->funcs.end());
  for (KernelSummary& k : r->kernels) merged->kernels.push_back(std::move(k));
  for (const PhaseTiming& t : r->timings) merged->timings.push_back({t.phase + " " + where, t.milliseconds});
  return plan;
}

// The merged variants' kernels linked into one shared object, the fingerprint and metadata set,
// and the module serialized.
void FinishMergedModule(std::vector<ir::LoweredFunc> funcs, const CompileOptions& options, CompileResult* merged) {
  serialize::ModuleSpec& spec = merged->spec;
  if (!funcs.empty()) {
    const std::string object = codegen::BuildLLVMSharedObject(funcs, target::Target::Parse(options.target));
    spec.host_object.assign(object.begin(), object.end());
  }
  spec.kernel_fingerprint = serialize::KernelFingerprint(
      options.kernel_prefix, spec.kernels, std::string(spec.host_object.begin(), spec.host_object.end()));
  spec.metadata.compiler_version = AGATE_VERSION_STRING;
  spec.metadata.options = options.recorded_options;
  merged->funcs = std::move(funcs);
  merged->module = serialize::SerializeModule(spec);
}

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
    variant_options.kernel_prefix = VariantPrefix(options.kernel_prefix, {extents[i]});
    CompileResult r = CompileGraph(graphs[i], variant_options);
    graphs[i] = graph::Graph();  // its weights: most of the compiler's memory
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
    const std::vector<uint32_t> constant_index = AddVariantConstants(&r.spec.constants, &constants);
    spec.dynamic_shapes.variants.push_back(serialize::VariantSpec{
        extents[i], AppendVariant(&r, constant_index, "n=" + std::to_string(extents[i]), &funcs, &merged)});
    if (i + 1 == extents.size()) merged.graph = std::move(r.graph);
  }
  FinishMergedModule(std::move(funcs), options, &merged);
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

std::string ExtentInput(const std::string& symbol) { return "__agate_extent_" + symbol; }

// The extents a padded symbol compiles: those the user listed (its max added), else for a batch
// (axis 0 of its inputs only) 1, 8 and max as a batch symbol would be, else the padded defaults.
std::vector<int64_t> PaddedVariants(const BatchSymbol& symbol, bool batch_like) {
  std::vector<int64_t> variants;
  if (!symbol.given.empty()) {
    for (int64_t e : symbol.given) {
      AGATE_REQUIRE(e >= symbol.min, kInvalidArgument)
          << "--bounds " << symbol.name << "=" << symbol.min << ".." << symbol.max << ": variant " << e
          << " is below the lower bound (a padded symbol runs each extent on the smallest variant at or above it)";
      variants.push_back(e);
    }
  } else if (batch_like) {
    for (int64_t e : DefaultVariants(symbol.max)) {
      if (e >= symbol.min) variants.push_back(e);
    }
  } else {
    return DefaultPaddedVariants(symbol.min, symbol.max);
  }
  if (variants.empty() || variants.back() != symbol.max) variants.push_back(symbol.max);
  return variants;
}

struct PaddedVariant {
  std::vector<int64_t> extents;         // one per symbol
  CompileResult result;                 // its constants already moved to the module's
  std::vector<uint32_t> constant_index;  // the module's index of each of its constants
  std::vector<graph::PaddedAxes> axes;  // one per symbol
};

// The model at `at` padded for symbols[0..k), by symbol_padding once per symbol: symbol k-1 is
// proven on the graphs padded for the others at its extent and one more. `axes` (if not NULL)
// receives each symbol's axes, in order.
graph::Graph PaddedGraph(const GraphAt& graph_at, const std::vector<BatchSymbol>& symbols, size_t k,
                         const std::map<std::string, int64_t>& at, std::vector<graph::PaddedAxes>* axes) {
  if (k == 0) return graph_at(at);
  const BatchSymbol& symbol = symbols[k - 1];
  std::map<std::string, int64_t> longer = at;
  longer[symbol.name] += 1;
  const graph::Graph shorter_graph = PaddedGraph(graph_at, symbols, k - 1, at, axes);
  const graph::Graph longer_graph = PaddedGraph(graph_at, symbols, k - 1, longer, nullptr);
  graph::PaddedAxes mine;
  graph::Graph padded = graph::PadSymbolAxes(shorter_graph, at.at(symbol.name), longer_graph, at.at(symbol.name) + 1,
                                             symbol.name, symbol.min, ExtentInput(symbol.name), &mine);
  if (axes != nullptr) axes->push_back(std::move(mine));
  return padded;
}

// Module inputs / outputs of a padded variant: the first `count` of `tensors`, each axis carrying
// symbol s (axes[s] lists them per tensor) at that symbol's max, Symbolic dims naming the symbol
// per axis and a staging buffer each from `*arena_end` on.
void DescribePaddedTensors(const std::vector<serialize::TensorSpec>& tensors, size_t count,
                           const std::vector<std::vector<std::vector<int>>>& axes, const std::vector<BatchSymbol>& symbols,
                           uint64_t* arena_end, std::vector<serialize::TensorSpec>* out,
                           std::vector<serialize::TensorDimsSpec>* dims) {
  for (size_t k = 0; k < count; ++k) {
    serialize::TensorSpec t = tensors.at(k);
    serialize::TensorDimsSpec d;
    d.kinds.assign(t.shape.size(), serialize::DimKind::kStatic);
    d.axis_symbols.assign(t.shape.size(), 0);
    bool carries = false;
    for (size_t s = 0; s < symbols.size(); ++s) {
      for (int a : axes[s].at(k)) {
        AGATE_CHECK(d.kinds[a] == serialize::DimKind::kStatic)
            << "axis " << a << " of '" << t.name << "' carries two symbols";
        d.kinds[a] = serialize::DimKind::kSymbolic;
        d.axis_symbols[a] = static_cast<uint32_t>(s);
        t.shape[a] = symbols[s].max;
        if (!carries) d.symbol = static_cast<uint32_t>(s);
        carries = true;
      }
    }
    if (carries) {
      d.staging = *arena_end;
      *arena_end += AlignUp64(t.bytes());
    } else {
      d.axis_symbols.clear();
    }
    out->push_back(t);
    dims->push_back(d);
  }
}

// Every combination of the symbols' variant extents, symbol 0 outermost.
std::vector<std::vector<int64_t>> Combinations(const std::vector<std::vector<int64_t>>& lists) {
  std::vector<std::vector<int64_t>> out = {{}};
  for (const std::vector<int64_t>& list : lists) {
    std::vector<std::vector<int64_t>> next;
    for (const std::vector<int64_t>& prefix : out) {
      for (int64_t e : list) {
        next.push_back(prefix);
        next.back().push_back(e);
      }
    }
    out = std::move(next);
  }
  return out;
}

// True when `symbol` sits only on axis 0 of the inputs that carry it.
bool BatchLike(const GraphAt& graph_at, const std::set<std::string>& symbolic_inputs,
               const std::vector<BatchSymbol>& symbols, size_t which) {
  std::map<std::string, int64_t> at, longer;
  for (const BatchSymbol& s : symbols) at[s.name] = s.min;
  longer = at;
  longer[symbols[which].name] += 1;
  const graph::Graph a = graph_at(at), b = graph_at(longer);
  for (const std::string& in : symbolic_inputs) {
    if (!a.HasValue(in) || !b.HasValue(in)) continue;
    const graph::Shape& sa = a.TypeOf(in).shape;
    const graph::Shape& sb = b.TypeOf(in).shape;
    for (size_t d = 1; d < sa.size() && d < sb.size(); ++d) {
      if (sa[d] != sb[d]) return false;
    }
  }
  return true;
}

// CompilePaddedVariants, told which symbols are batch-like (BatchLike imports the model twice).
CompileResult CompilePadded(const GraphAt& graph_at, const std::vector<BatchSymbol>& symbols,
                            const std::vector<bool>& batch_like, const CompileOptions& options) {
  AGATE_REQUIRE(symbols.size() <= rt::kMaxSymbols, kInvalidArgument)
      << "--bounds names " << symbols.size() << " symbols; a module has at most " << rt::kMaxSymbols;
  std::vector<std::vector<int64_t>> lists;
  for (size_t s = 0; s < symbols.size(); ++s) lists.push_back(PaddedVariants(symbols[s], batch_like[s]));
  CompileResult merged;
  serialize::ModuleSpec& spec = merged.spec;
  SharedConstants constants(&spec);
  std::vector<PaddedVariant> variants;
  const std::vector<std::vector<int64_t>> combinations = Combinations(lists);
  AGATE_REQUIRE(combinations.size() <= rt::kMaxPaddedVariants, kInvalidArgument)
      << "--bounds: " << combinations.size() << " combinations of the symbols' extents, each a compile; a module "
      << "holds at most " << rt::kMaxPaddedVariants << " (list fewer extents after ':')";
  for (const std::vector<int64_t>& extents : combinations) {
    PaddedVariant variant;
    variant.extents = extents;
    std::map<std::string, int64_t> at;
    for (size_t s = 0; s < symbols.size(); ++s) at[symbols[s].name] = extents[s];
    const graph::Graph padded = PaddedGraph(graph_at, symbols, symbols.size(), at, &variant.axes);
    CompileOptions variant_options = options;
    variant_options.kernel_prefix = VariantPrefix(options.kernel_prefix, extents);
    variant.result = CompileGraph(padded, variant_options);
    AGATE_REQUIRE(variant.result.spec.target_kind == serialize::TargetKind::kHostCpu, kUnsupported)
        << "--bounds: symbolic dimensions are supported for host CPU targets (llvm with an OS); target '"
        << options.target << "' is not one";
    AGATE_REQUIRE(variant.result.graph.run_time_extents.empty(), kUnsupported)
        << "--bounds: output '" << variant.result.graph.run_time_extents.begin()->first
        << "' has extents known only when the model runs; a module with a padded symbol supports only outputs of "
        << "static or symbolic extents";
    // A model's weights are most of a variant's memory: keep them once, and only the last graph.
    variant.constant_index = AddVariantConstants(&variant.result.spec.constants, &constants);
    if (variants.size() + 1 < combinations.size()) variant.result.graph = graph::Graph();
    variants.push_back(std::move(variant));
  }
  const PaddedVariant& first = variants.front();
  const serialize::ModuleSpec& first_spec = first.result.spec;
  // The extent inputs follow the model's, one per symbol in order.
  const size_t model_inputs = first_spec.inputs.size() - symbols.size();
  for (size_t s = 0; s < symbols.size(); ++s) {
    AGATE_CHECK(first_spec.inputs.size() >= symbols.size() &&
                first_spec.inputs[model_inputs + s].name == ExtentInput(symbols[s].name))
        << "the padded graph's inputs do not end with the symbols' extents";
  }
  std::vector<std::vector<std::vector<int>>> input_axes, output_axes;  // [symbol][tensor] -> axes
  for (const graph::PaddedAxes& a : first.axes) {
    input_axes.push_back(a.inputs);
    output_axes.push_back(a.outputs);
  }

  spec.target = first_spec.target;
  spec.target_kind = first_spec.target_kind;
  spec.cpu_features = first_spec.cpu_features;
  spec.has_dynamic_shapes = true;
  serialize::DynamicShapesSpec& d = spec.dynamic_shapes;
  for (const BatchSymbol& s : symbols) d.symbols.push_back(serialize::SymbolSpec{s.name, s.min, s.max});
  d.padded = true;
  for (const PaddedVariant& v : variants) {
    spec.arena_bytes = std::max(spec.arena_bytes, v.result.spec.arena_bytes);
    spec.arena_alignment = std::max(spec.arena_alignment, v.result.spec.arena_alignment);
    spec.workspace_bytes = std::max(spec.workspace_bytes, v.result.spec.workspace_bytes);
  }
  // Staging buffers and the extent slots live past every variant's arena.
  uint64_t arena_end = AlignUp64(spec.arena_bytes);
  DescribePaddedTensors(first_spec.inputs, model_inputs, input_axes, symbols, &arena_end, &spec.inputs, &d.inputs);
  DescribePaddedTensors(first_spec.outputs, first_spec.outputs.size(), output_axes, symbols, &arena_end, &spec.outputs,
                        &d.outputs);
  for (size_t s = 0; s < symbols.size(); ++s) d.extent_slots.push_back(arena_end + 8 * s);
  spec.arena_bytes = arena_end + AlignUp64(8 * symbols.size());
  spec.arena_alignment = std::max<uint32_t>(spec.arena_alignment, 64);

  std::vector<ir::LoweredFunc> funcs;
  for (PaddedVariant& v : variants) {
    for (size_t s = 0; s < symbols.size(); ++s) {
      AGATE_CHECK(v.axes[s].inputs == first.axes[s].inputs && v.axes[s].outputs == first.axes[s].outputs)
          << "symbol " << symbols[s].name << "'s axes differ between variants";
    }
    std::string where;
    for (size_t s = 0; s < symbols.size(); ++s) {
      where += (s ? "," : "") + symbols[s].name + "=" + std::to_string(v.extents[s]);
    }
    serialize::VariantSpec variant{v.extents[0], AppendVariant(&v.result, v.constant_index, where, &funcs, &merged),
                                   v.extents};
    // The model's tensors that carry a symbol, and the extent inputs, live in the arena.
    for (serialize::CallSpec& call : variant.plan) {
      for (serialize::ArgSpec& arg : call.args) {
        if (arg.kind == serialize::ArgSpec::Kind::kInput && arg.index >= model_inputs) {
          arg = serialize::ArgSpec::Arena(d.extent_slots.at(arg.index - model_inputs) + arg.offset, arg.bytes);
        } else if (arg.kind == serialize::ArgSpec::Kind::kInput && !d.inputs[arg.index].axis_symbols.empty()) {
          arg = serialize::ArgSpec::Arena(d.inputs[arg.index].staging + arg.offset, arg.bytes);
        } else if (arg.kind == serialize::ArgSpec::Kind::kOutput && !d.outputs[arg.index].axis_symbols.empty()) {
          arg = serialize::ArgSpec::Arena(d.outputs[arg.index].staging + arg.offset, arg.bytes);
        }
      }
    }
    d.variants.push_back(std::move(variant));
  }
  merged.graph = std::move(variants.back().result.graph);
  FinishMergedModule(std::move(funcs), options, &merged);
  return merged;
}

}  // namespace

CompileResult CompilePaddedVariants(const GraphAt& graph_at, const std::set<std::string>& symbolic_inputs,
                                    const std::vector<BatchSymbol>& symbols, const CompileOptions& options) {
  AGATE_REQUIRE(!symbolic_inputs.empty(), kInvalidArgument)
      << "no input carries symbol " << symbols.at(0).name << " (name it in --input-shape, e.g. input_ids:1x"
      << symbols.at(0).name << ", or as the model's dim_param)";
  std::vector<bool> batch_like;
  for (size_t s = 0; s < symbols.size(); ++s) batch_like.push_back(BatchLike(graph_at, symbolic_inputs, symbols, s));
  return CompilePadded(graph_at, symbols, batch_like, options);
}

CompileResult CompileSymbolVariants(const GraphAt& graph_at, const std::set<std::string>& symbolic_inputs,
                                    const std::vector<BatchSymbol>& symbols, const CompileOptions& options) {
  AGATE_REQUIRE(!symbols.empty() && !symbolic_inputs.empty(), kInvalidArgument)
      << "no input carries symbol " << (symbols.empty() ? std::string("?") : symbols[0].name)
      << " (name it in --input-shape, e.g. input:N" << "x3x224x224, or as the model's dim_param)";
  std::set<std::string> names;
  for (const BatchSymbol& s : symbols) {
    AGATE_REQUIRE(names.insert(s.name).second, kInvalidArgument) << "--bounds names symbol " << s.name << " twice";
  }
  if (symbols.size() > 1) return CompilePaddedVariants(graph_at, symbolic_inputs, symbols, options);
  const BatchSymbol& symbol = symbols[0];
  std::string batch_refusal;
  // A symbol only on axis 0 of its inputs may be a batch, chunked when its rows never mix.
  const bool batch_like = BatchLike(graph_at, symbolic_inputs, symbols, 0);
  if (batch_like) {
    try {
      return CompileBatchVariants([&](int64_t v) { return graph_at({{symbol.name, v}}); }, symbolic_inputs, symbol,
                                  options);
    } catch (const Error& e) {
      if (e.code() != StatusCode::kUnsupported) throw;
      batch_refusal = e.message();
    }
  }
  try {
    return CompilePadded(graph_at, symbols, {batch_like}, options);
  } catch (const Error& e) {
    if (batch_refusal.empty() || e.code() != StatusCode::kUnsupported) throw;
    AGATE_THROW(kUnsupported) << "--bounds " << symbol.name << ": the symbol can be neither a batch split into chunks ("
                              << batch_refusal << ") nor padded (" << e.message() << ")";
  }
}

}  // namespace compiler
}  // namespace agate
