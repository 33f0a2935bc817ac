#include "core/support/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/support/error.h"

namespace agate {
namespace {

std::string TempFolder() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base ? base : "/tmp") + "/file_test_XXXXXX";
  EXPECT_NE(::mkdtemp(&dir[0]), nullptr);
  return dir;
}

int CountEntries(const std::string& dir) {
  int n = 0;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) n += (e->d_name[0] != '.');
  ::closedir(d);
  return n;
}

TEST(FileTest, WriteThenReadRoundTrips) {
  std::string path = TempFolder() + "/out.bin";
  std::vector<uint8_t> bytes(100000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  WriteFileAtomically(path, bytes);
  EXPECT_EQ(ReadFile(path), bytes);
}

// A device is written in place, never replaced by a regular file (`agate compile -o /dev/null`).
TEST(FileTest, DevicesAreWrittenInPlace) {
  WriteFileAtomically("/dev/null", std::vector<uint8_t>{1, 2, 3});
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(FileTest, OverwriteReplacesWholeFile) {
  std::string path = TempFolder() + "/out.bin";
  WriteFileAtomically(path, std::vector<uint8_t>(1000, 1));
  WriteFileAtomically(path, std::vector<uint8_t>(10, 2));
  EXPECT_EQ(ReadFile(path), std::vector<uint8_t>(10, 2));
}

TEST(FileTest, FailedWriteLeavesNoFileBehind) {
  std::string dir = TempFolder();
  std::string existing = dir + "/good.bin";
  WriteFileAtomically(existing, std::vector<uint8_t>(3, 9));
  // The target is a folder: rename fails after the temporary file was written.
  ::mkdir((dir + "/sub").c_str(), 0755);
  ::mkdir((dir + "/sub/x").c_str(), 0755);
  ::close(::creat((dir + "/sub/x/keep").c_str(), 0644));
  EXPECT_THROW(WriteFileAtomically(dir + "/sub/x", std::vector<uint8_t>(5, 1)), Error);
  EXPECT_EQ(CountEntries(dir + "/sub"), 1);  // only x: no temporary file left
  EXPECT_EQ(ReadFile(existing), std::vector<uint8_t>(3, 9));
}

TEST(FileTest, MissingFolderNamesThePath) {
  try {
    WriteFileAtomically("/nonexistent-agate-dir/out.bin", std::vector<uint8_t>(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIo);
    EXPECT_NE(e.message().find("/nonexistent-agate-dir/out.bin"), std::string::npos);
  }
}

TEST(FileTest, ReadMissingFileIsNotFound) {
  try {
    ReadFile("/nonexistent-agate-file");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
  }
}

}  // namespace
}  // namespace agate
