// Conversions between agate::ir::DType and the DLPack DLDataType that crosses the C ABIs, for
// C++ callers of agate/runtime.h (the command line, tests). The runtime spells bool as uint1,
// as DLPack 0.6 (Debian's) and TVM do.
#ifndef AGATE_C_API_DLPACK_DTYPE_H_
#define AGATE_C_API_DLPACK_DTYPE_H_

#include "core/ir/dtype.h"
#include "dlpack/dlpack.h"

namespace agate {

// Throws agate::Error (kUnsupported) for handles and void.
DLDataType ToDLPack(const ir::DType& dtype);
// Throws agate::Error (kUnsupported) for DLPack type codes agate has no dtype for.
ir::DType FromDLPack(const DLDataType& dtype);

}  // namespace agate

#endif  // AGATE_C_API_DLPACK_DTYPE_H_
