// What the two AVX512-VNNI int8 templates share: the convolutions (qlinear_vnni.h) and the
// matrix products (qlinear_matmul_vnni.h).
//
// Why a header of its own: both templates compute an int32 register tile of rows x vectors
// 16-lane accumulators over their whole reduction (vpdpbusd, the loop-IR intrinsic
// dot4_u8s8), inside the loop over tiles of the caller's epilogue (QLinearConv's or
// QLinearMatMul's requantisation, or MatMulInteger's plain accumulator), with the same
// applicability test on the target and the same schedule around the tile. One definition
// keeps the two from drifting apart (they did: the constants, the tile's lowering and the
// schedule preamble were written twice).
//
// Ownership: everything here is a value (IR nodes are immutable, shared by reference count);
// the accumulator buffer a RegisterTile names is allocated by the statement Around() returns
// and lives only inside it.
#ifndef AGATE_CORE_OPS_VNNI_COMMON_H_
#define AGATE_CORE_OPS_VNNI_COMMON_H_

#include <functional>
#include <string>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/stmt.h"
#include "core/ops/op_context.h"
#include "core/ops/schedule_common.h"
#include "core/schedule/schedule.h"
#include "core/target/target.h"
#include "core/te/tensor.h"

namespace agate {
namespace ops {

// What the caller computes from the int32 accumulator `acc` of output channel (conv) or
// column (matmul) `channel`: QLinearConv's bias and requantisation, QLinearMatMul's
// requantisation; empty: the accumulator itself.
using TileEpilogue = std::function<te::Expr(const te::Expr& acc, const te::Expr& channel)>;

namespace vnni {

inline const ir::DType kI32 = ir::DType::Int(32);
inline const ir::DType kU8 = ir::DType::UInt(8);
inline const ir::DType kS8 = ir::DType::Int(8);
constexpr int64_t kLanes = 16;  // int32 lanes of one vpdpbusd (512 bits)

inline te::Expr I(int64_t v) { return te::Expr(v); }

// Whether the VNNI templates apply on `target`: a CPU target with avx512vnni.
bool TargetHasVnni(const target::Target& target);

// `n` consecutive indices from `base` (a scalar index: one lane).
ir::Expr Lanes(const te::Expr& base, int64_t n);

// The accumulators of one register tile: rows x vectors int32 vectors of 16 lanes in a local
// array indexed by constants (so code generation keeps them in registers).
class RegisterTile {
 public:
  RegisterTile(const std::string& name, int64_t rows, int64_t vectors);

  ir::Expr Value(int64_t row, int64_t vector) const;  // the accumulator's 16 lanes
  ir::Stmt Zero(int64_t row, int64_t vector) const;
  ir::Stmt Set(int64_t row, int64_t vector, const ir::Expr& value) const;
  // The accumulators allocated around: every one zeroed, `reduction` (the loops that update
  // them), then `store` (what writes them out).
  ir::Stmt Around(const ir::Stmt& reduction, const std::vector<ir::Stmt>& store) const;

 private:
  ir::Expr Index(int64_t row, int64_t vector) const;
  ir::Buffer acc_;
  int64_t rows_, vectors_;
};

// The schedule's choices both templates make the same way.
struct TileScheduleFlags {
  InjectiveKnobs knobs;  // for the stages scheduled as injective ones
  bool parallel = false; // the tile loop may run in parallel
};
TileScheduleFlags ScheduleFlags(const ScheduleRequest& req);

// The accumulator stage `acc` computed at the epilogue's loop over tiles `tiles` (one tile
// per iteration), tensorized with `intrin` (its loops the intrinsic's), in a local buffer.
void ComputeTileAt(te::Schedule& s, const te::Tensor& acc, const te::Stage& epilogue, const ir::IterVar& tiles,
                   const te::TensorIntrin& intrin);

}  // namespace vnni
}  // namespace ops
}  // namespace agate

#endif  // AGATE_CORE_OPS_VNNI_COMMON_H_
