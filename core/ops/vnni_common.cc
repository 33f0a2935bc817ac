#include "core/ops/vnni_common.h"

#include <cstdint>

namespace agate {
namespace ops {
namespace vnni {

bool TargetHasVnni(const target::Target& target) {
  return target.kind() != target::TargetKind::kCUDA && target.HasFeature("avx512vnni");
}

ir::Expr Lanes(const te::Expr& base, int64_t n) {
  return ir::Ramp::make(ir::cast(ir::DType::Index(), base), I(1), static_cast<int>(n));
}

RegisterTile::RegisterTile(const std::string& name, int64_t rows, int64_t vectors)
    : acc_(ir::CreateBuffer(name, kI32, {I(rows * vectors * kLanes)}, ir::MemoryScope::kLocal)),
      rows_(rows),
      vectors_(vectors) {}

ir::Expr RegisterTile::Index(int64_t row, int64_t vector) const {
  return Lanes(I((row * vectors_ + vector) * kLanes), kLanes);
}

ir::Expr RegisterTile::Value(int64_t row, int64_t vector) const {
  return ir::Load::make(acc_, Index(row, vector));
}

ir::Stmt RegisterTile::Zero(int64_t row, int64_t vector) const {
  return Set(row, vector, ir::Broadcast::make(ir::IntImm::make(kI32, 0), kLanes));
}

ir::Stmt RegisterTile::Set(int64_t row, int64_t vector, const ir::Expr& value) const {
  return ir::Store::make(acc_, value, Index(row, vector));
}

ir::Stmt RegisterTile::Around(const ir::Stmt& reduction, const std::vector<ir::Stmt>& store) const {
  std::vector<ir::Stmt> init;
  for (int64_t r = 0; r < rows_; ++r)
    for (int64_t v = 0; v < vectors_; ++v) init.push_back(Zero(r, v));
  return ir::Allocate::make(acc_, {I(rows_ * vectors_ * kLanes)}, 64, ir::MemoryScope::kLocal,
                            ir::Seq::make({ir::Seq::make(init), reduction, ir::Seq::make(store)}));
}

TileScheduleFlags ScheduleFlags(const ScheduleRequest& req) {
  TileScheduleFlags flags;
  const LowerGroupOptions& o = *req.options;
  if (!o.allow_parallel) flags.knobs.min_parallel_elements = INT64_MAX;
  flags.parallel = ParallelAllowed(*req.target) && o.allow_parallel;
  return flags;
}

void ComputeTileAt(te::Schedule& s, const te::Tensor& acc, const te::Stage& epilogue, const ir::IterVar& tiles,
                   const te::TensorIntrin& intrin) {
  te::Stage st = s[acc];
  st.compute_at(epilogue, tiles);
  st.tensorize(st.axis(0), intrin);
  st.set_scope(ir::MemoryScope::kLocal);
}

}  // namespace vnni
}  // namespace ops
}  // namespace agate
