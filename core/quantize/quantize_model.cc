#include "core/quantize/quantize_model.h"

#include <sstream>

#include "core/graph/pass_manager.h"
#include "core/graph/passes/batchnorm_folding.h"
#include "core/graph/passes/constant_folding.h"
#include "core/graph/passes/dead_code_elimination.h"
#include "core/graph/passes/simplification.h"
#include "core/quantize/insert_dynamic.h"
#include "core/support/error.h"

namespace agate {
namespace quantize {

namespace {

bool IsQuantizedOp(const std::string& op) {
  return op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear" ||
         op.rfind("QLinear", 0) == 0 || op == "ConvInteger" || op == "MatMulInteger";
}

}  // namespace

QuantizedGraph QuantizeGraph(const graph::Graph& graph, const QuantizeOptions& options, const std::string& dump_dir) {
  for (const graph::Node& node : graph.nodes) {
    AGATE_REQUIRE(!IsQuantizedOp(node.op), kInvalidArgument)
        << "--quantize: the model is already quantized (" << node.Describe()
        << "); compile it without --quantize";
  }
  CheckKeepFloat(graph, options.keep_float);
  // The samples are checked before the (slower) passes and calibration.
  if (!options.dynamic) CheckCalibrationSamples(graph, options.samples, options.samples_source);

  QuantizedGraph result;
  graph::PassManagerOptions pm_options;
  if (!dump_dir.empty()) pm_options.dump_dir = dump_dir + "/quantize";
  graph::PassManager pm(pm_options);
  pm.Add("simplification", graph::Simplify);
  pm.Add("constant_folding", graph::FoldConstants);
  pm.Add("batchnorm_folding", graph::FoldBatchNorm);
  pm.Add("constant_folding_2", graph::FoldConstants);
  pm.Add("dead_code_elimination", graph::EliminateDeadCode);
  if (options.dynamic) {
    pm.Add("insert_dynamic", [&](const graph::Graph& g) {
      return InsertDynamicQuantization(g, options.keep_float, &result.report);
    });
    result.graph = pm.Run(graph);
    const QuantizeReport& r = result.report;
    std::ostringstream os;
    os << "int8 dynamic (activations quantized per run by DynamicQuantizeLinear)";
    if (!options.keep_float.empty()) {
      os << "; --keep-float ";
      for (size_t i = 0; i < options.keep_float.size(); ++i) os << (i ? "," : "") << options.keep_float[i];
    }
    os << "; " << r.quantized.size() << " of " << r.candidates
       << " MatMul/Gemm nodes int8 (weights int8 symmetric per output column)";
    if (!r.kept_float.empty()) {
      os << "; kept float:";
      for (size_t i = 0; i < r.kept_float.size(); ++i) os << (i ? "; " : " ") << r.kept_float[i];
    }
    result.description = os.str();
    return result;
  }
  pm.Add("insert_qdq", [&](const graph::Graph& g) {
    Calibration calibration = Calibrate(g, options.samples, options.calibration, options.samples_source);
    result.samples = calibration.samples;
    return InsertQDQ(g, calibration.ranges, options.keep_float, &result.report);
  });
  result.graph = pm.Run(graph);

  std::ostringstream os;
  os << "int8; calibration " << options.samples_source << " (" << result.samples << " samples, "
     << CalibrationMethodName(options.calibration) << ")";
  if (!options.keep_float.empty()) {
    os << "; --keep-float ";
    for (size_t i = 0; i < options.keep_float.size(); ++i) os << (i ? "," : "") << options.keep_float[i];
  }
  os << "; " << result.report.Summary();
  result.description = os.str();
  return result;
}

}  // namespace quantize
}  // namespace agate
