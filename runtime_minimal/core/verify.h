// Module verification: nothing runs until a module passed it.
//
// Why: a module comes from disk, flash or the network and may be truncated,
// corrupt, hostile or built for another runtime. The runtime trusts no byte of
// it: first the format identifier and version (read from the two fields that
// never move, so a future module gets a version message rather than "corrupt"),
// then the FlatBuffers verifier (every offset and vector inside the buffer),
// then the semantic checks the verifier cannot do: every plan argument inside
// the arena or matching its tensor, every kernel index valid, payloads present
// for the target, shapes and dtypes consistent. After VerifyModule succeeds the
// executor indexes the module without further checks. The CUDA payload (images,
// launch geometry) is checked by the cuda profile before it loads a CUDA module
// (runtime_minimal/cuda/cuda_verify.h): the core profile never runs one, and a
// microcontroller should not pay flash for those checks.
//
// The compatibility rules are written in runtime_minimal/schema/module.fbs.
#ifndef AGATE_RUNTIME_MINIMAL_CORE_VERIFY_H_
#define AGATE_RUNTIME_MINIMAL_CORE_VERIFY_H_

#include <stddef.h>
#include <stdint.h>

#include "agate/status.h"
#include "flatbuffers/base.h"

// FlatBuffers writes its 2 GiB limit as a 64-bit constant, so on 32-bit targets
// its verifier divides 64-bit numbers: a 700-byte libgcc routine on a Cortex-M.
// The same limit as a 32-bit constant (this header is included before the
// generated one by every runtime source).
#if UINTPTR_MAX == 0xffffffffu
#undef FLATBUFFERS_MAX_BUFFER_SIZE
#define FLATBUFFERS_MAX_BUFFER_SIZE 0x7fffffffu
#endif

#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace rt {

// The newest module format this runtime reads, and what the compiler writes for a module with
// dynamic shapes (2.0: Module.dynamic_shapes; see module.fbs).
constexpr uint32_t kFormatMajor = 3;
// Batch-style dynamic shapes (chunked variants) are 2.0; a padded symbol (module.fbs,
// DynamicShapes.padded) 3.0, which a 2.x runtime would mis-run.
constexpr uint32_t kDynamicFormatMajor = 2;
constexpr uint32_t kPaddedFormatMajor = 3;
constexpr uint32_t kFormatMinor = 0;
// The minors written when a kernel records run-time check messages (Kernel.check_messages):
// 2.1 and 1.3. Modules without them keep 2.0 and 1.2, byte for byte.
constexpr uint32_t kCheckMessagesFormatMinor = 1;
constexpr uint32_t kCheckMessagesStaticFormatMinor = 3;
// What the compiler writes for a module without dynamic shapes, so that 1.x runtimes read it.
// 1.1: Module.cuda_images, CudaKernel register/shared figures; 1.2: Module.cpu_features and
// Module.kernel_fingerprint.
constexpr uint32_t kStaticFormatMajor = 1;
constexpr uint32_t kStaticFormatMinor = 2;
// The oldest major this runtime still reads.
constexpr uint32_t kOldestSupportedMajor = 1;
// Largest alignment a constant or the arena may ask for (a page).
constexpr uint32_t kMaxAlignment = 4096;

// Facts about a verified module the loader and executor size their memory by.
struct ModuleFacts {
  uint32_t num_calls;
  uint32_t total_args;      // the sum of every call's argument count
  uint32_t max_alignment;   // the largest constant alignment (at least 8)
  uint64_t outputs_bytes;   // the output tensors, each rounded up to 64 bytes
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  // Format 2.0 (NULL for static modules): the verified nested DynamicShapes table.
  const fb::DynamicShapes* dynamic;
  uint32_t max_variant_args;  // the most arguments of one call of any variant plan
  uint32_t output_dims;       // the outputs' dimensions, summed (run-time shape storage)
#endif
};

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
// The dynamic description of input / output `index` of a verified module, or NULL when the
// module has no dynamic shapes.
const fb::TensorDims* InputDims(const ModuleFacts& facts, uint32_t index);
const fb::TensorDims* OutputDims(const ModuleFacts& facts, uint32_t index);
// True when axis 0 of a tensor with these dims is the (batch) symbol.
bool HasSymbolicRows(const fb::TensorDims* dims);
// The first axis of a tensor with these dims that carries the symbol, or -1 (a batch symbol's is
// axis 0; a padded symbol may sit on any axes).
int32_t SymbolAxis(const fb::TensorDims* dims);
// The most axes a tensor with a padded symbol may have (the executor stages it with a loop
// over index arrays of this size).
constexpr uint32_t kMaxPaddedRank = 16;
// The most symbols a module may have (padded ones; a batch-style module has one).
constexpr uint32_t kMaxSymbols = 4;
// The most variants a padded module may have (every combination of its symbols' extents).
constexpr uint32_t kMaxPaddedVariants = 1024;
// The Symbols index of axis `axis` of a tensor with these dims (axis_symbols, else symbol).
uint32_t AxisSymbol(const fb::TensorDims& dims, uint32_t axis);
// The number of symbols of a verified module with dynamic shapes (0 without).
uint32_t NumSymbols(const ModuleFacts& facts);
// The bytes of one row (axis-0 slice) of a verified tensor.
uint64_t RowBytes(const fb::Tensor& tensor);
#endif

// Verifies data[0, size) as an agate module; on AGATE_OK writes *out_module (a
// view into data) and *out_facts. Otherwise the status's message names the fault.
agate_status_t VerifyModule(const uint8_t* data, size_t size, const fb::Module** out_module, ModuleFacts* out_facts);

// strcmp(a, b) == 0 as a plain loop: newlib's optimized strcmp alone costs more
// flash on a Cortex-M than the whole executor.
bool SameString(const char* a, const char* b);

// FNV-1a 64 of bytes: the checksum of executable payloads (host object, CUDA
// images). The profile that executes a payload checks it just before loading it
// (host_object.cc, cuda_backend.cc), so the core profile, which executes neither,
// does not carry the check.
uint64_t Fnv1a64(const uint8_t* data, size_t size);

// The size in bytes of a verified tensor (VerifyModule checked it cannot overflow).
uint64_t TensorBytes(const fb::Tensor& tensor);

}  // namespace rt
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_CORE_VERIFY_H_
