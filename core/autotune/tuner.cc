#include "core/autotune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>

#include "core/autotune/cost_model.h"
#include "core/autotune/features.h"
#include "core/compiler/compiler.h"
#include "core/ops/lower_group.h"
#include "core/support/error.h"
#include "core/support/version.h"

namespace agate {
namespace autotune {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double CostOf(const MeasureResult& r) { return r.ok ? r.ms : std::numeric_limits<double>::infinity(); }

// One config's features, lowered in this process.
std::vector<float> LowerForFeatures(const graph::Graph& planned, size_t group, const target::Target& target,
                                    const ops::KnobConfig& config) {
  try {
    ops::GroupKernel k =
        ops::LowerGroup(planned, planned.groups[group], target, "features", ops::ApplyKnobConfig(config));
    return ExtractFeatures(k.func);
  } catch (const Error&) {
    return std::vector<float>(kNumFeatures, 0.0f);
  }
}

}  // namespace

// Lowering is most of the model search's own time (a 3x3 conv ~0.1 s, and the annealing visits
// most points of a small space), so a batch is lowered in forked children, as many at once as
// there are cores (measure.h RunInChildren, the fork discipline of the builds: the tuner runs
// nothing else meanwhile); a single config is lowered in this process.
FeatureFn GroupFeatures(const graph::Graph& planned, size_t group, const target::Target& target) {
  return [&planned, group, target](const std::vector<ops::KnobConfig>& configs) {
    std::vector<std::vector<float>> out;
    if (configs.size() <= 1) {
      for (const ops::KnobConfig& c : configs) out.push_back(LowerForFeatures(planned, group, target, c));
      return out;
    }
    std::vector<std::function<std::string()>> fns;
    for (const ops::KnobConfig& c : configs)
      fns.push_back([&planned, group, &target, c] {
        std::vector<float> f = LowerForFeatures(planned, group, target, c);
        return std::string(reinterpret_cast<const char*>(f.data()), f.size() * sizeof(float));
      });
    constexpr double kLoweringTimeoutS = 300;
    for (const ChildOutcome& o : RunInChildren(fns, 0, kLoweringTimeoutS)) {
      std::vector<float> f(kNumFeatures, 0.0f);  // a child that failed: as a config that does not lower
      if (o.ok && o.output.size() == f.size() * sizeof(float)) std::memcpy(f.data(), o.output.data(), o.output.size());
      out.push_back(std::move(f));
    }
    return out;
  };
}

void RequireMeasurableTarget(const target::Target& target) {
  const target::Target& host = target::Target::Host();
  const char* why = target.kind() == target::TargetKind::kCUDA ? "CUDA kernels need a GPU to be timed on, and tuning them is not supported yet"
                    : target.kind() != target::TargetKind::kLLVM ? "only LLVM CPU targets are tuned"
                    : target.is_bare_metal()                     ? "a bare-metal target's kernels run on a board, not here"
                    : target.arch() != host.arch()               ? "its kernels cannot run on this machine's CPU"
                                                                 : nullptr;
  AGATE_REQUIRE(why == nullptr, kUnsupported)
      << "cannot tune for target '" << target.ToString() << "': candidates are measured on this " << host.triple()
      << " machine; " << (why ? why : "");
}

std::vector<Task> ExtractTasks(const graph::Graph& planned, const target::Target& target, int measure_threads) {
  std::vector<Task> tasks;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < planned.groups.size(); ++i) {
    const graph::FusedGroup& group = planned.groups[i];
    const graph::Node& anchor = planned.nodes.at(group.anchor >= 0 ? group.anchor : group.nodes.front());
    std::string key = ops::TaskKeyOf(planned, group, target);
    std::string kernel = compiler::KernelName(static_cast<int>(i), anchor.op);
    auto it = by_key.find(key);
    if (it != by_key.end()) {
      tasks[it->second].groups.push_back(i);
      tasks[it->second].kernels.push_back(kernel);
      continue;
    }
    ops::KnobSpace space = ops::KnobSpaceOf(planned, group, target);
    if (measure_threads == 1) space = ops::WithoutThreadSplitKnobs(std::move(space));
    if (space.size() <= 1) continue;
    by_key[key] = tasks.size();
    tasks.push_back(Task{key, anchor.op, std::move(space), {i}, {kernel}});
  }
  return tasks;
}

TunerKind ParseTunerKind(const std::string& name) {
  if (name == "xgb") return TunerKind::kXgb;
  if (name == "random") return TunerKind::kRandom;
  if (name == "grid") return TunerKind::kGrid;
  AGATE_THROW(kInvalidArgument) << "unknown tuner '" << name << "': xgb, random or grid";
}

const char* TunerKindName(TunerKind kind) {
  switch (kind) {
    case TunerKind::kXgb: return "xgb";
    case TunerKind::kRandom: return "random";
    case TunerKind::kGrid: return "grid";
  }
  return "?";
}

TaskReport TuneTask(SearchPolicy* policy, const MeasureFn& measure, int trials, int already, int batch,
                    double deadline_s, const RecordFn& record, const StopFn& stop,
                    const std::function<void(const TaskReport&)>& progress) {
  TaskReport report;
  report.trials = already;
  auto t0 = Clock::now();
  batch = std::max(1, batch);
  while (trials <= 0 || report.trials < trials) {
    if (stop && stop()) {
      report.interrupted = true;
      break;
    }
    if (deadline_s > 0 && SecondsSince(t0) >= deadline_s) break;
    int n = trials > 0 ? std::min(batch, trials - report.trials) : batch;
    std::vector<ops::KnobConfig> configs = policy->NextBatch(n);
    if (configs.empty()) break;  // the space is exhausted
    std::vector<MeasureResult> results = measure(configs);
    AGATE_CHECK(results.size() == configs.size()) << "measured " << results.size() << " of " << configs.size();
    if (stop && stop()) {  // the batch was cut short (Ctrl-C reaches the children too): drop it
      report.interrupted = true;
      break;
    }
    std::vector<double> costs;
    for (size_t i = 0; i < configs.size(); ++i) {
      const MeasureResult& r = results[i];
      costs.push_back(CostOf(r));
      if (record) record(configs[i], r);
      ++report.trials;
      if (!r.ok) {
        ++report.failed;
        continue;
      }
      if (report.best_ms == 0 || r.ms < report.best_ms) {
        report.best_ms = r.ms;
        report.best = configs[i];
      }
    }
    policy->Update(configs, costs);
    report.elapsed_s = SecondsSince(t0);
    if (progress) progress(report);
  }
  report.elapsed_s = SecondsSince(t0);
  return report;
}

bool ConfirmFinalists(const Task& task, const std::vector<TuningRecord>& records, const TuneOptions& options,
                      const MeasureFn& measure, const RecordFn& record, const StopFn& stop) {
  if (options.confirm_rounds <= 0 || options.confirm_top <= 0) return true;
  std::map<ops::KnobConfig, double> fastest;
  for (const TuningRecord& r : records) {
    if (r.task != task.key || !r.ok) continue;
    auto it = fastest.find(r.knobs);
    if (it == fastest.end() || r.ms < it->second) fastest[r.knobs] = r.ms;
  }
  std::vector<std::pair<double, ops::KnobConfig>> ranked;
  for (const auto& [knobs, ms] : fastest) ranked.emplace_back(ms, knobs);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ops::KnobConfig> finalists;
  for (size_t i = 0; i < ranked.size() && static_cast<int>(finalists.size()) < options.confirm_top; ++i)
    finalists.push_back(ranked[i].second);
  ops::KnobConfig default_config = task.space.Default();
  if (std::find(finalists.begin(), finalists.end(), default_config) == finalists.end())
    finalists.push_back(default_config);
  if (finalists.size() < 2) return true;  // nothing to choose between
  for (int round = 0; round < options.confirm_rounds; ++round) {
    if (stop && stop()) return false;
    std::vector<MeasureResult> results = measure(finalists);
    AGATE_CHECK(results.size() == finalists.size()) << "measured " << results.size() << " of " << finalists.size();
    if (stop && stop()) return false;
    for (size_t i = 0; i < finalists.size(); ++i) record(finalists[i], results[i]);
  }
  return true;
}

std::vector<TaskReport> TuneModel(const graph::Graph& planned, const target::Target& target,
                                  const std::vector<Task>& tasks, const TuneOptions& options, RecordWriter* writer,
                                  const std::vector<TuningRecord>& prior, const ProgressFn& progress,
                                  const StopFn& stop) {
  RequireMeasurableTarget(target);
  std::vector<TaskReport> reports;
  auto t0 = Clock::now();
  std::unique_ptr<CostModel> model = options.tuner == TunerKind::kXgb ? MakeXgbCostModel(options.seed) : nullptr;
  std::map<std::string, std::vector<const TuningRecord*>> prior_by_task;
  // In-model records (a last check's, InModelRecords) are not times of the kernel alone: the
  // search, its finalists and this run's reports compare the latter only.
  for (const TuningRecord& r : prior)
    if (!r.in_model) prior_by_task[r.task].push_back(&r);
  std::string target_text = target.ToString();
  double done_task_seconds = 0;

  for (size_t t = 0; t < tasks.size(); ++t) {
    const Task& task = tasks[t];
    size_t group = task.groups.front();
    uint64_t seed = options.seed * 1000003u + t;
    std::unique_ptr<SearchPolicy> policy;
    switch (options.tuner) {
      case TunerKind::kGrid: policy = MakeGridSearch(task.space); break;
      case TunerKind::kRandom: policy = MakeRandomSearch(task.space, seed); break;
      case TunerKind::kXgb:
        policy = MakeModelSearch(task.space, GroupFeatures(planned, group, target), model.get(), static_cast<int>(t), seed);
        break;
    }

    // Resume: what this file measured for the task already.
    TaskReport resumed;
    std::vector<ops::KnobConfig> prior_configs;
    std::vector<double> prior_costs;
    for (const TuningRecord* r : prior_by_task[task.key]) {
      // Times taken with another thread count do not compare with this run's.
      if (r->threads != options.measure.threads || !task.space.Contains(r->knobs)) continue;
      prior_configs.push_back(r->knobs);
      prior_costs.push_back(r->ok ? r->ms : std::numeric_limits<double>::infinity());
      bool is_default = IndexOf(task.space, r->knobs) == 0;
      if (r->ok && is_default) resumed.default_ms = r->ms;
      if (r->ok && (resumed.best_ms == 0 || r->ms < resumed.best_ms)) {
        resumed.best_ms = r->ms;
        resumed.best = r->knobs;
      }
    }
    if (!prior_configs.empty()) policy->Update(prior_configs, prior_costs);

    double budget = 0;
    if (options.time_budget_s > 0) {
      double left = options.time_budget_s - SecondsSince(t0);
      if (left <= 0) break;
      budget = left / static_cast<double>(tasks.size() - t);
    }
    KernelMeasurer measurer(planned, group, target, options.measure);
    double default_ms = resumed.default_ms;
    // This task's records, the resumed ones first: what the confirmation and the best read.
    std::vector<TuningRecord> task_records;
    for (const TuningRecord* r : prior_by_task[task.key])
      if (r->threads == options.measure.threads && task.space.Contains(r->knobs)) task_records.push_back(*r);
    auto record = [&](const ops::KnobConfig& config, const MeasureResult& r) {
      if (r.ok && IndexOf(task.space, config) == 0) default_ms = r.ms;
      TuningRecord rec;
      rec.task = task.key;
      rec.knobs = config;
      rec.ok = r.ok;
      rec.ms = r.ms;
      rec.error = r.error;
      rec.target = target_text;
      rec.agate_version = AGATE_VERSION_STRING;
      rec.knob_space_version = ops::kKnobSpaceVersion;
      rec.time = static_cast<int64_t>(std::time(nullptr));
      rec.threads = options.measure.threads;
      task_records.push_back(rec);
      if (writer) writer->Append(rec);
    };
    auto task_progress = [&](const TaskReport& r) {
      if (!progress) return;
      Progress p;
      p.task_index = static_cast<int>(t);
      p.num_tasks = static_cast<int>(tasks.size());
      p.task = &task;
      p.trials = r.trials;
      p.planned_trials = options.trials > 0 ? static_cast<int>(std::min<int64_t>(options.trials, task.space.size()))
                                            : static_cast<int>(std::min<int64_t>(task.space.size(), INT32_MAX));
      p.best_ms = resumed.best_ms > 0 && (r.best_ms == 0 || resumed.best_ms < r.best_ms) ? resumed.best_ms : r.best_ms;
      p.default_ms = default_ms;
      p.task_elapsed_s = r.elapsed_s;
      p.total_elapsed_s = SecondsSince(t0);
      int new_trials = r.trials - static_cast<int>(prior_configs.size());
      if (new_trials > 0) {
        double per_trial = r.elapsed_s / new_trials;
        p.task_eta_s = per_trial * std::max(0, p.planned_trials - r.trials);
        if (budget > 0) p.task_eta_s = std::min(p.task_eta_s, std::max(0.0, budget - r.elapsed_s));
        double per_task = t > 0 ? done_task_seconds / static_cast<double>(t) : r.elapsed_s + p.task_eta_s;
        p.total_eta_s = p.task_eta_s + per_task * static_cast<double>(tasks.size() - t - 1);
        if (options.time_budget_s > 0)
          p.total_eta_s = std::min(p.total_eta_s, std::max(0.0, options.time_budget_s - p.total_elapsed_s));
      }
      progress(p);
    };
    auto measure = [&](const std::vector<ops::KnobConfig>& configs) { return measurer.Measure(configs); };
    TaskReport report = TuneTask(policy.get(), measure, options.trials, static_cast<int>(prior_configs.size()),
                                 options.batch, budget, record, stop, task_progress);
    // A resumed task that measured nothing new was confirmed by the run that measured it.
    bool measured_now = report.trials > static_cast<int>(prior_configs.size());
    if (!report.interrupted && measured_now) {
      auto c0 = Clock::now();
      report.interrupted = !ConfirmFinalists(task, task_records, options, measure, record, stop);
      report.elapsed_s += SecondsSince(c0);
    }
    report.default_ms = default_ms;
    auto best = BestPerTask(task_records);
    if (best.count(task.key)) {
      report.best_ms = best[task.key].ms;
      report.best = best[task.key].knobs;
      double d = MedianMs(task_records, task.key, task.space.Default());
      if (d > 0) report.default_ms = d;
    }
    done_task_seconds += report.elapsed_s;
    reports.push_back(report);
    if (report.interrupted) break;
  }
  return reports;
}

std::vector<TuningRecord> InModelRecords(const std::vector<Task>& tasks, const std::vector<TaskReport>& reports,
                                         const MeasureResult& untuned, const MeasureResult& tuned,
                                         const std::string& target_text, int threads) {
  std::vector<TuningRecord> records;
  if (!untuned.ok || !tuned.ok) return records;
  // A task's share of one run per kernel (records are per call, as the tuner's); 0 when one of
  // its kernels was not timed (then no record).
  auto share = [](const Task& task, const MeasureResult& r) {
    double ms = 0;
    for (const std::string& kernel : task.kernels) {
      auto it = r.kernel_ms.find(kernel);
      if (it == r.kernel_ms.end()) return 0.0;
      ms += it->second;
    }
    return task.kernels.empty() ? 0.0 : ms / static_cast<double>(task.kernels.size());
  };
  for (size_t i = 0; i < tasks.size() && i < reports.size(); ++i) {
    const Task& task = tasks[i];
    ops::KnobConfig defaults = task.space.Default();
    if (reports[i].best_ms <= 0 || reports[i].best == defaults) continue;
    double before = share(task, untuned), after = share(task, tuned);
    if (before <= 0 || after <= 0) continue;
    for (const auto& [knobs, ms] : {std::make_pair(defaults, before), std::make_pair(reports[i].best, after)}) {
      TuningRecord rec;
      rec.task = task.key;
      rec.knobs = knobs;
      rec.ok = true;
      rec.ms = ms;
      rec.target = target_text;
      rec.agate_version = AGATE_VERSION_STRING;
      rec.knob_space_version = ops::kKnobSpaceVersion;
      rec.time = static_cast<int64_t>(std::time(nullptr));
      rec.threads = threads;
      rec.in_model = true;
      records.push_back(rec);
    }
  }
  return records;
}

}  // namespace autotune
}  // namespace agate
