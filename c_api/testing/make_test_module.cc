// Writes the MLP host module with a matching input and expected output, for the
// C99 consumer test. Usage: make_test_module MODULE INPUT EXPECTED
#include <cstdio>
#include <vector>

#include "core/serialize/serialize_module.h"
#include "core/support/file.h"
#include "runtime_minimal/testing/test_modules.h"

namespace {
std::vector<uint8_t> Bytes(const std::vector<float>& v) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(float));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_test_module MODULE INPUT EXPECTED\n");
    return 2;
  }
  using agate::serialize::TargetKind;
  agate::WriteFileAtomically(argv[1], agate::serialize::SerializeModule(
                                                     agate::testing::MlpSpec(TargetKind::kHostCpu)));
  const std::vector<float> x = agate::testing::MlpInput(11);
  agate::WriteFileAtomically(argv[2], Bytes(x));
  agate::WriteFileAtomically(argv[3], Bytes(agate::testing::MlpReference(x)));
  return 0;
}
