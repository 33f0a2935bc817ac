// The command line's compile path: the ONNX frontend, then the compiler on the graph.
//
// Why here and not in core/compiler: the compiler takes a graph and knows no model format, so
// core never depends on a frontend (docs/ARCHITECTURE.md, checked by tools/layering). The
// commands that start from an ONNX file (compile, inspect, demo) share this one sequence; the
// compiler's C ABI does the same in two calls (agate_model_load_onnx_file, agate_compile).
#ifndef AGATE_TOOLS_CLI_IMPORT_AND_COMPILE_H_
#define AGATE_TOOLS_CLI_IMPORT_AND_COMPILE_H_

#include <string>

#include "core/compiler/compiler.h"
#include "frontends/onnx/importer.h"

namespace agate {
namespace cli {

// Imports the ONNX file at `path` with `import` and compiles the graph with `options`.
// The import's time is the first entry of the result's timings ("import").
// Throws agate::Error naming the file, node or op at fault.
compiler::CompileResult ImportAndCompile(const std::string& path, const onnx_frontend::ImportOptions& import,
                                         const compiler::CompileOptions& options);

}  // namespace cli
}  // namespace agate

#endif  // AGATE_TOOLS_CLI_IMPORT_AND_COMPILE_H_
