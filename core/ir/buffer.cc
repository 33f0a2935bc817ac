#include "core/ir/buffer.h"

#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace ir {

const char* MemoryScopeName(MemoryScope scope) {
  switch (scope) {
    case MemoryScope::kGlobal: return "global";
    case MemoryScope::kLocal: return "local";
    case MemoryScope::kShared: return "shared";
    case MemoryScope::kWorkspace: return "workspace";
  }
  return "?";
}

Expr BufferNode::NumElements() const {
  Expr n = IntImm::make(DType::Index(), 1);
  for (const Expr& e : shape) n = n * cast(DType::Index(), e);
  return n;
}

Expr BufferNode::FlatIndex(const std::vector<Expr>& indices) const {
  AGATE_REQUIRE(indices.size() == shape.size(), kInvalidArgument)
      << "buffer " << name << " has " << shape.size() << " dimension(s) but is indexed with " << indices.size();
  Expr index = IntImm::make(DType::Index(), 0);
  if (!strides.empty()) {
    for (size_t i = 0; i < indices.size(); ++i) index = index + cast(DType::Index(), indices[i]) * strides[i];
    return index;
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    index = index * cast(DType::Index(), shape[i]) + cast(DType::Index(), indices[i]);
  }
  return index;
}

Buffer CreateBuffer(const std::string& name, DType dtype, std::vector<Expr> shape, MemoryScope scope, int alignment,
                    std::vector<Expr> strides) {
  AGATE_REQUIRE(dtype.is_scalar() && !dtype.is_void(), kInvalidArgument)
      << "buffer " << name << ": element dtype must be scalar, got " << dtype;
  AGATE_REQUIRE(strides.empty() || strides.size() == shape.size(), kInvalidArgument)
      << "buffer " << name << ": " << strides.size() << " strides for " << shape.size() << " dimensions";
  AGATE_REQUIRE(alignment > 0 && (alignment & (alignment - 1)) == 0, kInvalidArgument)
      << "buffer " << name << ": alignment " << alignment << " is not a power of two";
  auto node = std::make_shared<BufferNode>();
  node->name = name;
  node->data = Var(name, DType::Handle());
  node->dtype = dtype;
  for (Expr& e : shape) {
    AGATE_REQUIRE(e.defined() && e.dtype().is_integer(), kInvalidArgument)
        << "buffer " << name << ": shape entries must be integers";
    node->shape.push_back(cast(DType::Index(), e));
  }
  for (Expr& e : strides) node->strides.push_back(cast(DType::Index(), e));
  node->alignment = alignment;
  node->scope = scope;
  return Buffer(node);
}

}  // namespace ir
}  // namespace agate
