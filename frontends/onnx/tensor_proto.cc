#include "frontends/onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/support/error.h"
#include "core/support/file.h"
#include "core/support/parse_int.h"

namespace agate {
namespace onnx_frontend {

using graph::Shape;
using graph::Tensor;
using ir::DType;

namespace {

// Element types ONNX added after the protobuf Debian ships (1.12): float8 (opset 19), 4-bit
// integers (opset 21), float4 (opset 23). agate has none of them; they are refused by name.
std::string NewerElementTypeName(int data_type) {
  switch (data_type) {
    case 17: return "FLOAT8E4M3FN";
    case 18: return "FLOAT8E4M3FNUZ";
    case 19: return "FLOAT8E5M2";
    case 20: return "FLOAT8E5M2FNUZ";
    case 21: return "UINT4";
    case 22: return "INT4";
    case 23: return "FLOAT4E2M1";
    default: return "code " + std::to_string(data_type);
  }
}

}  // namespace

DType DTypeFromOnnx(int data_type, const std::string& what) {
  switch (data_type) {
    case onnx::TensorProto::FLOAT: return DType::Float(32);
    case onnx::TensorProto::UINT8: return DType::UInt(8);
    case onnx::TensorProto::INT8: return DType::Int(8);
    case onnx::TensorProto::UINT16: return DType::UInt(16);
    case onnx::TensorProto::INT16: return DType::Int(16);
    case onnx::TensorProto::INT32: return DType::Int(32);
    case onnx::TensorProto::INT64: return DType::Int(64);
    case onnx::TensorProto::BOOL: return DType::Bool();
    case onnx::TensorProto::FLOAT16: return DType::Float(16);
    case onnx::TensorProto::DOUBLE: return DType::Float(64);
    case onnx::TensorProto::UINT32: return DType::UInt(32);
    case onnx::TensorProto::UINT64: return DType::UInt(64);
    case onnx::TensorProto::BFLOAT16: return DType::BFloat16();
    default: break;
  }
  std::string name = onnx::TensorProto::DataType_IsValid(data_type)
                         ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(data_type))
                         : NewerElementTypeName(data_type);
  AGATE_THROW(kUnsupported) << what << ": element type " << name << " is not supported";
}

int OnnxFromDType(DType dtype) {
  for (int code = 1; code <= 16; ++code) {
    if (code == onnx::TensorProto::STRING || code == onnx::TensorProto::COMPLEX64 ||
        code == onnx::TensorProto::COMPLEX128)
      continue;
    if (DTypeFromOnnx(code, "") == dtype) return code;
  }
  AGATE_THROW(kUnsupported) << "dtype " << dtype << " has no ONNX element type";
}

std::string ReadFile(const std::string& path) {
  std::vector<uint8_t> bytes = agate::ReadFile(path);  // kNotFound / kIo naming the path
  return std::string(bytes.begin(), bytes.end());
}

namespace {

// A non-negative external-data field ("offset", "length"), or kCorrupt naming the tensor.
int64_t ExternalDataField(const onnx::TensorProto& proto, const std::string& key, const std::string& value) {
  int64_t parsed = 0;
  AGATE_REQUIRE(ParseInt64(value, &parsed) && parsed >= 0, kCorrupt)
      << "tensor '" << proto.name() << "': external data " << key << " '" << value
      << "' is not a non-negative integer";
  return parsed;
}

// The `expected` bytes of an external tensor. Every size the model declares (offset, length)
// is checked against the tensor's size and the data file's real size before allocating.
std::string ReadExternalData(const onnx::TensorProto& proto, const std::string& base_dir, size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") offset = ExternalDataField(proto, "offset", entry.value());
    else if (entry.key() == "length") length = ExternalDataField(proto, "length", entry.value());
  }
  AGATE_REQUIRE(!location.empty(), kCorrupt) << "tensor '" << proto.name() << "' has external data without a location";
  AGATE_REQUIRE(location.find("..") == std::string::npos && location[0] != '/', kCorrupt)
      << "tensor '" << proto.name() << "': external data location '" << location
      << "' must be a relative path inside the model's directory";
  AGATE_REQUIRE(length < 0 || static_cast<uint64_t>(length) == expected, kCorrupt)
      << "tensor '" << proto.name() << "': external data length " << length << " does not match the " << expected
      << " bytes its shape and type need";
  std::string path = base_dir.empty() ? location : base_dir + "/" + location;
  std::error_code not_regular;
  AGATE_REQUIRE(std::filesystem::is_regular_file(path, not_regular), kIo)
      << "tensor '" << proto.name() << "': external data file '" << path << "' is missing or not a regular file";
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  AGATE_REQUIRE(file.good(), kIo) << "tensor '" << proto.name() << "': cannot open external data file '" << path << "'";
  auto file_size = static_cast<int64_t>(file.tellg());
  AGATE_REQUIRE(file_size >= 0 && offset <= file_size && expected <= static_cast<uint64_t>(file_size - offset), kCorrupt)
      << "tensor '" << proto.name() << "': external data file '" << path << "' (" << file_size
      << " bytes) holds fewer than " << expected << " bytes at offset " << offset;
  std::string bytes(expected, '\0');
  file.seekg(offset);
  file.read(&bytes[0], static_cast<std::streamsize>(expected));
  AGATE_REQUIRE(file.gcount() == static_cast<std::streamsize>(expected), kIo)
      << "tensor '" << proto.name() << "': cannot read " << expected << " bytes at offset " << offset << " of '"
      << path << "'";
  return bytes;
}

template <typename Field>
void RequireCount(const onnx::TensorProto& proto, const Field& field, int64_t n) {
  AGATE_REQUIRE(static_cast<int64_t>(field.size()) == n, kCorrupt)
      << "tensor '" << proto.name() << "' stores " << field.size() << " values for " << n << " elements";
}

}  // namespace

Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir) {
  std::string what = "tensor '" + proto.name() + "'";
  DType dtype = DTypeFromOnnx(proto.data_type(), what);
  Shape shape;
  for (int64_t d : proto.dims()) {
    AGATE_REQUIRE(d >= 0, kCorrupt) << what << " has negative dimension " << d;
    shape.push_back(d);
  }
  // Check the element count against the stored data before allocating: a corrupt
  // dims field must not turn into a huge allocation.
  int64_t n = 1;
  for (int64_t d : shape) {
    AGATE_REQUIRE(d == 0 || n <= (int64_t{1} << 40) / d, kCorrupt) << what << " has an absurd shape";
    n *= d;
  }
  size_t nbytes = static_cast<size_t>(n) * dtype.element_bytes();
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string bytes = ReadExternalData(proto, base_dir, nbytes);
    return Tensor::FromBytes(dtype, shape, bytes.data(), bytes.size());
  }
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    return Tensor::FromBytes(dtype, shape, raw.data(), raw.size());
  }
  int64_t stored = proto.float_data_size() + proto.double_data_size() + proto.int64_data_size() +
                   proto.uint64_data_size() + proto.int32_data_size();
  AGATE_REQUIRE(stored == n, kCorrupt) << what << " stores " << stored << " values for " << n << " elements";
  Tensor t(dtype, shape);
  if (n == 0) return t;
  switch (proto.data_type()) {
    case onnx::TensorProto::FLOAT:
      RequireCount(proto, proto.float_data(), n);
      for (int64_t i = 0; i < n; ++i) t.SetDouble(i, proto.float_data(i));
      break;
    case onnx::TensorProto::DOUBLE:
      RequireCount(proto, proto.double_data(), n);
      for (int64_t i = 0; i < n; ++i) t.SetDouble(i, proto.double_data(i));
      break;
    case onnx::TensorProto::INT64:
      RequireCount(proto, proto.int64_data(), n);
      for (int64_t i = 0; i < n; ++i) t.SetInt(i, proto.int64_data(i));
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      RequireCount(proto, proto.uint64_data(), n);
      for (int64_t i = 0; i < n; ++i) t.SetInt(i, static_cast<int64_t>(proto.uint64_data(i)));
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      // int32_data holds the 16-bit patterns.
      RequireCount(proto, proto.int32_data(), n);
      auto* bits = t.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) bits[i] = static_cast<uint16_t>(proto.int32_data(i));
      break;
    }
    default:
      RequireCount(proto, proto.int32_data(), n);
      for (int64_t i = 0; i < n; ++i) t.SetInt(i, proto.int32_data(i));
      break;
  }
  return t;
}

onnx::TensorProto TensorToProto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(OnnxFromDType(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.nbytes()));
  return proto;
}

Tensor LoadTensorFile(const std::string& path) {
  std::string bytes = ReadFile(path);
  onnx::TensorProto proto;
  AGATE_REQUIRE(proto.ParseFromString(bytes), kCorrupt) << "'" << path << "' is not a serialized ONNX TensorProto";
  size_t slash = path.find_last_of('/');
  return TensorFromProto(proto, slash == std::string::npos ? "" : path.substr(0, slash));
}

}  // namespace onnx_frontend
}  // namespace agate
