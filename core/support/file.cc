#include "core/support/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/support/error.h"

namespace agate {
namespace {

std::string OsReason() { return std::strerror(errno); }

// Closes the descriptor on every exit path.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

std::string ParentFolder(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::vector<uint8_t> ReadFile(const std::string& path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) AGATE_THROW(kNotFound) << "cannot open '" << path << "': no such file";
    AGATE_THROW(kIo) << "cannot open '" << path << "': " << OsReason();
  }
  struct stat info;
  if (::fstat(fd.get(), &info) != 0) AGATE_THROW(kIo) << "cannot stat '" << path << "': " << OsReason();
  if (S_ISDIR(info.st_mode)) AGATE_THROW(kInvalidArgument) << "'" << path << "' is a folder, not a file";
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(info.st_size));
  uint8_t buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) AGATE_THROW(kIo) << "cannot read '" << path << "': " << OsReason();
    if (n == 0) break;
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  return bytes;
}

void WriteFileAtomically(const std::string& path, const void* data, size_t size) {
  std::string temp = path + ".tmp.XXXXXX";
  FileDescriptor fd(::mkstemp(&temp[0]));
  if (fd.get() < 0) {
    AGATE_THROW(kIo) << "cannot write '" << path << "': cannot create a temporary file in '" << ParentFolder(path)
                     << "': " << OsReason();
  }
  auto fail = [&](const char* step) {
    std::string reason = OsReason();
    ::unlink(temp.c_str());
    AGATE_THROW(kIo) << "cannot write '" << path << "': " << step << " failed: " << reason;
  };
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(fd.get(), bytes + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    written += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; give the file the permissions a normal create would (0666 & ~umask).
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd.get(), 0666 & ~mask) != 0) fail("chmod");
  if (::fsync(fd.get()) != 0) fail("fsync");
  if (::close(fd.release()) != 0) fail("close");
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("rename");
  // Make the rename itself durable: a crash now must not bring the old file back.
  FileDescriptor dir(::open(ParentFolder(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());
}

}  // namespace agate
