#include "core/compiler/compiler.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "core/codegen/c/codegen_c.h"
#include "core/codegen/cuda/build_cuda.h"
#include "core/codegen/llvm/build_llvm.h"
#include "core/graph/passes/pipeline.h"
#include "core/ir/buffer.h"
#include "core/ir/functor.h"
#include "core/ir/gpu_launch.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/ops/weight_precision.h"
#include "core/serialize/kernel_fingerprint.h"
#include "core/serialize/serialize_module.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "core/support/logging.h"
#include "core/support/version.h"
#include "core/target/cuda_arch.h"
#include "core/target/target.h"

namespace agate {
namespace compiler {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

serialize::TensorSpec TensorSpecOf(const graph::Graph& graph, const std::string& value) {
  const graph::TensorType& type = graph.TypeOf(value);
  return serialize::TensorSpec{value, type.dtype, type.shape};
}

int IndexOf(const std::vector<std::string>& values, const std::string& value) {
  auto it = std::find(values.begin(), values.end(), value);
  return it == values.end() ? -1 : static_cast<int>(it - values.begin());
}

// Assigns module constants: each graph constant once, each kernel-made constant once.
class ConstantTable {
 public:
  uint32_t IndexOfGraphConstant(const graph::Graph& graph, const std::string& value, serialize::ModuleSpec* spec) {
    auto it = graph_constants_.find(value);
    if (it != graph_constants_.end()) return it->second;
    uint32_t index = Add(graph.ConstantOf(value), spec);
    graph_constants_[value] = index;
    return index;
  }
  uint32_t Add(const graph::Tensor& tensor, serialize::ModuleSpec* spec) {
    serialize::ConstantSpec constant;
    const uint8_t* bytes = static_cast<const uint8_t*>(tensor.raw_data());
    constant.data.assign(bytes, bytes + tensor.nbytes());
    constant.alignment = 64;
    spec->constants.push_back(std::move(constant));
    return static_cast<uint32_t>(spec->constants.size() - 1);
  }

 private:
  std::map<std::string, uint32_t> graph_constants_;
};

// Where the values live that are not in the graph memory plan: the run-time extents values
// (Graph::run_time_extents), each in its own arena slot after the planned buffers (read by the
// runtime after the run, so never shared), and the module's outputs (the graph outputs without
// those extents values).
struct ModulePlaces {
  std::vector<std::string> outputs;
  std::map<std::string, uint64_t> extents_slots;  // extents value -> arena offset (8-byte aligned)
};

ModulePlaces PlaceModuleValues(const graph::Graph& graph, serialize::ModuleSpec* spec) {
  ModulePlaces places;
  places.outputs = graph.VisibleOutputs();
  for (const std::string& out : graph.outputs) {
    if (!graph.IsRunTimeExtents(out)) continue;
    uint64_t slot = (spec->arena_bytes + 7) / 8 * 8;
    places.extents_slots[out] = slot;
    spec->arena_bytes = slot + static_cast<uint64_t>(graph.TypeOf(out).bytes());
  }
  return places;
}

// A module whose outputs include values of run-time extents is format 2.0: those outputs are
// ValueDependent on every axis, their extents at the shape slot the plan writes.
void DescribeRunTimeExtents(const graph::Graph& graph, const ModulePlaces& places, serialize::ModuleSpec* spec) {
  if (graph.run_time_extents.empty()) return;
  spec->has_dynamic_shapes = true;
  for (const serialize::TensorSpec& in : spec->inputs) {
    serialize::TensorDimsSpec dims;
    dims.kinds.assign(in.shape.size(), serialize::DimKind::kStatic);
    spec->dynamic_shapes.inputs.push_back(dims);
  }
  for (const serialize::TensorSpec& out : spec->outputs) {
    serialize::TensorDimsSpec dims;
    auto it = graph.run_time_extents.find(out.name);
    dims.kinds.assign(out.shape.size(),
                      it == graph.run_time_extents.end() ? serialize::DimKind::kStatic : serialize::DimKind::kValueDependent);
    if (it != graph.run_time_extents.end()) dims.shape_slot = places.extents_slots.at(it->second);
    spec->dynamic_shapes.outputs.push_back(dims);
  }
}

// Where a graph value lives at run time: a model input or output, a constant, or the arena.
serialize::ArgSpec ArgForValue(const graph::Graph& graph, const std::map<std::string, const graph::BufferAssignment*>& arena,
                               const ModulePlaces& places, const std::string& value, ConstantTable* constants,
                               serialize::ModuleSpec* spec, const std::string& kernel) {
  uint64_t bytes = static_cast<uint64_t>(graph.TypeOf(value).bytes());
  auto slot = places.extents_slots.find(value);
  if (slot != places.extents_slots.end()) return serialize::ArgSpec::Arena(slot->second, bytes);
  int output = IndexOf(places.outputs, value);
  if (output >= 0) return serialize::ArgSpec::Output(static_cast<uint32_t>(output), bytes);
  int input = IndexOf(graph.inputs, value);
  if (input >= 0) return serialize::ArgSpec::Input(static_cast<uint32_t>(input), bytes);
  if (graph.IsConstant(value)) {
    return serialize::ArgSpec::Constant(constants->IndexOfGraphConstant(graph, value, spec), bytes);
  }
  auto it = arena.find(value);
  AGATE_CHECK(it != arena.end()) << "value '" << value << "' used by kernel " << kernel
                                 << " has no place: not an input, output, constant or planned buffer";
  AGATE_CHECK(static_cast<uint64_t>(it->second->bytes) >= bytes) << "planned buffer of '" << value << "' too small";
  return serialize::ArgSpec::Arena(static_cast<uint64_t>(it->second->offset), bytes);
}

// The messages of a kernel's run-time checks (AssertStmts) in program order: the kernel returns
// -1 - i when check i fails (codegen_llvm.h kKernelAssertFailed), and the runtime reports message
// i as the user's error (module.fbs Kernel.check_messages).
std::vector<std::string> CheckMessages(const ir::Stmt& body) {
  class Collector : public ir::IRVisitor {
   public:
    std::vector<std::string> messages;
    void VisitStmt_(const ir::AssertStmt* op, const ir::Stmt& self) override {
      messages.push_back(op->message);
      ir::IRVisitor::VisitStmt_(op, self);
    }
  };
  Collector collector;
  collector.VisitStmt(body);
  return collector.messages;
}

void DumpKernel(const std::string& dir, const std::string& name, const std::string& text) {
  if (dir.empty()) return;
  std::string folder = dir + "/kernels";
  ::mkdir(dir.c_str(), 0755);
  ::mkdir(folder.c_str(), 0755);
  WriteFileAtomically(folder + "/" + name + ".txt", text.data(), text.size());
}

// Model inputs and outputs are the caller's memory, which the runtime only requires to be aligned
// to the element size (runtime.h, agate_executor_set_input); arena and constant buffers are
// 64-byte aligned by the module. The kernel must not assume more than that for a caller's buffer.
void RelaxCallerBufferAlignment(ir::LoweredFunc* func, size_t param) {
  const ir::Buffer& buffer = func->params[param];
  int element = buffer->dtype.element_bytes();
  if (buffer->alignment <= element) return;
  auto relaxed = std::make_shared<ir::BufferNode>(*buffer.get());
  relaxed->alignment = element;
  // Codegen keys alignment facts by the data variable, which stays the same, so the body's
  // loads and stores see the relaxed alignment without being rewritten.
  func->params[param] = ir::Buffer(std::move(relaxed));
}

std::string NodeLabel(const graph::Node& node) { return node.name + " (" + node.op + ")"; }

// Every graph output with elements must be written by some kernel: the runtime has no other way
// to fill it. An output that constant folding turned into a constant (a model that computes a
// fixed tensor, or a shape) gets a copy kernel from a module constant; an output that is a model
// input passed straight through is refused, since the runtime's inputs and outputs are distinct
// tensors. A zero-element output has nothing to write: it needs no kernel (the runtime's verifier
// accepts an unwritten output of 0 bytes), so it is left as it is.
void EnsureOutputsProduced(graph::Graph* graph) {
  std::set<std::string> produced;
  for (const graph::FusedGroup& group : graph->groups)
    for (const std::string& out : group.outputs) produced.insert(out);
  for (const std::string& out : graph->outputs) {
    if (produced.count(out)) continue;
    AGATE_REQUIRE(graph->IsConstant(out), kUnsupported)
        << "model output '" << out << "' is the model input of the same name passed through unchanged; "
        << "agate compiles models whose outputs are computed by at least one operator";
    if (graph->ConstantOf(out).numel() == 0) continue;
    std::string source = graph->FreshName(out + "_constant");
    graph->AddConstant(source, graph->ConstantOf(out));
    graph->constants.erase(out);
    graph::Node copy;
    copy.name = graph->FreshName(out + "_copy");
    copy.op = "Identity";
    copy.inputs = {source};
    copy.outputs = {out};
    graph->AddNode(copy);
    graph::FusedGroup group;
    group.nodes = {static_cast<int>(graph->nodes.size() - 1)};
    group.kind = graph::OpKind::kElemWise;
    group.inputs = {source};
    group.outputs = {out};
    graph->groups.push_back(std::move(group));
    produced.insert(out);
  }
}

// The module's CUDA images (the cubin for the target's arch, then its PTX) and
// each kernel's launch and ptxas figures, from one NVRTC compile of all kernels.
void AddCudaPayload(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target,
                    const std::string& dump_dir, CompileResult* result) {
  codegen::CudaBuild build = codegen::BuildCuda(funcs, target, "module");
  result->cuda_source = build.source;
  result->cuda_log = build.log;
  if (!dump_dir.empty()) {
    ::mkdir(dump_dir.c_str(), 0755);
    WriteFileAtomically(dump_dir + "/kernels.cu", build.source.data(), build.source.size());
    WriteFileAtomically(dump_dir + "/kernels.ptx", build.ptx.data(), build.ptx.size());
  }
  serialize::ModuleSpec& spec = result->spec;
  spec.cuda_images.push_back({serialize::CudaImageKind::kCubin, static_cast<uint32_t>(build.arch), build.cubin});
  spec.cuda_images.push_back(
      {serialize::CudaImageKind::kPtx, static_cast<uint32_t>(build.arch),
       std::vector<uint8_t>(build.ptx.begin(), build.ptx.end())});
  std::map<std::string, const codegen::CudaKernelBinary*> by_name;
  for (const codegen::CudaKernelBinary& k : build.kernels) by_name[k.source.name] = &k;
  const target::CudaArch& arch = target.cuda_arch();
  for (size_t i = 0; i < spec.kernels.size(); ++i) {
    serialize::KernelSpec& k = spec.kernels[i];
    auto it = by_name.find(k.name);
    AGATE_CHECK(it != by_name.end()) << "CUDA kernel " << k.name << " was not built";
    const codegen::CudaKernelBinary& b = *it->second;
    const ir::GpuLaunch& l = b.source.launch;
    k.has_cuda = true;
    k.cuda.kind = serialize::CudaImageKind::kCubin;
    k.cuda.grid = {static_cast<uint32_t>(l.grid[0]), static_cast<uint32_t>(l.grid[1]), static_cast<uint32_t>(l.grid[2])};
    k.cuda.block = {static_cast<uint32_t>(l.block[0]), static_cast<uint32_t>(l.block[1]),
                    static_cast<uint32_t>(l.block[2])};
    k.cuda.shared_memory_bytes = static_cast<uint32_t>(l.shared_bytes);
    k.cuda.registers_per_thread = static_cast<uint32_t>(b.registers);
    k.cuda.static_shared_memory_bytes = static_cast<uint32_t>(b.static_shared_bytes);
    CudaLaunchSummary summary;
    summary.name = k.name;
    for (int d = 0; d < 3; ++d) {
      summary.grid[d] = static_cast<uint32_t>(l.grid[d]);
      summary.block[d] = static_cast<uint32_t>(l.block[d]);
    }
    summary.dynamic_shared_bytes = k.cuda.shared_memory_bytes;
    summary.static_shared_bytes = k.cuda.static_shared_memory_bytes;
    summary.registers = k.cuda.registers_per_thread;
    target::Occupancy o =
        target::TheoreticalOccupancy(arch, l.threads_per_block(), b.registers, l.shared_bytes + b.static_shared_bytes);
    summary.occupancy = o.fraction;
    summary.occupancy_limit = o.limited_by;
    result->kernels.at(result->call_group.at(i)).cuda.push_back(summary);
  }
}

}  // namespace

uint64_t CompileResult::constant_bytes() const {
  uint64_t total = 0;
  for (const serialize::ConstantSpec& c : spec.constants) total += c.data.size();
  return total;
}

std::string CompileResult::Summary() const {
  std::ostringstream os;
  os << "target: " << spec.target << "\n";
  if (!quantization.empty()) os << "quantization: " << quantization << "\n";
  if (precision != "fp32") {
    os << "precision: " << precision << " weights (" << narrow_weights << " packed tensors, " << narrow_weight_bytes
       << " bytes; other constants keep their types), float32 accumulation\n";
  }
  os << "kernels: " << kernels.size() << " (from " << graph.nodes.size() << " graph nodes)\n";
  for (const KernelSummary& k : kernels) {
    os << "  " << k.name << ": ";
    for (size_t i = 0; i < k.nodes.size(); ++i) os << (i ? " + " : "") << k.nodes[i];
    if (!k.schedule.empty()) os << "  [" << k.schedule << "]";
    if (k.workspace_bytes) os << "  workspace " << k.workspace_bytes << " B";
    os << "\n";
    for (const CudaLaunchSummary& c : k.cuda) {
      os << "    " << c.name << ": grid " << c.grid[0] << "x" << c.grid[1] << "x" << c.grid[2] << ", block "
         << c.block[0] << "x" << c.block[1] << "x" << c.block[2] << ", " << c.registers << " registers, "
         << c.dynamic_shared_bytes + c.static_shared_bytes << " B shared, occupancy "
         << static_cast<int>(c.occupancy * 100 + 0.5) << "% (" << c.occupancy_limit << ")\n";
    }
  }
  os << "arena: " << spec.arena_bytes << " bytes (one buffer per intermediate would need "
     << graph.memory_plan.total_intermediate_bytes << ")\n";
  os << "constants: " << constant_bytes() << " bytes in " << spec.constants.size() << " tensors\n";
  os << "workspace: " << spec.workspace_bytes << " bytes\n";
  os << "module: " << module.size() << " bytes\n";
  os << "compile time:";
  double total = 0;
  for (const PhaseTiming& t : timings) {
    os << " " << t.phase << " " << static_cast<int64_t>(t.milliseconds + 0.5) << " ms;";
    total += t.milliseconds;
  }
  os << " total " << static_cast<int64_t>(total + 0.5) << " ms\n";
  return os.str();
}

namespace {

bool HasOs(const target::Target& target) {
  return target.kind() == target::TargetKind::kLLVM && !target.is_bare_metal();
}

graph::Graph RunGraphPasses(const graph::Graph& input_graph, const CompileOptions& options,
                            const target::Target& target, CompileResult* result) {
  graph::PipelineOptions pipeline;
  pipeline.fusion = options.opt_level == 0 ? fusion::FusionPolicy::kNone : options.fusion;
  pipeline.dump_dir = options.dump_ir_dir;
  pipeline.fuse_attention = target.kind() != target::TargetKind::kCUDA;
  pipeline.memory_plan = options.memory_plan;
  // Blocked NCHW{c}c layout, c = the target's float32 SIMD lanes, so convolution kernels load and
  // store whole vectors of channels (TVM's NCHWc for CPUs). Microcontroller targets keep NCHW.
  int lanes = target.NativeLanes(ir::DType::Float(32));
  if (options.opt_level >= 2 && HasOs(target) && lanes >= 4) pipeline.layout_block = lanes;
  graph::PassManager passes = graph::BuildPipeline(pipeline);
  graph::Graph graph = passes.Run(input_graph);
  if (result) result->pass_timing_report = passes.TimingReport();
  EnsureOutputsProduced(&graph);
  return graph;
}

// The module around lowered kernels (kernels[i] is result->graph.groups[i]'s, or the plan's i-th
// call): signature, constants, plan, machine code, serialized bytes.
void BuildModule(std::vector<ops::GroupKernel> kernels, const std::vector<std::vector<std::string>>& kernel_nodes,
                 const target::Target& target, const CompileOptions& options, CompileResult* result) {
  const graph::Graph& graph = result->graph;
  bool has_os = HasOs(target);
  const bool cuda = target.kind() == target::TargetKind::kCUDA;
  serialize::ModuleSpec& spec = result->spec;
  spec.target = target.ToString();
  spec.target_kind = cuda     ? serialize::TargetKind::kCuda
                     : has_os ? serialize::TargetKind::kHostCpu
                              : serialize::TargetKind::kMicro;
  // What the kernels may use, so the runtime can refuse a CPU without it rather than crash.
  if (spec.target_kind == serialize::TargetKind::kHostCpu) {
    spec.cpu_features.assign(target.features().begin(), target.features().end());
  }
  for (const std::string& in : graph.inputs) spec.inputs.push_back(TensorSpecOf(graph, in));
  spec.arena_bytes = static_cast<uint64_t>(graph.memory_plan.arena_bytes);
  spec.arena_alignment = 64;
  AGATE_REQUIRE(graph.run_time_extents.empty() || spec.target_kind == serialize::TargetKind::kHostCpu, kUnsupported)
      << "output '" << (graph.run_time_extents.empty() ? "" : graph.run_time_extents.begin()->first)
      << "' has extents known only when the model runs, which modules for host CPUs (llvm with an OS) support; target '"
      << target.ToString() << "' is not one";
  const ModulePlaces places = PlaceModuleValues(graph, &spec);
  for (const std::string& out : places.outputs) spec.outputs.push_back(TensorSpecOf(graph, out));
  DescribeRunTimeExtents(graph, places, &spec);
  std::map<std::string, const graph::BufferAssignment*> arena;
  for (const graph::BufferAssignment& b : graph.memory_plan.buffers) arena[b.value] = &b;
  ConstantTable constants;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ops::GroupKernel& kernel = kernels[i];
    serialize::KernelSpec kspec;
    kspec.name = kernel.func.name;
    kspec.workspace_bytes = static_cast<uint64_t>(kernel.func.workspace_bytes);
    kspec.check_messages = CheckMessages(kernel.func.body);
    serialize::CallSpec call;
    call.kernel = static_cast<uint32_t>(i);
    AGATE_CHECK(kernel.params.size() == kernel.func.params.size())
        << "kernel " << kernel.func.name << " binds " << kernel.params.size() << " of " << kernel.func.params.size()
        << " parameters";
    for (size_t p = 0; p < kernel.params.size(); ++p) {
      const ops::KernelParam& param = kernel.params[p];
      serialize::ArgSpec arg;
      if (param.kind == ops::KernelParam::Kind::kConstant) {
        arg = serialize::ArgSpec::Constant(constants.Add(param.constant, &spec), param.constant.nbytes());
      } else {
        arg = ArgForValue(graph, arena, places, param.value, &constants, &spec, kernel.func.name);
      }
      if (arg.kind == serialize::ArgSpec::Kind::kInput || arg.kind == serialize::ArgSpec::Kind::kOutput) {
        RelaxCallerBufferAlignment(&kernel.func, p);
      }
      kspec.param_bytes.push_back(arg.bytes);
      call.args.push_back(arg);
    }
    spec.workspace_bytes = std::max(spec.workspace_bytes, kspec.workspace_bytes);
    if (cuda) {
      // One module kernel and one call per launch, all with the group's arguments.
      // None when the group has nothing to compute (every output has zero elements).
      std::vector<ir::GpuLaunch> launches = ir::CollectGpuLaunches(kernel.func.body);
      for (const ir::GpuLaunch& l : launches) {
        serialize::KernelSpec launch = kspec;
        launch.name = l.name;
        serialize::CallSpec launch_call = call;
        launch_call.kernel = static_cast<uint32_t>(spec.kernels.size());
        spec.kernels.push_back(std::move(launch));
        spec.plan.push_back(std::move(launch_call));
        result->call_group.push_back(i);
      }
    } else {
      call.kernel = static_cast<uint32_t>(spec.kernels.size());
      spec.kernels.push_back(std::move(kspec));
      spec.plan.push_back(std::move(call));
      result->call_group.push_back(i);
    }
    result->kernels.at(i).workspace_bytes = static_cast<uint64_t>(kernel.func.workspace_bytes);
    result->kernels.at(i).nodes = kernel_nodes.at(i);
  }

  // Machine code: host CPUs get a shared object inside the module; microcontrollers link
  // the kernels into their firmware and the module names them.
  auto t0 = Clock::now();
  std::vector<ir::LoweredFunc> funcs;
  for (const ops::GroupKernel& k : kernels) funcs.push_back(k.func);
  if (cuda) {
    std::vector<ir::LoweredFunc> launched;
    for (const ir::LoweredFunc& f : funcs)
      if (ir::HasGpuLaunches(f.body)) launched.push_back(f);
    if (!launched.empty()) AddCudaPayload(launched, target, options.dump_ir_dir, result);
  } else if (has_os && funcs.empty()) {
    // Nothing to link (every output is a zero-element constant): the module carries no host object.
  } else if (has_os) {
    std::string object = codegen::BuildLLVMSharedObject(funcs, target);
    spec.host_object.assign(object.begin(), object.end());
  } else if (target.kind() == target::TargetKind::kC) {
    result->firmware_kernels = codegen::GenerateC(funcs, target);
    result->firmware_kernels_suffix = ".c";
  } else {
    result->firmware_kernels = codegen::BuildLLVMObject(funcs, target).object;
    result->firmware_kernels_suffix = ".o";
  }
  result->timings.push_back({"codegen", MsSince(t0)});
  result->funcs = std::move(funcs);
  // What the firmware's kernel table is checked against (CUDA kernels are loaded from the
  // module itself and need none).
  if (!cuda) {
    const std::string code = !result->firmware_kernels.empty()
                                 ? result->firmware_kernels
                                 : std::string(spec.host_object.begin(), spec.host_object.end());
    spec.kernel_fingerprint = serialize::KernelFingerprint(options.kernel_prefix, spec.kernels, code);
  }

  spec.metadata.compiler_version = AGATE_VERSION_STRING;
  spec.metadata.options = options.recorded_options;
  if (!result->quantization.empty()) spec.metadata.options.push_back({"quantization", result->quantization});
  // The weights' storage, whoever called (the command line records its flag already).
  const bool precision_recorded = std::any_of(spec.metadata.options.begin(), spec.metadata.options.end(),
                                              [](const auto& option) { return option.first == "precision"; });
  if (!precision_recorded && result->precision != "fp32") spec.metadata.options.push_back({"precision", result->precision});
  t0 = Clock::now();
  result->module = serialize::SerializeModule(spec);
  result->timings.push_back({"serialize", MsSince(t0)});
}

// The graph holding only group `index` of `planned`: its non-constant inputs as graph inputs,
// its constant inputs as constants, its nodes, its outputs as graph outputs. No arena: every
// value a kernel argument names is an input, an output or a constant.
graph::Graph ExtractGroup(const graph::Graph& planned, size_t index) {
  AGATE_REQUIRE(index < planned.groups.size(), kInvalidArgument)
      << "fused group " << index << " does not exist (the graph has " << planned.groups.size() << ")";
  const graph::FusedGroup& group = planned.groups[index];
  graph::Graph sub;
  sub.name = planned.name + "_group" + std::to_string(index);
  for (const std::string& value : group.inputs) {
    if (planned.IsConstant(value)) {
      sub.constants[value] = planned.ConstantOf(value);
    } else {
      sub.inputs.push_back(value);
    }
    sub.types[value] = planned.TypeOf(value);
  }
  graph::FusedGroup copy = group;
  copy.nodes.clear();
  copy.anchor = -1;
  for (int n : group.nodes) {
    const graph::Node& node = planned.nodes.at(n);
    if (n == group.anchor) copy.anchor = static_cast<int>(sub.nodes.size());
    copy.nodes.push_back(static_cast<int>(sub.nodes.size()));
    sub.nodes.push_back(node);
    for (const std::string& out : node.outputs)
      if (!out.empty()) sub.types[out] = planned.TypeOf(out);
  }
  sub.outputs = group.outputs;
  sub.groups.push_back(std::move(copy));
  sub.memory_plan.planned = true;
  return sub;
}

}  // namespace

void CheckKernelPrefix(const std::string& prefix) {
  if (prefix.empty()) return;
  bool ok = prefix.size() <= 64 && !std::isdigit(static_cast<unsigned char>(prefix[0])) && prefix[0] != '_';
  for (char c : prefix) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_') && (c & 0x80) == 0;
  AGATE_REQUIRE(ok, kInvalidArgument) << "kernel prefix '" << prefix
                                      << "' is not a C identifier (letters, digits and '_', at most 64, "
                                         "starting with a letter)";
}

std::string KernelPrefixFromPath(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  base = base.substr(0, base.find('.'));
  std::string prefix;
  for (char c : base) {
    prefix += (std::isalnum(static_cast<unsigned char>(c)) && (c & 0x80) == 0) ? c : '_';
  }
  while (!prefix.empty() && prefix[0] == '_') prefix.erase(0, 1);
  if (prefix.empty()) return "model";
  if (std::isdigit(static_cast<unsigned char>(prefix[0]))) prefix = "m" + prefix;
  return prefix.substr(0, 64);
}

std::string KernelName(int index, const std::string& op, const std::string& prefix) {
  std::string name = (prefix.empty() ? "" : prefix + "_") + "k" + std::to_string(index) + "_";
  for (char c : op) name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  return name;
}

namespace {

// The graph the pipeline starts from: the input, or with --quantize its calibrated QDQ form.
graph::Graph QuantizedIfAsked(const graph::Graph& graph, const CompileOptions& options, std::string* description) {
  if (!options.quantize) return graph;
  quantize::QuantizedGraph q = quantize::QuantizeGraph(graph, *options.quantize, options.dump_ir_dir);
  if (description) *description = q.description;
  return std::move(q.graph);
}

}  // namespace

graph::Graph PlanGraph(const graph::Graph& graph, const CompileOptions& options) {
  return RunGraphPasses(QuantizedIfAsked(graph, options, nullptr), options, target::Target::Parse(options.target),
                        nullptr);
}

CompileResult CompileGraph(const graph::Graph& input_graph, const CompileOptions& options) {
  CompileResult result;
  target::Target target = target::Target::Parse(options.target);
  CheckKernelPrefix(options.kernel_prefix);
  ops::CheckWeightPrecision(options.precision, target);
  result.precision = ops::WeightPrecisionName(options.precision);

  auto t0 = Clock::now();
  graph::Graph quantized;
  if (options.quantize) {
    quantized = QuantizedIfAsked(input_graph, options, &result.quantization);
    result.timings.push_back({"quantize", MsSince(t0)});
    t0 = Clock::now();
  }
  result.graph = RunGraphPasses(options.quantize ? quantized : input_graph, options, target, &result);
  result.timings.push_back({"graph passes", MsSince(t0)});
  const graph::Graph& graph = result.graph;

  // One kernel per fused group, with its workload's tuned knobs when there are any.
  t0 = Clock::now();
  std::vector<ops::GroupKernel> kernels;
  std::vector<std::vector<std::string>> kernel_nodes;
  for (size_t i = 0; i < graph.groups.size(); ++i) {
    const graph::FusedGroup& group = graph.groups[i];
    int anchor = group.anchor >= 0 ? group.anchor : group.nodes.front();
    std::string name = KernelName(static_cast<int>(i), graph.nodes[anchor].op, options.kernel_prefix);
    KernelSummary summary;
    summary.name = name;
    summary.task_key = ops::TaskKeyOf(graph, group, target);
    ops::LowerGroupOptions knobs = options.schedule_knobs;
    knobs.weight_precision = options.precision;
    ops::KnobSpace space = ops::KnobSpaceOf(graph, group, target);
    summary.tunable = space.size() > 1;
    auto tuned = options.task_knobs.find(summary.task_key);
    if (tuned != options.task_knobs.end()) {
      AGATE_REQUIRE(space.Contains(tuned->second), kInvalidArgument)
          << "kernel " << name << " (task " << summary.task_key << "): the tuned knobs "
          << ops::KnobConfigToString(tuned->second) << " are not in its knob space " << space.ToString();
      knobs = ops::ApplyKnobConfig(tuned->second, knobs);
      summary.tuned = true;
    }
    kernels.push_back(ops::LowerGroup(graph, group, target, name, knobs));
    if (options.max_workspace_bytes >= 0 && kernels.back().func.workspace_bytes > options.max_workspace_bytes) {
      ops::LowerGroupOptions direct = knobs;
      ops::SetScheduleKnob(&direct, "conv_winograd", 0);
      ops::GroupKernel again = ops::LowerGroup(graph, group, target, name, direct);
      AGATE_REQUIRE(again.func.workspace_bytes <= options.max_workspace_bytes, kResourceExhausted)
          << "kernel " << name << " (" << NodeLabel(graph.nodes[anchor]) << ") needs " << again.func.workspace_bytes
          << " bytes of workspace" << (again.func.workspace_bytes < kernels.back().func.workspace_bytes
                                           ? " without Winograd"
                                           : "")
          << ", over --max-workspace " << options.max_workspace_bytes << " (schedule: " << again.schedule_summary
          << ")";
      kernels.back() = std::move(again);
    }
    summary.schedule = kernels.back().schedule_summary;
    result.kernels.push_back(std::move(summary));
    for (const ops::KernelParam& param : kernels.back().params) {
      if (param.kind != ops::KernelParam::Kind::kConstant || options.precision == ir::DType::Float(32) ||
          param.constant.dtype() != options.precision) {
        continue;
      }
      ++result.narrow_weights;
      result.narrow_weight_bytes += param.constant.nbytes();
    }
    std::vector<std::string> labels;
    for (int n : group.nodes) labels.push_back(NodeLabel(graph.nodes[n]));
    kernel_nodes.push_back(std::move(labels));
    DumpKernel(options.dump_ir_dir, name, ir::ToString(kernels.back().func));
  }
  result.timings.push_back({"kernels", MsSince(t0)});

  size_t count = kernels.size();
  BuildModule(std::move(kernels), kernel_nodes, target, options, &result);
  AGATE_LOG(INFO) << "compiled " << count << " kernels, module " << result.module.size() << " bytes";
  return result;
}

CompileResult CompileGroup(const graph::Graph& planned, size_t group_index, const target::Target& target,
                           const ops::LowerGroupOptions& knobs) {
  // Single kernels are compiled to be measured on this machine (the tuner): a GPU kernel
  // needs a GPU, a bare-metal one a board, and neither can be timed here yet.
  AGATE_REQUIRE(target.kind() == target::TargetKind::kLLVM, kUnsupported)
      << "target '" << target.ToString() << "': single kernels are compiled for measurement on this CPU only; "
      << "tuning kernels for " << (target.kind() == target::TargetKind::kCUDA ? "CUDA" : "this target")
      << " is not supported yet";
  AGATE_REQUIRE(HasOs(target), kUnsupported)
      << "target '" << target.ToString() << "': single kernels are measured on targets with an OS only";
  CompileResult result;
  result.graph = ExtractGroup(planned, group_index);
  const graph::FusedGroup& group = result.graph.groups[0];
  int anchor = group.anchor >= 0 ? group.anchor : group.nodes.front();
  KernelSummary summary;
  summary.name = KernelName(static_cast<int>(group_index), result.graph.nodes[anchor].op);
  summary.task_key = ops::TaskKeyOf(result.graph, group, target);
  std::vector<ops::GroupKernel> kernels{ops::LowerGroup(result.graph, group, target, summary.name, knobs)};
  summary.schedule = kernels[0].schedule_summary;
  result.kernels.push_back(summary);
  std::vector<std::vector<std::string>> labels(1);
  for (int n : group.nodes) labels[0].push_back(NodeLabel(result.graph.nodes[n]));
  BuildModule(std::move(kernels), labels, target, CompileOptions{}, &result);
  return result;
}

}  // namespace compiler
}  // namespace agate
