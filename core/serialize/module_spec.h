// ModuleSpec: a compiled module described in plain C++, before serialization.
//
// Why: code generation, memory planning and the build driver fill one value
// type without knowing FlatBuffers; SerializeModule (serialize_module.h) turns it
// into the bytes every runtime profile reads (runtime_minimal/schema/module.fbs,
// whose comments carry the format's compatibility rules). Kernels follow
// c_api/include/agate/kernel_abi.h:
//   int32_t f(void* const* args, const agate_kernel_ctx* ctx)
// where args are the call's arguments in plan order.
#ifndef AGATE_CORE_SERIALIZE_MODULE_SPEC_H_
#define AGATE_CORE_SERIALIZE_MODULE_SPEC_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/dtype.h"

namespace agate {
namespace serialize {

// What executes the kernels, and so which payload the module carries.
enum class TargetKind {
  kHostCpu,  // ModuleSpec::host_object: a shared object exporting every kernel by name
  kCuda,     // KernelSpec::cuda: PTX or a cubin per kernel
  kMicro,    // names only, resolved against the firmware's static kernel table
};

// A model input or output: dense, row-major.
struct TensorSpec {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;

  // The tensor's size in bytes (bool takes a byte per element).
  uint64_t bytes() const;
};

// A weight: stored `alignment`-aligned in the module so it is used in place.
struct ConstantSpec {
  std::vector<uint8_t> data;
  uint32_t alignment = 64;  // a power of two, at most 4096
};

enum class CudaImageKind { kPtx, kCubin };

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// A CUDA kernel's launch and, in format-1.0 modules, its own image (PTX text or
// cubin bytes containing the entry `name`). Modules with ModuleSpec::cuda_images
// (format 1.1) leave `image` empty: the entry `name` is in those images. The
// kernel's parameters are the call's arguments as CUdeviceptr values in plan
// order, plus, when KernelSpec::workspace_bytes > 0, one last pointer to a device
// workspace of that size.
struct CudaKernelSpec {
  CudaImageKind kind = CudaImageKind::kPtx;
  std::vector<uint8_t> image;
  Dim3 grid;
  Dim3 block;
  uint32_t shared_memory_bytes = 0;         // dynamic shared memory per block
  uint32_t registers_per_thread = 0;        // from ptxas for the exact-arch cubin (0: not recorded)
  uint32_t static_shared_memory_bytes = 0;  // likewise
};

// One image holding every kernel of a CUDA module (format 1.1), for one
// architecture: a cubin runs on `arch` (major * 10 + minor), PTX on `arch` and
// newer. The compiler writes the cubin for the compile-time arch first, then PTX.
struct CudaImageSpec {
  CudaImageKind kind = CudaImageKind::kCubin;
  uint32_t arch = 0;
  std::vector<uint8_t> image;
};

struct KernelSpec {
  std::string name;              // the exported symbol / CUDA entry / static table name
  std::vector<uint64_t> param_bytes;  // bytes accessed through each parameter, in order
  uint64_t workspace_bytes = 0;  // scratch in agate_kernel_ctx.workspace
  bool has_cuda = false;         // required for kCuda modules
  CudaKernelSpec cuda;
  // Message of each run-time check, in program order (the kernel returns -1 - i when check i
  // fails; module.fbs Kernel.check_messages).
  std::vector<std::string> check_messages;
};

// One argument of a call.
struct ArgSpec {
  enum class Kind { kInput, kOutput, kArena, kConstant };
  Kind kind = Kind::kArena;
  uint32_t index = 0;   // input / output / constant index
  uint64_t offset = 0;  // arena offset (kArena)
  uint64_t bytes = 0;   // the bytes passed (for whole tensors: their size)

  static ArgSpec Input(uint32_t i, uint64_t bytes) { return {Kind::kInput, i, 0, bytes}; }
  static ArgSpec Output(uint32_t i, uint64_t bytes) { return {Kind::kOutput, i, 0, bytes}; }
  static ArgSpec Arena(uint64_t offset, uint64_t bytes) { return {Kind::kArena, 0, offset, bytes}; }
  static ArgSpec Constant(uint32_t i, uint64_t bytes) { return {Kind::kConstant, i, 0, bytes}; }
};

// One step of the execution plan: kernels[kernel](args...).
struct CallSpec {
  uint32_t kernel = 0;
  std::vector<ArgSpec> args;
};

// Format 2.0 dynamic shapes (module.fbs, DynamicShapes): what is dynamic about each input and
// output, and for a batch symbol the plans of the variants a run is split into.
enum class DimKind { kStatic, kSymbolic, kValueDependent };

struct SymbolSpec {
  std::string name;  // "N"
  int64_t min = 1;
  int64_t max = 1;
};

struct TensorDimsSpec {
  std::vector<DimKind> kinds;  // one per axis; only axis 0 may be kSymbolic unless the symbol is padded
  uint32_t symbol = 0;         // the SymbolSpec of a kSymbolic axis
  uint64_t shape_slot = 0;     // kValueDependent outputs: arena offset of the ndim int64 extents
  uint64_t staging = 0;        // padded symbols: arena offset of the staging buffer (module.fbs)
  std::vector<uint32_t> axis_symbols;  // padded: the symbol of each axis (empty: `symbol` for all)
};

// The plan for `extent` rows: Input/Output arguments of tensors with symbolic rows address the
// chunk of `extent` rows ([offset, offset + bytes) inside it).
struct VariantSpec {
  int64_t extent = 1;
  std::vector<CallSpec> plan;
  std::vector<int64_t> extents;  // padded: one per symbol (extent == extents[0])
};

struct DynamicShapesSpec {
  std::vector<SymbolSpec> symbols;      // one, or up to 4 padded ones
  std::vector<TensorDimsSpec> inputs;   // one per ModuleSpec::inputs
  std::vector<TensorDimsSpec> outputs;  // one per ModuleSpec::outputs
  std::vector<VariantSpec> variants;    // ascending extents from 1; ModuleSpec::plan then empty
  // Padded symbols (format 3.0): the variants are every combination of each symbol's extents,
  // each run once on staged inputs, n_s written at extent_slots[s] (module.fbs, DynamicShapes.padded).
  bool padded = false;
  std::vector<uint64_t> extent_slots;
};

struct ModuleMetadata {
  std::string compiler_version;
  std::vector<std::pair<std::string, std::string>> options;  // creation options, in order given
  // The content hash is not set here: SerializeModule computes it (content_hash.h).
};

struct ModuleSpec {
  std::string target;  // e.g. "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake"
  TargetKind target_kind = TargetKind::kHostCpu;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  uint64_t arena_bytes = 0;
  uint32_t arena_alignment = 64;  // a power of two, at most 4096
  std::vector<ConstantSpec> constants;
  std::vector<KernelSpec> kernels;
  std::vector<uint8_t> host_object;  // kHostCpu: ELF shared object bytes
  // kHostCpu (format 1.2): the CPU features the kernels may use (LLVM names, e.g. "avx2"); the
  // host runtime refuses the module on a CPU lacking one it can detect.
  std::vector<std::string> cpu_features;
  std::vector<CudaImageSpec> cuda_images;  // kCuda (format 1.1): every kernel, one image per arch
  std::vector<CallSpec> plan;
  // Workspace shared by every call: at least the largest KernelSpec::workspace_bytes
  // (SerializeModule raises it to that when smaller).
  uint64_t workspace_bytes = 0;
  // Format 1.2: KernelFingerprint (kernel_fingerprint.h) of the kernels the plan calls, which
  // the generated kernel table carries too; 0 = not recorded.
  uint64_t kernel_fingerprint = 0;
  ModuleMetadata metadata;
  // Format 2.0: set for a module with dynamic shapes (TensorSpec::shape then holds each dynamic
  // axis's upper bound). Unset: the module is written as format 1.2, as before.
  bool has_dynamic_shapes = false;
  DynamicShapesSpec dynamic_shapes;
};

}  // namespace serialize
}  // namespace agate

#endif  // AGATE_CORE_SERIALIZE_MODULE_SPEC_H_
