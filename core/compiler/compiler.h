// The compiler driver: a graph in, a compiled module out.
//
// Why a driver: every layer below is a pure function of its input (graph passes,
// one kernel per fused group through tensor expressions, LLVM code generation,
// module serialization); this file is the one place that strings them together
// in the fixed order the architecture prescribes, collects what each stage decided
// (fused groups, kernels, arena bytes, timings) for `agate inspect` and the compile
// summary, and refuses at compile time what the target runtime could not run.
#ifndef AGATE_CORE_COMPILER_COMPILER_H_
#define AGATE_CORE_COMPILER_COMPILER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/fusion/fusion.h"
#include "core/graph/graph.h"
#include "core/graph/passes/graph_memory_plan.h"
#include "core/ir/function.h"
#include "core/ops/knob_space.h"
#include "core/ops/lower_group.h"
#include "core/quantize/quantize_model.h"
#include "core/target/target.h"
#include "core/serialize/module_spec.h"

namespace agate {
namespace compiler {

struct CompileOptions {
  std::string target = "llvm";  // TVM-style target string (core/target/target.h)
  fusion::FusionPolicy fusion = fusion::FusionPolicy::kRule;
  int opt_level = 3;            // 0: no graph simplification or folding beyond what lowering needs
  std::string dump_ir_dir;      // --dump-ir: every graph pass and every kernel's lowering, one file each
  std::vector<std::pair<std::string, std::string>> recorded_options;  // written into the module's metadata
  ops::LowerGroupOptions schedule_knobs;  // every kernel's schedule knobs (--knob name=value)
  // Per-workload knobs (a tuning record's best config, core/autotune): a kernel whose task key
  // (ops::TaskKeyOf) is here gets them set on top of schedule_knobs.
  std::map<std::string, ops::KnobConfig> task_knobs;
  // Prepended to every kernel symbol ("kws" names kernels kws_k0_conv, ...) so that the
  // kernels of several models link into one firmware; a C identifier, or empty (k0_conv...).
  // The module's kernel fingerprint covers it.
  std::string kernel_prefix;
  // RAM-bound targets (--memory-plan min-peak): the arena placement that minimises the peak.
  graph::MemoryPlanPolicy memory_plan = graph::MemoryPlanPolicy::kGreedyBySize;
  // The most workspace one kernel may take (--max-workspace), or -1: no limit. A kernel over it
  // is lowered again without Winograd (whose transformed tiles live in the workspace); one still
  // over it is refused (kResourceExhausted) naming the kernel, its workspace and the budget.
  int64_t max_workspace_bytes = -1;
  // Post-training int8 quantization (--quantize int8 --calibration FILE): the graph is calibrated on
  // the samples and given Q/DQ pairs (core/quantize/quantize_model.h) before the graph pipeline,
  // whose QDQ folding makes the integer operators. Shared: the samples can be large. Null: the
  // graph is compiled as given.
  std::shared_ptr<const quantize::QuantizeOptions> quantize;
  // --precision fp16|bf16: float32 weights that kernels pack at compile time (GEMM panels, blocked
  // conv weights) are stored as float16 or bfloat16 and widened to float32 as they are loaded
  // (core/ops/weight_precision.h); inputs, outputs and accumulation keep the model's types.
  // Checked against the target before anything is lowered (kUnsupported naming the target).
  ir::DType precision = ir::DType::Float(32);
};

// Throws agate::Error(kInvalidArgument) unless `prefix` is a C identifier of at most 64
// characters not starting with an underscore (empty is allowed: no prefix).
void CheckKernelPrefix(const std::string& prefix);

// A kernel prefix made from a file name: its base name without extensions, every other
// character than a letter, digit or '_' replaced by '_', a leading digit prefixed by 'm'
// ("out/kws-v2.agm" -> "kws_v2").
std::string KernelPrefixFromPath(const std::string& path);

// How a CUDA kernel launches and what ptxas gave it (cuda targets).
struct CudaLaunchSummary {
  std::string name;                        // the __global__ function (a group may launch several)
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  uint32_t static_shared_bytes = 0;
  uint32_t registers = 0;                  // per thread
  double occupancy = 0;                    // theoretical: resident warps / the SM's maximum
  std::string occupancy_limit;             // what stops more blocks per SM
};

// One kernel of the compiled module (one fused group), for summaries.
struct KernelSummary {
  std::string name;
  std::vector<std::string> nodes;  // "name (Op)" of every graph node fused into it
  std::string schedule;            // what the operator library chose
  std::string task_key;            // its workload (ops::TaskKeyOf)
  bool tunable = false;            // its knob space has more than the default (ops::KnobSpaceOf)
  bool tuned = false;              // its knobs came from CompileOptions::task_knobs
  uint64_t workspace_bytes = 0;
  std::vector<CudaLaunchSummary> cuda;  // cuda targets: its launches, in order
};

struct PhaseTiming {
  std::string phase;
  double milliseconds = 0;
};

struct CompileResult {
  graph::Graph graph;                   // after every graph pass (groups and memory plan filled)
  serialize::ModuleSpec spec;           // what the module holds
  std::vector<uint8_t> module;          // the serialized, verified module
  std::vector<KernelSummary> kernels;   // in execution order
  std::vector<PhaseTiming> timings;     // graph passes, kernels, codegen, serialize (a frontend
                                        // caller puts its import first: tools/cli)
  std::string pass_timing_report;       // per graph pass
  // What post-training quantization did (quantize::QuantizedGraph::description), recorded in the
  // module's metadata as "quantization"; empty when the graph was not quantized.
  std::string quantization;
  // --precision: the weight tensors stored narrow (as CompileOptions::precision) and their bytes.
  uint64_t narrow_weights = 0;
  uint64_t narrow_weight_bytes = 0;
  std::string precision = "fp32";
  // Microcontroller targets (c, bare-metal llvm): the kernels to link into the firmware, named
  // as the module's plan names them: C99 source (suffix ".c") or an ELF object (".o").
  // Empty for targets with an OS, whose kernels are embedded in the module.
  std::string firmware_kernels;
  std::string firmware_kernels_suffix;
  // The loop IR of every fused group (kernels[i]'s), and for each call of the
  // module's plan the group it runs (a group for a GPU may be several calls, one
  // per launch, each running part of the same function): what
  // core/compiler/plan_evaluator.h runs to check a compile result on the CPU.
  std::vector<ir::LoweredFunc> funcs;
  std::vector<size_t> call_group;
  // cuda targets: the CUDA C of every kernel (written by --dump-ir) and NVRTC's log.
  std::string cuda_source;
  std::string cuda_log;

  uint64_t constant_bytes() const;
  // A human-readable summary: groups, kernels, arena/constant bytes, timings.
  std::string Summary() const;
};

// Compiles an imported graph. Throws agate::Error naming the node, op and shape at fault.
CompileResult CompileGraph(const graph::Graph& graph, const CompileOptions& options);

// A C identifier for a kernel: "k3_conv" for group 3 whose anchor is a Conv; with a prefix,
// "kws_k3_conv".
std::string KernelName(int index, const std::string& op, const std::string& prefix = "");

// The graph as CompileGraph lowers it: every graph pass run (fused groups and memory plan
// filled) and every model output produced by a group. What a tuner extracts its tasks from.
graph::Graph PlanGraph(const graph::Graph& graph, const CompileOptions& options);

// A module with one kernel: fused group `group_index` of `planned` (a PlanGraph result)
// lowered with `knobs`; the group's non-constant inputs become the module's inputs and its
// outputs the module's outputs, so the kernel runs exactly as in the whole model (same kernel
// ABI, same thread pool). What the tuner measures (core/autotune/measure.h).
CompileResult CompileGroup(const graph::Graph& planned, size_t group_index, const target::Target& target,
                           const ops::LowerGroupOptions& knobs);

}  // namespace compiler
}  // namespace agate

#endif  // AGATE_CORE_COMPILER_COMPILER_H_
