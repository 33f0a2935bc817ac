#include "tools/cli/import_and_compile.h"

#include <chrono>

namespace agate {
namespace cli {

compiler::CompileResult ImportAndCompile(const std::string& path, const onnx_frontend::ImportOptions& import,
                                         const compiler::CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  graph::Graph graph = onnx_frontend::ImportOnnxFile(path, import);
  double import_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  compiler::CompileResult result = compiler::CompileGraph(graph, options);
  result.timings.insert(result.timings.begin(), compiler::PhaseTiming{"import", import_ms});
  return result;
}

}  // namespace cli
}  // namespace agate
