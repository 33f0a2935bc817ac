#include "tools/npz/npz.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "core/support/error.h"
#include "core/support/file.h"

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

}  // namespace
}  // namespace npz
}  // namespace agate
