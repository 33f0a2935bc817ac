#include "core/serialize/write_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "core/support/error.h"

namespace agate {
namespace serialize {
namespace {

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Removes the temporary file unless Release() was called (after the rename).
class TempFile {
 public:
  explicit TempFile(const std::string& target) : name_(target + ".tmp.XXXXXX") {
    fd_ = mkstemp(&name_[0]);
    AGATE_REQUIRE(fd_ >= 0, kIo) << "cannot create a temporary file next to '" << target
                                 << "': " << std::strerror(errno);
  }
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
    if (!released_) unlink(name_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  // Closes the descriptor, reporting a failed close (a delayed write error).
  void Close(const std::string& target) {
    const int fd = fd_;
    fd_ = -1;
    AGATE_REQUIRE(close(fd) == 0, kIo) << "cannot write '" << target << "': " << std::strerror(errno);
  }
  void Release() { released_ = true; }

 private:
  std::string name_;
  int fd_ = -1;
  bool released_ = false;
};

void WriteAll(int fd, const std::vector<uint8_t>& bytes, const std::string& target) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    AGATE_REQUIRE(n > 0, kIo) << "cannot write '" << target << "' (" << done << " of " << bytes.size()
                              << " bytes written): " << std::strerror(n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void WriteFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  AGATE_REQUIRE(!path.empty(), kInvalidArgument) << "cannot write a file with an empty path";
  TempFile temp(path);
  WriteAll(temp.fd(), bytes, path);
  AGATE_REQUIRE(fchmod(temp.fd(), 0644) == 0, kIo) << "cannot set the mode of '" << temp.name()
                                                   << "': " << std::strerror(errno);
  AGATE_REQUIRE(fsync(temp.fd()) == 0, kIo) << "cannot flush '" << path << "' to disk: " << std::strerror(errno);
  temp.Close(path);
  AGATE_REQUIRE(std::rename(temp.name().c_str(), path.c_str()) == 0, kIo)
      << "cannot rename '" << temp.name() << "' to '" << path << "': " << std::strerror(errno);
  temp.Release();
  // Make the rename itself durable.
  const int dir = open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
}

}  // namespace serialize
}  // namespace agate
