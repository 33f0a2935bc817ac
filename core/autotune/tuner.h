// The tuner: for every task of a model, search its knob space, measure, record.
//
// Why this shape: `agate tune` (tools/cli/tune_command.cc) and the benchmarks drive the same
// loop, and the loop itself must be testable without compiling anything (a synthetic cost
// function stands in for measurement: TuneTask takes the measuring function). Per task:
// the policy proposes a batch (the default config first), the batch is measured (measure.h:
// parallel builds, serial timings in child processes), every result is appended to the records
// at once (records.h: whole lines, fsync), the policy learns from it, and the progress callback
// reports trials, best-so-far speed-up over the default, and the ETA. A stop request (Ctrl-C)
// ends the run between batches; the batch in flight is dropped, never half-recorded.
//
// Tasks are the model's distinct workloads (ops::TaskKeyOf): kernels with equal workloads share
// one task and its result. Tasks whose space has a single point (nothing to choose) are skipped.
#ifndef AGATE_CORE_AUTOTUNE_TUNER_H_
#define AGATE_CORE_AUTOTUNE_TUNER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/autotune/measure.h"
#include "core/autotune/records.h"
#include "core/autotune/search.h"
#include "core/graph/graph.h"
#include "core/ops/knob_space.h"
#include "core/target/target.h"

namespace agate {
namespace autotune {

struct Task {
  std::string key;                   // ops::TaskKeyOf
  std::string op;                    // the anchor's op ("Conv")
  ops::KnobSpace space;
  std::vector<size_t> groups;        // fused groups of the planned graph with this workload
  std::vector<std::string> kernels;  // their kernel names, e.g. "k3_conv"
};

// The distinct workloads of a planned graph (compiler::PlanGraph), in execution order of their
// first kernel; kernel names as compiler::CompileGraph gives them. `measure_threads` is the thread
// count candidates will be timed with (resolved: never 0): on one thread the spaces leave out the
// thread-split knobs (ops::WithoutThreadSplitKnobs), which that measurement cannot tell apart.
std::vector<Task> ExtractTasks(const graph::Graph& planned, const target::Target& target, int measure_threads);

// The cost model's features of configs of fused group `group` of `planned`: each config lowered
// (no code generation) and read off its loop IR (features.h), a batch in parallel forked
// children; a config that does not lower gets all-zero features. `planned` is borrowed.
FeatureFn GroupFeatures(const graph::Graph& planned, size_t group, const target::Target& target);

enum class TunerKind { kXgb, kRandom, kGrid };
// "xgb", "random", "grid"; kInvalidArgument naming the choices otherwise.
TunerKind ParseTunerKind(const std::string& name);
const char* TunerKindName(TunerKind kind);

struct TuneOptions {
  TunerKind tuner = TunerKind::kXgb;
  int trials = 32;            // measured configs per task, resumed records included (<= 0: no limit)
  double time_budget_s = 0;   // the whole run (<= 0: none); shared out among the tasks left
  int batch = 8;              // configs built in parallel, then measured, per step
  // After the search, the `confirm_top` fastest configs and the default are measured again,
  // interleaved, `confirm_rounds` times, and the task's best is the lowest median (records.h
  // BestPerTask): one noisy time per config would crown the luckiest. 0 rounds: no re-check.
  int confirm_top = 3;
  int confirm_rounds = 2;
  uint64_t seed = 1;
  MeasureOptions measure;
};

struct TaskReport {
  int trials = 0;             // measured configs, resumed ones included
  int failed = 0;
  double default_ms = 0;      // 0: not measured (a median when measured more than once)
  double best_ms = 0;         // 0: nothing measured (BestPerTask's median)
  ops::KnobConfig best;
  double elapsed_s = 0;
  bool interrupted = false;
};

struct Progress {
  int task_index = 0, num_tasks = 0;
  const Task* task = nullptr;
  int trials = 0, planned_trials = 0;    // this task
  double best_ms = 0, default_ms = 0;    // this task, 0 when not known yet
  double task_elapsed_s = 0, total_elapsed_s = 0;
  double task_eta_s = -1, total_eta_s = -1;  // -1: unknown
};
using ProgressFn = std::function<void(const Progress&)>;
using StopFn = std::function<bool()>;
using MeasureFn = std::function<std::vector<MeasureResult>(const std::vector<ops::KnobConfig>&)>;
using RecordFn = std::function<void(const ops::KnobConfig&, const MeasureResult&)>;

// Tunes one space with `policy`: batches of options.batch until `trials` configs are measured,
// the space runs out, `deadline_s` seconds pass (<= 0: none) or stop() says so. Each result goes
// to `record` as soon as its batch is measured. `already` counts configs measured before
// (resumed, already given to the policy). `progress` sees each batch (task fields left to the caller).
TaskReport TuneTask(SearchPolicy* policy, const MeasureFn& measure, int trials, int already, int batch,
                    double deadline_s, const RecordFn& record, const StopFn& stop,
                    const std::function<void(const TaskReport&)>& progress);

// Re-measures a task's finalists: its options.confirm_top configs with the fastest single ok times
// among `records` (this task's), and the default, interleaved in one batch per round,
// options.confirm_rounds times, each result through `record` (BestPerTask then ranks their medians).
// False when stop() cut it short (a cut batch is dropped, as in TuneTask).
bool ConfirmFinalists(const Task& task, const std::vector<TuningRecord>& records, const TuneOptions& options,
                      const MeasureFn& measure, const RecordFn& record, const StopFn& stop);

// Candidates are built and timed on this machine, so only its own CPU can be tuned for: a
// CUDA, bare-metal or other-architecture target is refused (kUnsupported, naming the target)
// before anything is measured or written. (CUDA tuning needs a GPU to time kernels on.)
void RequireMeasurableTarget(const target::Target& target);

// Tunes every task of `planned`, appending to `writer`, resuming from `prior` (records of this
// target read from the same file: their configs are not measured again and feed the model).
std::vector<TaskReport> TuneModel(const graph::Graph& planned, const target::Target& target,
                                  const std::vector<Task>& tasks, const TuneOptions& options, RecordWriter* writer,
                                  const std::vector<TuningRecord>& prior, const ProgressFn& progress,
                                  const StopFn& stop);

// The tuning run's last check, per task. Kernels are tuned one at a time, and a config that won
// alone can run slower inside the model (other kernels' data in the caches, the model's thread
// split). `untuned` and `tuned` are the whole model without and with every task's best config,
// timed with MeasureOptions::kernel_times: each task's share of a run is the sum of its kernels'
// times, per kernel. Returns, for each task whose best config is not its default, two in-model
// records in this order: the default's share, then the tuned config's (records.h). From then on
// they decide the task's best config (BestPerTask): a task whose tuned kernels ran slower in the
// model falls back to its defaults. `threads` and `target_text` are stamped on the records as
// the tuner's own.
std::vector<TuningRecord> InModelRecords(const std::vector<Task>& tasks, const std::vector<TaskReport>& reports,
                                         const MeasureResult& untuned, const MeasureResult& tuned,
                                         const std::string& target_text, int threads);

}  // namespace autotune
}  // namespace agate

#endif  // AGATE_CORE_AUTOTUNE_TUNER_H_
