#include "tools/npz/graph_tensor.h"

namespace agate {
namespace npz {

Array ArrayOf(const std::string& name, const graph::Tensor& tensor) {
  Array a;
  a.name = name;
  a.dtype = tensor.dtype();
  a.shape = tensor.shape();
  const auto* bytes = static_cast<const uint8_t*>(tensor.raw_data());
  a.data.assign(bytes, bytes + tensor.nbytes());
  return a;
}

graph::Tensor TensorOf(const Array& array) {
  return graph::Tensor::FromBytes(array.dtype, array.shape, array.data.data(), array.data.size());
}

}  // namespace npz
}  // namespace agate
