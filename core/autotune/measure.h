// Measurement: build candidate kernels in parallel, time them one at a time, each in a child
// process, as the runtime runs them.
//
// Why a library of its own: the auto-tuner (tuner.h) and adaptive fusion (issue 14: measured
// group latencies) both need "how long does this kernel take, here", and both must survive
// candidates that crash or hang. So:
//   - Isolation: every build and every timing runs in a forked child (RunInChild). A candidate
//     that segfaults, aborts, runs past its timeout or throws is a failed MeasureResult with its
//     error ("killed by signal 11 (Segmentation fault)", "timed out after 10 s"); the caller
//     never goes down with it. A child reports back through a pipe; the parent only waits.
//   - Builds in parallel, timings serialised: MeasureModules forks up to `build_jobs` builder
//     children at once (all cores: compiling is CPU work that does not disturb anything), then
//     times the built modules one after another, never two at once and never while a build
//     runs, so a timing has the machine to itself.
//   - The shipped path: the module is loaded with the runtime's C ABI (agate/runtime.h), runs
//     its kernel through the module's kernel ABI on the runtime's thread pool with
//     `threads` threads, exactly as `agate run` would.
//   - Caches as inside a network (MeasureOptions::cache): before each timed run the last-level
//     cache is flushed and then the kernel's run-time inputs are read once. That is what a
//     kernel meets inside a model: its activations were just written by the kernel before it
//     (so they are in cache when they fit), while its weights were evicted by the other layers'
//     (core/ops/winograd.cc measured that ResNet-50's per-kernel profile agrees with cold
//     weights: warm timing overrates schedules that re-read large weights). kWarm (repeated
//     calls, everything cached) and kCold (nothing cached) are there for comparison.
//   - Warm-up runs (first-touch page faults, thread-pool start) are not timed; the result is the
//     median of `repeats` timed runs, with their spread.
//
// Fork safety: the parent must not hold other threads' locks when it forks, so MeasureModules
// is called from a thread that runs no other work concurrently (the tuner is single-threaded;
// its parallelism is the children).
#ifndef AGATE_CORE_AUTOTUNE_MEASURE_H_
#define AGATE_CORE_AUTOTUNE_MEASURE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/compiler/compiler.h"
#include "core/graph/graph.h"
#include "core/ops/knob_space.h"
#include "core/target/target.h"

namespace agate {
namespace autotune {

enum class CacheState {
  kNetwork,  // flush the caches, then read the inputs once: weights cold, activations warm (default)
  kWarm,     // back-to-back runs: everything the kernel touches stays cached
  kCold,     // flush before every run: nothing cached
};
const char* CacheStateName(CacheState state);

struct MeasureOptions {
  int warmup = 1;               // untimed runs first
  int repeats = 5;              // timed runs; the median is reported
  double timeout_s = 10;        // a timing child running longer (all its runs) is killed
  double build_timeout_s = 300; // a builder child running longer is killed
  int threads = 0;              // the runtime's thread pool size (0: its default, physical cores)
  int build_jobs = 0;           // builder children at once (0: the online CPUs)
  CacheState cache = CacheState::kNetwork;
  // Also time each kernel of the module inside its runs (after the timed runs, `repeats`
  // profiled runs): MeasureResult::kernel_ms.
  bool kernel_times = false;
};

struct MeasureResult {
  bool ok = false;
  double ms = 0;         // median of the timed runs
  double min_ms = 0, max_ms = 0;
  double build_ms = 0;   // wall time of the build
  std::string error;     // why it failed (build error, crash, timeout), empty when ok
  // With MeasureOptions::kernel_times: per kernel name ("k3_conv"), the median over the profiled
  // runs of the time of its calls in one run (MeasureModelVariants: the median over rounds).
  std::map<std::string, double> kernel_ms;
};

// What a child did: ok with its output, or failed with the reason.
struct ChildOutcome {
  bool ok = false;
  std::string output;  // the function's return value when ok
  std::string error;   // the agate::Error message, "killed by signal N (name)", "timed out after T s", ...
  double wall_ms = 0;
};

// Runs each function in its own forked child, at most `jobs` at once (0: the online CPUs),
// killing any that run longer than `timeout_s`. outcome[i] belongs to fns[i].
std::vector<ChildOutcome> RunInChildren(const std::vector<std::function<std::string()>>& fns, int jobs,
                                        double timeout_s);
inline ChildOutcome RunInChild(const std::function<std::string()>& fn, double timeout_s) {
  return RunInChildren({fn}, 1, timeout_s).at(0);
}

// Builders return a serialized module (bytes in a string); each runs in a child, in parallel.
// Then each built module is timed in a child of its own, one after another.
std::vector<MeasureResult> MeasureModules(const std::vector<std::function<std::string()>>& builders,
                                          const MeasureOptions& options);

// Whole models, compiled with each of `variants` (e.g. without and with tuned knobs): each
// built once in a child (in parallel), then timed in children one after another, `rounds`
// rounds, every other round in reverse order so that neither variant always runs first; per
// variant the median of its rounds' medians, the fastest and slowest run. A variant whose
// build or run fails is a failed result with the error. What a tuning run ends with (the
// kernels are tuned one at a time; whether their gains add up is a property of the model).
std::vector<MeasureResult> MeasureModelVariants(const graph::Graph& model,
                                                const std::vector<compiler::CompileOptions>& variants,
                                                const MeasureOptions& options, int rounds);

// Times a serialized module in the calling process (what a timing child runs): load through
// the C ABI, bind deterministic inputs (floats uniform in [0, 1), other types zero), warm up,
// then `repeats` timed runs under options.cache. Throws agate::Error when the runtime refuses.
MeasureResult TimeModule(const std::string& module_bytes, const MeasureOptions& options);

// Measures knob configs of one fused group of a planned graph (compiler::PlanGraph): builds
// compiler::CompileGroup modules in parallel children, then times them one by one.
// `planned` is borrowed: it must outlive the measurer.
class KernelMeasurer {
 public:
  KernelMeasurer(const graph::Graph& planned, size_t group_index, target::Target target, MeasureOptions options);
  std::vector<MeasureResult> Measure(const std::vector<ops::KnobConfig>& configs) const;
  const MeasureOptions& options() const { return options_; }

 private:
  const graph::Graph& planned_;
  size_t group_index_;
  target::Target target_;
  MeasureOptions options_;
};

}  // namespace autotune
}  // namespace agate

#endif  // AGATE_CORE_AUTOTUNE_MEASURE_H_
