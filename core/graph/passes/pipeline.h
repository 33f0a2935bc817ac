// agate's standard graph pipeline, in order:
//   quantize_dynamic, qdq_folding, simplification, constant_folding, norm_fusion, activation_fusion,
//   [attention_fusion], [merge_parallel_products], batchnorm_folding, constant_folding,
//   [layout_transformation, constant_folding], dead_code_elimination,
//   fusion, graph_memory_plan.
//
// Why one place: the CLI, the conformance runner and tests all compile a graph
// the same way; the pass manager gives each pass's time and --dump-ir files.
#ifndef AGATE_CORE_GRAPH_PASSES_PIPELINE_H_
#define AGATE_CORE_GRAPH_PASSES_PIPELINE_H_

#include <string>

#include "core/fusion/fusion.h"
#include "core/graph/pass_manager.h"
#include "core/graph/passes/graph_memory_plan.h"

namespace agate {
namespace graph {

struct PipelineOptions {
  fusion::FusionPolicy fusion = fusion::FusionPolicy::kRule;
  int64_t layout_block = 0;  // channels per block for NCHW{c}c; 0 keeps NCHW
  std::string dump_dir;      // --dump-ir: one file per pass
  // Scaled-dot-product attention becomes one Attention node. Its fused kernel
  // (core/ops/attention.h) exists for CPU targets only, so GPU targets keep
  // MatMul, Softmax, MatMul, which have CUDA schedules.
  bool fuse_attention = true;
  // Sibling MatMul/Gemm nodes (Q, K, V) become one product and slices. Only with
  // fuse_attention: the slices are free where the Attention kernel reads them with the head
  // split; without it they would feed MatMuls as copy kernels.
  bool merge_parallel_products = true;
  bool verify = true;
  MemoryPlanPolicy memory_plan = MemoryPlanPolicy::kGreedyBySize;  // the arena placement
};

PassManager BuildPipeline(const PipelineOptions& options);

}  // namespace graph
}  // namespace agate

#endif  // AGATE_CORE_GRAPH_PASSES_PIPELINE_H_
