// Writes the importer and compiler fuzzers' seed corpus: each seed model, serialized, to the
// paths given (in the order of SeedModels()), and weights.bin next to them.
#include <cstdio>
#include <fstream>
#include <string>

#include "frontends/onnx/fuzz/seed_models.h"

int main(int argc, char** argv) {
  auto seeds = agate::onnx_frontend::SeedModels();
  if (argc - 1 != static_cast<int>(seeds.size())) {
    std::fprintf(stderr, "usage: make_seed_corpus OUT.onnx x %zu\n", seeds.size());
    return 2;
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(argv[i + 1], std::ios::binary);
    out << seeds[i].second.SerializeAsString();
    if (!out) return 1;
  }
  return 0;
}
