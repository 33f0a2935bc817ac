// StorageFlatten: maps tensors onto flat buffers.
//
// Why: the loop IR that codegen consumes addresses memory by one element offset
// per buffer. This pass gives every tensor its storage: kernel arguments become
// the parameter buffers, every Realize becomes an Allocate of the realized
// region (row-major, with padded strides where storage_align asks), and every
// Provide/TensorRead becomes a Store/Load at offset
// flat(index - region.min). Allocation sizes use a constant upper bound of the
// region when one exists, so a region that shrinks at the edge of a tiled loop
// still gets a fixed-size (stack or workspace) buffer.
#ifndef AGATE_CORE_LOWER_STORAGE_FLATTEN_H_
#define AGATE_CORE_LOWER_STORAGE_FLATTEN_H_

#include <map>
#include <utility>

#include "core/ir/buffer.h"
#include "core/ir/stmt.h"
#include "core/lower/schedule_ops.h"
#include "core/te/tensor.h"

namespace agate {
namespace lower {

// (origin operation, output index) -> parameter buffer
using ArgBufferMap = std::map<std::pair<const te::OperationNode*, int>, ir::Buffer>;

// Tensorize markers (see TensorizeCall) are replaced by the intrinsic's statement
// on views of the real buffers.
ir::Stmt StorageFlatten(const ir::Stmt& stmt, const ArgBufferMap& args,
                        const std::map<const te::OperationNode*, StageStorageInfo>& storage,
                        const std::vector<TensorizeCall>& tensorize_calls = {});

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_STORAGE_FLATTEN_H_
