// Small valid ONNX models that cover the importer's paths (initializers, static operands,
// attributes of several kinds, external data): the seed corpus of the importer and compiler
// fuzzers, and the starting points of the importer fuzzer's structured mutations.
#ifndef AGATE_FRONTENDS_ONNX_FUZZ_SEED_MODELS_H_
#define AGATE_FRONTENDS_ONNX_FUZZ_SEED_MODELS_H_

#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace agate {
namespace onnx_frontend {

// (name, model) pairs. Models with external data read "weights.bin" (kExternalDataBytes bytes
// of any content) from the directory they are imported with.
std::vector<std::pair<std::string, onnx::ModelProto>> SeedModels();
constexpr size_t kExternalDataBytes = 256;

}  // namespace onnx_frontend
}  // namespace agate

#endif  // AGATE_FRONTENDS_ONNX_FUZZ_SEED_MODELS_H_
