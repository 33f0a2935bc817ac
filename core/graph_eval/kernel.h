// Reference kernels: plain, obviously correct C++ for every operator of the
// graph IR, on every dtype the operator allows.
//
// Why: constant folding evaluates nodes with them, the reference interpreter runs
// whole graphs with them, and tests use that interpreter as the oracle for
// compiled code. Clarity beats speed here: arithmetic is done in double (floats)
// or int64 (integers) and rounded to the output dtype.
#ifndef AGATE_CORE_GRAPH_EVAL_KERNEL_H_
#define AGATE_CORE_GRAPH_EVAL_KERNEL_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace agate {
namespace graph_eval {

// What a kernel sees: the node, its input tensors (nullptr for absent optional
// inputs) and the output types shape inference computed for them.
struct KernelContext {
  const graph::Node& node;
  std::vector<const graph::Tensor*> inputs;
  std::vector<graph::TensorType> outputs;

  bool has(int i) const { return i < static_cast<int>(inputs.size()) && inputs[i] != nullptr; }
  const graph::Tensor& in(int i) const;
  const graph::Attributes& attrs() const { return node.attrs; }
  // A zero-filled tensor of output i's type. Only the outputs the node names have types: a kernel
  // that builds more (for a node that leaves optional ones out) types them itself.
  graph::Tensor NewOutput(int i) const;
};

using KernelFn = std::function<std::vector<graph::Tensor>(const KernelContext&)>;

class KernelRegistry {
 public:
  static const KernelRegistry& Global();
  const KernelFn* Find(const std::string& op) const;
  void Register(const std::string& op, KernelFn fn);
  std::vector<std::string> Ops() const;

 private:
  std::map<std::string, KernelFn> kernels_;
};

void RegisterElementwiseKernels(KernelRegistry* registry);
void RegisterTensorKernels(KernelRegistry* registry);
void RegisterNnKernels(KernelRegistry* registry);
void RegisterReduceKernels(KernelRegistry* registry);
void RegisterQuantizeKernels(KernelRegistry* registry);
void RegisterSignalKernels(KernelRegistry* registry);
void RegisterLossKernels(KernelRegistry* registry);
void RegisterSequenceKernels(KernelRegistry* registry);
void RegisterSpatialKernels(KernelRegistry* registry);
void RegisterLinalgKernels(KernelRegistry* registry);
void RegisterRecurrentKernels(KernelRegistry* registry);
void RegisterTextKernels(KernelRegistry* registry);

// Helpers shared by the kernel files.
// For every element of `out`, the row-major offset of the element of an input of
// shape `in` that numpy broadcasting maps to it.
std::vector<int64_t> BroadcastOffsets(const graph::Shape& out, const graph::Shape& in);
// Calls fn(index, linear) for every multi-index of `shape` in row-major order.
void ForEachIndex(const graph::Shape& shape, const std::function<void(const std::vector<int64_t>&, int64_t)>& fn);
// Builds a tensor of `type` whose element i is element offsets[i] of `source`
// (dtype-agnostic byte copy); offset -1 leaves the element zero.
graph::Tensor GatherByOffsets(const graph::Tensor& source, const graph::TensorType& type,
                              const std::vector<int64_t>& offsets);

}  // namespace graph_eval
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_EVAL_KERNEL_H_
