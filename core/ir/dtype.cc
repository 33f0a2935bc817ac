#include "core/ir/dtype.h"

#include <cctype>
#include <ostream>

#include "core/support/error.h"

namespace agate {
namespace ir {
namespace {

const char* CodeName(TypeCode code) {
  switch (code) {
    case TypeCode::kInt: return "int";
    case TypeCode::kUInt: return "uint";
    case TypeCode::kFloat: return "float";
    case TypeCode::kBFloat: return "bfloat";
    case TypeCode::kBool: return "bool";
    case TypeCode::kHandle: return "handle";
  }
  return "?";
}

// Parses a decimal number at text[pos...]; returns -1 when there are no digits or it overflows 65535.
int ParseNumber(const std::string& text, size_t* pos) {
  size_t start = *pos;
  long value = 0;
  while (*pos < text.size() && std::isdigit(static_cast<unsigned char>(text[*pos]))) {
    value = value * 10 + (text[*pos] - '0');
    if (value > 65535) return -1;
    ++*pos;
  }
  return *pos == start ? -1 : static_cast<int>(value);
}

bool ValidBits(TypeCode code, int bits) {
  switch (code) {
    case TypeCode::kInt:
    case TypeCode::kUInt: return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case TypeCode::kFloat: return bits == 16 || bits == 32 || bits == 64;
    case TypeCode::kBFloat: return bits == 16;
    case TypeCode::kBool: return bits == 1;
    case TypeCode::kHandle: return bits == 64;
  }
  return false;
}

}  // namespace

DType DType::Parse(const std::string& text) {
  static const struct {
    const char* prefix;
    TypeCode code;
    int default_bits;
  } kPrefixes[] = {
      // Longest prefixes first: "bfloat" before "float", "uint" before "int".
      {"bfloat", TypeCode::kBFloat, -1}, {"float", TypeCode::kFloat, -1}, {"uint", TypeCode::kUInt, -1},
      {"int", TypeCode::kInt, -1},       {"bool", TypeCode::kBool, 1},    {"handle", TypeCode::kHandle, 64},
  };
  for (const auto& p : kPrefixes) {
    std::string prefix(p.prefix);
    if (text.compare(0, prefix.size(), prefix) != 0) continue;
    size_t pos = prefix.size();
    int bits = p.default_bits;
    if (bits < 0) bits = ParseNumber(text, &pos);
    int lanes = 1;
    if (pos < text.size() && text[pos] == 'x') {
      ++pos;
      lanes = ParseNumber(text, &pos);
    }
    if (pos == text.size() && bits > 0 && lanes > 0 && ValidBits(p.code, bits)) return DType(p.code, bits, lanes);
    break;
  }
  AGATE_THROW(kInvalidArgument) << "'" << text
                                << "' is not a dtype (expected e.g. float32, float16, bfloat16, int8, uint8, "
                                   "int32, int64, bool, optionally with lanes as float32x8)";
}

std::string DType::ToString() const {
  if (is_void()) return "void";
  std::string s = CodeName(code_);
  if (code_ != TypeCode::kBool && code_ != TypeCode::kHandle) s += std::to_string(bits_);
  if (lanes_ > 1) s += "x" + std::to_string(lanes_);
  return s;
}

std::ostream& operator<<(std::ostream& os, const DType& dtype) { return os << dtype.ToString(); }

}  // namespace ir
}  // namespace agate
