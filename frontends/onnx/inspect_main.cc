// onnx_inspect: imports an ONNX model, runs the graph pipeline and prints the
// result, the per-pass timings and the memory plan. A debugging aid for the
// graph half of the compiler (the agate CLI drives the same pipeline).
//
//   onnx_inspect model.onnx [--input-shape data:1x3x224x224] [--fusion rule|none|all]
//                [--layout-block 8] [--dump-ir DIR] [--quiet]
#include <cstdio>
#include <cstring>
#include <string>

#include "core/graph/passes/pipeline.h"
#include "core/graph/printer.h"
#include "core/support/error.h"
#include "core/support/parse_int.h"
#include "frontends/onnx/importer.h"

namespace {

int Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s model.onnx [--input-shape name:1x3x224x224[,...]] [--fusion rule|none|all]\n"
               "          [--layout-block N] [--dump-ir DIR] [--quiet]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(argv[0]);
  std::string path = argv[1];
  agate::onnx_frontend::ImportOptions import_options;
  agate::graph::PipelineOptions pipeline;
  bool quiet = false;
  try {
    for (int i = 2; i < argc; ++i) {
      std::string flag = argv[i];
      bool has_value = i + 1 < argc;
      if (flag == "--input-shape" && has_value) {
        import_options.input_shapes = agate::onnx_frontend::ParseInputShapes(argv[++i]);
      } else if (flag == "--fusion" && has_value) {
        pipeline.fusion = agate::fusion::ParseFusionPolicy(argv[++i]);
      } else if (flag == "--layout-block" && has_value) {
        pipeline.layout_block = agate::ParseInt64OrThrow(argv[++i], "--layout-block");
      } else if (flag == "--dump-ir" && has_value) {
        pipeline.dump_dir = argv[++i];
      } else if (flag == "--quiet") {
        quiet = true;
      } else {
        return Usage(argv[0]);
      }
    }
    agate::graph::Graph graph = agate::onnx_frontend::ImportOnnxFile(path, import_options);
    agate::graph::PassManager pm = agate::graph::BuildPipeline(pipeline);
    agate::graph::Graph compiled = pm.Run(graph);
    if (!quiet) std::fputs(agate::graph::PrintGraph(compiled).c_str(), stdout);
    std::printf("\npass timings:\n%s", pm.TimingReport().c_str());
    const agate::graph::MemoryPlan& plan = compiled.memory_plan;
    std::printf("\n%zu nodes in %zu kernels (fusion=%s); arena %lld bytes for %zu intermediates of %lld bytes\n",
                compiled.nodes.size(), compiled.groups.size(), agate::fusion::FusionPolicyName(pipeline.fusion),
                static_cast<long long>(plan.arena_bytes), plan.buffers.size(),
                static_cast<long long>(plan.total_intermediate_bytes));
  } catch (const agate::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
