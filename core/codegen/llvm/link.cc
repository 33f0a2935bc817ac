#include "core/codegen/llvm/link.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/support/error.h"

extern char** environ;

namespace agate {
namespace codegen {
namespace {

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string SearchPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && IsExecutable(dir + "/" + name)) return dir + "/" + name;
  }
  return "";
}

// A scratch directory removed with its files when it goes out of scope.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/agate-link-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    AGATE_REQUIRE(mkdtemp(buffer.data()) != nullptr, kIo) << "cannot create a scratch directory from " << pattern;
    path_ = buffer.data();
  }
  ~ScratchDir() {
    for (const auto& file : files_) unlink(file.c_str());
    rmdir(path_.c_str());
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string file = Add(name);
    std::ofstream out(file, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    AGATE_REQUIRE(out.good(), kIo) << "cannot write " << file;
    return file;
  }
  std::string Add(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Runs argv[0] with its stdout and stderr in `log_path`; returns the exit status.
int Run(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  AGATE_REQUIRE(spawned == 0, kUnavailable) << "cannot run " << argv[0] << " (errno " << spawned << ")";
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string FindLinker() {
  const char* configured = std::getenv("AGATE_LLD");
  if (configured && *configured) {
    AGATE_REQUIRE(IsExecutable(configured), kUnavailable) << "AGATE_LLD=" << configured << " is not an executable";
    return configured;
  }
  for (const char* name : {"ld.lld-14", "ld.lld"}) {
    std::string found = SearchPath(name);
    if (!found.empty()) return found;
  }
  if (IsExecutable("/usr/lib/llvm-14/bin/ld.lld")) return "/usr/lib/llvm-14/bin/ld.lld";
  AGATE_THROW(kUnavailable) << "no ELF linker: install the Debian package lld-14 (ld.lld-14) or set AGATE_LLD";
}

std::string LinkSharedObject(const std::vector<std::string>& objects) {
  AGATE_REQUIRE(!objects.empty(), kInvalidArgument) << "LinkSharedObject needs at least one object";
  std::string linker = FindLinker();
  ScratchDir scratch;
  std::vector<std::string> argv = {linker, "-shared", "-z", "noexecstack", "--hash-style=both", "-O1"};
  for (size_t i = 0; i < objects.size(); ++i) argv.push_back(scratch.Write("kernel" + std::to_string(i) + ".o", objects[i]));
  std::string output = scratch.Add("module.so");
  std::string log = scratch.Add("link.log");
  argv.push_back("-o");
  argv.push_back(output);
  int status = Run(argv, log);
  AGATE_REQUIRE(status == 0, kInternal) << linker << " failed (status " << status << "): " << ReadFile(log);
  return ReadFile(output);
}

}  // namespace codegen
}  // namespace agate
