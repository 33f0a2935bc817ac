#include "runtime_minimal/cuda/cuda_verify.h"

#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {
namespace {

// Module.cuda_images (format 1.1): only in CUDA modules; each a known kind, an
// image, a plausible compute capability, and no two for the same kind and arch.
agate_status_t CheckCudaImages(const fb::Module& m) {
  const auto* images = m.cuda_images();
  if (images == nullptr || images->size() == 0) return AGATE_OK;
  if (m.target_kind() != fb::TargetKind::Cuda) {
    return Fail(AGATE_CORRUPT) << "module carries CUDA images but targets '" << m.target()->c_str() << "'";
  }
  if (images->size() > kMaxCudaImages) {
    return Fail(AGATE_CORRUPT) << "module has " << images->size() << " CUDA images (at most " << kMaxCudaImages << ")";
  }
  for (flatbuffers::uoffset_t i = 0; i < images->size(); ++i) {
    const fb::CudaImage& image = *images->Get(i);
    if (image.kind() > fb::CudaImageKind::MAX) {
      return Fail(AGATE_CORRUPT) << "CUDA image " << i << " has unknown kind " << static_cast<uint32_t>(image.kind());
    }
    if (image.image()->size() == 0) return Fail(AGATE_CORRUPT) << "CUDA image " << i << " is empty";
    // Compute capability major.minor as major * 10 + minor, minor a single digit.
    if (image.arch() < 10 || image.arch() > 999) {
      return Fail(AGATE_CORRUPT) << "CUDA image " << i << " is for arch " << image.arch()
                                 << ", which is no compute capability (10..999: major * 10 + minor)";
    }
    for (flatbuffers::uoffset_t j = 0; j < i; ++j) {
      if (images->Get(j)->kind() == image.kind() && images->Get(j)->arch() == image.arch()) {
        return Fail(AGATE_CORRUPT) << "CUDA images " << j << " and " << i << " are both "
                                   << (image.kind() == fb::CudaImageKind::Cubin ? "cubin sm_" : "PTX compute_")
                                   << image.arch();
      }
    }
  }
  return AGATE_OK;
}

// A CUDA kernel: its image (its own, format 1.0, or the module's, 1.1: one or
// the other) and a launch every CUDA GPU accepts (CUDA's fixed limits: at most
// 1024 threads per block, block z <= 64, grid y and z <= 65535).
agate_status_t CheckCudaKernel(const fb::Module& m, const fb::Kernel& kernel, uint32_t k) {
  const fb::CudaKernel* cuda = kernel.cuda();
  if (cuda == nullptr) {
    return Fail(AGATE_NOT_FOUND) << "kernel " << k << " '" << kernel.name()->c_str()
                                 << "' has no CUDA launch description in a CUDA module";
  }
  const bool module_images = m.cuda_images() != nullptr && m.cuda_images()->size() != 0;
  const bool own_image = cuda->image()->size() != 0;
  if (!own_image && !module_images) {
    return Fail(AGATE_NOT_FOUND) << "kernel " << k << " '" << kernel.name()->c_str()
                                 << "' has no CUDA image: neither its own (format 1.0) nor the module's (1.1)";
  }
  if (own_image && module_images) {
    return Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str()
                               << "' has its own CUDA image although the module carries module-wide images";
  }
  if (own_image && cuda->kind() > fb::CudaImageKind::MAX) {
    return Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str() << "' has an unknown CUDA image kind "
                               << static_cast<uint32_t>(cuda->kind());
  }
  const fb::Dim3* g = cuda->grid();
  const fb::Dim3* b = cuda->block();
  if (g->x() == 0 || g->y() == 0 || g->z() == 0 || b->x() == 0 || b->y() == 0 || b->z() == 0) {
    return Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str()
                               << "' has an empty launch grid or block";
  }
  const uint64_t threads = uint64_t{b->x()} * b->y() * b->z();
  if (threads > 1024 || b->z() > 64 || g->x() > 0x7fffffffu || g->y() > 65535 || g->z() > 65535) {
    return Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str() << "' launches grid (" << g->x()
                               << ", " << g->y() << ", " << g->z() << ") of blocks (" << b->x() << ", " << b->y()
                               << ", " << b->z() << "), beyond CUDA's limits";
  }
  if (cuda->registers_per_thread() > 255 || cuda->static_shared_memory_bytes() > 48 * 1024) {
    return Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str() << "' claims "
                               << cuda->registers_per_thread() << " registers per thread and "
                               << cuda->static_shared_memory_bytes()
                               << " bytes of static shared memory (CUDA allows 255 and 48 KiB)";
  }
  return AGATE_OK;
}

// Kernels may access any parameter 16 bytes at a time; a misaligned address
// would fault on the GPU and leave its context unusable, so it is refused here.
// (Everything else a kernel receives comes from cuMemAlloc, 256-byte aligned.)
agate_status_t CheckArenaAlignment(const fb::Module& m) {
  for (flatbuffers::uoffset_t c = 0; c < m.plan()->size(); ++c) {
    const auto& args = *m.plan()->Get(c)->args();
    for (flatbuffers::uoffset_t a = 0; a < args.size(); ++a) {
      if (args.Get(a)->kind() == fb::ArgKind::Arena && args.Get(a)->offset() % 16 != 0) {
        return Fail(AGATE_CORRUPT) << "call " << c << " argument " << a << " is at arena offset "
                                   << args.Get(a)->offset() << ", not 16-byte aligned as CUDA kernels need";
      }
    }
  }
  return AGATE_OK;
}

}  // namespace

agate_status_t VerifyCudaPayload(const fb::Module& m) {
  agate_status_t status = CheckCudaImages(m);
  if (status != AGATE_OK || m.target_kind() != fb::TargetKind::Cuda) return status;
  for (flatbuffers::uoffset_t k = 0; k < m.kernels()->size(); ++k) {
    status = CheckCudaKernel(m, *m.kernels()->Get(k), k);
    if (status != AGATE_OK) return status;
  }
  return CheckArenaAlignment(m);
}

}  // namespace rt
}  // namespace agate
