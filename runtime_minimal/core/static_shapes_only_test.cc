// The core profile built with -DAGATE_RT_STATIC_SHAPES_ONLY (microcontrollers): a static
// module verifies as before; a format-2.0 module (which may carry dynamic shapes) is refused
// with AGATE_UNSUPPORTED saying why, never mis-run. The modules are built with the generated
// FlatBuffers builder: the serializer links the full core, which this test must not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agate/kernel_abi.h"
#include "agate/runtime.h"
#include "runtime_minimal/core/verify.h"

namespace agate {
namespace {

std::string Message() { return agate_last_error_message(); }

// An empty module (no tensors, kernels or calls) of the given format.
std::vector<uint8_t> EmptyModule(uint32_t major, uint32_t minor) {
  flatbuffers::FlatBufferBuilder b;
  auto target = b.CreateString("c -mcpu=cortex-m4");
  auto tensors = b.CreateVector(std::vector<flatbuffers::Offset<fb::Tensor>>());
  auto kernels = b.CreateVector(std::vector<flatbuffers::Offset<fb::Kernel>>());
  auto plan = b.CreateVector(std::vector<flatbuffers::Offset<fb::Call>>());
  fb::FinishModuleBuffer(b, fb::CreateModule(b, major, minor, target, fb::TargetKind::Micro, AGATE_KERNEL_ABI_VERSION,
                                             tensors, tensors, 0, 64, 0, 0, kernels, 0, plan));
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

TEST(StaticShapesOnlyTest, StaticModuleVerifiesAndFormat2IsUnsupported) {
  size_t bytes = 0;
  const std::vector<uint8_t> static_module = EmptyModule(1, 2);
  ASSERT_EQ(agate_module_in_place_bytes(static_module.data(), static_module.size(), &bytes), AGATE_OK) << Message();
  const std::vector<uint8_t> dynamic_module = EmptyModule(2, 0);
  EXPECT_EQ(agate_module_in_place_bytes(dynamic_module.data(), dynamic_module.size(), &bytes), AGATE_UNSUPPORTED);
  EXPECT_EQ(Message(), "module format 2.0 may have dynamic shapes; this runtime was built with "
                       "AGATE_RT_STATIC_SHAPES_ONLY");
  const std::vector<uint8_t> padded_module = EmptyModule(3, 0);  // a padded symbol (format 3.0)
  EXPECT_EQ(agate_module_in_place_bytes(padded_module.data(), padded_module.size(), &bytes), AGATE_UNSUPPORTED);
  EXPECT_EQ(Message(), "module format 3.0 may have dynamic shapes; this runtime was built with "
                       "AGATE_RT_STATIC_SHAPES_ONLY");
  const std::vector<uint8_t> future = EmptyModule(4, 0);
  EXPECT_EQ(agate_module_in_place_bytes(future.data(), future.size(), &bytes), AGATE_VERSION_MISMATCH);
}

}  // namespace
}  // namespace agate
