// Symbol padding: a symbolic extent on any axes (a sequence length "S" in 1..128) computed on
// inputs padded to a compiled extent, with the padding masked wherever it could leak.
//
// Why: batch-style symbols (batch_axis_analysis.h) are split into chunks of compiled extents,
// which needs rows that never mix. A sequence length mixes positions (attention sums over
// keys, pooling averages tokens), so it cannot be chunked. Instead a module compiled at
// extent v runs any n <= v on inputs zero-padded from n to v along the symbol's axes, as
// XLA's bounded dynamic shapes do: every operator that computes position for position along
// those axes (elementwise ops, products over other axes, layout changes that keep the axis)
// leaves positions < n exact whatever the padding holds; the operators that combine
// positions along them get the padding masked to their identity first (a sum sees 0, a max
// or a Softmax -inf, a product over the axis sees 0 in both operands, a mean is rescaled by
// v / n, a convolution along it sees the zeros its own padding would give). The run-time n
// arrives as one int64 scalar input (`extent_input`), which the runtime fills.
//
// What is proven, not assumed: the model is imported at two extents v != w of the symbol
// (same nodes), and every value's axes are classified by comparing its shapes: an axis of
// extent v at v and w at w carries the symbol, any other difference (S + 1, 2 * S, a
// flattened S * 64) is refused; constants that differ between the imports must agree on the
// positions both have (a causal mask sliced to S x S) or are refused where read (a mean
// divided by a folded S). Operators outside the rules below are refused naming the node, its
// operator and the axis, never compiled with a silent error. What two extents cannot show: a
// number folded from S that happens to be equal at v and v + 1 yet differs below (floor(S / 64)
// at 64 and 65) is taken as independent of S.
#ifndef AGATE_CORE_GRAPH_PASSES_SYMBOL_PADDING_H_
#define AGATE_CORE_GRAPH_PASSES_SYMBOL_PADDING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

struct PaddedAxes {
  std::vector<std::vector<int>> inputs;   // per graph input of `at_v`: the axes carrying the symbol
  std::vector<std::vector<int>> outputs;  // per graph output
};

// `at_v` and `at_w` are the same model imported with symbol `symbol` = v and = w (v != w).
// Returns `at_v` with masks inserted and `extent_input` (int64, shape []) appended to its
// inputs: run on inputs whose positions >= n along the symbol's axes hold zeros, with
// extent_input = n (min_extent <= n <= v), every output agrees with the model at n on its
// positions < n. `min_extent` is the symbol's lower bound (a Gather of position k along the
// symbol needs k < min_extent). Throws agate::Error(kUnsupported) naming the node, its operator
// and why when the model cannot run padded.
Graph PadSymbolAxes(const Graph& at_v, int64_t v, const Graph& at_w, int64_t w, const std::string& symbol,
                    int64_t min_extent, const std::string& extent_input, PaddedAxes* axes);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_SYMBOL_PADDING_H_
