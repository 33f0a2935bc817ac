// Buffer: a named, typed, shaped region of memory that the loop IR reads and writes.
//
// Why a separate description: Load/Store index buffers by a flat element offset,
// but codegen and the runtime still need the buffer's element type, shape,
// alignment and memory scope (to pick aligned vector loads, to place a
// cache_write buffer on the stack or in the kernel workspace, to bind GPU shared
// memory). The data Var (handle dtype) is the buffer's base address: for a
// kernel parameter it is args[i]; for an Allocate it is bound by the Allocate.
#ifndef AGATE_CORE_IR_BUFFER_H_
#define AGATE_CORE_IR_BUFFER_H_

#include <string>
#include <vector>

#include "core/ir/expr.h"

namespace agate {
namespace ir {

// Where a buffer lives.
enum class MemoryScope : uint8_t {
  kGlobal,     // caller-owned memory: a kernel argument
  kLocal,      // private to one thread of execution: a stack/register array in codegen
  kShared,     // GPU shared memory, shared by a thread block
  kWorkspace,  // a slice of agate_kernel_ctx::workspace at a compile-time offset
};
const char* MemoryScopeName(MemoryScope scope);

struct BufferNode {
  std::string name;
  Var data;                   // handle-typed base address
  DType dtype;                // element type (scalar)
  std::vector<Expr> shape;    // logical shape, outermost first
  std::vector<Expr> strides;  // element strides; empty means compact row-major
  int alignment = 64;         // bytes; the base address is a multiple of it
  MemoryScope scope = MemoryScope::kGlobal;

  // Total number of elements (product of the shape); int64.
  Expr NumElements() const;
  // Flat element offset of a multi-dimensional index (uses strides, else row-major).
  Expr FlatIndex(const std::vector<Expr>& indices) const;
};

// A compact row-major buffer; strides may be given for padded layouts (storage_align).
Buffer CreateBuffer(const std::string& name, DType dtype, std::vector<Expr> shape,
                    MemoryScope scope = MemoryScope::kGlobal, int alignment = 64,
                    std::vector<Expr> strides = {});

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_BUFFER_H_
