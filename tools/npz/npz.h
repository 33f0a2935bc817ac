// Reading and writing numpy .npy and .npz files: the command line's inputs and outputs.
//
// Follows numpy's format (NEP 1, versions 1.0-3.0): little-endian, C order arrays of
// bool, int8/16/32/64, uint8/16/32/64, float16/32/64. np.savez (stored) and
// np.savez_compressed (deflated) archives are both read; a key "x" is the entry "x.npy".
// Anything else (Fortran order, big-endian, object arrays, a truncated file) is an
// agate::Error that names the file and the entry, never a crash.
#ifndef AGATE_TOOLS_NPZ_NPZ_H_
#define AGATE_TOOLS_NPZ_NPZ_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/dtype.h"

namespace agate {
namespace npz {

// One array: its key, element type, shape (empty for a 0-d scalar) and C-order bytes.
struct Array {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t num_elements() const;
};

// Parses one .npy image (`what` names it in errors, e.g. "inputs.npz:x.npy").
Array ParseNpy(const uint8_t* bytes, size_t size, const std::string& what);
// Serializes an array as a version 1.0 .npy image.
std::vector<uint8_t> SerializeNpy(const Array& array);

// Reads every array of an .npz archive, in archive order, or the single array of an .npy file.
std::vector<Array> Load(const std::string& path);
// The same from the file's bytes; `what` names them in errors, and a lone .npy array is called
// `npy_name`.
std::vector<Array> LoadBytes(const std::vector<uint8_t>& file, const std::string& what, const std::string& npy_name);
// Writes arrays as an uncompressed .npz (or one .npy when path ends in ".npy" and there is one
// array). Written to a temporary file and renamed: a failure never leaves a partial file.
void Save(const std::string& path, const std::vector<Array>& arrays);

}  // namespace npz
}  // namespace agate

#endif  // AGATE_TOOLS_NPZ_NPZ_H_
