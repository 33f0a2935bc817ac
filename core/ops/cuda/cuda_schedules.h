// Schedules of the operator library for NVIDIA GPUs (targets of kind cuda).
//
// Why separate from the CPU schedules: a GPU wants the opposite of a CPU's loop
// nest. Outer loops become a grid of thread blocks and inner ones threads (not
// one parallel loop and SIMD lanes), a reduction whose outputs are few is split
// across the threads of a block and combined with warp shuffles, and the tiles
// of a matrix product or convolution are staged in shared memory by all threads
// of a block together. Each operator family that can anchor a fused group sets a
// CUDA schedule next to its CPU one (OpContext::SetCudaSchedule); a group whose
// anchor has none is refused for cuda targets naming the operator. The loop IR
// these produce goes through the GPU lowering passes (core/lower/gpu_*.h), and
// every stage is checked by the evaluator's GPU semantics in the tests.
//
// Conventions: blocks of kThreads threads for element-wise work (the knob
// cuda_threads changes it; cuda_tile and cuda_k_step size the dense and conv
// tiles, cuda_k_split splits a conv's input channels across threadIdx.z,
// core/ops/lower_group.h); a fused
// group's epilogue is the stage that is tiled and bound, and its anchor is
// computed per thread (or per block, with a cross-thread reduction) inside it,
// so conv + bias + add + relu stays one kernel that writes its output once.
#ifndef AGATE_CORE_OPS_CUDA_CUDA_SCHEDULES_H_
#define AGATE_CORE_OPS_CUDA_CUDA_SCHEDULES_H_

#include <string>
#include <vector>

#include "core/graph/shape_rules.h"
#include "core/ops/op_context.h"
#include "core/schedule/schedule.h"
#include "core/target/target.h"

namespace agate {
namespace ops {
namespace cuda {

constexpr int64_t kThreads = 256;
// The fewest thread blocks a tiled schedule aims for before it narrows its tiles: twice the
// streaming multiprocessors of the GPUs agate targets (an H100 has 132, an A100 108).
constexpr int64_t kMinBlocks = 256;

// A root element-wise stage: its axes fused and split over blocks of up to
// kThreads threads, four contiguous 4-byte elements per thread (one 16-byte
// access) when the innermost extent allows. Returns the thread loop (where a
// producer can be computed per thread); undefined for a rank-0 stage.
ir::IterVar ScheduleInjective(te::Schedule& s, const te::Tensor& out, int64_t max_threads = 0);

// A root reduction. Few, long reductions: one block per output element, the
// reduction split across its threads (warp shuffles). Otherwise one thread per
// output element. Returns the loop a consumer's tile may attach it to (the
// block loop, or the thread loop).
ir::IterVar ScheduleReduction(te::Schedule& s, const te::Tensor& out, int64_t max_threads = 0);

// Cooperative fetch: the elements of a shared-memory copy stage (cache_read) split over
// the block's tz x ty x tx threads (threadIdx.z, threadIdx.y, threadIdx.x), consecutive
// threads on consecutive elements so that global reads coalesce.
void FetchCooperatively(te::Stage stage, int64_t ty, int64_t tx, int64_t tz = 1);

// True when a reduction of `reduce_total` elements per output, `outputs` outputs,
// is split across threads.
bool SplitAcrossThreads(int64_t reduce_total, int64_t outputs);

// The schedule of anchors without a specialised one (pooling windows, depthwise
// and grouped convolution, gathers, cumulative sums, losses, top-k...): the
// epilogue is scheduled element-wise and the anchor computed inside it (per
// thread, or per block for a reduction split across threads); without an
// epilogue every output gets ScheduleReduction or ScheduleInjective.
std::string ScheduleAnchorDefault(const ScheduleRequest& request, const std::string& what);

// Softmax, layer/instance normalization: one block per row of the output when
// the normalized axes are the innermost ones; the row statistics are
// reductions across the block's threads kept in shared memory, and the threads
// normalize the row's columns. Otherwise statistics and output separately.
std::string ScheduleRows(const ScheduleRequest& request, const std::vector<te::Tensor>& stats,
                         const std::vector<int>& axes, size_t rank, const std::string& what);

// Matrix products (dense, matmul, batch matmul): 64x64 (or 32-wide) output
// tiles per block, 4x4 per thread in registers, A and B tiles of 16 along k
// staged in shared memory. Products with few rows (batch-1 fully connected
// layers) take one thread per output.
std::string ScheduleDense(const ScheduleRequest& request);

// conv2d NCHW as an implicit GEMM: output channels x output pixels tiles per
// block (64 channels x 4x16 pixels), 4x4 per thread; the weights and the input
// window of 8 input channels at a time staged in shared memory. A grid that stays
// small after narrowing its tiles, over a deep reduction, splits the input
// channels across threadIdx.z (split-K inside the block: partial tiles in
// registers, summed through shared memory; the knob cuda_k_split). `window` is
// the conv's geometry (strides and dilations size the staged input window).
std::string ScheduleConv2d(const ScheduleRequest& request, const te::Tensor& conv, const graph::WindowGeometry& window);

// Every compute stage still at the kernel's root without GPU-bound loops gets
// ScheduleReduction or ScheduleInjective (stages an operator builds for itself,
// the statistics of a fallback path): a kernel never leaves work to one thread.
void BindRemainingStages(te::Schedule& s, int64_t max_threads = 0);

}  // namespace cuda
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_CUDA_CUDA_SCHEDULES_H_
