// Batch-axis analysis: may a symbolic extent on axis 0 of some inputs vary at run time?
//
// Why: agate compiles batch-style symbolic dimensions by plan variants (core/compiler/
// batch_variants.h): the graph is compiled statically at a few extents of the symbol and a run
// of n rows is split into chunks of those. That is only correct when every row of every
// output depends on the same row of the inputs and on nothing else that varies with n: the
// rows must stay on axis 0 and never mix. This analysis proves it from the graph imported at
// two extents a != b of the symbol (same model, so the same nodes): a value that depends on a
// batch input must have shape [a, S...] at a and [b, S...] at b (its rows on axis 0, the rest
// fixed); a value that does not must have the same shape at both; and the few operators that
// keep that shape yet combine rows (Softmax over axis 0, CumSum along it, ...) are refused by
// rule. Anything else is refused naming the node, its operator and why.
#ifndef AGATE_CORE_GRAPH_PASSES_BATCH_AXIS_ANALYSIS_H_
#define AGATE_CORE_GRAPH_PASSES_BATCH_AXIS_ANALYSIS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

struct BatchAxes {
  std::vector<bool> inputs;   // per graph input: axis 0 carries the symbol
  std::vector<bool> outputs;  // per graph output: axis 0 carries the symbol
};

// `at_a` and `at_b` are the same model imported with symbol `symbol` = a and = b (a != b) on
// axis 0 of the inputs named in `batch_inputs`. Throws agate::Error(kUnsupported) naming the
// node, op and reason when the symbol cannot vary at run time.
BatchAxes AnalyzeBatchAxes(const Graph& at_a, int64_t a, const Graph& at_b, int64_t b, const std::string& symbol,
                           const std::set<std::string>& batch_inputs);

// Why `node` cannot compute row for row over the rows of the inputs in `row_axes` (input ->
// the axis holding its rows), all of one extent in `types`: the same two-extent test for one
// node, its outputs inferred again with those axes one longer, plus the rules for operators that
// keep the shape but combine elements along the rows' axis. Empty when it can: every output then
// has its rows on one axis, row i computed from row i of those inputs alone; `output_axes` (if
// given) receives that axis per output (-1 for an unnamed one). Used for the readers of a value
// whose rows are counted at run time (frontends/onnx/importer.cc): they compute on the value's
// upper bound in the bound layout (each element at its coordinates), and the rows past the count
// are never read.
std::string RowMixingReason(const Node& node, const std::map<std::string, int>& row_axes,
                            const std::map<std::string, TensorType>& types,
                            const std::map<std::string, Tensor>& constants, std::vector<int>* output_axes = nullptr);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_BATCH_AXIS_ANALYSIS_H_
