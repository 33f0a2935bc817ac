// Without NVRTC (here: AGATE_NVRTC_LIBRARY names a file that does not exist,
// as on a machine without the CUDA toolkit), compiling for cuda fails with
// kUnavailable naming what is missing and how to provide it; generating the
// source still works.
#include <gtest/gtest.h>

#include "core/codegen/cuda/nvrtc.h"
#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

TEST(NvrtcMissingTest, CompilingNamesTheMissingLibrary) {
  EXPECT_FALSE(NvrtcAvailable());
  try {
    CompileCuda("extern \"C\" __global__ void k() {}", 80, false, "k");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable);
    EXPECT_NE(e.message().find("NVRTC"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("/nonexistent/libnvrtc.so"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("AGATE_NVRTC_LIBRARY"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace codegen
}  // namespace agate
