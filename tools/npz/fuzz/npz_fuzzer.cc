// libFuzzer target over the .npz/.npy reader (agate run --inputs): any bytes are read as a
// file (a zip archive of .npy entries or one .npy image) and as a bare .npy image. Each read
// returns arrays or throws agate::Error; another exception (std::bad_alloc from an allocation
// above the fuzzer's -malloc_limit_mb, std::out_of_range, ...), an abort or a sanitizer report
// is a crash. The seed corpus holds stored and deflated archives and .npy images.
#include <stdint.h>

#include <vector>

#include "core/support/error.h"
#include "tools/npz/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  try {
    for (const agate::npz::Array& a : agate::npz::LoadBytes(bytes, "fuzz.npz", "fuzz")) {
      // The reader promises data of exactly the shape's size.
      if (a.data.size() != static_cast<size_t>(a.num_elements()) * a.dtype.element_bytes()) __builtin_trap();
    }
  } catch (const agate::Error&) {
  }
  try {
    agate::npz::ParseNpy(data, size, "fuzz.npy");
  } catch (const agate::Error&) {
  }
  return 0;
}
