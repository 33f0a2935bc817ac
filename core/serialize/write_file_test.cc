#include "core/serialize/write_file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "core/support/error.h"

namespace agate {
namespace serialize {
namespace {

std::string TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(base != nullptr ? base : "/tmp") + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

std::vector<uint8_t> Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int CountEntries(const std::string& dir) {
  int n = 0;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++n;
  }
  closedir(d);
  return n;
}

TEST(WriteFileAtomicallyTest, WritesAndReplaces) {
  const std::string dir = TempDir("writes");
  const std::string path = dir + "/m.agm";
  WriteFileAtomically(path, {1, 2, 3});
  EXPECT_EQ(Read(path), (std::vector<uint8_t>{1, 2, 3}));
  WriteFileAtomically(path, {4, 5});
  EXPECT_EQ(Read(path), (std::vector<uint8_t>{4, 5}));
  EXPECT_EQ(CountEntries(dir), 1);  // no temporary file left behind
}

TEST(WriteFileAtomicallyTest, AMissingDirectoryIsAnIoErrorNamingThePath) {
  try {
    WriteFileAtomically(TempDir("missing") + "/no/such/dir/m.agm", {1});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIo);
    EXPECT_NE(e.message().find("no/such/dir/m.agm"), std::string::npos) << e.message();
  }
}

TEST(WriteFileAtomicallyTest, AFailedRenameLeavesTheTargetAndNoPartialFile) {
  const std::string dir = TempDir("failed_rename");
  // A non-empty directory at the target path: the rename fails after the data was written.
  const std::string path = dir + "/m.agm";
  mkdir(path.c_str(), 0755);
  WriteFileAtomically(path + "/keep", {7});
  EXPECT_THROW(WriteFileAtomically(path, std::vector<uint8_t>(1 << 16, 9)), Error);
  EXPECT_EQ(CountEntries(dir), 1);      // only the original directory, no temporary file
  EXPECT_EQ(Read(path + "/keep"), (std::vector<uint8_t>{7}));
}

}  // namespace
}  // namespace serialize
}  // namespace agate
