// Symbolic dimensions by plan variants: one module for every extent of a symbol ("N" in 1..32),
// batch-style (axis 0, rows chunked) or padded (any axes; CompilePaddedVariants below).
//
// Why variants rather than kernels over symbolic extents: agate's kernels are scheduled for
// static shapes, which is what makes them fast. A module compiled at a few extents of the
// symbol (each a full static compile: fusion, memory plan, schedules) runs any extent n as
// chunks of those (greedy, largest first: 7 = 4 + 2 + 1), each with the input and output
// pointers moved by the rows already done, which is correct exactly when rows never mix
// (core/graph/passes/batch_axis_analysis.h proves it or refuses the model). The variants share
// one constant table (identical constants stored once) and one arena (sized for the largest);
// their kernels (named nV_k3_conv for variant V) are linked into one shared object. The module
// is format 2.0 (runtime_minimal/schema/module.fbs, DynamicShapes).
#ifndef AGATE_CORE_COMPILER_BATCH_VARIANTS_H_
#define AGATE_CORE_COMPILER_BATCH_VARIANTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/compiler/compiler.h"
#include "core/graph/graph.h"

namespace agate {
namespace compiler {

struct BatchSymbol {
  std::string name;               // "N"
  int64_t min = 1;
  int64_t max = 1;
  std::vector<int64_t> variants;  // the extents compiled; empty: DefaultVariants(max)
  std::vector<int64_t> given;     // the variants as the user listed them (ParseBounds), if any
};

// The variants compiled when the user names none: 1, min(max, 8), and max when it is a power of
// two up to 64 (so that a full batch of a power-of-two bound runs as one chunk). Each variant
// costs a full compile and its kernels' code in the module.
std::vector<int64_t> DefaultVariants(int64_t max);

// Parses --bounds text "N=1..32" or "N=1..32:1,8,32" (variants ascending within the bounds; 1 is
// added when missing, since any extent must be reachable). Throws kInvalidArgument naming the
// malformed part.
BatchSymbol ParseBounds(const std::string& text);

// Compiles the model for every extent of `symbol`: `graph_at(v)` is the model imported with the
// symbol = v on axis 0 of the inputs named in `batch_inputs`. Host-CPU targets only
// (kUnsupported otherwise); kUnsupported naming the node when rows would mix (see above).
CompileResult CompileBatchVariants(const std::function<graph::Graph(int64_t)>& graph_at,
                                   const std::set<std::string>& batch_inputs, const BatchSymbol& symbol,
                                   const CompileOptions& options);

// The variants of a padded symbol when the user names none: 16, 32, 64... at or above min and
// below max, then max. A run pads to the next one, so it does at most twice the work of its
// extent (above 16); each variant is a compile and its kernels' code (the constants are shared).
std::vector<int64_t> DefaultPaddedVariants(int64_t min, int64_t max);

// The model imported with each symbol at the given extent (symbol name -> extent).
using GraphAt = std::function<graph::Graph(const std::map<std::string, int64_t>&)>;

// Compiles the model for symbols that cannot be chunked (a sequence length, on any axes; or
// several symbols, a batch and a sequence length): one variant per combination of the symbols'
// extents, each the model imported there and padded by core/graph/passes/symbol_padding.h once
// per symbol; a run takes the variant whose extents are the smallest covering its own, once, on
// inputs the runtime stages zero-padded (format 3.0: DynamicShapes.padded). Each symbol's
// extents: symbol.given plus max; else 1, 8 and max for a symbol only on axis 0 of its inputs
// (DefaultVariants) and DefaultPaddedVariants for the others. At most rt::kMaxSymbols symbols.
// Host-CPU targets only; kUnsupported naming the node when the model cannot run padded.
CompileResult CompilePaddedVariants(const GraphAt& graph_at, const std::set<std::string>& symbolic_inputs,
                                    const std::vector<BatchSymbol>& symbols, const CompileOptions& options);

// `agate compile --bounds`: one symbol only on axis 0 of its inputs is compiled batch-style when
// its rows never mix (CompileBatchVariants), otherwise padded (CompilePaddedVariants, and so
// are several symbols); when neither applies the error gives both reasons.
CompileResult CompileSymbolVariants(const GraphAt& graph_at, const std::set<std::string>& symbolic_inputs,
                                    const std::vector<BatchSymbol>& symbols, const CompileOptions& options);

}  // namespace compiler
}  // namespace agate

#endif  // AGATE_CORE_COMPILER_BATCH_VARIANTS_H_
