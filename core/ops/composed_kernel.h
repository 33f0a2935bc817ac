// The frame of kernels written directly in loop IR for a group of one node: the serial operators
// whose writes or loop extents depend on values (NonMaxSuppression's greedy walk, MaxUnpool's
// scatter, Det's elimination, RoiAlign's sample grids, TfIdfVectorizer's n-gram scan). One place
// refuses cuda for them, gives them their parameters as LowerGroup's tensor-expression kernels
// have them (the group's inputs in order, then its outputs, each a buffer of the value's type
// named after it; constant tables the operator adds after those) and verifies the result; each
// operator writes only its loops.
#ifndef AGATE_CORE_OPS_COMPOSED_KERNEL_H_
#define AGATE_CORE_OPS_COMPOSED_KERNEL_H_

#include <map>
#include <string>

#include "core/graph/graph.h"
#include "core/ir/function.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"

namespace agate {
namespace ops {

// A value's name as an identifier (buffer, loop and kernel-local names): every character that is
// not a letter, digit or '_' becomes '_', and a name that would start with a digit gets "v_".
std::string IdentifierOf(const std::string& value_name);

// Shorthands for loop IR written by hand: int64 constants and indices, serial loops.
namespace composed {
inline ir::Expr I(int64_t v) { return ir::make_const(ir::DType::Int(64), v); }
inline ir::Expr Load(const ir::Buffer& b, const ir::Expr& index) { return ir::Load::make(b, index); }
inline ir::Stmt Store(const ir::Buffer& b, const ir::Expr& value, const ir::Expr& index) {
  return ir::Store::make(b, value, index);
}
inline ir::Stmt Loop(const ir::Var& v, const ir::Expr& extent, const ir::Stmt& body) {
  return ir::For::make(v, I(0), extent, ir::ForKind::kSerial, body);
}
inline ir::Stmt If(const ir::Expr& condition, const ir::Stmt& then_case) {
  return ir::IfThenElse::make(condition, then_case);
}
// `bytes` rounded up to a multiple of `alignment` (workspace buffers' offsets and sizes).
inline int64_t RoundUp(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }
}  // namespace composed

struct ComposedParams {
  std::map<std::string, ir::Buffer> inputs;  // value name -> parameter
  std::map<int, ir::Buffer> outputs;         // the node's output index -> parameter (outputs nobody reads: absent)
};

// A composed kernel being built: its function (named, with the group's parameters) and the
// kernel's parameter list.
struct ComposedKernel {
  std::string op;
  GroupKernel kernel;
  ir::LoweredFunc func;
  ComposedParams params;
};

// Starts the kernel of `group`, which holds one node. These kernels are serial loops: a cuda
// target is refused (kUnsupported) naming the node, its op and `cpu_only_because`; kInternal
// when the group is not one node's.
ComposedKernel BeginComposedKernel(const graph::Graph& graph, const graph::FusedGroup& group,
                                   const target::Target& target, const std::string& kernel_name,
                                   const std::string& cpu_only_because);

// Adds `value` as a constant parameter of the kernel (a table the compiler stores in the module),
// named `name` in the loop IR; returns its buffer (flat, value.numel() elements).
ir::Buffer AddComposedConstant(ComposedKernel* built, const std::string& name, graph::Tensor value);

// Ends it: `body` with `workspace_bytes` of workspace becomes the function, verified (each
// variable defined once; kInternal naming the op otherwise), and `summary` the kernel's
// schedule summary.
GroupKernel FinishComposedKernel(ComposedKernel built, const ir::Stmt& body, int64_t workspace_bytes,
                                 const std::string& summary);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_COMPOSED_KERNEL_H_
