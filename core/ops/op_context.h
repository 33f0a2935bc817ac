// OpContext: what an operator's tensor-expression builder sees when a fused
// group is turned into tensor expressions.
//
// Why a context object instead of plain arguments: operators need more than
// their input tensors. A convolution wants the constant value of its weight (to
// pre-pack it once, at compile time, into the blocked layout its kernel reads)
// and must be able to hand new constants back to the driver; every builder needs
// the node (attributes, name for errors) and the output types shape inference
// promised. One struct keeps every builder's signature the same, so the
// operator table (registry.h) is a plain map from op name to function.
#ifndef AGATE_CORE_OPS_OP_CONTEXT_H_
#define AGATE_CORE_OPS_OP_CONTEXT_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "core/ops/lower_group.h"
#include "core/schedule/schedule.h"
#include "core/target/target.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// A constant that an operator created at compile time (e.g. a pre-packed
// weight): `placeholder` is how the kernel reads it, `value` its contents.
struct CreatedConstant {
  te::Tensor placeholder;
  graph::Tensor value;
};

// Reads element `i` (flat, row-major) of a run-time operand as a DType::Index() expression (or,
// for a check with raw_elements, in the operand's own type).
using ElementReader = std::function<ir::Expr(int64_t i)>;

// A condition a kernel checks when it runs, before it computes anything (an operand
// that arrives at run time, such as CumSum's axis, may be out of range): a failed check
// makes the kernel return non-zero, which the runtime reports naming the kernel, instead
// of computing a wrong result or reading out of bounds. LowerGroup emits each check as
// an AssertStmt at the top of the group's kernel. The condition is called after the
// operator's builder returned: it must capture what it needs by value.
struct RunTimeCheck {
  std::vector<te::Tensor> operands;  // inputs of the node (placeholders the kernel reads)
  // A bool expression, from one reader per operand (in the order of `operands`).
  std::function<ir::Expr(const std::vector<ElementReader>& operands)> condition;
  std::string message;  // names the node and what was wrong
  // false: readers give DType::Index() values (integer operands); true: the element in its own
  // type (a float operand such as Resize's scales).
  bool raw_elements = false;
};

// What an anchor's schedule sees. LowerGroup has already inlined every
// elementwise/broadcast/injective stage that is not a group output.
struct ScheduleRequest {
  te::Schedule schedule;
  te::Tensor anchor;                // the anchor node's first output
  // The stages this schedule writes at the root: the group's outputs, or only the
  // stage the anchor is tiled into when LowerGroup computes the other outputs
  // from that stage's buffer itself (lower_group.cc, TiledStage).
  std::vector<te::Tensor> outputs;
  const target::Target* target = nullptr;
  const LowerGroupOptions* options = nullptr;
  // The single group output fed by the anchor through an inlined epilogue, or
  // undefined when the anchor itself is the output (or there are several outputs).
  te::Tensor epilogue;
};
// Schedules the group around its anchor; returns the one-line summary.
using ScheduleFn = std::function<std::string(const ScheduleRequest&)>;
// A node's schedules and the stage it is anchored on (the stage that owns the
// loop nest; undefined: the node's first output). `fn` is for CPU targets, `cuda`
// for GPU targets (core/ops/cuda/cuda_schedules.h); an anchor without `cuda` is
// refused for cuda targets.
struct NodeSchedule {
  ScheduleFn fn;
  ScheduleFn cuda;
  te::Tensor anchor;
};

class OpContext {
 public:
  OpContext(const graph::Graph& graph, const graph::Node& node, std::vector<te::Tensor> inputs,
            std::vector<graph::TensorType> outputs, const target::Target& target,
            const LowerGroupOptions& options, std::vector<CreatedConstant>* created, NodeSchedule* schedule,
            std::vector<RunTimeCheck>* checks = nullptr)
      : graph_(graph), node_(node), inputs_(std::move(inputs)), outputs_(std::move(outputs)), target_(target),
        options_(options), created_(created), schedule_(schedule), checks_(checks) {}

  const graph::Node& node() const { return node_; }
  const graph::Attributes& attrs() const { return node_.attrs; }
  const target::Target& target() const { return target_; }
  const LowerGroupOptions& options() const { return options_; }
  // Sets the schedule used when this node is the group's anchor (or alone).
  void SetSchedule(ScheduleFn fn, te::Tensor anchor = te::Tensor()) const {
    if (!schedule_) return;
    schedule_->fn = std::move(fn);
    schedule_->anchor = std::move(anchor);
  }
  // Sets the schedule for GPU targets; `anchor` as for SetSchedule (the same stage).
  void SetCudaSchedule(ScheduleFn fn, te::Tensor anchor = te::Tensor()) const {
    if (!schedule_) return;
    schedule_->cuda = std::move(fn);
    if (anchor.defined()) schedule_->anchor = std::move(anchor);
  }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[i].defined(); }
  // Input i; throws kInvalidArgument naming the node when it is absent.
  const te::Tensor& input(int i) const;
  // The static type of input i (from the graph).
  const graph::TensorType& input_type(int i) const;
  // The constant value of input i, or nullptr when it is computed at run time.
  const graph::Tensor* constant(int i) const;
  const graph::TensorType& output_type(int i) const { return outputs_.at(i); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // A kernel parameter holding `value`, created now (the driver stores it in the module).
  te::Tensor AddConstant(const std::string& name, graph::Tensor value) const;
  // "Conv 'conv1'".
  std::string Describe() const { return node_.Describe(); }
  // Makes the kernel check `condition` of the elements of inputs `inputs` (readers in that
  // order) when it runs, before it computes anything (RunTimeCheck); `message` is prefixed
  // with the node.
  void CheckAtRunTime(const std::vector<int>& inputs,
                      std::function<ir::Expr(const std::vector<ElementReader>& operands)> condition,
                      const std::string& message, bool raw_elements = false) const;

 private:
  const graph::Graph& graph_;
  const graph::Node& node_;
  std::vector<te::Tensor> inputs_;
  std::vector<graph::TensorType> outputs_;
  const target::Target& target_;
  const LowerGroupOptions& options_;
  std::vector<CreatedConstant>* created_;
  NodeSchedule* schedule_;
  std::vector<RunTimeCheck>* checks_;
};

// ---- helpers shared by the operator families

// Expr extents of a static shape.
std::vector<te::Expr> ToExprShape(const graph::Shape& shape);
// Static extents of a tensor's shape (every extent must be a constant).
graph::Shape StaticShape(const te::Tensor& tensor);

// Reads `tensor` at the output index `out_index` of a numpy-broadcast result of
// rank out_index.size(): leading axes the tensor lacks are dropped and its
// extent-1 axes read index 0.
te::Expr BroadcastRead(const te::Tensor& tensor, const std::vector<te::Var>& out_index);
te::Expr BroadcastRead(const te::Tensor& tensor, const std::vector<te::Expr>& out_index);

// Tensor tags the group scheduler dispatches on.
namespace tag {
constexpr const char* kElemwise = "elemwise";
constexpr const char* kBroadcast = "broadcast";
constexpr const char* kInjective = "injective";
constexpr const char* kReduce = "reduce";
constexpr const char* kConv2dNCHW = "conv2d_nchw";
constexpr const char* kConv2dNCHWc = "conv2d_nchwc";
constexpr const char* kConv2dWinograd = "conv2d_winograd";  // the output transform (anchor) of a Winograd conv
constexpr const char* kDepthwise = "depthwise_conv2d";
constexpr const char* kConvTranspose = "conv2d_transpose";
constexpr const char* kDense = "dense";
constexpr const char* kBatchMatmul = "batch_matmul";
constexpr const char* kPool = "pool";
constexpr const char* kOpaque = "opaque";  // softmax, norms: own schedule, root stages
constexpr const char* kPad = "pad";        // zero padding feeding a window op
}  // namespace tag

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_OP_CONTEXT_H_
