// The graph IR: a typed, statically shaped dataflow graph of tensor operators.
//
// Why this shape of IR: every later stage (folding, layout, fusion, memory
// planning, lowering a fused group to tensor expressions) needs the same few
// facts: which node produces a value, who consumes it, its dtype and static shape,
// and which values are compile-time constants. A Graph is a plain value: nodes in
// topological order, values named by strings, constants held as Tensors. A pass is
// a function `Graph Pass(const Graph&)`; nothing is mutated in place behind a
// pass's back, so any intermediate graph can be printed and compared.
//
// The operator set is ONNX's default domain, normalized to one form per operator:
// operands that fix a shape (Reshape's shape, Slice's starts/ends, Squeeze's axes,
// Pad's pads, ...) are attributes, never runtime inputs (see op_registry.h). The one
// exception is a value whose extents are decided when the model runs, bounded at compile
// time (Graph::run_time_extents, RunTimeReshape), read only by operators that compute row for
// row on its upper bound (RunTimeRowExtents).
#ifndef AGATE_CORE_GRAPH_GRAPH_H_
#define AGATE_CORE_GRAPH_GRAPH_H_

#include <map>
#include <string>
#include <vector>

#include "core/graph/attribute.h"
#include "core/graph/tensor.h"

namespace agate {
namespace graph {

struct TensorType {
  DType dtype = DType::Float(32);
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const { return NumElements(shape); }
  int64_t bytes() const { return numel() * dtype.element_bytes(); }
  // "float32[1,3,224,224]".
  std::string ToString() const;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

struct Node {
  std::string name;                  // unique within the graph; used in every error message
  std::string op;                    // operator type, e.g. "Conv"
  std::vector<std::string> inputs;   // value names; "" marks an absent optional input
  std::vector<std::string> outputs;  // value names this node defines
  Attributes attrs;

  // "Conv 'conv1'" for error messages.
  std::string Describe() const;
};

// TVM's operator pattern kinds: they decide what may fuse with what.
enum class OpKind : int {
  kElemWise = 0,         // out[i] = f(in[i]) on equal shapes
  kBroadcast = 1,        // elementwise with numpy broadcasting
  kInjective = 2,        // each output element reads one input element (reshape, transpose, concat)
  kReduction = 3,        // reduces axes (ReduceSum, ArgMax)
  kOutEWiseFusable = 4,  // complex op whose output may absorb elementwise consumers (Conv, MatMul, pools)
  kOpaque = 8,           // never fused (softmax, normalizations, data-dependent ops)
};
const char* OpKindName(OpKind kind);

// One kernel's worth of graph nodes, decided by the fusion pass.
struct FusedGroup {
  std::vector<int> nodes;             // indices into Graph::nodes, in topological order
  int anchor = -1;                    // index of the complex/reduction node that owns the schedule, or -1
  OpKind kind = OpKind::kElemWise;    // the most complex kind among the nodes
  std::vector<std::string> inputs;    // values read from outside the group (constants included)
  std::vector<std::string> outputs;   // values the group writes that are used outside it or are graph outputs
};

// Static memory plan for the intermediate values (not graph inputs, outputs or constants).
struct BufferAssignment {
  std::string value;
  int64_t offset = 0;  // byte offset inside the arena, 64-byte aligned
  int64_t bytes = 0;
  int first_step = 0;  // execution step (kernel index) that writes it
  int last_step = 0;   // last step that reads it
};
struct MemoryPlan {
  bool planned = false;
  std::vector<BufferAssignment> buffers;
  int64_t arena_bytes = 0;               // peak: the arena size the plan needs
  int64_t total_intermediate_bytes = 0;  // what one buffer per intermediate would need
};

class Graph {
 public:
  std::string name = "main";
  std::vector<std::string> inputs;   // runtime inputs, in order
  std::vector<std::string> outputs;  // results, in order
  std::vector<Node> nodes;           // topological order
  std::map<std::string, TensorType> types;  // every value: inputs, constants, node outputs
  std::map<std::string, Tensor> constants;
  // Values whose extents are known only after a run, bounded at compile time (a Reshape whose
  // shape arrives at run time): value -> the int64 [rank] value that holds its extents after the
  // run. The value's type gives upper bounds (its buffer holds that many elements); its data is
  // compact row-major at the run-time extents, a prefix of the buffer. Both are graph outputs
  // (so every pass keeps what computes them). A node may read the value only where its rows
  // (axis 0) alone vary and the node computes row for row on the upper bound (the importer
  // proves it: its output rows are valid as far as the input's); only RunTimeRowExtents reads
  // the extents. The compiler hands the extents to the runtime in the arena (module.fbs
  // TensorDims.shape_slot), not as a module output.
  std::map<std::string, std::string> run_time_extents;
  std::vector<FusedGroup> groups;    // empty until the fusion pass has run
  MemoryPlan memory_plan;            // planned only by the memory planning pass

  // Building helpers (used by the frontend, passes and tests).
  void AddInput(const std::string& value, TensorType type);
  void AddConstant(const std::string& value, Tensor tensor);
  // Appends a node; output types are filled by shape inference (InferShapes).
  void AddNode(Node node);

  bool HasValue(const std::string& value) const { return types.count(value) > 0; }
  bool IsConstant(const std::string& value) const { return constants.count(value) > 0; }
  bool IsGraphInput(const std::string& value) const;
  bool IsGraphOutput(const std::string& value) const;
  // Throws kNotFound naming the value when it has no type.
  const TensorType& TypeOf(const std::string& value) const;
  const Tensor& ConstantOf(const std::string& value) const;

  // value -> index of the node that defines it (inputs and constants are absent).
  std::map<std::string, int> Producers() const;
  // value -> indices of the nodes that read it (once per node).
  std::map<std::string, std::vector<int>> Consumers() const;

  // True for the int64 values that hold another value's run-time extents (run_time_extents).
  bool IsRunTimeExtents(const std::string& value) const;
  // The graph outputs a caller sees: `outputs` without the run-time extents values.
  std::vector<std::string> VisibleOutputs() const;

  // A value or node name not used yet, derived from `base`.
  std::string FreshName(const std::string& base) const;

  // Checks the structural invariants: unique definitions, every use defined
  // earlier (so no cycles), every output defined, every value typed, groups
  // cover nodes at most once. Throws kInvalidArgument naming the offender.
  void Verify() const;
};

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_GRAPH_H_
