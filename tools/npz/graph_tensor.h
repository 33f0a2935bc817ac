// .npz arrays to and from the graph IR's tensors, for the tools that feed a graph or a compiled
// module from .npz files and compare what comes back (the interpreter oracle, the GPU
// conformance run, the GEMM benchmark). Both copy the bytes: neither side borrows the other's.
#ifndef AGATE_TOOLS_NPZ_GRAPH_TENSOR_H_
#define AGATE_TOOLS_NPZ_GRAPH_TENSOR_H_

#include <string>

#include "core/graph/tensor.h"
#include "tools/npz/npz.h"

namespace agate {
namespace npz {

Array ArrayOf(const std::string& name, const graph::Tensor& tensor);
graph::Tensor TensorOf(const Array& array);

}  // namespace npz
}  // namespace agate

#endif  // AGATE_TOOLS_NPZ_GRAPH_TENSOR_H_
