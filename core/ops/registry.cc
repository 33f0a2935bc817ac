#include "core/ops/registry.h"

#include "core/support/error.h"

namespace agate {
namespace ops {

const OpTable& OpTable::Global() {
  static const OpTable* table = [] {
    auto* t = new OpTable();
    RegisterElementwiseOps(t);
    RegisterBroadcastOps(t);
    RegisterPoolOps(t);
    RegisterConvOps(t);
    RegisterConvTransposeOps(t);
    RegisterDenseOps(t);
    RegisterTransformOps(t);
    RegisterLayoutTransformOps(t);
    RegisterReduceOps(t);
    RegisterSoftmaxOps(t);
    RegisterNormOps(t);
    RegisterQuantizeOps(t);
    RegisterQLinearOps(t);
    RegisterSequenceOps(t);
    RegisterRunTimeReshapeOps(t);
    RegisterRunTimeSliceOps(t);
    RegisterRunTimeTopKOps(t);
    RegisterRunTimeExtentsOps(t);
    RegisterRunTimeSelectionOps(t);
    RegisterLossOps(t);
    RegisterEinsumOps(t);
    RegisterAttentionOps(t);
    RegisterGridSampleOps(t);
    RegisterAffineGridOps(t);
    RegisterCol2ImOps(t);
    RegisterDeformConvOps(t);
    RegisterSpectralOps(t);
    return t;
  }();
  return *table;
}

const ComputeFn* OpTable::Find(const std::string& op) const {
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpTable::Ops() const {
  std::vector<std::string> out;
  for (const auto& kv : fns_) out.push_back(kv.first);
  return out;
}

void OpTable::Register(const std::string& op, ComputeFn fn) {
  AGATE_CHECK(fns_.count(op) == 0) << "operator " << op << " registered twice";
  fns_[op] = std::move(fn);
}

}  // namespace ops
}  // namespace agate
