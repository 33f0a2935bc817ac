#include "c_api/dlpack_dtype.h"

#include "core/support/error.h"

namespace agate {

DLDataType ToDLPack(const ir::DType& d) {
  DLDataType t;
  t.bits = static_cast<uint8_t>(d.bits());
  t.lanes = static_cast<uint16_t>(d.lanes());
  switch (d.code()) {
    case ir::TypeCode::kInt: t.code = kDLInt; break;
    case ir::TypeCode::kUInt: t.code = kDLUInt; break;
    case ir::TypeCode::kFloat: t.code = kDLFloat; break;
    case ir::TypeCode::kBFloat: t.code = kDLBfloat; break;
    case ir::TypeCode::kBool: t.code = kDLUInt; break;  // uint1
    default: AGATE_THROW(kUnsupported) << "dtype " << d << " cannot cross the runtime API";
  }
  return t;
}

ir::DType FromDLPack(const DLDataType& t) {
  switch (t.code) {
    case kDLInt: return ir::DType::Int(t.bits, t.lanes);
    case kDLUInt: return t.bits == 1 ? ir::DType::Bool(t.lanes) : ir::DType::UInt(t.bits, t.lanes);
    case kDLFloat: return ir::DType::Float(t.bits, t.lanes);
    case kDLBfloat: return ir::DType::BFloat16(t.lanes);
  }
  AGATE_THROW(kUnsupported) << "DLPack type code " << int(t.code) << " has no agate dtype";
}

}  // namespace agate
