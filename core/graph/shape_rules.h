// Shape arithmetic shared by shape inference (op_registry) and the reference
// kernels (core/graph_eval): broadcasting, axis normalization, and the
// window geometry of convolutions, pools and resizes.
//
// Why shared: the output shape a kernel writes must be exactly the one shape
// inference promised; computing both from one function makes that true by
// construction.
#ifndef AGATE_CORE_GRAPH_SHAPE_RULES_H_
#define AGATE_CORE_GRAPH_SHAPE_RULES_H_

#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph {

// Numpy broadcasting of two shapes; throws kInvalidArgument naming `where` on a mismatch.
Shape BroadcastShapes(const Shape& a, const Shape& b, const std::string& where);

// numpy.matmul's result shape (1-D operands promoted and their axis dropped, batch axes
// broadcast); throws kInvalidArgument naming `where` for a scalar or unequal inner extents.
Shape MatMulShape(const Shape& a, const Shape& b, const std::string& where);

// Maps a possibly negative axis into [0, rank); throws kInvalidArgument naming `where`
// (always for rank 0).
int NormalizeAxis(int64_t axis, int rank, const std::string& where);
std::vector<int> NormalizeAxes(const std::vector<int64_t>& axes, int rank, const std::string& where);

// Resolved geometry of a sliding window over the spatial dimensions (Conv, pools).
struct WindowGeometry {
  std::vector<int64_t> kernel;     // per spatial dim
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;
  std::vector<int64_t> in;         // input spatial extents
  std::vector<int64_t> out;        // output spatial extents
};

// Channels per block of a layout name: "NCHW" -> 0, "NCHW16c" -> 16; anything
// else is kUnsupported naming `where`.
int64_t ParseLayoutBlock(const std::string& layout, const std::string& where);

// The block of a windowed op's input (attribute data_layout, set by the layout
// pass; 0 when absent) and of its output: a Conv may re-block (out_layout, e.g.
// 144 channels in 16-channel blocks to 24 in 8-channel blocks), other ops keep
// data_layout.
int64_t InputLayoutBlock(const Node& node);
int64_t OutputLayoutBlock(const Node& node);

// Resize along one axis: each output coordinate reads a few input positions
// with weights (1 tap for nearest, 2 for linear, 4 for cubic; with antialias=1
// and scale < 1, linear/cubic read every position within 1 or 2 / scale, so
// the count varies with the scale), from the node's mode,
// coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside,
// antialias and roi. `outside` marks tf_crop_and_resize coordinates that
// take extrapolation_value instead. Shared by the reference interpreter (which
// applies the taps) and the operator library (which stores them as constant
// tables), so both resize identically by construction.
struct ResizeTap {
  int64_t index;
  double weight;
};
struct ResizeAxisTaps {
  std::vector<std::vector<ResizeTap>> taps;  // [out coordinate][tap]
  std::vector<bool> outside;                 // [out coordinate]
};
// The longest resized axis: its table (tens of bytes per row) is built at compile time, and a
// Resize output is refused longer than this along any axis. 2^22 (4,194,304) is far beyond an
// image or feature map and keeps the table under a few hundred MB.
constexpr int64_t kMaxResizeExtent = int64_t{1} << 22;
// Refuses (kUnsupported, naming the node) an `out` above kMaxResizeExtent.
ResizeAxisTaps ComputeResizeTaps(const Node& node, int axis, int rank, int64_t in, int64_t out, double scale);

// Geometry of Conv/MaxPool/AveragePool/LpPool: reads kernel_shape (or `kernel` when
// given), strides, dilations, pads, auto_pad and ceil_mode from the node.
WindowGeometry ComputeWindow(const Node& node, const Shape& input, const std::vector<int64_t>& kernel);

// Geometry of ConvTranspose: reads output_shape, output_padding, pads, auto_pad.
// `out` holds the output spatial extents.
WindowGeometry ComputeTransposedWindow(const Node& node, const Shape& input, const std::vector<int64_t>& kernel);

// The output shape of Resize from its (already static) scales/sizes attributes.
Shape ResizeOutputShape(const Node& node, const Shape& input);
// Scale per axis used by Resize: `scales` when given (also beside `sizes`: the frontend sets
// both for keep_aspect_ratio_policy, whose common scale is not out/in once rounded), else out/in.
std::vector<double> ResizeScales(const Node& node, const Shape& input, const Shape& output);

// Col2Im: image_shape, block_shape, dilations, pads (begins then ends) and strides per spatial
// axis, the channel count C = input channels / prod(block_shape), and the sliding-block count of
// each axis (blocks[d], their product being the input's last extent). kInvalidArgument naming the
// node, the operand and the shapes when they disagree.
struct Col2ImSpec {
  Shape image, block, blocks;
  std::vector<int64_t> dilations, pads, strides;
  int64_t channels = 0;
};
Col2ImSpec ComputeCol2Im(const Node& node, const Shape& input);

// Slice: resolved start and step per axis of the input, and the output shape.
struct SliceSpec {
  std::vector<int64_t> start;  // per input axis
  std::vector<int64_t> step;
  Shape out;
};
SliceSpec ComputeSlice(const Node& node, const Shape& input);

// Reduce axes from the `axes` attribute, `noop_with_empty_axes`, and rank; sorted, unique.
std::vector<int> ReduceAxes(const Node& node, int rank);
Shape ReducedShape(const Shape& input, const std::vector<int>& axes, bool keepdims);

// Einsum: every operand's axes as labels (an ellipsis expands to labels of its
// own, broadcast across operands), the output's labels, and each label's extent.
struct EinsumSpec {
  std::vector<std::string> inputs;  // one label per axis of each input
  std::string output;
  std::map<char, int64_t> extents;
};
EinsumSpec ParseEinsum(const std::string& equation, const std::vector<Shape>& shapes, const std::string& where);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_SHAPE_RULES_H_
