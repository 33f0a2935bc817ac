#include "core/serialize/serialize_module.h"

#include <cstring>

#include "core/serialize/content_hash.h"
#include "core/serialize/module_metadata.h"
#include "agate/kernel_abi.h"
#include "core/support/error.h"
#include "runtime_minimal/core/message.h"
#include "runtime_minimal/core/verify.h"
#include "runtime_minimal/cuda/cuda_verify.h"
#include "runtime_minimal/schema/module_generated.h"

namespace agate {
namespace serialize {
namespace {

constexpr char kHashPrefix[] = "fnv1a64:";
constexpr char kHashPlaceholder[] = "fnv1a64:0000000000000000";

bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

fb::DType ToFb(const ir::DType& d) {
  return fb::DType(static_cast<fb::ElemCode>(d.code()), static_cast<uint8_t>(d.bits()), static_cast<uint16_t>(d.lanes()));
}

fb::ArgKind ToFb(ArgSpec::Kind kind) {
  switch (kind) {
    case ArgSpec::Kind::kInput: return fb::ArgKind::Input;
    case ArgSpec::Kind::kOutput: return fb::ArgKind::Output;
    case ArgSpec::Kind::kArena: return fb::ArgKind::Arena;
    case ArgSpec::Kind::kConstant: return fb::ArgKind::Constant;
  }
  AGATE_THROW(kInternal) << "unknown ArgSpec kind";
}

fb::TargetKind ToFb(TargetKind kind) {
  switch (kind) {
    case TargetKind::kHostCpu: return fb::TargetKind::HostCpu;
    case TargetKind::kCuda: return fb::TargetKind::Cuda;
    case TargetKind::kMicro: return fb::TargetKind::Micro;
  }
  AGATE_THROW(kInternal) << "unknown TargetKind";
}

fb::CudaImageKind ToFb(CudaImageKind kind) {
  return kind == CudaImageKind::kPtx ? fb::CudaImageKind::Ptx : fb::CudaImageKind::Cubin;
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::CudaImage>>> BuildCudaImages(
    flatbuffers::FlatBufferBuilder& b, const std::vector<CudaImageSpec>& images) {
  if (images.empty()) return 0;
  std::vector<flatbuffers::Offset<fb::CudaImage>> out;
  for (const CudaImageSpec& image : images) {
    // 16-byte aligned: the driver reads a cubin (an ELF file) in place.
    b.ForceVectorAlignment(image.image.size(), 1, 16);
    out.push_back(fb::CreateCudaImage(b, ToFb(image.kind), image.arch, b.CreateVector(image.image),
                                      rt::Fnv1a64(image.image.data(), image.image.size())));
  }
  return b.CreateVector(out);
}

// What FlatBuffers itself cannot encode (it would assert), checked up front.
void RequireEncodable(const ModuleSpec& spec) {
  for (size_t i = 0; i < spec.constants.size(); ++i) {
    const uint32_t a = spec.constants[i].alignment;
    AGATE_REQUIRE(IsPowerOfTwo(a) && a <= rt::kMaxAlignment, kInvalidArgument)
        << "constant " << i << " alignment " << a << " is not a power of two up to " << rt::kMaxAlignment;
  }
}

// A CUDA module's kernels have launch geometry and an image to run from: their
// own (format 1.0) or the module's images (format 1.1, the kernel's own empty).
// The compiler checks what it writes; the cuda runtime profile checks what it loads.
void RequireCudaPayload(const ModuleSpec& spec) {
  if (spec.target_kind != TargetKind::kCuda) return;
  for (const CudaImageSpec& image : spec.cuda_images) {
    AGATE_REQUIRE(!image.image.empty() && image.arch > 0, kInvalidArgument)
        << "CUDA image for arch " << image.arch << " is empty";
  }
  for (size_t i = 0; i < spec.kernels.size(); ++i) {
    const KernelSpec& k = spec.kernels[i];
    AGATE_REQUIRE(k.has_cuda, kInvalidArgument)
        << "kernel " << i << " '" << k.name << "' has no CUDA launch description (grid, block, image) in a CUDA module";
    if (spec.cuda_images.empty()) {
      AGATE_REQUIRE(!k.cuda.image.empty(), kInvalidArgument)
          << "kernel " << i << " '" << k.name << "' has no CUDA image: neither its own (format 1.0) nor the module's (1.1)";
    } else {
      AGATE_REQUIRE(k.cuda.image.empty(), kInvalidArgument)
          << "kernel " << i << " '" << k.name << "' has an image of its own in a module with Module.cuda_images "
          << "(format 1.1: the module's images hold every kernel)";
    }
    const Dim3 &g = k.cuda.grid, &b = k.cuda.block;
    AGATE_REQUIRE(g.x && g.y && g.z && b.x && b.y && b.z, kInvalidArgument)
        << "kernel " << i << " '" << k.name << "' has an empty launch grid or block";
  }
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>> BuildTensors(
    flatbuffers::FlatBufferBuilder& b, const std::vector<TensorSpec>& tensors) {
  std::vector<flatbuffers::Offset<fb::Tensor>> out;
  for (const TensorSpec& t : tensors) {
    const fb::DType dtype = ToFb(t.dtype);
    out.push_back(fb::CreateTensor(b, b.CreateString(t.name), &dtype, b.CreateVector(t.shape)));
  }
  return b.CreateVector(out);
}

// module.fbs Kernel.check_messages: each message ended by a NUL byte. A NUL inside a message
// (a node named so) becomes '?', so that message i stays the i-th.
std::string JoinCheckMessages(const std::vector<std::string>& messages) {
  std::string joined;
  for (const std::string& message : messages) {
    for (char c : message) joined.push_back(c == '\0' ? '?' : c);
    joined.push_back('\0');
  }
  return joined;
}

flatbuffers::Offset<fb::Kernel> BuildKernel(flatbuffers::FlatBufferBuilder& b, const KernelSpec& k) {
  flatbuffers::Offset<fb::CudaKernel> cuda = 0;
  if (k.has_cuda) {
    const fb::Dim3 grid(k.cuda.grid.x, k.cuda.grid.y, k.cuda.grid.z);
    const fb::Dim3 block(k.cuda.block.x, k.cuda.block.y, k.cuda.block.z);
    cuda = fb::CreateCudaKernel(b, ToFb(k.cuda.kind), b.CreateVector(k.cuda.image), &grid, &block,
                                k.cuda.shared_memory_bytes, rt::Fnv1a64(k.cuda.image.data(), k.cuda.image.size()),
                                k.cuda.registers_per_thread, k.cuda.static_shared_memory_bytes);
  }
  flatbuffers::Offset<flatbuffers::String> checks = 0;
  if (!k.check_messages.empty()) checks = b.CreateString(JoinCheckMessages(k.check_messages));
  return fb::CreateKernel(b, b.CreateString(k.name), k.workspace_bytes, cuda, b.CreateVector(k.param_bytes), checks);
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Call>>> BuildPlan(flatbuffers::FlatBufferBuilder& b,
                                                                               const std::vector<CallSpec>& calls) {
  std::vector<flatbuffers::Offset<fb::Call>> plan;
  for (const CallSpec& call : calls) {
    std::vector<fb::Arg> args;
    for (const ArgSpec& a : call.args) args.emplace_back(ToFb(a.kind), a.index, a.offset, a.bytes);
    plan.push_back(fb::CreateCall(b, call.kernel, b.CreateVectorOfStructs(args)));
  }
  return b.CreateVector(plan);
}

fb::DimKind ToFb(DimKind kind) {
  switch (kind) {
    case DimKind::kStatic: return fb::DimKind::Static;
    case DimKind::kSymbolic: return fb::DimKind::Symbolic;
    case DimKind::kValueDependent: return fb::DimKind::ValueDependent;
  }
  AGATE_THROW(kInternal) << "unknown DimKind";
}

// The dynamic shapes (format 2.0; 3.0 when padded), in the metadata buffer `b`.
flatbuffers::Offset<fb::DynamicShapes> BuildDynamicShapes(flatbuffers::FlatBufferBuilder& b, const DynamicShapesSpec& d) {
  std::vector<flatbuffers::Offset<fb::Symbol>> symbols;
  for (const SymbolSpec& s : d.symbols) symbols.push_back(fb::CreateSymbol(b, b.CreateString(s.name), s.min, s.max));
  auto dims = [&](const std::vector<TensorDimsSpec>& tensors) {
    std::vector<flatbuffers::Offset<fb::TensorDims>> out;
    for (const TensorDimsSpec& t : tensors) {
      std::vector<uint8_t> kinds;
      for (DimKind k : t.kinds) kinds.push_back(static_cast<uint8_t>(ToFb(k)));
      auto axis_symbols = t.axis_symbols.empty() ? 0 : b.CreateVector(t.axis_symbols);
      out.push_back(fb::CreateTensorDims(b, b.CreateVector(reinterpret_cast<const fb::DimKind*>(kinds.data()), kinds.size()),
                                         t.symbol, t.shape_slot, t.staging, axis_symbols));
    }
    return b.CreateVector(out);
  };
  auto inputs = dims(d.inputs);
  auto outputs = dims(d.outputs);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Variant>>> variants = 0;
  if (!d.variants.empty()) {
    std::vector<flatbuffers::Offset<fb::Variant>> out;
    for (const VariantSpec& v : d.variants) {
      auto extents = v.extents.empty() ? 0 : b.CreateVector(v.extents);
      out.push_back(fb::CreateVariant(b, v.extent, BuildPlan(b, v.plan), extents));
    }
    variants = b.CreateVector(out);
  }
  auto extent_slots = d.extent_slots.empty() ? 0 : b.CreateVector(d.extent_slots);
  return fb::CreateDynamicShapes(b, b.CreateVector(symbols), inputs, outputs, variants, d.padded, extent_slots);
}

// The metadata as its own FlatBuffer (nested in Module.metadata), with the hash placeholder.
std::vector<uint8_t> BuildMetadata(const ModuleSpec& spec) {
  const ModuleMetadata& metadata = spec.metadata;
  flatbuffers::FlatBufferBuilder b(256);
  flatbuffers::Offset<fb::DynamicShapes> dynamic_shapes = 0;
  if (spec.has_dynamic_shapes) {
    b.ForceDefaults(true);
    dynamic_shapes = BuildDynamicShapes(b, spec.dynamic_shapes);
    b.ForceDefaults(false);
  }
  std::vector<flatbuffers::Offset<fb::Option>> options;
  for (const auto& kv : metadata.options) {
    options.push_back(fb::CreateOption(b, b.CreateString(kv.first), b.CreateString(kv.second)));
  }
  b.Finish(fb::CreateMetadata(b, b.CreateString(metadata.compiler_version), b.CreateVector(options),
                              b.CreateString(kHashPlaceholder), dynamic_shapes));
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

std::vector<uint8_t> Build(const ModuleSpec& spec) {
  RequireEncodable(spec);
  // Sized up front for the constants and the object: a builder that grows by
  // doubling copies a 500 MB model's weights several times into fresh pages.
  size_t estimate = 1 << 20;
  for (const ConstantSpec& c : spec.constants) estimate += c.data.size() + c.alignment + 64;
  estimate += spec.host_object.size() + 64;
  for (const KernelSpec& k : spec.kernels) estimate += k.cuda.image.size() + 256;
  for (const CudaImageSpec& image : spec.cuda_images) estimate += image.image.size() + 64;
  flatbuffers::FlatBufferBuilder b(estimate);
  // Scalars equal to their defaults are written too: every module has the same
  // fields, and tools can patch a field in place.
  b.ForceDefaults(true);
  // Constants first, each aligned so that the module mapped at an aligned address
  // holds them in place.
  std::vector<flatbuffers::Offset<fb::Constant>> constants;
  for (const ConstantSpec& c : spec.constants) {
    b.ForceVectorAlignment(c.data.size(), 1, c.alignment);
    constants.push_back(fb::CreateConstant(b, b.CreateVector(c.data), c.alignment));
  }
  flatbuffers::Offset<fb::HostObject> host_object = 0;
  if (!spec.host_object.empty()) {
    b.ForceVectorAlignment(spec.host_object.size(), 1, 16);
    host_object = fb::CreateHostObject(b, fb::ObjectFormat::ElfSharedObject, b.CreateVector(spec.host_object),
                                       rt::Fnv1a64(spec.host_object.data(), spec.host_object.size()));
  }
  auto cuda_images = BuildCudaImages(b, spec.cuda_images);
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  uint64_t workspace_bytes = spec.workspace_bytes;
  for (const KernelSpec& k : spec.kernels) {
    kernels.push_back(BuildKernel(b, k));
    if (k.workspace_bytes > workspace_bytes) workspace_bytes = k.workspace_bytes;
  }
  auto plan = BuildPlan(b, spec.plan);
  const std::vector<uint8_t> metadata_bytes = BuildMetadata(spec);
  b.ForceVectorAlignment(metadata_bytes.size(), 1, 8);
  auto metadata = b.CreateVector(metadata_bytes);
  auto inputs = BuildTensors(b, spec.inputs);
  auto outputs = BuildTensors(b, spec.outputs);
  std::string feature_list;
  for (const std::string& feature : spec.cpu_features) feature_list += (feature_list.empty() ? "" : " ") + feature;
  auto cpu_features = spec.cpu_features.empty() ? 0 : b.CreateString(feature_list);
  const uint32_t major = !spec.has_dynamic_shapes          ? rt::kStaticFormatMajor
                         : spec.dynamic_shapes.padded ? rt::kPaddedFormatMajor
                                                      : rt::kDynamicFormatMajor;
  bool check_messages = false;
  for (const KernelSpec& k : spec.kernels) check_messages |= !k.check_messages.empty();
  const uint32_t minor = spec.has_dynamic_shapes
                             ? (check_messages ? rt::kCheckMessagesFormatMinor : rt::kFormatMinor)
                             : (check_messages ? rt::kCheckMessagesStaticFormatMinor : rt::kStaticFormatMinor);
  auto module = fb::CreateModule(b, major, minor, b.CreateString(spec.target),
                                 ToFb(spec.target_kind), AGATE_KERNEL_ABI_VERSION, inputs, outputs, spec.arena_bytes,
                                 spec.arena_alignment, workspace_bytes, b.CreateVector(constants),
                                 b.CreateVector(kernels), host_object, plan, metadata,
                                 cuda_images, cpu_features, spec.kernel_fingerprint);
  fb::FinishModuleBuffer(b, module);
  std::vector<uint8_t> bytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());

  // Replace the placeholder digits with the hash of the buffer that holds them.
  const size_t digits = static_cast<size_t>(
      reinterpret_cast<const uint8_t*>(ReadModuleMetadata(bytes)->content_hash()->c_str()) - bytes.data() +
      strlen(kHashPrefix));
  const std::string hash = ComputeContentHash(bytes);
  std::memcpy(bytes.data() + digits, hash.data() + strlen(kHashPrefix), 16);
  return bytes;
}

}  // namespace

uint64_t TensorSpec::bytes() const {
  uint64_t n = static_cast<uint64_t>(dtype.element_bytes()) * static_cast<uint64_t>(dtype.lanes());
  for (int64_t extent : shape) n *= static_cast<uint64_t>(extent);
  return n;
}

std::vector<uint8_t> SerializeModuleUnverifiedForTesting(const ModuleSpec& spec) { return Build(spec); }

std::vector<uint8_t> SerializeModule(const ModuleSpec& spec) {
  RequireCudaPayload(spec);
  std::vector<uint8_t> bytes = Build(spec);
  const fb::Module* module = nullptr;
  rt::ModuleFacts facts;
  agate_status_t status = rt::VerifyModule(bytes.data(), bytes.size(), &module, &facts);
  if (status == AGATE_OK) status = rt::VerifyCudaPayload(*module);
  if (status != AGATE_OK) {
    const StatusCode code = status == AGATE_OUT_OF_RANGE ? StatusCode::kOutOfRange : StatusCode::kInvalidArgument;
    throw Error(code, std::string("module spec for target '") + spec.target + "' is invalid: " + rt::LastMessage());
  }
  return bytes;
}

}  // namespace serialize
}  // namespace agate
