// The operator table: graph op name -> the function that builds its tensor
// expressions.
//
// Why a table: LowerGroup walks a fused group's nodes and asks, per node, for
// the tensor expressions of its outputs given those of its inputs; the answer
// depends only on the op name. Each operator family (elementwise.cc,
// broadcast.cc, conv2d.cc, ...) registers its builders here, so adding an
// operator touches one family file. An op that is absent is reported as
// kUnsupported with the node's name and shape by LowerGroup.
#ifndef AGATE_CORE_OPS_REGISTRY_H_
#define AGATE_CORE_OPS_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/ops/op_context.h"

namespace agate {
namespace ops {

// Builds the node's outputs (one tensor per graph output, in order).
using ComputeFn = std::function<std::vector<te::Tensor>(const OpContext&)>;

class OpTable {
 public:
  static const OpTable& Global();
  const ComputeFn* Find(const std::string& op) const;
  std::vector<std::string> Ops() const;
  void Register(const std::string& op, ComputeFn fn);

 private:
  std::map<std::string, ComputeFn> fns_;
};

// Registration per family.
void RegisterElementwiseOps(OpTable* table);
void RegisterBroadcastOps(OpTable* table);
void RegisterTransformOps(OpTable* table);
void RegisterReduceOps(OpTable* table);
void RegisterSoftmaxOps(OpTable* table);
void RegisterNormOps(OpTable* table);
void RegisterPoolOps(OpTable* table);
void RegisterConvOps(OpTable* table);
void RegisterConvTransposeOps(OpTable* table);
void RegisterDenseOps(OpTable* table);
void RegisterLayoutTransformOps(OpTable* table);
void RegisterQuantizeOps(OpTable* table);
void RegisterQLinearOps(OpTable* table);
void RegisterSequenceOps(OpTable* table);
void RegisterRunTimeReshapeOps(OpTable* table);
void RegisterRunTimeSliceOps(OpTable* table);
void RegisterRunTimeTopKOps(OpTable* table);
void RegisterRunTimeExtentsOps(OpTable* table);
void RegisterRunTimeSelectionOps(OpTable* table);
void RegisterLossOps(OpTable* table);
void RegisterEinsumOps(OpTable* table);
void RegisterAttentionOps(OpTable* table);
void RegisterGridSampleOps(OpTable* table);
void RegisterAffineGridOps(OpTable* table);
void RegisterCol2ImOps(OpTable* table);
void RegisterDeformConvOps(OpTable* table);
void RegisterSpectralOps(OpTable* table);

}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_REGISTRY_H_
