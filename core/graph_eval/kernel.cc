#include "core/graph_eval/kernel.h"

#include <cstring>

#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs

const Tensor& KernelContext::in(int i) const {
  AGATE_REQUIRE(has(i), kInvalidArgument) << node.Describe() << " needs input " << i;
  return *inputs[i];
}

Tensor KernelContext::NewOutput(int i) const {
  AGATE_CHECK(i >= 0 && i < static_cast<int>(outputs.size()))
      << node.Describe() << ": output " << i << " of " << outputs.size() << " typed";
  return Tensor(outputs[i].dtype, outputs[i].shape);
}

const KernelRegistry& KernelRegistry::Global() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterElementwiseKernels(r);
    RegisterTensorKernels(r);
    RegisterNnKernels(r);
    RegisterReduceKernels(r);
    RegisterQuantizeKernels(r);
    RegisterSignalKernels(r);
    RegisterLossKernels(r);
    RegisterSequenceKernels(r);
    RegisterSpatialKernels(r);
    RegisterLinalgKernels(r);
    RegisterRecurrentKernels(r);
    RegisterTextKernels(r);
    return r;
  }();
  return *registry;
}

const KernelFn* KernelRegistry::Find(const std::string& op) const {
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

void KernelRegistry::Register(const std::string& op, KernelFn fn) {
  AGATE_CHECK(!kernels_.count(op)) << "kernel " << op << " registered twice";
  kernels_[op] = std::move(fn);
}

std::vector<std::string> KernelRegistry::Ops() const {
  std::vector<std::string> ops;
  for (const auto& [op, fn] : kernels_) ops.push_back(op);
  return ops;
}

void ForEachIndex(const Shape& shape, const std::function<void(const std::vector<int64_t>&, int64_t)>& fn) {
  int64_t n = NumElements(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(index, linear);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<int64_t> BroadcastOffsets(const Shape& out, const Shape& in) {
  size_t rank = out.size();
  std::vector<int64_t> in_strides = RowMajorStrides(in);
  std::vector<int64_t> strides(rank, 0);
  for (size_t i = 0; i < in.size(); ++i) {
    size_t o = rank - in.size() + i;
    strides[o] = in[i] == 1 ? 0 : in_strides[i];
  }
  std::vector<int64_t> offsets(NumElements(out));
  ForEachIndex(out, [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * strides[d];
    offsets[linear] = off;
  });
  return offsets;
}

Tensor GatherByOffsets(const Tensor& source, const TensorType& type, const std::vector<int64_t>& offsets) {
  Tensor out(type.dtype, type.shape);
  AGATE_CHECK(source.dtype() == type.dtype) << source.dtype() << " vs " << type.dtype;
  AGATE_CHECK(static_cast<int64_t>(offsets.size()) == out.numel()) << offsets.size() << " offsets";
  size_t width = type.dtype.element_bytes();
  const char* src = static_cast<const char*>(source.raw_data());
  char* dst = static_cast<char*>(out.mutable_raw_data());
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] < 0) continue;
    std::memcpy(dst + i * width, src + offsets[i] * width, width);
  }
  return out;
}

}  // namespace graph_eval
}  // namespace agate
