// The cost model: learns, from measured configs, to rank unmeasured ones.
//
// Why a ranking model: the tuner only needs to know which candidates are fastest, not their
// times, and times of different tasks differ by orders of magnitude; a pairwise rank objective
// (XGBoost's rank:pairwise) learns orderings within each task (one query group per task) while
// sharing the trees across tasks, which is what lets records of other tasks warm-start a new
// one (transfer). Features come from the lowered loop IR (features.h), so they mean the same
// thing for every operator.
#ifndef AGATE_CORE_AUTOTUNE_COST_MODEL_H_
#define AGATE_CORE_AUTOTUNE_COST_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

namespace agate {
namespace autotune {

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Adds measured samples: features, cost in ms (+infinity: failed), and the task they belong to.
  virtual void Add(int task_group, const std::vector<std::vector<float>>& features, const std::vector<double>& costs) = 0;
  // Retrains on everything added so far.
  virtual void Train() = 0;
  // Scores for unmeasured samples: higher is predicted faster. Before any training: all zero.
  virtual std::vector<float> Predict(const std::vector<std::vector<float>>& features) const = 0;
  virtual bool trained() const = 0;
};

// XGBoost (C API, Debian libxgboost-dev), objective rank:pairwise, one query group per task;
// labels are the speed relative to the task's best (best = 1, failures = 0).
std::unique_ptr<CostModel> MakeXgbCostModel(uint64_t seed);

}  // namespace autotune
}  // namespace agate

#endif  // AGATE_CORE_AUTOTUNE_COST_MODEL_H_
