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

// A file of a folder written by WriteFolderAtomically: a plain name (no '/') and its bytes.
struct FolderFile {
  std::string name;
  std::string contents;
};

// Writes `files` as the folder `path`, all or nothing: into a temporary folder beside it,
// then renamed to `path`. An existing `path` is replaced only when it is empty or a folder
// this function wrote before (it holds the marker file `marker`, which is written too);
// anything else there is refused with agate::Error (kInvalidArgument) and left as it is. On
// any failure nothing is left behind and `path` is untouched; agate::Error (kIo) names it.
void WriteFolderAtomically(const std::string& path, const std::vector<FolderFile>& files, const std::string& marker);

}  // namespace agate

#endif  // AGATE_CORE_SUPPORT_FILE_H_
