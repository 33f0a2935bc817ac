// make_cuda_test_module OUT.agm [1.0]: writes the y = (x + c) + x CUDA test module
// (cuda_test_modules.h: float32[256] input "x", output "y", c[i] = i / 2) with
// module-wide images (cubin sm_80, PTX compute_75), or with "1.0" the kernel's
// own PTX image, for tests outside C++ (command line, bindings).
#include <cstdio>
#include <string>

#include "core/serialize/serialize_module.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "runtime_minimal/cuda/testing/cuda_test_modules.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::string(argv[2]) != "1.0")) {
    std::fprintf(stderr, "usage: %s OUT.agm [1.0]\n", argv[0]);
    return 2;
  }
  try {
    const bool per_kernel = argc == 3;
    agate::WriteFileAtomically(argv[1], agate::serialize::SerializeModule(agate::testing::CudaAddSpec(
                                            per_kernel ? std::vector<agate::serialize::CudaImageSpec>{}
                                                       : agate::testing::CubinAndPtxImages())));
  } catch (const agate::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
