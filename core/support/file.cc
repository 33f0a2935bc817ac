#include "core/support/file.h"

#include <dirent.h>
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

namespace {

// Writes every byte to an open descriptor; false (errno set) on failure.
bool WriteAll(int fd, const uint8_t* bytes, size_t size) {
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(fd, bytes + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void WriteFileAtomically(const std::string& path, const void* data, size_t size) {
  // A device or a pipe (-o /dev/null, /dev/stdout, a FIFO) is written in place: renaming a
  // temporary file over it would replace the device node itself with a regular file (it did:
  // `agate compile -o /dev/null` left the machine without a /dev/null).
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode) && !S_ISDIR(existing.st_mode)) {
    FileDescriptor out(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (out.get() < 0 || !WriteAll(out.get(), static_cast<const uint8_t*>(data), size))
      AGATE_THROW(kIo) << "cannot write '" << path << "': " << OsReason();
    return;
  }
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
  if (!WriteAll(fd.get(), static_cast<const uint8_t*>(data), size)) fail("write");
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

namespace {

// The names in a folder (no "." and ".."); false when it cannot be read.
bool ListFolder(const std::string& path, std::vector<std::string>* names) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return false;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back(name);
  }
  ::closedir(dir);
  return true;
}

// Removes a flat folder this process made or WriteFolderAtomically wrote; best effort.
void RemoveFlatFolder(const std::string& path) {
  std::vector<std::string> names;
  ListFolder(path, &names);
  for (const std::string& name : names) ::unlink((path + "/" + name).c_str());
  ::rmdir(path.c_str());
}

}  // namespace

void WriteFolderAtomically(const std::string& path, const std::vector<FolderFile>& files, const std::string& marker) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  struct stat info;
  const bool exists = ::lstat(trimmed.c_str(), &info) == 0;
  if (exists) {
    std::vector<std::string> names;
    AGATE_REQUIRE(S_ISDIR(info.st_mode) && ListFolder(trimmed, &names), kInvalidArgument)
        << "'" << trimmed << "' exists and is not a folder: not overwritten";
    bool ours = names.empty() || ::access((trimmed + "/" + marker).c_str(), F_OK) == 0;
    AGATE_REQUIRE(ours, kInvalidArgument) << "folder '" << trimmed << "' exists and was not written by agate (no "
                                          << marker << " in it): not overwritten; remove it or choose another";
  }
  std::string temp = trimmed + ".tmp.XXXXXX";
  if (::mkdtemp(&temp[0]) == nullptr) {
    AGATE_THROW(kIo) << "cannot write folder '" << trimmed << "': cannot create a temporary folder in '"
                     << ParentFolder(trimmed) << "': " << OsReason();
  }
  // mkdtemp makes the folder private; a package folder is as readable as any file the user writes.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(temp.c_str(), 0777 & ~mask);
  try {
    for (const FolderFile& file : files) {
      AGATE_CHECK(!file.name.empty() && file.name.find('/') == std::string::npos) << "bad file name '" << file.name << "'";
      WriteFileAtomically(temp + "/" + file.name, file.contents.data(), file.contents.size());
    }
    WriteFileAtomically(temp + "/" + marker, "", 0);
    if (exists) {
      std::string old = trimmed + ".old.XXXXXX";
      if (::mkdtemp(&old[0]) == nullptr || ::rename(trimmed.c_str(), (old + "/previous").c_str()) != 0) {
        std::string reason = OsReason();
        ::rmdir(old.c_str());
        AGATE_THROW(kIo) << "cannot replace folder '" << trimmed << "': " << reason;
      }
      if (::rename(temp.c_str(), trimmed.c_str()) != 0) {
        std::string reason = OsReason();
        ::rename((old + "/previous").c_str(), trimmed.c_str());
        ::rmdir(old.c_str());
        AGATE_THROW(kIo) << "cannot write folder '" << trimmed << "': rename failed: " << reason;
      }
      RemoveFlatFolder(old + "/previous");
      ::rmdir(old.c_str());
    } else if (::rename(temp.c_str(), trimmed.c_str()) != 0) {
      AGATE_THROW(kIo) << "cannot write folder '" << trimmed << "': rename failed: " << OsReason();
    }
  } catch (...) {
    RemoveFlatFolder(temp);
    throw;
  }
}

}  // namespace agate
