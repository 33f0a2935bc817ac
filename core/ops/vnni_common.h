// What the int8 templates share: the convolutions (qlinear_vnni.h) and the matrix
// products (qlinear_matmul_vnni.h), on each x86 instruction set they tile for.
//
// Why a header of its own: both templates compute an int32 register tile of rows x vectors
// accumulators over their whole reduction, inside the loop over tiles of the caller's
// epilogue (QLinearConv's or QLinearMatMul's requantisation, or MatMulInteger's plain
// accumulator), with the same applicability test on the target and the same schedule
// around the tile. One definition keeps the two from drifting apart (they did: the
// constants, the tile's lowering and the schedule preamble were written twice).
//
// The instruction sets (Isa below):
//  * AVX512-VNNI: vpdpbusd (the loop-IR intrinsic dot4_u8s8), 64 u8 x s8 products into 16
//    int32 lanes per instruction; operands packed as 8-bit values in groups of four along
//    the reduction, the activations' zero point a per-column constant subtracted after.
//  * AVX2 (and AVX-512BW without VNNI): vpmaddwd (dot2_i16) plus vpaddd, pairs of int16
//    products into 8 (16) int32 lanes; operands packed as int16 minus their zero points
//    ("centred", in [-255, 255]), so any constant zero points work and no compensation term
//    remains. Not vpmaddubsw: its 16-bit pair sums saturate (255 x 127 x 2 > 32767), which
//    changes results; ONNX Runtime takes that risk on AVX2 (its reduce_range option), agate
//    does not.
//  * AArch64 with the dotprod extension (Armv8.2-A and later: the Cortex-A55/A75 class of
//    Android phones and up): sdot (dot4_s8s8), 16 s8 x s8 products into 4 int32 lanes per
//    128-bit instruction; both operands int8: uint8 activations (and uint8 weights, as on
//    VNNI) are packed shifted by -128 (bit 7 flipped), their zero point with them, so the
//    compensation terms are those of VNNI with the shifted zero point.
//
// Ownership: everything here is a value (IR nodes are immutable, shared by reference count);
// the accumulator buffer a RegisterTile names is allocated by the statement Around() returns
// and lives only inside it; Isa descriptors are static constants.
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
inline const ir::DType kI16 = ir::DType::Int(16);

inline te::Expr I(int64_t v) { return te::Expr(v); }

// The int8 instruction set a template tiles for (see the top of this file).
struct Isa {
  const char* name;         // "vnni", "avx2", "avx512bw": in the schedule text
  const char* instruction;  // "vpdpbusd" or "vpmaddwd"
  int64_t lanes;            // int32 lanes per accumulator vector
  int64_t group;            // reduction elements each lane takes per instruction (4 or 2)
  ir::DType a_type;         // packed activations (conv) or A (matmul): uint8 or int16
  ir::DType b_type;         // packed weights (conv) or B (matmul): int8 or int16
  bool centred;             // operands packed minus their zero points: no compensation terms
  int64_t registers;        // vector registers a register tile may use

  // acc (int32 x lanes) plus the group-wise products of a and b (either may be one group,
  // broadcast to every lane).
  ir::Expr Dot(const ir::Expr& acc, const ir::Expr& a, const ir::Expr& b) const;
  // What 8-bit activations of type `t` are shifted by when packed as a_type (their zero point
  // with them): +128 for int8 into VNNI's uint8, -128 for uint8 into sdot's int8; 0 when the
  // types agree or the operands are centred.
  int64_t ShiftFrom(ir::DType t) const;
};

// The instruction set the int8 templates use on `target`: VNNI where it has avx512vnni,
// else int16 pairs where it has avx512bw (16 lanes) or avx2 (8 lanes); sdot on AArch64 with
// dotprod; nullptr elsewhere (CUDA, 32-bit Arm, AArch64 without dotprod, older x86): the
// generic templates.
const Isa* PickIsa(const target::Target& target);

// `n` consecutive indices from `base` (a scalar index: one lane).
ir::Expr Lanes(const te::Expr& base, int64_t n);

// The accumulators of one register tile: rows x vectors int32 vectors of `lanes` lanes in a
// local array indexed by constants (so code generation keeps them in registers).
class RegisterTile {
 public:
  RegisterTile(const std::string& name, int64_t rows, int64_t vectors, int64_t lanes);

  ir::Expr Value(int64_t row, int64_t vector) const;  // the accumulator's lanes
  ir::Stmt Zero(int64_t row, int64_t vector) const;
  ir::Stmt Set(int64_t row, int64_t vector, const ir::Expr& value) const;
  // The accumulators allocated around: every one zeroed, `reduction` (the loops that update
  // them), then `store` (what writes them out).
  ir::Stmt Around(const ir::Stmt& reduction, const std::vector<ir::Stmt>& store) const;

 private:
  ir::Expr Index(int64_t row, int64_t vector) const;
  ir::Buffer acc_;
  int64_t rows_, vectors_, lanes_;
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
