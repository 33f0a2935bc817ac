#include "core/ops/vnni_common.h"

#include <cstdint>

namespace agate {
namespace ops {
namespace vnni {

namespace {

const Isa kVnni512{"vnni", "vpdpbusd", 16, 4, kU8, kS8, false, 32};
const Isa kAvx512Pairs{"avx512bw", "vpmaddwd", 16, 2, kI16, kI16, true, 32};
const Isa kAvx2Pairs{"avx2", "vpmaddwd", 8, 2, kI16, kI16, true, 16};
const Isa kArmDot{"dotprod", "sdot", 4, 4, kS8, kS8, false, 32};

}  // namespace

ir::Expr Isa::Dot(const ir::Expr& acc, const ir::Expr& a, const ir::Expr& b) const {
  if (group == 2) return ir::dot2_i16(acc, a, b);
  return a_type == kS8 ? ir::dot4_s8s8(acc, a, b) : ir::dot4_u8s8(acc, a, b);
}

int64_t Isa::ShiftFrom(ir::DType t) const {
  if (centred || t == a_type) return 0;
  return a_type == kS8 ? -128 : 128;
}

const Isa* PickIsa(const target::Target& target) {
  if (target.kind() == target::TargetKind::kCUDA) return nullptr;
  if (target.arch() == target::Arch::kAArch64) return target.HasFeature("dotprod") ? &kArmDot : nullptr;
  if (target.arch() != target::Arch::kX86_64) return nullptr;
  if (target.HasFeature("avx512vnni")) return &kVnni512;
  if (target.HasFeature("avx512bw")) return &kAvx512Pairs;
  if (target.HasFeature("avx2")) return &kAvx2Pairs;
  return nullptr;
}

ir::Expr Lanes(const te::Expr& base, int64_t n) {
  return ir::Ramp::make(ir::cast(ir::DType::Index(), base), I(1), static_cast<int>(n));
}

RegisterTile::RegisterTile(const std::string& name, int64_t rows, int64_t vectors, int64_t lanes)
    : acc_(ir::CreateBuffer(name, kI32, {I(rows * vectors * lanes)}, ir::MemoryScope::kLocal)),
      rows_(rows),
      vectors_(vectors),
      lanes_(lanes) {}

ir::Expr RegisterTile::Index(int64_t row, int64_t vector) const {
  return Lanes(I((row * vectors_ + vector) * lanes_), lanes_);
}

ir::Expr RegisterTile::Value(int64_t row, int64_t vector) const {
  return ir::Load::make(acc_, Index(row, vector));
}

ir::Stmt RegisterTile::Zero(int64_t row, int64_t vector) const {
  return Set(row, vector, ir::Broadcast::make(ir::IntImm::make(kI32, 0), static_cast<int>(lanes_)));
}

ir::Stmt RegisterTile::Set(int64_t row, int64_t vector, const ir::Expr& value) const {
  return ir::Store::make(acc_, value, Index(row, vector));
}

ir::Stmt RegisterTile::Around(const ir::Stmt& reduction, const std::vector<ir::Stmt>& store) const {
  std::vector<ir::Stmt> init;
  for (int64_t r = 0; r < rows_; ++r)
    for (int64_t v = 0; v < vectors_; ++v) init.push_back(Zero(r, v));
  return ir::Allocate::make(acc_, {I(rows_ * vectors_ * lanes_)}, 64, ir::MemoryScope::kLocal,
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
