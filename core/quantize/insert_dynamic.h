// Dynamic quantization (agate compile --quantize int8-dynamic): the matrix products of a float
// graph with constant weights rewritten into the form ONNX Runtime's quantize_dynamic writes, with
// no calibration:
//
//   x -> DynamicQuantizeLinear -> x_q (uint8), x_scale, x_zero_point  (once per activation)
//   MatMulInteger(x_q, W_q, x_zero_point, W_zero_point) -> int32
//   Cast(int32 -> float) * (x_scale * W_scale) [+ bias] -> the product's output
//
// Why dynamic for transformers: their activations' ranges vary from input to input (a token's
// hidden state, attention outputs), so a range fixed by calibration either clips or wastes
// resolution; the per-run range costs one min/max reduction per activation, small beside the
// products. Weights: int8, symmetric, one scale per output column = max|W[:, n]| / 127 (values in
// [-127, 127], zero points 0), as insert_qdq.h's. The products then run on the integer matmul
// kernels (core/ops/qlinear_matmul_vnni.h on VNNI targets); DynamicQuantizeLinear is compiled by
// core/graph/passes/quantize_dynamic.h.
//
// Rewritten: MatMul whose second operand is a float32 constant matrix (the first an activation of
// rank >= 2) and Gemm with a constant weight, transA 0, alpha 1 and beta 1 (transB read through,
// a constant float bias of N values added after the scale). Convs and everything else stay float;
// so do the nodes named by --keep-float (op types or node names), reported with the reason.
#ifndef AGATE_CORE_QUANTIZE_INSERT_DYNAMIC_H_
#define AGATE_CORE_QUANTIZE_INSERT_DYNAMIC_H_

#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/quantize/insert_qdq.h"

namespace agate {
namespace quantize {

// The graph with its MatMul/Gemm nodes quantized dynamically as described above; `report` lists
// what was quantized and what stayed float, and why.
graph::Graph InsertDynamicQuantization(const graph::Graph& graph, const std::vector<std::string>& keep_float,
                                       QuantizeReport* report);

}  // namespace quantize
}  // namespace agate

#endif  // AGATE_CORE_QUANTIZE_INSERT_DYNAMIC_H_
