// CodeGenC: lowered loop IR (ir::LoweredFunc) to portable, freestanding C99.
//
// Why a C backend next to LLVM: it reaches every target with a C compiler and
// no LLVM backend (or a vendor compiler that must be used, e.g. for certified
// firmware), and its output is the most readable form of what a schedule does.
// The code uses only <stdint.h>, <math.h> (for math functions) and the kernel
// ABI header: no malloc, no libc calls, no compiler extensions beyond an
// optional alignment attribute behind #if defined(__GNUC__).
//  * Each kernel is `int32_t name(void* const* args, const agate_kernel_ctx* ctx)`
//    (c_api/include/agate/kernel_abi.h); buffer arguments become
//    `T* restrict` pointers.
//  * Vector expressions are scalarised: a vector Store becomes a loop over its
//    lanes that the C compiler can vectorise again for its own target.
//  * For(kParallel) is outlined into a task function and a ctx->parallel_for
//    call on targets with an OS; on bare-metal targets (c -mcpu=cortex-m4) it is
//    an ordinary loop.
//  * Allocate: kLocal/kShared become stack arrays, kWorkspace a pointer into
//    ctx->workspace. A failed AssertStmt returns -1.
// Compiles with `gcc -std=c99 -Wall -Werror` and `arm-none-eabi-gcc -std=c99 -Wall -Werror`.
#ifndef AGATE_CORE_CODEGEN_C_CODEGEN_C_H_
#define AGATE_CORE_CODEGEN_C_CODEGEN_C_H_

#include <string>
#include <vector>

#include "core/ir/function.h"
#include "core/target/target.h"

namespace agate {
namespace codegen {

// One C99 translation unit defining every kernel of `funcs` for `target` (a `c`
// target). It includes "agate/kernel_abi.h": compile with
// -I<agate>/c_api/include. Throws agate::Error: kInvalidArgument for a
// non-C target or duplicate kernel names, kUnsupported for IR C cannot express
// (float16/bfloat16 values, GPU thread loops), kInternal for IR that breaks the
// LoweredFunc contract.
std::string GenerateC(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target);

}  // namespace codegen
}  // namespace agate

#endif  // AGATE_CORE_CODEGEN_C_CODEGEN_C_H_
