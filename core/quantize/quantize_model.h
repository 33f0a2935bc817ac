// Post-training quantization of a float graph (agate compile --quantize int8 --calibration FILE):
// the graph prepared, calibrated on sample inputs, and given QuantizeLinear/DequantizeLinear pairs
// that the compiler's QDQ folding turns into integer operators.
//
// Why a driver of its own: calibration must run on the graph the quantization pass rewrites, after
// the passes that change which tensors exist (simplification, constant folding, batch-norm folding
// into the convolutions' weights) and before those that hide Conv/MatMul/Gemm (activation fusion,
// layouts, fused groups). The compiler (core/compiler) calls QuantizeGraph first, then its usual
// pipeline, whose first pass is the QDQ folding; the result is what a QDQ model exported by another
// quantizer would compile to.
//
// Steps (one pass-manager pass each, printed by --dump-ir into DIR/quantize/):
//   simplification, constant_folding, batchnorm_folding, constant_folding, dead_code_elimination,
//   insert_qdq (calibration.h over the samples, then insert_qdq.h), or, for the dynamic form
//   (QuantizeOptions::dynamic), insert_dynamic (insert_dynamic.h; no samples, no calibration).
#ifndef AGATE_CORE_QUANTIZE_QUANTIZE_MODEL_H_
#define AGATE_CORE_QUANTIZE_QUANTIZE_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/quantize/calibration.h"
#include "core/quantize/insert_qdq.h"

namespace agate {
namespace quantize {

struct QuantizeOptions {
  // Calibration samples in calibration.h's format (one [N, *input shape] array per graph input).
  std::map<std::string, graph::Tensor> samples;
  std::string samples_source;  // the file they came from, for messages and the module's metadata
  CalibrationConfig calibration;
  std::vector<std::string> keep_float;  // op types or node names kept in fp32 (--keep-float)
  // --quantize int8-dynamic: no samples; MatMul/Gemm rewritten by insert_dynamic.h (activations
  // quantized per run by DynamicQuantizeLinear) instead of calibrated Q/DQ pairs.
  bool dynamic = false;
};

struct QuantizedGraph {
  graph::Graph graph;  // float graph with Q/DQ pairs; inputs and outputs as before
  QuantizeReport report;
  int64_t samples = 0;
  // What the module's metadata records: "int8; calibration samples.npz (8 samples, minmax);
  // 20 of 21 Conv/MatMul/Gemm nodes int8 (...); kept float: ...".
  std::string description;
};

// Throws kInvalidArgument naming the tensor, entry or flag at fault: bad samples (calibration.h), an
// unknown --keep-float name, a model that is already quantized.
QuantizedGraph QuantizeGraph(const graph::Graph& graph, const QuantizeOptions& options,
                             const std::string& dump_dir = "");

}  // namespace quantize
}  // namespace agate

#endif  // AGATE_CORE_QUANTIZE_QUANTIZE_MODEL_H_
