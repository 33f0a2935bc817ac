// Tensor: a dense, contiguous, row-major array of one DType with a static shape.
//
// Why a value type of its own: the graph IR holds constants (initializers, folded
// shape subgraphs), the reference interpreter computes on tensors, and the tests
// compare tensors. All three need the same small thing: dtype, shape and 64-byte
// aligned bytes that are cheap to copy (the buffer is shared and copied on write).
#ifndef AGATE_CORE_GRAPH_TENSOR_H_
#define AGATE_CORE_GRAPH_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/dtype.h"

namespace agate {
namespace graph {

using ir::DType;
using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar, 0 when a dimension is 0).
int64_t NumElements(const Shape& shape);
// "[1,3,224,224]".
std::string ShapeToString(const Shape& shape);
// Row-major strides in elements.
std::vector<int64_t> RowMajorStrides(const Shape& shape);

class Tensor {
 public:
  // An empty float32 scalar-less tensor; defined() is false.
  Tensor() = default;
  // A zero-filled tensor.
  Tensor(DType dtype, Shape shape);

  // Copies `bytes` bytes (must equal the tensor's size) from `data`.
  static Tensor FromBytes(DType dtype, Shape shape, const void* data, size_t bytes);
  // Converts each value to `dtype` (with the C++ conversion rules of SetDouble/SetInt).
  static Tensor FromDoubles(DType dtype, Shape shape, const std::vector<double>& values);
  static Tensor FromInts(DType dtype, Shape shape, const std::vector<int64_t>& values);
  static Tensor Scalar(DType dtype, double value);

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return NumElements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_.element_bytes(); }

  const void* raw_data() const { return buffer_ ? buffer_->data : nullptr; }
  // Detaches a shared buffer first (copy on write).
  void* mutable_raw_data();
  template <typename T>
  const T* data() const { return static_cast<const T*>(raw_data()); }
  template <typename T>
  T* mutable_data() { return static_cast<T*>(mutable_raw_data()); }

  // Element i (row-major) converted to double / int64; works for every numeric dtype and bool.
  double GetDouble(int64_t i) const;
  int64_t GetInt(int64_t i) const;
  void SetDouble(int64_t i, double value);
  void SetInt(int64_t i, int64_t value);
  std::vector<double> ToDoubles() const;
  std::vector<int64_t> ToInts() const;

  // The same bytes seen with another shape of equal element count.
  Tensor Reshaped(Shape shape) const;

  // "float32[2,3]{1, 2, 3, ...}" with at most `max_values` values.
  std::string ToString(int max_values = 8) const;

 private:
  struct Buffer {
    explicit Buffer(size_t bytes);
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    void* data = nullptr;
    size_t bytes = 0;
  };

  DType dtype_ = DType::Float(32);
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
};

// True when both have the same dtype, shape and bytes.
bool BitwiseEqual(const Tensor& a, const Tensor& b);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_TENSOR_H_
