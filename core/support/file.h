// Whole-file reads and atomic writes for the compiler and its tools.
//
// Why atomic: a compile that fails half-way, or a crash while writing outputs, must never
// leave a partial file or clobber a user's existing good one. Writes go to a temporary
// file in the same folder, are flushed with fsync, then renamed over the target.
#ifndef AGATE_CORE_SUPPORT_FILE_H_
#define AGATE_CORE_SUPPORT_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace agate {

// Reads a whole file. Throws agate::Error (kNotFound / kIo) naming the path and the OS reason.
std::vector<uint8_t> ReadFile(const std::string& path);

// Writes `size` bytes to `path` atomically (temporary file, fsync, rename). On any failure the
// temporary file is removed, `path` is untouched, and agate::Error (kIo) names the path.
void WriteFileAtomically(const std::string& path, const void* data, size_t size);
inline void WriteFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  WriteFileAtomically(path, bytes.data(), bytes.size());
}

}  // namespace agate

#endif  // AGATE_CORE_SUPPORT_FILE_H_
