// WriteFileAtomically: the one way agate writes a module (or any artifact) to disk.
//
// Why: a build that is interrupted, or a disk that fills up, must never leave a
// truncated module where a runtime would load it, nor destroy the previous good
// one. The bytes go to a temporary file in the same directory, are fsync'ed, and
// the file is renamed over the target (atomic on POSIX); the directory is
// fsync'ed so the rename survives a crash.
#ifndef AGATE_CORE_SERIALIZE_WRITE_FILE_H_
#define AGATE_CORE_SERIALIZE_WRITE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace agate {
namespace serialize {

// Writes `bytes` to `path` atomically. Throws agate::Error(kIo) naming the path
// and the system error; on failure the temporary file is removed and an existing
// file at `path` is unchanged.
void WriteFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace serialize
}  // namespace agate

#endif  // AGATE_CORE_SERIALIZE_WRITE_FILE_H_
