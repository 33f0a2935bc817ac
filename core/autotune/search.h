// Search policies: which knob configs of one task to measure next.
//
// Why a policy object: the tuner's loop (tuner.h) is the same for every strategy - ask for a
// batch, measure it, report the costs back - and `agate tune --tuner xgb|random|grid` must
// compare strategies on equal terms, so each is one implementation of SearchPolicy:
//   - grid: the space in index order (knob 0 varying fastest); exhaustive for small spaces;
//   - random: uniform without replacement;
//   - model (xgb): a learned cost model (cost_model.h) ranks candidates that simulated
//     annealing over the knob space finds; each batch takes the model's best unmeasured points,
//     and a fraction epsilon of random ones (epsilon-greedy), as the TVM paper's section 5.
// Every policy proposes the default config (index 0: each knob's default first) first, so the
// tuner always knows the untuned time and never ends up slower than it.
#ifndef AGATE_CORE_AUTOTUNE_SEARCH_H_
#define AGATE_CORE_AUTOTUNE_SEARCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/autotune/cost_model.h"
#include "core/ops/knob_space.h"

namespace agate {
namespace autotune {

// The index of `config` in `space` (ops::KnobSpace::At's inverse); knobs it leaves out count
// as their default. kInvalidArgument when a value is not legal.
int64_t IndexOf(const ops::KnobSpace& space, const ops::KnobConfig& config);

class SearchPolicy {
 public:
  virtual ~SearchPolicy() = default;
  virtual std::string name() const = 0;
  // Up to `n` configs never proposed before; fewer (or none) when the space runs out.
  virtual std::vector<ops::KnobConfig> NextBatch(int n) = 0;
  // The measured cost (ms; +infinity for a failed candidate) of configs it proposed, or of
  // configs measured before (resumed records).
  virtual void Update(const std::vector<ops::KnobConfig>& configs, const std::vector<double>& costs) = 0;
  // Marks configs as measured already (resumed records) so they are never proposed again.
  virtual void MarkVisited(const ops::KnobConfig& config) = 0;
};

std::unique_ptr<SearchPolicy> MakeGridSearch(const ops::KnobSpace& space);
std::unique_ptr<SearchPolicy> MakeRandomSearch(const ops::KnobSpace& space, uint64_t seed);

// Features of configs for the cost model (features.h: from the lowered loop IR), element i for
// configs[i]. A batch, because each config costs a lowering and the tuner lowers a batch in
// parallel children (tuner.cc): the search asks for every point it needs at one step at once.
using FeatureFn = std::function<std::vector<std::vector<float>>(const std::vector<ops::KnobConfig>&)>;
// A FeatureFn that calls `one` for each config in turn.
FeatureFn FeaturesOneByOne(std::function<std::vector<float>(const ops::KnobConfig&)> one);

struct ModelSearchOptions {
  double epsilon = 0.1;        // share of each batch picked at random
  int anneal_chains = 8;       // simulated-annealing walkers per batch, stepping together
  int anneal_steps = 12;       // steps per walker (each new point is lowered once for its features;
                               // the walkers' new points of a step in one FeatureFn call)
  int min_train = 4;           // measured configs of this task before the model is trusted
};

// The cost model is shared by the tasks of a tuning run (transfer: what it learned on earlier
// tasks ranks this task's first candidates); `task_group` names this task's records in it.
std::unique_ptr<SearchPolicy> MakeModelSearch(const ops::KnobSpace& space, FeatureFn features, CostModel* model,
                                              int task_group, uint64_t seed, ModelSearchOptions options = {});

}  // namespace autotune
}  // namespace agate

#endif  // AGATE_CORE_AUTOTUNE_SEARCH_H_
