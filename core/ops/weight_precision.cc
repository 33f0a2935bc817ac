#include "core/ops/weight_precision.h"

#include <cmath>
#include <cstring>

#include "core/ir/float16.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

ir::DType ParseWeightPrecision(const std::string& name) {
  if (name == "fp32") return ir::DType::Float(32);
  if (name == "fp16") return ir::DType::Float(16);
  if (name == "bf16") return ir::DType::BFloat16();
  AGATE_THROW(kInvalidArgument) << "precision '" << name << "': expected fp32, fp16 or bf16";
}

std::string WeightPrecisionName(ir::DType precision) {
  if (precision == ir::DType::Float(16)) return "fp16";
  if (precision == ir::DType::BFloat16()) return "bf16";
  AGATE_REQUIRE(precision == ir::DType::Float(32), kInvalidArgument)
      << "weight precision " << precision << ": expected float32, float16 or bfloat16";
  return "fp32";
}

void CheckWeightPrecision(ir::DType precision, const target::Target& target) {
  const std::string name = WeightPrecisionName(precision);
  if (name == "fp32") return;
  // bfloat16 is a 16-bit shift on every target; C and CUDA kernels convert both in portable code.
  if (name == "bf16" || target.kind() != target::TargetKind::kLLVM) return;
  const std::string& triple = target.triple();
  bool x86 = triple.rfind("x86_64", 0) == 0, arm64 = triple.rfind("aarch64", 0) == 0;
  AGATE_REQUIRE(arm64 || (x86 && target.HasFeature("f16c")), kUnsupported)
      << "--precision fp16 is not supported for target '" << target.ToString() << "': "
      << (x86 ? "its CPU has no F16C (vcvtph2ps), so every weight would go through a soft-float call; use "
                "-mcpu=x86-64-v3 or newer, or --precision bf16"
              : "only x86-64 with F16C and AArch64 convert float16 in hardware here; use --precision bf16");
}

graph::Tensor NarrowWeights(const graph::Tensor& packed, ir::DType precision) {
  if (precision == ir::DType::Float(32) || packed.dtype() != ir::DType::Float(32)) return packed;
  WeightPrecisionName(precision);  // refuses anything but the three precisions
  const bool half = precision == ir::DType::Float(16);
  const float* src = packed.data<float>();
  const int64_t count = packed.numel();
  for (int64_t i = 0; i < count; ++i)
    if (half && std::isfinite(src[i]) && std::fabs(src[i]) > 65504.0f) return packed;
  graph::Tensor narrow(precision, packed.shape());
  auto* dst = static_cast<uint16_t*>(narrow.mutable_raw_data());
  for (int64_t i = 0; i < count; ++i) dst[i] = half ? ir::FloatToHalf(src[i]) : ir::FloatToBFloat16(src[i]);
  return narrow;
}

te::Expr WidenedWeight(const te::Expr& element, ir::DType compute) { return ir::cast(compute, element); }

}  // namespace ops
}  // namespace agate
