// Writes the fuzzer's seed corpus: valid modules of every kind the tests build.
// Usage: make_seed_corpus OUT...  (one module per output, in the order below)
#include <cstdio>

#include "core/serialize/serialize_module.h"
#include "core/support/file.h"
#include "runtime_minimal/cuda/testing/cuda_test_modules.h"
#include "runtime_minimal/testing/test_modules.h"

int main(int argc, char** argv) {
  using agate::serialize::TargetKind;
  namespace t = agate::testing;
  const agate::serialize::ModuleSpec specs[] = {
      t::MlpSpec(TargetKind::kMicro), t::WorkspaceSpec(TargetKind::kMicro), t::NoopChainSpec(TargetKind::kMicro, 8),
      t::MlpSpec(TargetKind::kHostCpu),     t::CudaAddSpec(t::CubinAndPtxImages()),
      // Format 2.0: a batch-variant module and a value-dependent output (Metadata.dynamic_shapes).
      t::BatchMlpSpec(TargetKind::kMicro, 4, {1, 2}), t::NonZeroSpec(TargetKind::kMicro, false),
      // Format 3.0: a padded symbol (staged inputs and outputs, an extent slot).
      t::PaddedMlpSpec(TargetKind::kMicro, 3, {2, 3}),
  };
  const int count = sizeof(specs) / sizeof(specs[0]);
  if (argc != count + 1) {
    std::fprintf(stderr, "usage: make_seed_corpus OUT x %d\n", count);
    return 2;
  }
  for (int i = 0; i < count; ++i) {
    agate::WriteFileAtomically(argv[i + 1], agate::serialize::SerializeModule(specs[i]));
  }
  return 0;
}
