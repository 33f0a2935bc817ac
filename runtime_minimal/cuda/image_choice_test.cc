// Which image a GPU loads, for every combination of module images and device
// architectures the rule distinguishes (image_choice.h).
#include "runtime_minimal/cuda/image_choice.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agate/runtime.h"

namespace agate {
namespace rt {
namespace {

// The chosen order as "cubin80 ptx75 ..." for readable expectations.
std::string Order(const std::vector<CudaImageRef>& images, uint32_t device_arch) {
  std::vector<uint32_t> order(images.size() + 1);
  const uint32_t n = OrderCudaImages(images.data(), static_cast<uint32_t>(images.size()), device_arch, order.data());
  std::string text;
  for (uint32_t i = 0; i < n; ++i) {
    const CudaImageRef& image = images[order[i]];
    text += (i ? " " : "") + std::string(image.cubin ? "cubin" : "ptx") + std::to_string(image.arch);
  }
  return text.empty() ? "none" : text;
}

const CudaImageRef Cubin(uint32_t arch) { return CudaImageRef{true, arch}; }
const CudaImageRef Ptx(uint32_t arch) { return CudaImageRef{false, arch}; }

TEST(ImageChoiceTest, TheCompilersPairOnEveryDevice) {
  // What `agate compile --target "cuda -arch=sm_80"` writes: cubin sm_80, then PTX compute_80.
  const std::vector<CudaImageRef> images = {Cubin(80), Ptx(80)};
  EXPECT_EQ(Order(images, 75), "none");                  // older GPU: nothing runs
  EXPECT_EQ(Order(images, 80), "cubin80 ptx80");         // exact arch: the cubin, no JIT
  EXPECT_EQ(Order(images, 86), "ptx80 cubin80");         // newer minor: PTX, then the binary-compatible cubin
  EXPECT_EQ(Order(images, 89), "ptx80 cubin80");
  EXPECT_EQ(Order(images, 90), "ptx80");                 // newer major: only PTX
  EXPECT_EQ(Order(images, 100), "ptx80");
  EXPECT_EQ(Order(images, 120), "ptx80");
}

TEST(ImageChoiceTest, ExactCubinFirstThenTheHighestPtxNotAboveTheDevice) {
  const std::vector<CudaImageRef> images = {Ptx(70), Cubin(90), Ptx(80), Cubin(80), Ptx(90)};
  EXPECT_EQ(Order(images, 90), "cubin90 ptx90 ptx80 ptx70");
  EXPECT_EQ(Order(images, 89), "ptx80 ptx70 cubin80");
  EXPECT_EQ(Order(images, 80), "cubin80 ptx80 ptx70");
  EXPECT_EQ(Order(images, 75), "ptx70");
  EXPECT_EQ(Order(images, 70), "ptx70");
  EXPECT_EQ(Order(images, 61), "none");
  EXPECT_EQ(Order(images, 120), "ptx90 ptx80 ptx70");
}

TEST(ImageChoiceTest, CubinsOnlyRunOnTheirMajorAtTheirMinorOrNewer) {
  const std::vector<CudaImageRef> images = {Cubin(86), Cubin(80), Cubin(90)};
  EXPECT_EQ(Order(images, 80), "cubin80");
  EXPECT_EQ(Order(images, 86), "cubin86 cubin80");
  EXPECT_EQ(Order(images, 87), "cubin86 cubin80");
  EXPECT_EQ(Order(images, 89), "cubin86 cubin80");
  EXPECT_EQ(Order(images, 90), "cubin90");
  EXPECT_EQ(Order(images, 100), "none");
  EXPECT_EQ(Order(images, 75), "none");
}

TEST(ImageChoiceTest, PtxOnly) {
  const std::vector<CudaImageRef> images = {Ptx(90)};
  EXPECT_EQ(Order(images, 80), "none");
  EXPECT_EQ(Order(images, 90), "ptx90");
  EXPECT_EQ(Order(images, 103), "ptx90");
  EXPECT_EQ(Order({}, 90), "none");
}

TEST(ImageChoiceTest, TheListNamesEveryImage) {
  const std::vector<CudaImageRef> images = {Cubin(90), Ptx(80)};
  agate_status_t status = Fail(AGATE_UNSUPPORTED);
  {
    Message m = Fail(AGATE_UNSUPPORTED);
    AppendCudaImageList(m, images.data(), 2);
    status = m;
  }
  EXPECT_EQ(status, AGATE_UNSUPPORTED);
  EXPECT_STREQ(LastMessage(), "cubin sm_90, PTX compute_80");
}

}  // namespace
}  // namespace rt
}  // namespace agate
