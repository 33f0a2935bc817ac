// DType: the element type of every value in agate's IRs, with SIMD lanes.
//
// One small value type shared by the graph IR, tensor expressions, the loop IR
// and code generation, so a dtype never needs translating between layers.
// Textual form follows numpy/TVM: "float32", "int8", "bool", "float32x8".
#ifndef AGATE_CORE_IR_DTYPE_H_
#define AGATE_CORE_IR_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace agate {
namespace ir {

enum class TypeCode : uint8_t {
  kInt = 0,     // signed integer
  kUInt = 1,    // unsigned integer
  kFloat = 2,   // IEEE float: 16, 32, 64 bits
  kBFloat = 3,  // bfloat16
  kBool = 4,    // 1-bit truth value, stored as one byte
  kHandle = 5,  // an opaque pointer (buffer addresses in the loop IR)
};

class DType {
 public:
  constexpr DType() : code_(TypeCode::kHandle), bits_(0), lanes_(0) {}  // "void"
  constexpr DType(TypeCode code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  static constexpr DType Int(int bits, int lanes = 1) { return DType(TypeCode::kInt, bits, lanes); }
  static constexpr DType UInt(int bits, int lanes = 1) { return DType(TypeCode::kUInt, bits, lanes); }
  static constexpr DType Float(int bits, int lanes = 1) { return DType(TypeCode::kFloat, bits, lanes); }
  static constexpr DType BFloat16(int lanes = 1) { return DType(TypeCode::kBFloat, 16, lanes); }
  static constexpr DType Bool(int lanes = 1) { return DType(TypeCode::kBool, 1, lanes); }
  static constexpr DType Handle() { return DType(TypeCode::kHandle, 64, 1); }
  static constexpr DType Void() { return DType(); }
  // The index type of loop variables and shapes.
  static constexpr DType Index() { return Int(64); }

  // Parses "float32", "int8x4", "bool", "bfloat16", "handle". Throws agate::Error
  // (kInvalidArgument) naming the text when it is not a dtype.
  static DType Parse(const std::string& text);

  TypeCode code() const { return code_; }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  bool is_void() const { return lanes_ == 0; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }
  bool is_int() const { return code_ == TypeCode::kInt; }
  bool is_uint() const { return code_ == TypeCode::kUInt; }
  bool is_integer() const { return is_int() || is_uint(); }  // int or uint (not bool)
  bool is_float() const { return code_ == TypeCode::kFloat || code_ == TypeCode::kBFloat; }
  bool is_bool() const { return code_ == TypeCode::kBool; }
  bool is_handle() const { return code_ == TypeCode::kHandle && lanes_ > 0; }

  // Bytes of one element of one lane in memory (bool takes a byte).
  int element_bytes() const { return bits_ == 1 ? 1 : (bits_ + 7) / 8; }
  // Bytes of the whole (vector) value.
  int bytes() const { return element_bytes() * lanes_; }

  DType element_of() const { return DType(code_, bits_, 1); }
  DType with_lanes(int lanes) const { return DType(code_, bits_, lanes); }
  DType with_bits(int bits) const { return DType(code_, bits, lanes_); }

  std::string ToString() const;

  bool operator==(const DType& other) const {
    return code_ == other.code_ && bits_ == other.bits_ && lanes_ == other.lanes_;
  }
  bool operator!=(const DType& other) const { return !(*this == other); }
  size_t Hash() const { return (static_cast<size_t>(code_) << 24) | (static_cast<size_t>(bits_) << 16) | lanes_; }

 private:
  TypeCode code_;
  uint8_t bits_;
  uint16_t lanes_;
};

std::ostream& operator<<(std::ostream& os, const DType& dtype);

}  // namespace ir
}  // namespace agate

template <>
struct std::hash<agate::ir::DType> {
  size_t operator()(const agate::ir::DType& d) const { return d.Hash(); }
};

#endif  // AGATE_CORE_IR_DTYPE_H_
