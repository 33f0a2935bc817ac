// RoiAlign (ONNX RoiAlign-10/16) compiled into one kernel of hand-written loop IR.
//
// Why a kernel builder of its own instead of an entry in the operator table: where each output
// bin samples depends on the region's coordinates, which arrive as values (rois), and with
// sampling_ratio 0 so does how many samples it takes (ceil(region extent / output extent) per
// axis). A tensor expression's reductions have extents fixed when the code is generated; loop IR
// has loops whose extents are values. The kernel:
//
//   check every batch index against the input's batch: a bad one fails the kernel naming the
//     node before anything is written
//   for each region: its corners scaled by spatial_scale (less half a pixel in half_pixel mode;
//     in output_half_pixel mode, the legacy one, extents of at least one pixel), its bin size and
//     sample grid; for each channel and bin, the bilinear samples at the centres of the grid's
//     cells, averaged (mode avg) or the largest weighted corner (mode max, as ONNX Runtime, the
//     reference for it)
//
// Samples outside [-1, extent] count as 0; coordinates are clamped to the last row and column as
// in the reference interpreter (core/graph_eval/spatial.cc), whose arithmetic this follows step
// for step in float64, so both give the same values. Float types; CPU targets (the sample loops
// are serial per bin).
#ifndef AGATE_CORE_OPS_ROI_ALIGN_H_
#define AGATE_CORE_OPS_ROI_ALIGN_H_

#include <string>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// True for the op LowerRoiAlignGroup builds.
bool IsRoiAlignOp(const std::string& op);

// Lowers a group holding one RoiAlign node to one kernel (see the header comment). kUnsupported
// for cuda targets and for inputs that are not floating point, naming the node.
GroupKernel LowerRoiAlignGroup(const graph::Graph& graph, const graph::FusedGroup& group,
                               const target::Target& target, const std::string& kernel_name);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_ROI_ALIGN_H_
