// LowerGroup: one fused group of the graph -> one kernel.
//
// Why this is the bridge: the graph compiler decides *what* runs together
// (core/fusion's FusedGroup: ordered nodes, an anchor, external inputs and
// outputs); the tensor-expression compiler decides *how* loops run. LowerGroup
// turns each node into tensor expressions with the operator library (a file per
// family in core/ops, registered in registry.h), inlines the elementwise,
// broadcast and injective producers into their consumers (compute_inline), lets
// the anchor (conv, dense, pool, reduction, softmax, norm) schedule itself for
// the target with its epilogue attached at the anchor's output tile so the
// output is written once, and lowers the result with core/lower.
//
// Kernel parameters are the group's external inputs that the kernel reads (graph
// inputs, intermediates and graph constants, by value name), then constants the
// lowering created at compile time (pre-packed weights), then the group's outputs.
#ifndef AGATE_CORE_OPS_LOWER_GROUP_H_
#define AGATE_CORE_OPS_LOWER_GROUP_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/ir/function.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// What one kernel parameter binds to at run time.
struct KernelParam {
  enum class Kind { kValue, kConstant };
  Kind kind = Kind::kValue;
  std::string value;       // kValue: a graph value name (one of group.inputs or group.outputs; graph constants too)
  graph::Tensor constant;  // kConstant: a constant this lowering created at compile time (e.g. pre-packed weights)
};

struct GroupKernel {
  ir::LoweredFunc func;              // func.params[i] binds to params[i] (kernel args[i])
  std::vector<KernelParam> params;
  std::string schedule_summary;      // one line for `agate inspect`
};

// Knobs an auto-tuner may set; 0 / empty means "the default for the target".
struct LowerGroupOptions {
  int conv_oc_block = 0;   // output-channel block of blocked convolutions (a multiple of the vector lanes)
  int conv_ow_block = 0;   // output columns per register tile
  // Parallel loop of blocked convs: -1 automatic (as many output-channel tiles
  // per row as half the L2 holds the weights of, ConvTilesPerGroup in conv2d.cc),
  // 0 output-channel tiles outermost (one per row), 1 output rows outermost (all).
  int conv_parallel_rows = -1;
  int dense_n_block = 0;   // output columns per register tile of dense/matmul
  int dense_m_block = 0;   // output rows per register tile of dense/matmul
  // GEMM-class products (more than one row; core/ops/gemm_plan.h): cache blocks.
  int dense_row_block = 0;  // output rows per parallel block (rounded to register tiles)
  int dense_col_block = 0;  // output columns per parallel block (rounded to register tiles)
  int dense_k_block = 0;    // K slice the register tile accumulates before the next block
  // Parallel loop of GEMMs: -1 automatic, 0 (batch, column blocks), 1 (batch, column blocks, row blocks).
  int dense_parallel_rows = -1;
  int vector_lanes = 0;    // SIMD lanes for float32
  // Winograd for 3x3, 5x5, 1xr and rx1 stride-1 blocked convs with constant weights
  // (core/ops/winograd.h): -1 automatic (WinogradByShape), 0 never, 1 whenever it applies.
  int conv_winograd = -1;
  int winograd_tile = 0;        // output tile m: 4 or 2 (0: by shape, WinogradTileFor; 5x5 always 2)
  int winograd_tile_block = 0;  // tiles per GEMM register tile (0: 8 with two output blocks, else 12)
  // int8 VNNI convs (core/ops/qlinear_vnni.h): the vpdpbusd register tile.
  int int8_oc_block = 0;       // output channels per tile (0: 4 or 6 with 4 pixel vectors, 6 with 2 on AVX2, else 8)
  int int8_pixel_vectors = 0;  // pixel vectors (16 or 8 lanes) per tile (0: the fewest padded pixels)
  int int8_tile_order = -1;    // tile loop: 0 channel blocks outer, 1 pixel tiles outer (-1: 1 for 1x1 convs)
  // int8 convs for microcontrollers (core/ops/qlinear_mcu.h) on cores with Arm's DSP extension:
  // SMLAD on 16-bit pairs or one product per multiply-accumulate; the output channels sharing
  // an activation pair; and how SMLAD's weights are stored.
  int int8_mcu_smlad = -1;     // -1: where the target has "dsp", 0 never, 1 where the target has "dsp"
  int int8_mcu_oc_block = 0;   // 1, 2 or 4 (0: 4, or 2 / 1 when the group's output channels do not divide)
  // With SMLAD: int8 weights four to a word, unpacked by SXTB16 (int8's flash), or int16 pairs
  // (one load per pair, twice the flash). -1 and 1: packed where the weights fit int8, 0 never.
  int int8_mcu_packed = -1;
  // Loops cut where a tail or padding guard stops holding (core/lower/loop_partition.h): a
  // guard-free interior and small head and tail parts; 0 keeps the guards in one loop (less
  // code: a microcontroller's flash). -1 and 1: cut.
  int loop_partition = -1;
  // cuda targets (core/ops/cuda/cuda_schedules.h):
  int cuda_threads = 0;    // threads per block of element-wise and per-output schedules (0: 256)
  int cuda_tile = 0;       // output rows/columns (dense) or channels (conv) per block (0: 64, less for small shapes)
  int cuda_k_step = 0;     // k (dense) or input channels (conv) per shared-memory step (0: 16 / 8)
  // Slices of a conv's input channels across threadIdx.z, summed in shared memory (split-K
  // inside a block): 0 derived (small grids over deep reductions), 1 off, 2/4/8 forced.
  int cuda_k_split = 0;
  bool allow_parallel = true;
  // Not a knob: what float32 weights packed at compile time are stored as (--precision,
  // core/ops/weight_precision.h): float32, float16 or bfloat16, read back as float32.
  ir::DType weight_precision = ir::DType::Float(32);
};

// Sets the knob `name` (a field of LowerGroupOptions, e.g. "conv_winograd") to
// `value`: `agate compile --knob name=value` and the tuner's entry point.
// kInvalidArgument naming the known knobs for an unknown name or a value out of
// the knob's range.
void SetScheduleKnob(LowerGroupOptions* options, const std::string& name, int64_t value);

// Every knob SetScheduleKnob accepts, with its range and meaning, one per line.
std::string DescribeScheduleKnobs();

// Lowers one fused group (graph.groups[i]) to one kernel named `kernel_name` for `target`.
// Throws agate::Error kUnsupported naming the node/op/shape when an op has no implementation.
GroupKernel LowerGroup(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target,
                       const std::string& kernel_name, const LowerGroupOptions& options = {});

// True when the operator library implements `op`.
bool HasImplementation(const std::string& op);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_LOWER_GROUP_H_
