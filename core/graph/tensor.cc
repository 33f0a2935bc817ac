#include "core/graph/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/ir/float16.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace {

constexpr size_t kAlignment = 64;

template <typename T>
T Load(const void* base, int64_t i) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void Store(void* base, int64_t i, T value) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &value, sizeof(T));
}

// Saturating double -> integer conversion: the reference must never invoke undefined behaviour.
template <typename T>
T DoubleToInt(double v) {
  if (std::isnan(v)) return 0;
  const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::lowest();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Tensor::Buffer::Buffer(size_t n) : bytes(n) {
  size_t rounded = (n + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  data = std::aligned_alloc(kAlignment, rounded);
  AGATE_REQUIRE(data != nullptr, kResourceExhausted) << "cannot allocate a tensor of " << n << " bytes";
  std::memset(data, 0, rounded);
}

Tensor::Buffer::~Buffer() { std::free(data); }

namespace {

// The element count of `shape`, refusing negative dimensions and more than 2^40 elements
// before anything is allocated.
int64_t CheckedNumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    AGATE_REQUIRE(d >= 0, kInvalidArgument) << "negative dimension in shape " << ShapeToString(shape);
    AGATE_REQUIRE(d == 0 || n <= (int64_t{1} << 40) / d, kResourceExhausted)
        << "tensor of shape " << ShapeToString(shape) << " is too large";
    n *= d;
  }
  return n;
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  AGATE_CHECK(dtype.is_scalar()) << "tensor elements are scalars, got " << dtype;
  CheckedNumElements(shape_);
  buffer_ = std::make_shared<Buffer>(nbytes());
}

Tensor Tensor::FromBytes(DType dtype, Shape shape, const void* data, size_t bytes) {
  // The byte count is checked before allocating: a declared shape (from a file) must not
  // turn into a huge zero-filled allocation when the data behind it is small.
  AGATE_CHECK(dtype.is_scalar()) << "tensor elements are scalars, got " << dtype;
  size_t needed = static_cast<size_t>(CheckedNumElements(shape)) * dtype.element_bytes();
  AGATE_REQUIRE(bytes == needed, kCorrupt) << "tensor " << dtype << ShapeToString(shape) << " needs " << needed
                                           << " bytes, got " << bytes;
  Tensor t(dtype, std::move(shape));
  if (bytes) std::memcpy(t.buffer_->data, data, bytes);
  return t;
}

Tensor Tensor::FromDoubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  AGATE_CHECK(static_cast<int64_t>(values.size()) == t.numel()) << values.size() << " values for " << ShapeToString(t.shape());
  for (size_t i = 0; i < values.size(); ++i) t.SetDouble(i, values[i]);
  return t;
}

Tensor Tensor::FromInts(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  Tensor t(dtype, std::move(shape));
  AGATE_CHECK(static_cast<int64_t>(values.size()) == t.numel()) << values.size() << " values for " << ShapeToString(t.shape());
  for (size_t i = 0; i < values.size(); ++i) t.SetInt(i, values[i]);
  return t;
}

Tensor Tensor::Scalar(DType dtype, double value) { return FromDoubles(dtype, {}, {value}); }

void* Tensor::mutable_raw_data() {
  if (!buffer_) return nullptr;
  if (buffer_.use_count() > 1) {
    auto copy = std::make_shared<Buffer>(buffer_->bytes);
    std::memcpy(copy->data, buffer_->data, buffer_->bytes);
    buffer_ = copy;
  }
  return buffer_->data;
}

double Tensor::GetDouble(int64_t i) const {
  const void* p = raw_data();
  switch (dtype_.code()) {
    case ir::TypeCode::kFloat:
      if (dtype_.bits() == 32) return Load<float>(p, i);
      if (dtype_.bits() == 64) return Load<double>(p, i);
      return ir::HalfToFloat(Load<uint16_t>(p, i));
    case ir::TypeCode::kBFloat: return ir::BFloat16ToFloat(Load<uint16_t>(p, i));
    case ir::TypeCode::kBool: return Load<uint8_t>(p, i) ? 1.0 : 0.0;
    case ir::TypeCode::kUInt:
      switch (dtype_.bits()) {
        case 8: return Load<uint8_t>(p, i);
        case 16: return Load<uint16_t>(p, i);
        case 32: return Load<uint32_t>(p, i);
        default: return static_cast<double>(Load<uint64_t>(p, i));
      }
    default:
      return static_cast<double>(GetInt(i));
  }
}

int64_t Tensor::GetInt(int64_t i) const {
  const void* p = raw_data();
  switch (dtype_.code()) {
    case ir::TypeCode::kInt:
      switch (dtype_.bits()) {
        case 8: return Load<int8_t>(p, i);
        case 16: return Load<int16_t>(p, i);
        case 32: return Load<int32_t>(p, i);
        default: return Load<int64_t>(p, i);
      }
    case ir::TypeCode::kUInt:
      switch (dtype_.bits()) {
        case 8: return Load<uint8_t>(p, i);
        case 16: return Load<uint16_t>(p, i);
        case 32: return Load<uint32_t>(p, i);
        default: return static_cast<int64_t>(Load<uint64_t>(p, i));
      }
    case ir::TypeCode::kBool: return Load<uint8_t>(p, i) ? 1 : 0;
    default: return DoubleToInt<int64_t>(GetDouble(i));
  }
}

void Tensor::SetDouble(int64_t i, double v) {
  void* p = mutable_raw_data();
  switch (dtype_.code()) {
    case ir::TypeCode::kFloat:
      if (dtype_.bits() == 32) return Store<float>(p, i, static_cast<float>(v));
      if (dtype_.bits() == 64) return Store<double>(p, i, v);
      return Store<uint16_t>(p, i, ir::FloatToHalf(static_cast<float>(v)));
    case ir::TypeCode::kBFloat: return Store<uint16_t>(p, i, ir::FloatToBFloat16(static_cast<float>(v)));
    case ir::TypeCode::kBool: return Store<uint8_t>(p, i, v != 0.0 ? 1 : 0);
    case ir::TypeCode::kInt:
      switch (dtype_.bits()) {
        case 8: return Store<int8_t>(p, i, DoubleToInt<int8_t>(v));
        case 16: return Store<int16_t>(p, i, DoubleToInt<int16_t>(v));
        case 32: return Store<int32_t>(p, i, DoubleToInt<int32_t>(v));
        default: return Store<int64_t>(p, i, DoubleToInt<int64_t>(v));
      }
    case ir::TypeCode::kUInt:
      switch (dtype_.bits()) {
        case 8: return Store<uint8_t>(p, i, DoubleToInt<uint8_t>(v));
        case 16: return Store<uint16_t>(p, i, DoubleToInt<uint16_t>(v));
        case 32: return Store<uint32_t>(p, i, DoubleToInt<uint32_t>(v));
        default: return Store<uint64_t>(p, i, DoubleToInt<uint64_t>(v));
      }
    default: AGATE_THROW(kInternal) << "cannot store into a " << dtype_ << " tensor";
  }
}

void Tensor::SetInt(int64_t i, int64_t v) {
  void* p = mutable_raw_data();
  switch (dtype_.code()) {
    case ir::TypeCode::kInt:
      switch (dtype_.bits()) {
        case 8: return Store<int8_t>(p, i, static_cast<int8_t>(v));
        case 16: return Store<int16_t>(p, i, static_cast<int16_t>(v));
        case 32: return Store<int32_t>(p, i, static_cast<int32_t>(v));
        default: return Store<int64_t>(p, i, v);
      }
    case ir::TypeCode::kUInt:
      switch (dtype_.bits()) {
        case 8: return Store<uint8_t>(p, i, static_cast<uint8_t>(v));
        case 16: return Store<uint16_t>(p, i, static_cast<uint16_t>(v));
        case 32: return Store<uint32_t>(p, i, static_cast<uint32_t>(v));
        default: return Store<uint64_t>(p, i, static_cast<uint64_t>(v));
      }
    case ir::TypeCode::kBool: return Store<uint8_t>(p, i, v != 0 ? 1 : 0);
    default: return SetDouble(i, static_cast<double>(v));
  }
}

std::vector<double> Tensor::ToDoubles() const {
  std::vector<double> out(numel());
  for (int64_t i = 0; i < numel(); ++i) out[i] = GetDouble(i);
  return out;
}

std::vector<int64_t> Tensor::ToInts() const {
  std::vector<int64_t> out(numel());
  for (int64_t i = 0; i < numel(); ++i) out[i] = GetInt(i);
  return out;
}

Tensor Tensor::Reshaped(Shape shape) const {
  AGATE_REQUIRE(NumElements(shape) == numel(), kInvalidArgument)
      << "cannot view " << ShapeToString(shape_) << " as " << ShapeToString(shape);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::string Tensor::ToString(int max_values) const {
  std::ostringstream os;
  os << dtype_ << ShapeToString(shape_) << "{";
  int64_t n = defined() ? numel() : 0;
  for (int64_t i = 0; i < n && i < max_values; ++i) {
    if (i) os << ", ";
    if (dtype_.is_float()) os << GetDouble(i); else os << GetInt(i);
  }
  if (n > max_values) os << ", ...";
  os << "}";
  return os.str();
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

}  // namespace graph
}  // namespace agate
