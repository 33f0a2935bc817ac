#include "core/autotune/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "core/support/error.h"

namespace agate {
namespace autotune {

int64_t IndexOf(const ops::KnobSpace& space, const ops::KnobConfig& config) {
  int64_t index = 0, radix = 1;
  for (const ops::KnobDef& k : space.knobs) {
    auto it = config.find(k.name);
    int64_t position = 0;
    if (it != config.end()) {
      auto v = std::find(k.values.begin(), k.values.end(), it->second);
      AGATE_REQUIRE(v != k.values.end(), kInvalidArgument)
          << "knob " << k.name << "=" << it->second << " is not in its space " << space.ToString();
      position = v - k.values.begin();
    }
    index += position * radix;
    radix *= static_cast<int64_t>(k.values.size());
  }
  for (const auto& [name, value] : config) {
    bool known = std::any_of(space.knobs.begin(), space.knobs.end(), [&](const ops::KnobDef& k) { return k.name == name; });
    AGATE_REQUIRE(known, kInvalidArgument) << "knob " << name << " is not in the space " << space.ToString();
  }
  return index;
}

FeatureFn FeaturesOneByOne(std::function<std::vector<float>(const ops::KnobConfig&)> one) {
  return [one = std::move(one)](const std::vector<ops::KnobConfig>& configs) {
    std::vector<std::vector<float>> out;
    out.reserve(configs.size());
    for (const ops::KnobConfig& c : configs) out.push_back(one(c));
    return out;
  };
}

namespace {

// What every policy shares: the space, the visited indices, the default first.
class PolicyBase : public SearchPolicy {
 public:
  explicit PolicyBase(const ops::KnobSpace& space) : space_(space), size_(space.size()) {}
  void MarkVisited(const ops::KnobConfig& config) override { visited_.insert(IndexOf(space_, config)); }
  void Update(const std::vector<ops::KnobConfig>& configs, const std::vector<double>& costs) override {
    for (const auto& c : configs) MarkVisited(c);
    (void)costs;
  }

 protected:
  bool Exhausted() const { return static_cast<int64_t>(visited_.size()) >= size_; }
  // Proposes index `i` when new; true when it was.
  bool Take(int64_t i, std::vector<ops::KnobConfig>* batch) {
    if (!visited_.insert(i).second) return false;
    batch->push_back(space_.At(i));
    return true;
  }

  ops::KnobSpace space_;
  int64_t size_;
  std::set<int64_t> visited_;
};

class GridSearch : public PolicyBase {
 public:
  using PolicyBase::PolicyBase;
  std::string name() const override { return "grid"; }
  std::vector<ops::KnobConfig> NextBatch(int n) override {
    std::vector<ops::KnobConfig> batch;
    while (static_cast<int>(batch.size()) < n && next_ < size_) Take(next_++, &batch);
    return batch;
  }

 private:
  int64_t next_ = 0;
};

class RandomSearch : public PolicyBase {
 public:
  RandomSearch(const ops::KnobSpace& space, uint64_t seed) : PolicyBase(space), rng_(seed) {}
  std::string name() const override { return "random"; }
  std::vector<ops::KnobConfig> NextBatch(int n) override {
    std::vector<ops::KnobConfig> batch;
    Take(0, &batch);  // the default first
    AddRandom(n, &batch);
    return batch;
  }

 protected:
  void AddRandom(int n, std::vector<ops::KnobConfig>* batch) {
    while (static_cast<int>(batch->size()) < n && !Exhausted())
      for (int64_t i : RandomUnvisited(n - static_cast<int>(batch->size()))) Take(i, batch);
  }
  // Up to `limit` distinct unvisited points in random order (none of them marked visited):
  // rejection sampling while the space is mostly unvisited, a shuffled scan for the rest.
  std::vector<int64_t> RandomUnvisited(int limit) {
    std::vector<int64_t> out;
    if (static_cast<int64_t>(visited_.size()) * 2 < size_) {
      std::uniform_int_distribution<int64_t> pick(0, size_ - 1);
      std::set<int64_t> seen;
      for (int tries = 0; static_cast<int>(out.size()) < limit && tries < 4 * limit; ++tries) {
        int64_t i = pick(rng_);
        if (!visited_.count(i) && seen.insert(i).second) out.push_back(i);
      }
      return out;
    }
    for (int64_t i = 0; i < size_ && static_cast<int64_t>(out.size()) < 100000; ++i)
      if (!visited_.count(i)) out.push_back(i);
    std::shuffle(out.begin(), out.end(), rng_);
    if (static_cast<int>(out.size()) > limit) out.resize(limit);
    return out;
  }
  std::mt19937_64 rng_;
};

class ModelSearch : public RandomSearch {
 public:
  ModelSearch(const ops::KnobSpace& space, FeatureFn features, CostModel* model, int task_group, uint64_t seed,
              ModelSearchOptions options)
      : RandomSearch(space, seed), features_(std::move(features)), model_(model), group_(task_group),
        options_(options) {}
  std::string name() const override { return "xgb"; }

  void Update(const std::vector<ops::KnobConfig>& configs, const std::vector<double>& costs) override {
    PolicyBase::Update(configs, costs);
    std::vector<int64_t> indices;
    for (const auto& c : configs) indices.push_back(IndexOf(space_, c));
    Prefetch(indices);
    std::vector<std::vector<float>> f;
    for (int64_t i : indices) f.push_back(Features(i));
    model_->Add(group_, f, costs);
    for (size_t i = 0; i < configs.size(); ++i) measured_.push_back({indices[i], costs[i]});
    measured_programs_.insert(f.begin(), f.end());
    model_->Train();
  }

  std::vector<ops::KnobConfig> NextBatch(int n) override {
    std::vector<ops::KnobConfig> batch;
    Take(0, &batch);
    bool use_model = model_->trained() && static_cast<int>(measured_.size()) >= options_.min_train;
    int explore = use_model ? static_cast<int>(std::ceil(options_.epsilon * n)) : n;
    if (use_model) {
      for (int64_t i : Anneal(n - explore)) {
        if (static_cast<int>(batch.size()) >= n - explore) break;
        Take(i, &batch);
      }
    }
    AddDistinctRandom(n, &batch);  // epsilon-greedy: the rest at random (all of it before the model is trained)
    return batch;
  }

 private:
  // Random picks that are new programs: a pick whose features equal a measured config's or
  // another pick's in this batch is skipped (and never proposed again: it is that program under
  // another name). Random search proposes configs uniformly and measures such aliases; the model
  // search reads features anyway, and a first batch of distinct programs is what its model
  // learns from. Each new pick costs a lowering, so after kMaxPicksPerSlot picks per slot left
  // the rest are taken as they come (a space made almost only of aliases must not stall).
  void AddDistinctRandom(int n, std::vector<ops::KnobConfig>* batch) {
    constexpr int kMaxPicksPerSlot = 8;
    std::vector<int64_t> taken;
    for (const ops::KnobConfig& c : *batch) taken.push_back(IndexOf(space_, c));
    Prefetch(taken);
    std::set<std::vector<float>> in_batch;
    for (int64_t i : taken) in_batch.insert(Features(i));
    int slots = n - static_cast<int>(batch->size());
    std::vector<int64_t> picks = RandomUnvisited(kMaxPicksPerSlot * std::max(0, slots));
    // Lowered a few at a time, as many as there are slots left: most picks are new programs.
    for (size_t next = 0; next < picks.size() && static_cast<int>(batch->size()) < n;) {
      size_t end = std::min(picks.size(), next + static_cast<size_t>(n - static_cast<int>(batch->size())));
      std::vector<int64_t> chunk(picks.begin() + next, picks.begin() + end);
      next = end;
      Prefetch(chunk);
      for (int64_t i : chunk) {
        if (static_cast<int>(batch->size()) >= n) break;
        const std::vector<float>& f = Features(i);
        if (measured_programs_.count(f) || in_batch.count(f)) {
          visited_.insert(i);
          continue;
        }
        in_batch.insert(f);
        Take(i, batch);
      }
    }
    AddRandom(n, batch);
  }

  // The distinct points of `indices` that `cache` does not hold yet, in order.
  template <typename Cache>
  static std::vector<int64_t> Uncached(const std::vector<int64_t>& indices, const Cache& cache) {
    std::vector<int64_t> missing;
    for (int64_t i : indices)
      if (!cache.count(i) && std::find(missing.begin(), missing.end(), i) == missing.end()) missing.push_back(i);
    return missing;
  }

  // Computes, in one FeatureFn call, the features of the points not in the cache yet.
  void Prefetch(const std::vector<int64_t>& indices) {
    std::vector<int64_t> missing = Uncached(indices, feature_cache_);
    if (missing.empty()) return;
    std::vector<ops::KnobConfig> configs;
    for (int64_t i : missing) configs.push_back(space_.At(i));
    std::vector<std::vector<float>> f = features_(configs);
    AGATE_CHECK(f.size() == missing.size()) << "features of " << f.size() << " of " << missing.size() << " configs";
    for (size_t k = 0; k < missing.size(); ++k) feature_cache_[missing[k]] = std::move(f[k]);
  }

  const std::vector<float>& Features(int64_t index) {
    if (!feature_cache_.count(index)) Prefetch({index});
    return feature_cache_.at(index);
  }

  // Scores the points (model predictions), their features fetched together.
  void ScoreAll(const std::vector<int64_t>& indices) {
    Prefetch(indices);
    std::vector<int64_t> missing = Uncached(indices, score_cache_);
    if (missing.empty()) return;
    std::vector<std::vector<float>> f;
    for (int64_t i : missing) f.push_back(Features(i));
    std::vector<float> s = model_->Predict(f);
    for (size_t k = 0; k < missing.size(); ++k) score_cache_[missing[k]] = s.at(k);
  }

  float Score(int64_t index) {
    ScoreAll({index});
    return score_cache_.at(index);
  }

  // A random neighbour: one knob moved to another of its values.
  int64_t Neighbour(int64_t index) {
    if (space_.knobs.empty()) return index;
    ops::KnobConfig c = space_.At(index);
    std::uniform_int_distribution<size_t> pick_knob(0, space_.knobs.size() - 1);
    const ops::KnobDef& k = space_.knobs[pick_knob(rng_)];
    std::uniform_int_distribution<size_t> pick_value(0, k.values.size() - 1);
    c[k.name] = k.values[pick_value(rng_)];
    return IndexOf(space_, c);
  }

  // Simulated annealing on the model's score from the best measured points and random starts;
  // returns unvisited points, best predicted first, one per distinct program. Many configs of a
  // space lower to the same loop nest (a Winograd tile while Winograd is off, a default spelled
  // as its value): they have equal features, so equal scores, and without this the model spent
  // its batches re-measuring its best program under other names (on AVX2, 64 trials on
  // ResNet-50's 14x14x256 conv never left F(2x2) tiles in two of three seeds).
  std::vector<int64_t> Anneal(int want) {
    score_cache_.clear();  // the model was retrained
    std::vector<std::pair<double, int64_t>> by_cost;
    for (const auto& [index, cost] : measured_) by_cost.push_back({cost, index});
    std::sort(by_cost.begin(), by_cost.end());
    std::uniform_int_distribution<int64_t> pick(0, size_ - 1);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::map<int64_t, float> found;  // unvisited point -> score
    // The walkers step together, so that each step's new points are lowered in one batch.
    std::vector<int64_t> current(options_.anneal_chains);
    for (int chain = 0; chain < options_.anneal_chains; ++chain)
      current[chain] = chain < static_cast<int>(by_cost.size()) / 2 ? by_cost[chain].second : pick(rng_);
    ScoreAll(current);
    std::vector<float> score;
    for (int64_t i : current) score.push_back(Score(i));
    for (int step = 0; step < options_.anneal_steps; ++step) {
      double temperature = 1.0 - static_cast<double>(step) / options_.anneal_steps;
      std::vector<int64_t> next;
      for (int64_t i : current) next.push_back(Neighbour(i));
      ScoreAll(next);
      for (int chain = 0; chain < options_.anneal_chains; ++chain) {
        float next_score = Score(next[chain]);
        if (!visited_.count(next[chain]) && !measured_programs_.count(Features(next[chain])))
          found[next[chain]] = next_score;
        if (next_score >= score[chain] ||
            unit(rng_) < std::exp((next_score - score[chain]) / std::max(1e-3, temperature))) {
          current[chain] = next[chain];
          score[chain] = next_score;
        }
      }
    }
    std::vector<std::pair<float, int64_t>> ranked;
    for (const auto& [index, s] : found) ranked.push_back({s, index});
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<int64_t> out;
    std::set<std::vector<float>> chosen;
    for (const auto& [s, index] : ranked) {
      if (static_cast<int>(out.size()) >= want) break;
      if (chosen.insert(Features(index)).second) out.push_back(index);  // one config per program
    }
    return out;
  }

  FeatureFn features_;
  CostModel* model_;
  int group_;
  ModelSearchOptions options_;
  std::vector<std::pair<int64_t, double>> measured_;
  std::set<std::vector<float>> measured_programs_;  // features of every measured config
  std::map<int64_t, std::vector<float>> feature_cache_;
  std::map<int64_t, float> score_cache_;
};

}  // namespace

std::unique_ptr<SearchPolicy> MakeGridSearch(const ops::KnobSpace& space) {
  return std::make_unique<GridSearch>(space);
}

std::unique_ptr<SearchPolicy> MakeRandomSearch(const ops::KnobSpace& space, uint64_t seed) {
  return std::make_unique<RandomSearch>(space, seed);
}

std::unique_ptr<SearchPolicy> MakeModelSearch(const ops::KnobSpace& space, FeatureFn features, CostModel* model,
                                              int task_group, uint64_t seed, ModelSearchOptions options) {
  AGATE_REQUIRE(model != nullptr, kInvalidArgument) << "model search without a cost model";
  return std::make_unique<ModelSearch>(space, std::move(features), model, task_group, seed, options);
}

}  // namespace autotune
}  // namespace agate
