#include "core/graph/passes/pipeline.h"

#include "core/graph/passes/activation_fusion.h"
#include "core/graph/passes/attention_fusion.h"
#include "core/graph/passes/batchnorm_folding.h"
#include "core/graph/passes/constant_folding.h"
#include "core/graph/passes/dead_code_elimination.h"
#include "core/graph/passes/layout_transformation.h"
#include "core/graph/passes/merge_parallel_products.h"
#include "core/graph/passes/graph_memory_plan.h"
#include "core/graph/passes/norm_fusion.h"
#include "core/graph/passes/qdq_folding.h"
#include "core/graph/passes/quantize_dynamic.h"
#include "core/graph/passes/simplification.h"

namespace agate {
namespace graph {

PassManager BuildPipeline(const PipelineOptions& options) {
  PassManagerOptions pm_options;
  pm_options.dump_dir = options.dump_dir;
  pm_options.verify = options.verify;
  PassManager pm(pm_options);
  // DynamicQuantizeLinear as a reduction, scalar arithmetic and QuantizeLinear, which every target compiles.
  pm.Add("quantize_dynamic", DecomposeDynamicQuantize);
  // Before constant folding, which would turn DequantizeLinear of a constant weight into floats.
  pm.Add("qdq_folding", FoldQDQ);
  pm.Add("simplification", Simplify);
  pm.Add("constant_folding", FoldConstants);
  pm.Add("norm_fusion", FuseNormalizations);
  pm.Add("activation_fusion", FuseActivations);
  if (options.fuse_attention) pm.Add("attention_fusion", FuseAttention);
  // After attention fusion, which matches the head split below each projection, not the projections.
  if (options.fuse_attention && options.merge_parallel_products)
    pm.Add("merge_parallel_products", MergeParallelProducts);
  pm.Add("batchnorm_folding", FoldBatchNorm);
  pm.Add("constant_folding_2", FoldConstants);
  if (options.layout_block > 1) {
    int64_t block = options.layout_block;
    pm.Add("layout_transformation", [block](const Graph& g) { return TransformLayout(g, block); });
    pm.Add("constant_folding_3", FoldConstants);
  }
  pm.Add("dead_code_elimination", EliminateDeadCode);
  fusion::FusionPolicy policy = options.fusion;
  pm.Add(std::string("fusion_") + fusion::FusionPolicyName(policy),
         [policy](const Graph& g) { return fusion::FuseOperators(g, policy); });
  MemoryPlanPolicy memory_plan = options.memory_plan;
  pm.Add("graph_memory_plan", [memory_plan](const Graph& g) { return PlanGraphMemory(g, memory_plan); });
  return pm;
}

}  // namespace graph
}  // namespace agate
