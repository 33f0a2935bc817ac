// Conversions between ONNX TensorProtos and agate Tensors.
//
// Why separate from the importer: initializers, Constant nodes, the conformance
// suite's input_*.pb/output_*.pb files and the test model builder all need the
// same conversion, including external data files and every ONNX storage field.
#ifndef AGATE_FRONTENDS_ONNX_TENSOR_PROTO_H_
#define AGATE_FRONTENDS_ONNX_TENSOR_PROTO_H_

#include <string>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include "core/graph/tensor.h"

namespace agate {
namespace onnx_frontend {

// ONNX TensorProto.DataType -> DType; throws kUnsupported naming `what` for
// strings, complex numbers and unknown codes.
ir::DType DTypeFromOnnx(int data_type, const std::string& what);
// DType -> ONNX TensorProto.DataType.
int OnnxFromDType(ir::DType dtype);

// Decodes a TensorProto. `base_dir` resolves external data locations. Throws
// kCorrupt when the stored bytes do not match dtype and shape, kIo when an
// external file cannot be read.
graph::Tensor TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir);

// Encodes a tensor as raw_data.
onnx::TensorProto TensorToProto(const graph::Tensor& tensor, const std::string& name);

// Reads a serialized TensorProto file (the conformance suite's *.pb files).
graph::Tensor LoadTensorFile(const std::string& path);

// Reads a whole file; throws kIo naming the path.
std::string ReadFile(const std::string& path);  // core/support/file.h ReadFile, as a string

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_TENSOR_PROTO_H_
