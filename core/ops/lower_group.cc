#include "core/ops/lower_group.h"

#include <map>
#include <set>
#include <sstream>

#include "core/fusion/conv_chain.h"
#include "core/lower/lower.h"
#include "core/ops/composed_kernel.h"
#include "core/ops/cuda/cuda_schedules.h"
#include "core/ops/det.h"
#include "core/ops/fused_conv_chain.h"
#include "core/ops/max_unpool.h"
#include "core/ops/non_max_suppression.h"
#include "core/ops/op_context.h"
#include "core/ops/recurrent.h"
#include "core/ops/registry.h"
#include "core/ops/roi_align.h"
#include "core/ops/tfidf_vectorizer.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

std::string DescribeTypes(const graph::Graph& graph, const graph::Node& node) {
  std::ostringstream os;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) os << ", ";
    os << (node.inputs[i].empty() ? std::string("-") : graph.TypeOf(node.inputs[i]).ToString());
  }
  return os.str();
}

// Every placeholder operation reachable from `outputs`.
std::set<const te::OperationNode*> ReachablePlaceholders(const std::vector<te::Tensor>& outputs) {
  std::set<const te::OperationNode*> seen, result;
  std::vector<te::Operation> stack;
  for (const te::Tensor& t : outputs) stack.push_back(t.op());
  while (!stack.empty()) {
    te::Operation op = stack.back();
    stack.pop_back();
    if (!seen.insert(op.get()).second) continue;
    if (op->kind == te::OpKind::kPlaceholder) result.insert(op.get());
    for (const te::Tensor& in : op->InputTensors()) stack.push_back(in.op());
  }
  return result;
}

bool Inlinable(const te::Operation& op) {
  if (op->kind != te::OpKind::kCompute) return false;
  auto* compute = static_cast<const te::ComputeOpNode*>(op.get());
  if (compute->is_reduction()) return false;
  return op->tag == tag::kElemwise || op->tag == tag::kBroadcast || op->tag == tag::kInjective ||
         op->tag == tag::kPad;
}

// True when `out` reaches the operation `target` without passing through one of
// `stops` (other group outputs, which are materialized).
bool ReachesAvoiding(const te::Tensor& out, const te::OperationNode* target,
                     const std::set<const te::OperationNode*>& stops) {
  std::set<const te::OperationNode*> seen;
  std::vector<te::Operation> stack{out.op()};
  while (!stack.empty()) {
    te::Operation op = stack.back();
    stack.pop_back();
    if (op.get() == target) return true;
    if (!seen.insert(op.get()).second) continue;
    for (const te::Tensor& in : op->InputTensors())
      if (!stops.count(in.op().get()) || in.op().get() == target) stack.push_back(in.op());
  }
  return false;
}

// The stage the anchor's tiled schedule writes: the last stage (in topological
// order) in the anchor's shape that the anchor feeds, such that every group
// output is that stage or reads the anchor only through its materialized
// buffer with no reduction of its own. Those other outputs become root
// injective stages over it. Why: a group may end in ops that change the shape
// (a layout transform, a concat: `all` fusion) or have several outputs (a value
// used inside and outside the group); scheduling the anchor at such an output's
// loops would recompute the conv per output element. Undefined when no stage
// qualifies (the anchor's default schedule).
te::Tensor TiledStage(const te::Schedule& s, const std::vector<te::Tensor>& outputs, const te::Tensor& anchor) {
  if (!anchor.defined()) return te::Tensor();
  std::set<const te::OperationNode*> output_ops;
  for (const te::Tensor& t : outputs) output_ops.insert(t.op().get());
  te::Tensor chosen;
  for (const te::Stage& stage : s->stages) {
    const te::Operation& op = stage->origin_op;
    if (op->kind != te::OpKind::kCompute || op->num_outputs() != 1) continue;
    te::Tensor candidate = op->output(0);
    if (StaticShape(candidate) != StaticShape(anchor)) continue;
    bool is_anchor = op.get() == anchor.op().get();
    if (!is_anchor && (!Inlinable(op) && !output_ops.count(op.get()))) continue;
    if (!is_anchor && !ReachesAvoiding(candidate, anchor.op().get(), {})) continue;
    bool others_read_it = true;
    for (const te::Tensor& out : outputs) {
      if (out.op().get() == op.get()) continue;
      auto* compute = out.op()->kind == te::OpKind::kCompute ? static_cast<const te::ComputeOpNode*>(out.op().get())
                                                             : nullptr;
      others_read_it = others_read_it && compute && !compute->is_reduction() && out.op().get() != anchor.op().get() &&
                       !ReachesAvoiding(out, anchor.op().get(), {op.get()});
    }
    if (others_read_it) chosen = candidate;
  }
  return chosen;
}

// The kernel body preceded by one AssertStmt per run-time check, each reading its operand's
// kernel parameter.
ir::Stmt WithRunTimeChecks(const ir::LoweredFunc& func, const std::vector<te::Tensor>& args,
                           const std::vector<RunTimeCheck>& checks) {
  std::vector<ir::Stmt> stmts;
  for (const RunTimeCheck& check : checks) {
    std::vector<ElementReader> readers;
    for (const te::Tensor& operand : check.operands) {
      size_t param = 0;
      while (param < args.size() && args[param].op().get() != operand.op().get()) ++param;
      AGATE_CHECK(param < args.size()) << "run-time check '" << check.message << "' reads an operand the kernel does not";
      ir::Buffer buffer = func.params[param];
      const bool raw = check.raw_elements;
      readers.push_back([buffer, raw](int64_t i) {
        ir::Expr element = ir::Load::make(buffer, ir::Expr(i));
        return raw ? element : ir::cast(ir::DType::Index(), element);
      });
    }
    stmts.push_back(ir::AssertStmt::make(check.condition(readers), check.message));
  }
  stmts.push_back(func.body);
  return ir::Seq::make(std::move(stmts));
}

}  // namespace

namespace {

struct Knob {
  const char* name;
  int LowerGroupOptions::*field;
  int64_t min, max;
  const char* meaning;
};

const std::vector<Knob>& Knobs() {
  static const std::vector<Knob> knobs = {
      {"conv_oc_block", &LowerGroupOptions::conv_oc_block, 0, 256, "output channels per conv register tile (0: auto)"},
      {"conv_ow_block", &LowerGroupOptions::conv_ow_block, 0, 64, "output columns per conv register tile (0: auto)"},
      {"conv_parallel_rows", &LowerGroupOptions::conv_parallel_rows, -1, 1,
       "blocked conv parallel loop: 0 channel tiles outermost, 1 rows outermost (-1: tiles per row whose weights fit L2/2)"},
      {"dense_n_block", &LowerGroupOptions::dense_n_block, 0, 256, "output columns per dense register tile (0: auto)"},
      {"dense_m_block", &LowerGroupOptions::dense_m_block, 0, 64, "output rows per dense register tile (0: auto)"},
      {"dense_row_block", &LowerGroupOptions::dense_row_block, 0, 1 << 20,
       "GEMM output rows per parallel block, in register tiles (0: from the L2 size)"},
      {"dense_col_block", &LowerGroupOptions::dense_col_block, 0, 1 << 20,
       "GEMM output columns per parallel block, in register tiles (0: from the L2 size)"},
      {"dense_k_block", &LowerGroupOptions::dense_k_block, 0, 1 << 20, "GEMM K slice (0: all of K when it fits L2)"},
      {"dense_parallel_rows", &LowerGroupOptions::dense_parallel_rows, -1, 1,
       "GEMM parallel loop: 0 batch and column blocks, 1 also row blocks (-1: rows only when columns are too few)"},
      {"vector_lanes", &LowerGroupOptions::vector_lanes, 0, 64, "float32 SIMD lanes of elementwise kernels (0: the target's)"},
      {"conv_winograd", &LowerGroupOptions::conv_winograd, -1, 1, "Winograd 3x3, 5x5, 1xr, rx1 convs: -1 auto, 0 never, 1 whenever it applies"},
      {"winograd_tile", &LowerGroupOptions::winograd_tile, 0, 4, "Winograd output tile: 2 or 4 (0: by shape)"},
      {"winograd_tile_block", &LowerGroupOptions::winograd_tile_block, 0, 64, "Winograd tiles per GEMM register tile (0: auto)"},
      {"int8_oc_block", &LowerGroupOptions::int8_oc_block, 0, 16, "int8 conv (VNNI or AVX2): output channels per register tile (0: auto)"},
      {"int8_pixel_vectors", &LowerGroupOptions::int8_pixel_vectors, 0, 4,
       "int8 VNNI conv: 16-pixel vectors per register tile (0: auto)"},
      {"int8_tile_order", &LowerGroupOptions::int8_tile_order, -1, 1,
       "int8 conv tile loop: 0 channel blocks outermost, 1 pixel tiles outermost (-1: 1 for 1x1 convs)"},
      {"int8_mcu_smlad", &LowerGroupOptions::int8_mcu_smlad, -1, 1,
       "int8 microcontroller conv on a core with DSP: 1 SMLAD on weight pairs, 0 one product per multiply-accumulate "
       "(-1: SMLAD)"},
      {"int8_mcu_oc_block", &LowerGroupOptions::int8_mcu_oc_block, 0, 4,
       "int8 microcontroller conv with SMLAD: output channels sharing an activation pair, 1, 2 or 4 (0: the largest "
       "dividing the group's)"},
      {"int8_mcu_packed", &LowerGroupOptions::int8_mcu_packed, -1, 1,
       "int8 microcontroller conv with SMLAD: 1 int8 weights four to a word, unpacked by SXTB16 (int8's flash), "
       "0 int16 weight pairs (one load per pair, twice the flash) (-1: packed)"},
      {"loop_partition", &LowerGroupOptions::loop_partition, -1, 1,
       "cut loops where a tail or padding guard stops holding into head, guard-free interior and tail: 0 keeps "
       "the guards (less code, e.g. a microcontroller's flash) (-1: cut)"},
      {"cuda_threads", &LowerGroupOptions::cuda_threads, 0, 1024, "cuda: threads per block of element-wise kernels, a power of two >= 32 (0: 256)"},
      {"cuda_tile", &LowerGroupOptions::cuda_tile, 0, 128, "cuda: dense rows/columns or conv channels per block: 16, 32, 64 or 128 (0: auto)"},
      {"cuda_k_step", &LowerGroupOptions::cuda_k_step, 0, 64, "cuda: k or input channels per shared-memory step (0: 16 dense, 8 conv)"},
      {"cuda_k_split", &LowerGroupOptions::cuda_k_split, 0, 8,
       "cuda: conv input channels split across threadIdx.z: 1 off, 2, 4 or 8 (0: small grids over deep reductions)"},
  };
  return knobs;
}

}  // namespace

void SetScheduleKnob(LowerGroupOptions* options, const std::string& name, int64_t value) {
  if (name == "parallel") {
    AGATE_REQUIRE(value == 0 || value == 1, kInvalidArgument)
        << "schedule knob parallel=" << value << ": 1 runs the outer loop on the thread pool, 0 on one thread";
    options->allow_parallel = value != 0;
    return;
  }
  for (const Knob& k : Knobs()) {
    if (name != k.name) continue;
    AGATE_REQUIRE(value >= k.min && value <= k.max, kInvalidArgument)
        << "schedule knob " << name << "=" << value << " is out of its range [" << k.min << ", " << k.max << "]";
    AGATE_REQUIRE(name != "winograd_tile" || value == 0 || value == 2 || value == 4, kInvalidArgument)
        << "schedule knob winograd_tile=" << value << ": the output tile is 2 or 4 (0: by shape)";
    AGATE_REQUIRE(name != "int8_mcu_oc_block" || value != 3, kInvalidArgument)
        << "schedule knob int8_mcu_oc_block=3: 1, 2 or 4 output channels (0: auto)";
    AGATE_REQUIRE(name != "cuda_threads" || value == 0 || (value >= 32 && (value & (value - 1)) == 0), kInvalidArgument)
        << "schedule knob cuda_threads=" << value << ": a power of two from 32 to 1024 (0: 256)";
    AGATE_REQUIRE(name != "cuda_tile" || value == 0 || value == 16 || value == 32 || value == 64 || value == 128,
                  kInvalidArgument)
        << "schedule knob cuda_tile=" << value << ": 16, 32, 64 or 128 (0: auto)";
    AGATE_REQUIRE(name != "cuda_k_split" || value == 0 || value == 1 || value == 2 || value == 4 || value == 8,
                  kInvalidArgument)
        << "schedule knob cuda_k_split=" << value << ": 1 (off), 2, 4 or 8 input-channel slices (0: auto)";
    options->*k.field = static_cast<int>(value);
    return;
  }
  AGATE_THROW(kInvalidArgument) << "unknown schedule knob '" << name << "'; the knobs are:\n" << DescribeScheduleKnobs();
}

std::string DescribeScheduleKnobs() {
  std::ostringstream os;
  for (const Knob& k : Knobs()) os << "  " << k.name << " [" << k.min << ".." << k.max << "]: " << k.meaning << "\n";
  os << "  parallel [0..1]: 1 runs each kernel's outer loop on the thread pool (default), 0 on one thread\n";
  return os.str();
}

bool HasImplementation(const std::string& op) {
  return OpTable::Global().Find(op) != nullptr || IsRecurrentOp(op) || IsNonMaxSuppressionOp(op) || IsMaxUnpoolOp(op) ||
         IsDetOp(op) || IsRoiAlignOp(op) || IsTfIdfVectorizerOp(op);
}

GroupKernel LowerGroup(const graph::Graph& graph, const graph::FusedGroup& group, const target::Target& target,
                       const std::string& kernel_name, const LowerGroupOptions& options) {
  AGATE_REQUIRE(!group.nodes.empty(), kInvalidArgument) << "kernel " << kernel_name << ": empty fused group";
  // A recurrence is a loop over time around a fused cell: composed in loop IR (recurrent.h).
  if (group.nodes.size() == 1 && IsRecurrentOp(graph.nodes.at(group.nodes[0]).op)) {
    return LowerRecurrentGroup(graph, group, target, kernel_name, options);
  }
  // So is NonMaxSuppression's greedy walk (non_max_suppression.h).
  if (group.nodes.size() == 1 && IsNonMaxSuppressionOp(graph.nodes.at(group.nodes[0]).op)) {
    return LowerNonMaxSuppressionGroup(graph, group, target, kernel_name);
  }
  // And MaxUnpool's scatter (max_unpool.h).
  if (group.nodes.size() == 1 && IsMaxUnpoolOp(graph.nodes.at(group.nodes[0]).op)) {
    return LowerMaxUnpoolGroup(graph, group, target, kernel_name);
  }
  // And Det's elimination (det.h).
  if (group.nodes.size() == 1 && IsDetOp(graph.nodes.at(group.nodes[0]).op)) {
    return LowerDetGroup(graph, group, target, kernel_name);
  }
  // And RoiAlign's sample loops, whose extents are values (roi_align.h).
  if (group.nodes.size() == 1 && IsRoiAlignOp(graph.nodes.at(group.nodes[0]).op)) {
    return LowerRoiAlignGroup(graph, group, target, kernel_name);
  }
  // And TfIdfVectorizer's n-gram scan over its pool (tfidf_vectorizer.h).
  if (group.nodes.size() == 1 && IsTfIdfVectorizerOp(graph.nodes.at(group.nodes[0]).op)) {
    return LowerTfIdfVectorizerGroup(graph, group, target, kernel_name);
  }
  const bool gpu = target.kind() == target::TargetKind::kCUDA;
  std::map<std::string, te::Tensor> tensors;
  std::vector<std::pair<std::string, te::Tensor>> input_placeholders;
  for (const std::string& value : group.inputs) {
    const graph::TensorType& type = graph.TypeOf(value);
    te::Tensor p = te::placeholder(ToExprShape(type.shape), type.dtype, IdentifierOf(value));
    tensors[value] = p;
    input_placeholders.push_back({value, p});
  }

  std::vector<CreatedConstant> created;
  std::vector<RunTimeCheck> checks;
  ScheduleFn anchor_schedule;
  std::set<const te::OperationNode*> anchor_node_ops;  // what the anchor node itself built
  te::Tensor anchor_tensor;
  // A conv chain (core/fusion/conv_chain.h) is scheduled around its consumer with the producer per row.
  const fusion::ConvChain chain = fusion::FindConvChainIn(graph, group.nodes);
  AGATE_REQUIRE(!gpu || !chain.found(), kUnsupported)
      << "kernel " << kernel_name << ": a depthwise conv fused into a 1x1 conv compiles for CPU targets only";
  const int anchor_index = chain.found() ? chain.consumer : group.anchor;
  ConvChainStages chain_stages;
  for (int index : group.nodes) {
    const graph::Node& node = graph.nodes.at(index);
    const ComputeFn* fn = OpTable::Global().Find(node.op);
    AGATE_REQUIRE(fn != nullptr, kUnsupported)
        << node.Describe() << ": operator " << node.op << " has no implementation in the operator library (inputs "
        << DescribeTypes(graph, node) << ")";
    std::vector<te::Tensor> inputs;
    for (const std::string& in : node.inputs) {
      if (in.empty()) {
        inputs.emplace_back();
        continue;
      }
      auto it = tensors.find(in);
      AGATE_REQUIRE(it != tensors.end(), kInvalidArgument)
          << node.Describe() << ": input '" << in << "' is neither produced in the group nor a group input";
      inputs.push_back(it->second);
    }
    std::vector<graph::TensorType> out_types;
    for (const std::string& out : node.outputs) out_types.push_back(out.empty() ? graph::TensorType{} : graph.TypeOf(out));
    NodeSchedule node_schedule;
    OpContext ctx(graph, node, inputs, out_types, target, options, &created, &node_schedule, &checks);
    std::vector<te::Tensor> outs;
    try {
      outs = (*fn)(ctx);
    } catch (const Error& e) {
      if (e.code() == StatusCode::kInternal) throw;
      if (e.message().find(node.name) != std::string::npos) throw;
      throw Error(e.code(), e.message() + " (in " + node.Describe() + ", inputs " + DescribeTypes(graph, node) + ")");
    }
    // An operator builds every output it defines; a node may leave trailing ones out (ONNX's
    // optional outputs, or a model that names fewer): those stay intermediates of the others.
    AGATE_CHECK(outs.size() >= node.outputs.size())
        << node.Describe() << ": built " << outs.size() << " outputs for " << node.outputs.size();
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      AGATE_CHECK(outs[i].defined()) << node.Describe() << ": output " << i << " '" << node.outputs[i]
                                     << "' was not built";
      tensors[node.outputs[i]] = outs[i];
    }
    if (chain.found() && index == chain.producer) chain_stages.producer = node_schedule.anchor;
    if (index == anchor_index || (anchor_index < 0 && (node_schedule.fn || node_schedule.cuda))) {
      AGATE_REQUIRE(!gpu || node_schedule.cuda || !node_schedule.fn, kUnsupported)
          << node.Describe() << ": operator " << node.op << " has no schedule for target '" << target
          << "' (it compiles for CPU targets only)";
      anchor_schedule = gpu ? node_schedule.cuda : node_schedule.fn;
      anchor_tensor = node_schedule.anchor.defined() ? node_schedule.anchor : outs.at(0);
      for (const te::Tensor& t : outs) anchor_node_ops.insert(t.op().get());
    }
  }

  // Outputs: a group output that is a kernel input already (a value passed through) needs a copy.
  std::vector<te::Tensor> outputs;
  for (const std::string& value : group.outputs) {
    auto it = tensors.find(value);
    AGATE_REQUIRE(it != tensors.end(), kInvalidArgument) << "kernel " << kernel_name << ": output '" << value
                                                          << "' is not produced by the group";
    te::Tensor t = it->second;
    if (t.op()->kind == te::OpKind::kPlaceholder) {
      t = te::compute(t.shape(), [&](const std::vector<te::Var>& i) {
        return t(std::vector<te::Expr>(i.begin(), i.end()));
      }, IdentifierOf(value) + "_copy", tag::kInjective);
    }
    outputs.push_back(t);
  }

  if (chain.found()) {
    chain_stages.producer_out = tensors.at(graph.nodes[chain.consumer].inputs[0]);
    chain_stages.consumer = anchor_tensor;
  }
  te::Schedule s = te::create_schedule(outputs);
  std::set<const te::OperationNode*> output_ops;
  for (const te::Tensor& t : outputs) output_ops.insert(t.op().get());
  bool single_tiled_output = outputs.size() == 1 && anchor_tensor.defined() &&
                             (outputs[0].op().get() == anchor_tensor.op().get() ||
                              StaticShape(outputs[0]) == StaticShape(anchor_tensor));
  // An operator with several outputs of its own (LayerNormalization's Y, Mean,
  // InvStdDev) schedules them itself.
  bool only_anchor_outputs = true;
  for (const te::Tensor& t : outputs) only_anchor_outputs = only_anchor_outputs && anchor_node_ops.count(t.op().get());
  te::Tensor tiled = anchor_schedule && !single_tiled_output && !only_anchor_outputs
                         ? TiledStage(s, outputs, anchor_tensor)
                         : te::Tensor();
  for (const te::Stage& stage : s->stages) {
    if (output_ops.count(stage->origin_op.get())) continue;
    if (anchor_tensor.defined() && stage->origin_op.get() == anchor_tensor.op().get()) continue;
    if (tiled.defined() && stage->origin_op.get() == tiled.op().get()) continue;
    if (chain.found() && stage->origin_op.get() == chain_stages.producer_out.op().get()) continue;
    if (Inlinable(stage->origin_op)) te::Stage(stage).compute_inline();
  }

  std::string summary;
  if (anchor_schedule) {
    ScheduleRequest request;
    request.schedule = s;
    request.anchor = anchor_tensor;
    request.outputs = outputs;
    request.target = &target;
    request.options = &options;
    if (tiled.defined()) request.outputs = {tiled};
    const te::Tensor& main = request.outputs[0];
    if (request.outputs.size() == 1 && anchor_tensor.defined() && main.op().get() != anchor_tensor.op().get()) {
      request.epilogue = main;
    }
    summary = chain.found() ? ScheduleConvChain(request, chain_stages) : anchor_schedule(request);
    if (tiled.defined()) {
      InjectiveKnobs knobs;
      knobs.vector_lanes = options.vector_lanes;
      if (!options.allow_parallel) knobs.min_parallel_elements = INT64_MAX;
      size_t others = 0;
      for (const te::Tensor& out : outputs) {
        if (out.op().get() == tiled.op().get()) continue;
        if (gpu) {
          cuda::ScheduleInjective(s, out, options.cuda_threads);
        } else {
          ScheduleInjectiveStage(s, out, target, knobs);
        }
        ++others;
      }
      summary += "; " + std::to_string(others) + " output(s) computed from its buffer";
    }
  } else {
    InjectiveKnobs knobs;
    knobs.vector_lanes = options.vector_lanes;
    if (!options.allow_parallel) knobs.min_parallel_elements = INT64_MAX;
    for (const te::Tensor& out : outputs) {
      if (gpu) {
        cuda::ScheduleInjective(s, out, options.cuda_threads);
      } else {
        ScheduleInjectiveStage(s, out, target, knobs);
      }
    }
    summary = gpu ? "injective (cuda)" : "injective";
  }
  if (gpu) cuda::BindRemainingStages(s, options.cuda_threads);
  std::ostringstream ops_text;
  for (size_t i = 0; i < group.nodes.size(); ++i) ops_text << (i ? "+" : "") << graph.nodes[group.nodes[i]].op;
  summary += " [" + ops_text.str() + "]";

  // Parameters: inputs the kernel reads, created constants, outputs.
  std::set<const te::OperationNode*> read = ReachablePlaceholders(outputs);
  // An operand only a run-time check reads (a shape operand checked against the declared shape).
  for (const RunTimeCheck& check : checks)
    for (const te::Tensor& operand : check.operands) read.insert(operand.op().get());
  GroupKernel kernel;
  std::vector<te::Tensor> args;
  for (const auto& [value, p] : input_placeholders) {
    if (!read.count(p.op().get())) continue;
    args.push_back(p);
    kernel.params.push_back(KernelParam{KernelParam::Kind::kValue, value, graph::Tensor()});
  }
  for (const CreatedConstant& c : created) {
    if (!read.count(c.placeholder.op().get())) continue;
    args.push_back(c.placeholder);
    kernel.params.push_back(KernelParam{KernelParam::Kind::kConstant, "", c.value});
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    args.push_back(outputs[i]);
    kernel.params.push_back(KernelParam{KernelParam::Kind::kValue, group.outputs[i], graph::Tensor()});
  }
  lower::LowerOptions lower_options;
  if (gpu) {
    const target::CudaArch& arch = target.cuda_arch();
    lower_options.gpu = true;
    lower_options.gpu_limits.arch = arch.name();
    lower_options.gpu_limits.max_threads_per_block = arch.max_threads_per_block;
    lower_options.gpu_limits.max_shared_bytes_per_block = arch.max_shared_bytes_per_block;
    lower_options.gpu_limits.warp_size = arch.warp_size;
  }
  lower_options.narrow_index_math = !gpu && target.pointer_bits() == 32;
  lower_options.partition_loops = options.loop_partition != 0;
  kernel.func = lower::Lower(s, args, kernel_name, lower_options);
  if (!checks.empty()) {
    AGATE_REQUIRE(!gpu, kUnsupported) << "kernel " << kernel_name << " checks an operand read at run time ("
                                      << checks[0].message << "), which only CPU targets do";
    kernel.func.body = WithRunTimeChecks(kernel.func, args, checks);
  }
  kernel.schedule_summary = summary;
  return kernel;
}

}  // namespace ops
}  // namespace agate
