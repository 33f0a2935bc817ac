// Knob spaces: what an auto-tuner may change in one kernel's schedule, and the
// task key that names the kernel's workload.
//
// Why here, in the operator library: only the schedule templates know which of
// LowerGroupOptions' fields they read and which values are legal for a given
// workload (a register tile must divide the output or be a least-waste tile,
// Winograd applies to 3x3 stride-1 convs only, ...). So the operator library
// declares, per fused group, the knobs its anchor's template reads with their
// legal values (KnobSpaceOf), and names the workload with a stable key
// (TaskKeyOf) that core/autotune's records and `agate compile --tuning-records`
// match on. Identical workloads (same ops, attributes, shapes, dtypes, which
// inputs are constants, target) get the same key wherever they appear.
//
// Every knob's first value is the default (0 or -1: "let the template decide"),
// so the default schedule is always a point of the space and a tuner never
// returns anything slower than what it measured for it.
//
// A CUDA schedule declares its knobs the same way (threads per block, shared
// tiles, fragment shape are integer knobs with listed values); only the
// LowerGroupOptions fields they set are new.
#ifndef AGATE_CORE_OPS_KNOB_SPACE_H_
#define AGATE_CORE_OPS_KNOB_SPACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// Bumped whenever a knob's meaning or a space's values change: records made for
// another version are refused (core/autotune/records.h).
constexpr int kKnobSpaceVersion = 4;  // 2: GEMM K slice and parallel loops; 3: conv parallel loop order;
                                      // 4: Winograd for 5x5, 1xr and rx1 convs

struct KnobDef {
  std::string name;             // a SetScheduleKnob name
  std::vector<int64_t> values;  // legal values, the default first
};

// One point of a space: knob name -> value. Knobs a config leaves out keep their default.
using KnobConfig = std::map<std::string, int64_t>;

struct KnobSpace {
  std::vector<KnobDef> knobs;

  // Number of points (the product of the value counts; saturates at INT64_MAX / 2).
  int64_t size() const;
  // The i-th point in mixed radix, knob 0 varying fastest (i in [0, size())).
  KnobConfig At(int64_t index) const;
  KnobConfig Default() const;
  // True when every knob of `config` is in the space with a legal value.
  bool Contains(const KnobConfig& config) const;
  // "conv_oc_block{0,16,32} conv_ow_block{0,2,4,7,14}".
  std::string ToString() const;
};

// "conv_oc_block=32 conv_ow_block=7".
std::string KnobConfigToString(const KnobConfig& config);

// Starts from `base` and sets every knob of `config` (SetScheduleKnob; kInvalidArgument for
// an unknown knob or an out-of-range value).
LowerGroupOptions ApplyKnobConfig(const KnobConfig& config, const LowerGroupOptions& base = {});

// Knobs that only decide whether a kernel's loops are split across the runtime's threads
// ("parallel"; the loop order stays the same). On one thread their values run the same code
// but for the split, so a measurement there cannot tell them apart and the noise would pick
// one: a tuner measuring on one thread leaves them at their defaults (WithoutThreadSplitKnobs),
// and `agate compile --tuning-records` ignores them in records timed on one thread. (Tuned on
// one thread and run on two, such a record made 14 of ResNet-50's kernels serial: 0.78x.)
bool IsThreadSplitKnob(const std::string& name);
KnobSpace WithoutThreadSplitKnobs(KnobSpace space);

// The knobs the schedule of `group` reads, with the values legal for its workload on `target`.
KnobSpace KnobSpaceOf(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target);

// The workload of `group`, canonically: every node's op, attributes, input and output types
// (and which inputs are constants), in group order, and the target. Value names are left out.
std::string WorkloadOf(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target);

// A stable, short name for the workload: "<anchor op>_<16 hex digits of a 64-bit FNV-1a of
// WorkloadOf>", e.g. "conv_3f2a...". Equal workloads give equal keys in every process.
std::string TaskKeyOf(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_KNOB_SPACE_H_
