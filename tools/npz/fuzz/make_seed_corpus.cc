// Writes the npz fuzzer's seed corpus: a stored .npz of several dtypes and ranks (np.savez's
// layout, written by npz::Save), and a .npy image (the deflated archives come from testdata/).
#include <cstdio>
#include <string>

#include "tools/npz/npz.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seed_corpus OUT.npz OUT.npy\n");
    return 2;
  }
  using agate::npz::Array;
  Array f{"x", agate::ir::DType::Float(32), {2, 3}, std::vector<uint8_t>(24, 0x3f)};
  Array i{"ids", agate::ir::DType::Int(64), {4}, std::vector<uint8_t>(32, 1)};
  Array b{"mask", agate::ir::DType::Bool(), {}, std::vector<uint8_t>(1, 1)};
  Array h{"half", agate::ir::DType::Float(16), {1, 2, 2}, std::vector<uint8_t>(8, 0x3c)};
  agate::npz::Save(argv[1], {f, i, b, h});
  agate::npz::Save(argv[2], {f});
  return 0;
}
