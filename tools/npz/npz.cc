#include "tools/npz/npz.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/support/error.h"
#include "core/support/file.h"

namespace agate {
namespace npz {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

// numpy's descr ('<f4', '|b1', ...) to a DType; big-endian and exotic kinds are refused.
ir::DType DTypeFromDescr(const std::string& descr, const std::string& what) {
  if (descr.size() < 3) AGATE_THROW(kCorrupt) << what << ": bad dtype descr '" << descr << "'";
  char order = descr[0], kind = descr[1];
  int bytes = std::atoi(descr.c_str() + 2);
  if (order == '>' && bytes > 1) {
    AGATE_THROW(kUnsupported) << what << ": big-endian array ('" << descr
                              << "'); convert it with arr.astype(arr.dtype.newbyteorder('<'))";
  }
  switch (kind) {
    case 'b':
      if (bytes == 1) return ir::DType::Bool();
      break;
    case 'i':
      if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) return ir::DType::Int(bytes * 8);
      break;
    case 'u':
      if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) return ir::DType::UInt(bytes * 8);
      break;
    case 'f':
      if (bytes == 2 || bytes == 4 || bytes == 8) return ir::DType::Float(bytes * 8);
      break;
  }
  AGATE_THROW(kUnsupported) << what << ": dtype '" << descr
                            << "' (supported: bool, int8..64, uint8..64, float16/32/64)";
}

std::string DescrFromDType(const ir::DType& dtype) {
  if (dtype.is_bool()) return "|b1";
  char kind = dtype.is_float() && dtype.code() == ir::TypeCode::kFloat ? 'f' : dtype.is_int() ? 'i' : dtype.is_uint() ? 'u' : '?';
  AGATE_REQUIRE(kind != '?' && dtype.is_scalar(), kUnsupported) << "cannot store dtype " << dtype << " in .npy";
  return std::string(dtype.element_bytes() == 1 ? "|" : "<") + kind + std::to_string(dtype.element_bytes());
}

// Value of `'key': <value>` in numpy's header dict, up to the next top-level ',' or '}'.
std::string HeaderField(const std::string& header, const std::string& key, const std::string& what) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) AGATE_THROW(kCorrupt) << what << ": .npy header lacks '" << key << "'";
  size_t colon = header.find(':', at);
  if (colon == std::string::npos) AGATE_THROW(kCorrupt) << what << ": malformed .npy header";
  size_t begin = header.find_first_not_of(' ', colon + 1);
  if (begin == std::string::npos) AGATE_THROW(kCorrupt) << what << ": .npy header field '" << key << "' has no value";
  int depth = 0;
  size_t end = begin;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return header.substr(begin, end - begin);
}

std::vector<int64_t> ParseShape(const std::string& text, const std::string& what) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    AGATE_THROW(kCorrupt) << what << ": malformed shape '" << text << "'";
  }
  std::vector<int64_t> shape;
  const char* p = text.c_str() + 1;
  for (;;) {
    while (*p == ' ' || *p == ',') ++p;
    if (*p == ')') break;
    char* end = nullptr;
    long long dim = std::strtoll(p, &end, 10);
    if (end == p || dim < 0) AGATE_THROW(kCorrupt) << what << ": malformed shape '" << text << "'";
    shape.push_back(dim);
    p = end;
    while (*p == 'L') ++p;  // Python 2 longs
  }
  return shape;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (int64_t d : shape) s += std::to_string(d) + ", ";
  if (shape.size() > 1) s.resize(s.size() - 2);
  if (shape.size() == 1) s.resize(s.size() - 1);
  return s + ")";
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

}  // namespace

int64_t Array::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// The byte size of `shape` elements of `element_bytes`, or kCorrupt when it exceeds `available`
// (the bytes the file really holds); computed without overflow for any declared shape.
size_t CheckedDataBytes(const std::vector<int64_t>& shape, size_t element_bytes, size_t available,
                        const std::string& what) {
  uint64_t bytes = element_bytes;
  bool zero = false;
  for (int64_t d : shape) zero = zero || d == 0;
  if (zero) return 0;
  for (int64_t d : shape) {
    if (bytes > available / static_cast<uint64_t>(d)) {
      AGATE_THROW(kCorrupt) << what << ": truncated data (" << available << " bytes for shape " << ShapeText(shape)
                            << ")";
    }
    bytes *= static_cast<uint64_t>(d);
  }
  if (bytes > available) {
    AGATE_THROW(kCorrupt) << what << ": truncated data (" << available << " of " << bytes << " bytes for shape "
                          << ShapeText(shape) << ")";
  }
  return static_cast<size_t>(bytes);
}

// Deflate cannot expand more than about 1032:1; an entry declaring more is corrupt.
constexpr uint64_t kMaxDeflateRatio = 1032;

// The decompressed bytes of archive entry `index`. The declared size is checked against the
// compressed size (itself within the archive) before it is trusted, and the buffer grows with
// the bytes actually decompressed, so a lying header cannot cause a large allocation.
std::vector<uint8_t> ReadEntry(zip_t* archive, zip_int64_t index, const zip_stat_t& stat, size_t archive_size,
                               const std::string& what) {
  constexpr zip_uint64_t kNeeded = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  if ((stat.valid & kNeeded) != kNeeded) AGATE_THROW(kCorrupt) << what << ": the archive does not state its size";
  bool stored = stat.comp_method == ZIP_CM_STORE;
  if (stat.comp_size > archive_size || (stored && stat.size != stat.comp_size) ||
      stat.size / kMaxDeflateRatio > stat.comp_size + 1) {
    AGATE_THROW(kCorrupt) << what << ": declares " << stat.size << " bytes from " << stat.comp_size
                          << " compressed bytes in a " << archive_size << "-byte archive";
  }
  std::unique_ptr<zip_file_t, ZipFileCloser> member(zip_fopen_index(archive, index, 0));
  if (!member) AGATE_THROW(kCorrupt) << what << ": cannot open the entry (" << zip_strerror(archive) << ")";
  // Decompress through a small fixed buffer and append what arrived: the output grows with the
  // bytes actually produced, never with the header's claim (a lying header used to cost a
  // zero-filled 1 MiB chunk per entry, which also made the npz fuzzer ~5x slower).
  std::vector<uint8_t> bytes;
  uint8_t chunk[16384];
  while (bytes.size() < stat.size) {
    size_t want = static_cast<size_t>(std::min<zip_uint64_t>(sizeof(chunk), stat.size - bytes.size()));
    zip_int64_t got = zip_fread(member.get(), chunk, want);
    if (got <= 0) {
      AGATE_THROW(kCorrupt) << what << ": cannot decompress the entry (" << zip_file_strerror(member.get()) << ")";
    }
    bytes.insert(bytes.end(), chunk, chunk + got);
  }
  return bytes;
}

}  // namespace

Array ParseNpy(const uint8_t* bytes, size_t size, const std::string& what) {
  if (size < kMagicSize + 4 || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    AGATE_THROW(kCorrupt) << what << ": not a .npy array (bad magic)";
  }
  int major = bytes[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) AGATE_THROW(kCorrupt) << what << ": truncated .npy header";
    header_len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (static_cast<size_t>(bytes[11]) << 24);
    offset = 12;
  } else {
    AGATE_THROW(kUnsupported) << what << ": .npy format version " << major;
  }
  if (offset + header_len > size) AGATE_THROW(kCorrupt) << what << ": truncated .npy header";
  std::string header(reinterpret_cast<const char*>(bytes + offset), header_len);
  std::string descr = HeaderField(header, "descr", what);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"')) {
    AGATE_THROW(kUnsupported) << what << ": structured dtype " << descr;
  }
  Array array;
  array.dtype = DTypeFromDescr(descr.substr(1, descr.size() - 2), what);
  if (HeaderField(header, "fortran_order", what) != "False") {
    AGATE_THROW(kUnsupported) << what << ": Fortran-order array; save it with np.ascontiguousarray";
  }
  array.shape = ParseShape(HeaderField(header, "shape", what), what);
  size_t data_offset = offset + header_len;
  size_t data_bytes = CheckedDataBytes(array.shape, array.dtype.element_bytes(), size - data_offset, what);
  array.data.assign(bytes + data_offset, bytes + data_offset + data_bytes);
  return array;
}

std::vector<uint8_t> SerializeNpy(const Array& array) {
  std::string header = "{'descr': '" + DescrFromDType(array.dtype) + "', 'fortran_order': False, 'shape': " +
                       ShapeText(array.shape) + ", }";
  // Pad with spaces so the data starts 64-byte aligned; the header ends with '\n'.
  size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  AGATE_REQUIRE(array.data.size() == static_cast<size_t>(array.num_elements()) * array.dtype.element_bytes(),
                kInvalidArgument)
      << "array '" << array.name << "' has " << array.data.size() << " bytes, shape " << ShapeText(array.shape)
      << " of " << array.dtype << " needs " << array.num_elements() * array.dtype.element_bytes();
  std::vector<uint8_t> out(kMagic, kMagic + kMagicSize);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

std::vector<Array> Load(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  return LoadBytes(ReadFile(path), path, EndsWith(base, ".npy") ? base.substr(0, base.size() - 4) : base);
}

std::vector<Array> LoadBytes(const std::vector<uint8_t>& file, const std::string& path, const std::string& npy_name) {
  if (file.empty()) AGATE_THROW(kCorrupt) << "'" << path << "' is empty, not a .npy or .npz file";
  if (file.size() >= kMagicSize && std::memcmp(file.data(), kMagic, kMagicSize) == 0) {
    Array array = ParseNpy(file.data(), file.size(), path);
    array.name = npy_name;
    return {array};
  }
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(file.data(), file.size(), 0, &error);
  std::unique_ptr<zip_t, ZipCloser> archive(source ? zip_open_from_source(source, ZIP_RDONLY, &error) : nullptr);
  if (!archive) {
    if (source) zip_source_free(source);
    std::string reason = zip_error_strerror(&error);
    zip_error_fini(&error);
    AGATE_THROW(kCorrupt) << "'" << path << "' is neither a .npy nor a readable .npz archive (" << reason << ")";
  }
  zip_error_fini(&error);
  std::vector<Array> arrays;
  zip_int64_t entries = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive.get(), i, 0, &stat) != 0) {
      AGATE_THROW(kCorrupt) << path << ": cannot read entry " << i << " of the archive";
    }
    if ((stat.valid & ZIP_STAT_NAME) == 0 || stat.name == nullptr) {
      AGATE_THROW(kCorrupt) << path << ": entry " << i << " of the archive has no name";
    }
    std::string entry = stat.name;
    std::string what = path + ":" + entry;
    if (!EndsWith(entry, ".npy")) AGATE_THROW(kCorrupt) << what << ": an .npz entry that is not .npy";
    std::vector<uint8_t> bytes = ReadEntry(archive.get(), i, stat, file.size(), what);
    Array array = ParseNpy(bytes.data(), bytes.size(), what);
    array.name = entry.substr(0, entry.size() - 4);
    arrays.push_back(std::move(array));
  }
  return arrays;
}

void Save(const std::string& path, const std::vector<Array>& arrays) {
  if (EndsWith(path, ".npy")) {
    AGATE_REQUIRE(arrays.size() == 1, kInvalidArgument)
        << "'" << path << "': a .npy file holds one array, got " << arrays.size() << "; use .npz";
    WriteFileAtomically(path, SerializeNpy(arrays[0]));
    return;
  }
  // Build the archive in memory, then write it atomically.
  std::vector<std::vector<uint8_t>> images;
  images.reserve(arrays.size());
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* sink = zip_source_buffer_create(nullptr, 0, 0, &error);
  AGATE_CHECK(sink != nullptr) << "zip buffer: " << zip_error_strerror(&error);
  zip_source_keep(sink);
  zip_t* archive = zip_open_from_source(sink, ZIP_TRUNCATE, &error);
  AGATE_CHECK(archive != nullptr) << "zip open: " << zip_error_strerror(&error);
  for (const Array& array : arrays) {
    images.push_back(SerializeNpy(array));
    zip_source_t* member = zip_source_buffer(archive, images.back().data(), images.back().size(), 0);
    if (member == nullptr || zip_file_add(archive, (array.name + ".npy").c_str(), member, ZIP_FL_ENC_UTF_8) < 0) {
      if (member) zip_source_free(member);
      std::string reason = zip_strerror(archive);
      zip_discard(archive);
      zip_source_free(sink);
      AGATE_THROW(kInvalidArgument) << "'" << path << "': cannot add array '" << array.name << "': " << reason;
    }
    zip_set_file_compression(archive, zip_get_num_entries(archive, 0) - 1, ZIP_CM_STORE, 0);
  }
  if (zip_close(archive) != 0) {
    std::string reason = zip_strerror(archive);
    zip_discard(archive);
    zip_source_free(sink);
    AGATE_THROW(kIo) << "'" << path << "': cannot build the archive: " << reason;
  }
  std::vector<uint8_t> bytes;
  zip_stat_t stat;
  if (zip_source_stat(sink, &stat) == 0 && zip_source_open(sink) == 0) {
    bytes.resize(stat.size);
    zip_int64_t n = zip_source_read(sink, bytes.data(), bytes.size());
    zip_source_close(sink);
    AGATE_CHECK(n == static_cast<zip_int64_t>(bytes.size())) << "zip read back";
  }
  zip_source_free(sink);
  zip_error_fini(&error);
  // libzip writes nothing for an archive without members; np.savez() writes an empty zip (only
  // the end-of-central-directory record), which every zip reader opens: write that.
  if (arrays.empty()) bytes = {'P', 'K', 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  WriteFileAtomically(path, bytes);
}

}  // namespace npz
}  // namespace agate
