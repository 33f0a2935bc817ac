#include "core/autotune/search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/autotune/tuner.h"
#include "core/support/error.h"

namespace agate {
namespace autotune {
namespace {

// Three knobs of 8 values each (512 points); the default (first values) is far from the optimum.
ops::KnobSpace Space() {
  ops::KnobSpace s;
  s.knobs = {{"a", {0, 1, 2, 3, 4, 5, 6, 7}}, {"b", {0, 1, 2, 3, 4, 5, 6, 7}}, {"c", {0, 1, 2, 3, 4, 5, 6, 7}}};
  return s;
}

// A synthetic cost with its one minimum (1 ms) at a=5, b=2, c=7; (3, 0, 0) fails.
double Cost(const ops::KnobConfig& c) {
  double a = c.at("a"), b = c.at("b"), d = c.at("c");
  return 1.0 + 0.3 * (a - 5) * (a - 5) + 0.2 * (b - 2) * (b - 2) + 0.1 * (d - 7) * (d - 7);
}

MeasureFn Synthetic(int* calls) {
  return [calls](const std::vector<ops::KnobConfig>& configs) {
    std::vector<MeasureResult> out;
    for (const auto& c : configs) {
      ++*calls;
      MeasureResult r;
      r.ok = !(c.at("a") == 3 && c.at("b") == 0 && c.at("c") == 0);
      r.ms = r.ok ? Cost(c) : 0;
      if (!r.ok) r.error = "killed by signal 11";
      out.push_back(r);
    }
    return out;
  };
}

TEST(SearchTest, IndexOfInvertsAt) {
  ops::KnobSpace s = Space();
  for (int64_t i : {0, 1, 7, 8, 100, 511}) EXPECT_EQ(IndexOf(s, s.At(i)), i);
  EXPECT_THROW(IndexOf(s, {{"a", 9}}), Error);
  EXPECT_THROW(IndexOf(s, {{"z", 0}}), Error);
  EXPECT_EQ(IndexOf(s, {}), 0);
}

TEST(SearchTest, GridCoversTheSpaceOnceAndFindsTheOptimum) {
  auto policy = MakeGridSearch(Space());
  int calls = 0;
  std::set<ops::KnobConfig> seen;
  TaskReport r = TuneTask(policy.get(), Synthetic(&calls), 0, 0, 64, 0,
                          [&](const ops::KnobConfig& c, const MeasureResult&) { EXPECT_TRUE(seen.insert(c).second); },
                          nullptr, nullptr);
  EXPECT_EQ(r.trials, 512);
  EXPECT_EQ(r.failed, 1);
  EXPECT_DOUBLE_EQ(r.best_ms, 1.0);
  EXPECT_EQ(r.best, (ops::KnobConfig{{"a", 5}, {"b", 2}, {"c", 7}}));
}

TEST(SearchTest, EveryPolicyProposesTheDefaultFirst) {
  ops::KnobSpace s = Space();
  std::unique_ptr<CostModel> model = MakeXgbCostModel(1);
  auto features = [](const ops::KnobConfig& c) {
    return std::vector<float>{float(c.at("a")), float(c.at("b")), float(c.at("c"))};
  };
  std::vector<std::unique_ptr<SearchPolicy>> policies;
  policies.push_back(MakeGridSearch(s));
  policies.push_back(MakeRandomSearch(s, 7));
  policies.push_back(MakeModelSearch(s, FeaturesOneByOne(features), model.get(), 0, 7));
  for (auto& p : policies) {
    std::vector<ops::KnobConfig> batch = p->NextBatch(4);
    ASSERT_EQ(batch.size(), 4u) << p->name();
    EXPECT_EQ(batch[0], s.Default()) << p->name();
  }
}

TEST(SearchTest, RandomNeverRepeatsAndStopsWhenTheSpaceIsExhausted) {
  ops::KnobSpace s;
  s.knobs = {{"a", {0, 1, 2}}, {"b", {0, 1, 2, 3}}};
  auto policy = MakeRandomSearch(s, 3);
  std::set<ops::KnobConfig> seen;
  for (int step = 0; step < 10; ++step)
    for (const auto& c : policy->NextBatch(5)) EXPECT_TRUE(seen.insert(c).second);
  EXPECT_EQ(seen.size(), 12u);
}

// The model-guided search finds the known optimum of the synthetic cost within a fifth of
// the space; features are the knob values (the real tuner's come from the loop IR).
TEST(SearchTest, ModelSearchFindsTheKnownOptimum) {
  std::unique_ptr<CostModel> model = MakeXgbCostModel(1);
  auto features = [](const ops::KnobConfig& c) {
    return std::vector<float>{float(c.at("a")), float(c.at("b")), float(c.at("c"))};
  };
  auto policy = MakeModelSearch(Space(), FeaturesOneByOne(features), model.get(), 0, 11);
  int calls = 0;
  TaskReport r = TuneTask(policy.get(), Synthetic(&calls), 100, 0, 10, 0, nullptr, nullptr, nullptr);
  EXPECT_EQ(r.trials, 100);
  EXPECT_DOUBLE_EQ(r.best_ms, 1.0);
  EXPECT_EQ(r.best, (ops::KnobConfig{{"a", 5}, {"b", 2}, {"c", 7}}));
}

// Configs that lower to the same program (equal features) are one candidate: once one of them is
// measured the model proposes none of the others, and a batch holds each program once. Here knob
// c means nothing while a < 4 (8 names for each of those 32 programs), and the optimum is there.
TEST(SearchTest, ModelSearchProposesEachProgramOnce) {
  std::unique_ptr<CostModel> model = MakeXgbCostModel(1);
  auto program = [](const ops::KnobConfig& c) {
    return std::vector<float>{float(c.at("a")), float(c.at("b")), c.at("a") >= 4 ? float(c.at("c")) : 0.0f};
  };
  ModelSearchOptions options;
  options.epsilon = 0;  // every proposal after the first batch comes from the model
  auto policy = MakeModelSearch(Space(), FeaturesOneByOne(program), model.get(), 0, 5, options);
  std::set<std::vector<float>> measured;
  int repeated = 0, proposals = 0;
  for (int round = 0; round < 8; ++round) {
    std::vector<ops::KnobConfig> batch = policy->NextBatch(8);
    std::set<std::vector<float>> in_batch;
    std::vector<double> costs;
    for (const ops::KnobConfig& c : batch) {
      std::vector<float> f = program(c);
      if (round > 0 && (measured.count(f) || !in_batch.insert(f).second)) ++repeated;
      ++proposals;
      costs.push_back(1.0 + 0.3 * (f[0] - 2) * (f[0] - 2) + 0.2 * (f[1] - 2) * (f[1] - 2) + 0.1 * f[2]);
    }
    for (const ops::KnobConfig& c : batch) measured.insert(program(c));
    policy->Update(batch, costs);
  }
  EXPECT_EQ(repeated, 0) << "of " << proposals << " proposals";
  EXPECT_TRUE(measured.count({2.0f, 2.0f, 0.0f})) << "the optimum (a=2, b=2, any c) was measured";
}

// The random share (the whole first batch, then epsilon of each) skips aliases too: in a space
// where 512 configs are 148 programs, random proposals would repeat a program often.
TEST(SearchTest, ModelSearchRandomPicksAreNewProgramsToo) {
  auto program = [](const ops::KnobConfig& c) {
    int a = c.at("a");
    return std::vector<float>{float(a), a >= 4 ? float(c.at("b")) : 0.0f, a >= 6 ? float(c.at("c")) : 0.0f};
  };
  for (uint64_t seed : {1, 2, 3}) {
    std::unique_ptr<CostModel> model = MakeXgbCostModel(seed);
    ModelSearchOptions options;
    options.epsilon = 0.5;
    auto policy = MakeModelSearch(Space(), FeaturesOneByOne(program), model.get(), 0, seed, options);
    std::set<std::vector<float>> measured;
    int repeated = 0, proposals = 0;
    for (int round = 0; round < 6; ++round) {
      std::vector<ops::KnobConfig> batch = policy->NextBatch(8);
      ASSERT_EQ(batch.size(), 8u);
      std::vector<double> costs;
      for (const ops::KnobConfig& c : batch) {
        ++proposals;
        if (!measured.insert(program(c)).second) ++repeated;
        costs.push_back(1.0 + std::abs(c.at("a") - 5) + 0.1 * c.at("b"));
      }
      policy->Update(batch, costs);
    }
    EXPECT_EQ(repeated, 0) << "seed " << seed << ": of " << proposals << " proposals";
  }
}

TEST(SearchTest, AStopRequestEndsTheTaskAndDropsTheBatchInFlight) {
  auto policy = MakeGridSearch(Space());
  int calls = 0, recorded = 0;
  bool stop = false;
  MeasureFn measure = [&](const std::vector<ops::KnobConfig>& configs) {
    auto out = Synthetic(&calls)(configs);
    if (calls > 16) stop = true;  // Ctrl-C arrives during the third batch
    return out;
  };
  TaskReport r = TuneTask(policy.get(), measure, 0, 0, 8, 0,
                          [&](const ops::KnobConfig&, const MeasureResult&) { ++recorded; }, [&] { return stop; },
                          nullptr);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(recorded, 16);
  EXPECT_EQ(r.trials, 16);
}

TEST(SearchTest, FinalistsAreMeasuredAgainAndALuckyTimeDoesNotWin) {
  Task task{"t", "Conv", Space(), {0}, {"k0_conv"}};
  auto timed = [](const ops::KnobConfig& c, double ms) {
    TuningRecord r;
    r.task = "t";
    r.knobs = c;
    r.ok = true;
    r.ms = ms;
    return r;
  };
  ops::KnobConfig lucky{{"a", 0}, {"b", 0}, {"c", 1}}, good{{"a", 5}, {"b", 2}, {"c", 6}},
      fair{{"a", 4}, {"b", 2}, {"c", 7}}, slow{{"a", 1}, {"b", 1}, {"c", 1}};
  // `lucky` (a 12.9 ms config) was timed once at 0.5 ms.
  std::vector<TuningRecord> records = {timed(lucky, 0.5), timed(good, Cost(good)), timed(fair, Cost(fair)),
                                       timed(slow, Cost(slow))};
  EXPECT_EQ(BestPerTask(records)["t"].knobs, lucky);
  TuneOptions options;  // the 3 fastest and the default, twice
  int calls = 0;
  std::vector<size_t> batch_sizes;
  MeasureFn measure = [&](const std::vector<ops::KnobConfig>& configs) {
    batch_sizes.push_back(configs.size());
    return Synthetic(&calls)(configs);
  };
  RecordFn record = [&](const ops::KnobConfig& c, const MeasureResult& r) { records.push_back(timed(c, r.ms)); };
  EXPECT_TRUE(ConfirmFinalists(task, records, options, measure, record, nullptr));
  EXPECT_EQ(batch_sizes, (std::vector<size_t>{4, 4}));
  auto best = BestPerTask(records);
  EXPECT_EQ(best["t"].knobs, good);
  EXPECT_DOUBLE_EQ(best["t"].ms, Cost(good));
  EXPECT_DOUBLE_EQ(MedianMs(records, "t", lucky), Cost(lucky));
  EXPECT_DOUBLE_EQ(MedianMs(records, "t", Space().Default()), Cost(Space().Default()));
  // No rounds: nothing measured; a stop request: false, the cut batch not recorded.
  options.confirm_rounds = 0;
  EXPECT_TRUE(ConfirmFinalists(task, records, options, measure, record, nullptr));
  EXPECT_EQ(batch_sizes.size(), 2u);
  options.confirm_rounds = 2;
  size_t before = records.size();
  EXPECT_FALSE(ConfirmFinalists(task, records, options, measure, record, [] { return true; }));
  EXPECT_EQ(records.size(), before);
}

// The tuning run's last check: per task, its kernels' share of whole-model runs without and with
// the tuned configs becomes in-model records, which decide the task from then on: a task whose
// tuned kernels ran slower in the model falls back to its defaults, one that ran faster keeps its
// config, and later kernel-alone records no longer outrank the model.
TEST(SearchTest, TasksThatLoseInTheModelFallBackToTheirDefaults) {
  ops::KnobConfig defaults = Space().Default(), tuned_a{{"a", 5}, {"b", 2}, {"c", 7}}, tuned_b{{"a", 4}, {"b", 2}, {"c", 7}};
  std::vector<Task> tasks = {{"A", "Conv", Space(), {0, 2}, {"k0_conv", "k2_conv"}},
                             {"B", "Conv", Space(), {1}, {"k1_conv"}},
                             {"C", "Conv", Space(), {3}, {"k3_conv"}},
                             {"D", "Conv", Space(), {4}, {"k4_conv"}}};
  std::vector<TaskReport> reports(4);
  reports[0].best = tuned_a;  // won alone, loses in the model
  reports[0].best_ms = 0.8;
  reports[1].best = tuned_b;  // won alone and in the model
  reports[1].best_ms = 0.5;
  reports[2].best = defaults;  // nothing better found: no records
  reports[2].best_ms = 1.0;
  reports[3].best = tuned_a;  // its kernel missing from the profile: no records
  reports[3].best_ms = 1.0;
  MeasureResult untuned, tuned;
  untuned.ok = tuned.ok = true;
  untuned.kernel_ms = {{"k0_conv", 1.0}, {"k1_conv", 0.9}, {"k2_conv", 1.2}, {"k3_conv", 0.3}};
  tuned.kernel_ms = {{"k0_conv", 1.1}, {"k1_conv", 0.6}, {"k2_conv", 1.3}, {"k3_conv", 0.3}};
  std::vector<TuningRecord> in_model = InModelRecords(tasks, reports, untuned, tuned, "llvm", 2);
  ASSERT_EQ(in_model.size(), 4u);
  for (const TuningRecord& r : in_model) {
    EXPECT_TRUE(r.ok && r.in_model && r.threads == 2 && r.target == "llvm");
    EXPECT_EQ(RecordFromJson(RecordToJson(r)).in_model, true);
  }
  EXPECT_EQ(in_model[0].task, "A");
  EXPECT_EQ(in_model[0].knobs, defaults);
  EXPECT_DOUBLE_EQ(in_model[0].ms, 1.1);  // per call: (1.0 + 1.2) / 2
  EXPECT_EQ(in_model[1].knobs, tuned_a);
  EXPECT_DOUBLE_EQ(in_model[1].ms, 1.2);
  EXPECT_EQ(in_model[3].knobs, tuned_b);

  // The kernel-alone records said A's tuned config wins; with the in-model ones, the defaults do.
  auto alone = [](const std::string& task, const ops::KnobConfig& c, double ms) {
    TuningRecord r;
    r.task = task;
    r.knobs = c;
    r.ok = true;
    r.ms = ms;
    return r;
  };
  std::vector<TuningRecord> records = {alone("A", defaults, 1.0), alone("A", tuned_a, 0.8), alone("B", defaults, 0.9),
                                       alone("B", tuned_b, 0.5)};
  EXPECT_EQ(BestPerTask(records)["A"].knobs, tuned_a);
  records.insert(records.end(), in_model.begin(), in_model.end());
  records.push_back(alone("A", tuned_a, 0.1));  // a later kernel-alone time does not outrank the model
  auto best = BestPerTask(records);
  EXPECT_EQ(best["A"].knobs, defaults);
  EXPECT_DOUBLE_EQ(best["A"].ms, 1.1);
  EXPECT_EQ(best["B"].knobs, tuned_b);
  EXPECT_TRUE(InModelRecords(tasks, reports, MeasureResult(), tuned, "llvm", 2).empty());  // a failed check
}

}  // namespace
}  // namespace autotune
}  // namespace agate
