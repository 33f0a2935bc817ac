#include "tools/npz/npz.h"

#include <gtest/gtest.h>

#include <fstream>

#include <cstdlib>
#include <cstring>

#include "core/support/error.h"
#include "core/support/file.h"
#include "core/support/testing/memory_cap.h"

namespace agate {
namespace npz {
namespace {

std::string TestData(const std::string& name) { return "tools/npz/testdata/" + name; }

std::string TempPath(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  return std::string(base ? base : "/tmp") + "/" + name;
}

const Array& Find(const std::vector<Array>& arrays, const std::string& name) {
  for (const Array& a : arrays)
    if (a.name == name) return a;
  ADD_FAILURE() << "no array " << name;
  return arrays.front();
}

template <typename T>
std::vector<T> Values(const Array& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

// The fixture was written by numpy's np.savez_compressed (deflated entries).
TEST(NpzTest, ReadsNumpyCompressedArchive) {
  std::vector<Array> arrays = Load(TestData("mixed_compressed.npz"));
  ASSERT_EQ(arrays.size(), 6u);
  const Array& x = Find(arrays, "x");
  EXPECT_EQ(x.dtype, ir::DType::Float(32));
  EXPECT_EQ(x.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Values<float>(x)[23], 23.0f);
  const Array& idx = Find(arrays, "idx");
  EXPECT_EQ(idx.dtype, ir::DType::Int(64));
  EXPECT_EQ(Values<int64_t>(idx), (std::vector<int64_t>{1, -2, 3, 4}));
  EXPECT_EQ(Find(arrays, "flag").dtype, ir::DType::Bool());
  EXPECT_EQ(Find(arrays, "flag").data, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(Find(arrays, "h").dtype, ir::DType::Float(16));
  EXPECT_EQ(Find(arrays, "b").data, (std::vector<uint8_t>{7, 255}));
  const Array& scalar = Find(arrays, "scalar");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(Values<float>(scalar), (std::vector<float>{3.5f}));
}

TEST(NpzTest, SaveThenLoadRoundTrips) {
  Array a{"output", ir::DType::Float(32), {2, 2}, {}};
  float values[] = {1.0f, -2.0f, 3.5f, 0.25f};
  a.data.assign(reinterpret_cast<uint8_t*>(values), reinterpret_cast<uint8_t*>(values) + sizeof(values));
  Array b{"ids", ir::DType::Int(32), {3}, std::vector<uint8_t>(12, 0)};
  std::string path = TempPath("roundtrip.npz");
  Save(path, {a, b});
  std::vector<Array> back = Load(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "output");
  EXPECT_EQ(back[0].shape, a.shape);
  EXPECT_EQ(back[0].data, a.data);
  EXPECT_EQ(back[1].dtype, ir::DType::Int(32));
  std::string npy = TempPath("single.npy");
  Save(npy, {a});
  EXPECT_EQ(Load(npy)[0].data, a.data);
  EXPECT_EQ(Load(npy)[0].name, "single");
}

TEST(NpzTest, NoArraysIsAnEmptyArchiveNotAnEmptyFile) {
  // The inputs of a model without inputs: np.savez() writes a 22-byte empty zip, and so must Save.
  std::string path = TempPath("empty.npz");
  Save(path, {});
  EXPECT_TRUE(Load(path).empty());
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EXPECT_EQ(static_cast<int>(in.tellg()), 22);
}

void ExpectError(const std::string& path, StatusCode code, const std::string& fragment) {
  try {
    Load(path);
    ADD_FAILURE() << "loaded " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
  }
}

TEST(NpzTest, RefusesWhatItCannotReadWithReasons) {
  ExpectError(TestData("fortran_order.npz"), StatusCode::kUnsupported, "Fortran");
  ExpectError(TestData("big_endian.npz"), StatusCode::kUnsupported, "big-endian");
  ExpectError("/no/such/file.npz", StatusCode::kNotFound, "/no/such/file.npz");
  std::string garbage = TempPath("garbage.npz");
  WriteFileAtomically(garbage, std::vector<uint8_t>(100, 0x42));
  ExpectError(garbage, StatusCode::kCorrupt, garbage);
}

TEST(NpzTest, TruncatedArchivesAreErrorsNotCrashes) {
  std::vector<uint8_t> full = ReadFile(TestData("mixed_compressed.npz"));
  for (size_t cut = 0; cut < full.size(); cut += 37) {
    std::string path = TempPath("cut.npz");
    WriteFileAtomically(path, full.data(), cut);
    EXPECT_THROW(Load(path), Error) << "cut at " << cut;
  }
}

TEST(NpzTest, TruncatedNpyDataIsCorrupt) {
  Array a{"v", ir::DType::Float(32), {4}, std::vector<uint8_t>(16, 0)};
  std::vector<uint8_t> image = SerializeNpy(a);
  try {
    ParseNpy(image.data(), image.size() - 1, "v.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kCorrupt);
    EXPECT_NE(e.message().find("truncated data"), std::string::npos);
  }
}

void Put32(std::vector<uint8_t>* bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

// A stored .npz whose entry declares 2 GiB (local header and central directory agree): the
// reader must refuse it from the sizes alone, not allocate what the header claims.
TEST(NpzTest, DeclaredEntrySizeIsCheckedBeforeAllocating) {
  Array a{"v", ir::DType::Float(32), {4}, std::vector<uint8_t>(16, 0)};
  std::string path = TempPath("liar.npz");
  Save(path, {a});
  std::vector<uint8_t> bytes = ReadFile(path);
  int patched = 0;
  for (size_t i = 0; i + 46 <= bytes.size(); ++i) {
    if (bytes[i] != 'P' || bytes[i + 1] != 'K') continue;
    if (bytes[i + 2] == 3 && bytes[i + 3] == 4) Put32(&bytes, i + 22, 0x7ffffff0u), ++patched;  // local header
    if (bytes[i + 2] == 1 && bytes[i + 3] == 2) Put32(&bytes, i + 24, 0x7ffffff0u), ++patched;  // central dir
  }
  ASSERT_EQ(patched, 2);
  WriteFileAtomically(path, bytes);
  testing::CappedOutcome outcome = testing::RunWithMemoryCap([&] { Load(path); });
  EXPECT_TRUE(outcome.threw_agate_error && outcome.code == StatusCode::kCorrupt) << outcome.description;
}

// A header whose shape multiplies past 2^64 bytes must not wrap around to a small size.
TEST(NpzTest, OverflowingShapeIsCorrupt) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }";
  std::vector<uint8_t> image = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size()), 0};
  image.insert(image.end(), header.begin(), header.end());
  image.resize(image.size() + 64, 0);
  try {
    ParseNpy(image.data(), image.size(), "big.npy");
    FAIL() << "parsed an array of 2^65 elements from 64 bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kCorrupt) << e.what();
  }
}

// A header that ends right after a key's colon is corrupt (it used to throw std::out_of_range).
TEST(NpzTest, HeaderKeyWithoutValueIsCorrupt) {
  std::string header = "{'descr':";
  std::vector<uint8_t> image = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size()), 0};
  image.insert(image.end(), header.begin(), header.end());
  EXPECT_THROW(ParseNpy(image.data(), image.size(), "cut.npy"), Error);
}

}  // namespace
}  // namespace npz
}  // namespace agate
