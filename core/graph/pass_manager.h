// The pass manager: runs graph passes in order, times each one, checks the IR
// after each, and with a dump directory writes every pass's printed output.
//
// Why: a compiler's pipeline must be observable. `--dump-ir DIR` gives one file
// per pass (00_input.txt, 01_constant_folding.txt, ...) so a wrong result can be
// bisected to the pass that introduced it; the timings say where compile time goes.
#ifndef AGATE_CORE_GRAPH_PASS_MANAGER_H_
#define AGATE_CORE_GRAPH_PASS_MANAGER_H_

#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

using PassFn = std::function<Graph(const Graph&)>;

struct Pass {
  std::string name;
  PassFn run;
};

struct PassTiming {
  std::string name;
  double milliseconds = 0;
  size_t nodes_after = 0;
};

struct PassManagerOptions {
  std::string dump_dir;  // empty: no dumps
  // After each pass: structural Verify() and a check that re-inferring shapes
  // reproduces the types the pass left (a pass that breaks types is a bug: kInternal).
  bool verify = true;
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(std::move(options)) {}

  PassManager& Add(std::string name, PassFn run);
  const std::vector<Pass>& passes() const { return passes_; }

  // Runs every pass in order. Errors from a pass are rethrown with the pass's name.
  Graph Run(const Graph& graph);

  const std::vector<PassTiming>& timings() const { return timings_; }
  // One line per pass: "constant_folding  0.12 ms  41 nodes", then the total.
  std::string TimingReport() const;

 private:
  void Dump(int index, const std::string& name, const Graph& graph) const;

  PassManagerOptions options_;
  std::vector<Pass> passes_;
  std::vector<PassTiming> timings_;
};

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASS_MANAGER_H_
