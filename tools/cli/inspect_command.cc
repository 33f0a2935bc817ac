// agate inspect MODEL.onnx|MODEL.agm [--dot FILE] [--target T] [--fusion P] [--input-shape S]
//
// For a model: compiles it (without writing a module) and prints the fused groups with their
// kernels, shapes, constants and peak arena bytes. For a module: verifies it as the runtime
// does and prints what it holds and needs: target, inputs/outputs, kernels, plan, arena,
// constants; for a CUDA module also its images and, per kernel, the launch, ptxas's registers
// and shared memory and the theoretical occupancy.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/compiler/compiler.h"
#include "core/graph/graph.h"
#include "core/serialize/module_metadata.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "core/target/cuda_arch.h"
#include "frontends/onnx/importer.h"
#include "runtime_minimal/core/message.h"
#include "runtime_minimal/core/verify.h"
#include "runtime_minimal/schema/module_generated.h"
#include "tools/cli/command.h"
#include "tools/cli/import_and_compile.h"
#include "tools/cli/module_runner.h"

namespace agate {
namespace cli {
namespace {

struct InspectFlags {
  std::string path;
  std::string dot;
  std::string target = "llvm -mcpu=native";
  std::string fusion = "rule";
  std::string input_shape;
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string TypeText(const graph::Graph& g, const std::string& value) { return g.TypeOf(value).ToString(); }

// Graphviz of the fused graph: one cluster per kernel, edges between values' producers and consumers.
std::string FusedGraphDot(const compiler::CompileResult& result) {
  const graph::Graph& g = result.graph;
  std::ostringstream os;
  os << "digraph \"" << g.name << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  for (const std::string& in : g.inputs) os << "  \"" << in << "\" [shape=ellipse, label=\"" << in << "\\n" << TypeText(g, in) << "\"];\n";
  for (size_t k = 0; k < g.groups.size(); ++k) {
    os << "  subgraph cluster_" << k << " {\n    label=\"" << result.kernels[k].name << "\"; style=rounded; color=blue;\n";
    for (int n : g.groups[k].nodes) {
      const graph::Node& node = g.nodes[n];
      os << "    \"n" << n << "\" [label=\"" << node.op << "\\n" << node.name << "\"];\n";
    }
    os << "  }\n";
  }
  std::map<std::string, int> producers = g.Producers();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (const std::string& in : g.nodes[n].inputs) {
      if (in.empty() || g.IsConstant(in)) continue;
      auto p = producers.find(in);
      std::string from = p == producers.end() ? "\"" + in + "\"" : "\"n" + std::to_string(p->second) + "\"";
      os << "  " << from << " -> \"n" << n << "\" [label=\"" << TypeText(g, in) << "\", fontsize=8];\n";
    }
  }
  for (const std::string& out : g.outputs) {
    os << "  \"out_" << out << "\" [shape=ellipse, label=\"" << out << "\\n" << TypeText(g, out) << "\"];\n";
    auto p = producers.find(out);
    if (p != producers.end()) os << "  \"n" << p->second << "\" -> \"out_" << out << "\";\n";
  }
  os << "}\n";
  return os.str();
}

void InspectModel(const InspectFlags& flags) {
  onnx_frontend::ImportOptions import;
  compiler::CompileOptions options;
  options.target = flags.target;
  options.fusion = fusion::ParseFusionPolicy(flags.fusion, flags.target);
  if (!flags.input_shape.empty()) import.input_shapes = onnx_frontend::ParseInputShapes(flags.input_shape);
  compiler::CompileResult result = ImportAndCompile(flags.path, import, options);
  const graph::Graph& g = result.graph;
  std::cout << "model: " << flags.path << "\n";
  for (const std::string& in : g.inputs) std::cout << "input  " << in << ": " << TypeText(g, in) << "\n";
  for (const std::string& out : g.outputs) std::cout << "output " << out << ": " << TypeText(g, out) << "\n";
  std::map<std::string, int> op_counts;
  for (const graph::Node& n : g.nodes) op_counts[n.op]++;
  std::cout << "operators (after graph passes):";
  for (const auto& [op, count] : op_counts) std::cout << " " << op << " x" << count << ";";
  std::cout << "\nfusion: " << flags.fusion << "\n" << result.Summary();
  std::cout << "graph passes:\n" << result.pass_timing_report;
  if (!flags.dot.empty()) {
    std::string dot = FusedGraphDot(result);
    WriteFileAtomically(flags.dot, dot.data(), dot.size());
    std::cout << "wrote " << flags.dot << "\n";
  }
}

const char* ArgKindName(fb::ArgKind kind) {
  switch (kind) {
    case fb::ArgKind::Input: return "input";
    case fb::ArgKind::Output: return "output";
    case fb::ArgKind::Arena: return "arena";
    case fb::ArgKind::Constant: return "constant";
  }
  return "?";
}

std::string TensorText(const fb::Tensor* t) {
  std::ostringstream os;
  const fb::DType* d = t->dtype();
  os << t->name()->str() << ": " << ir::DType(static_cast<ir::TypeCode>(d->code()), d->bits(), d->lanes()) << "[";
  for (size_t i = 0; i < t->shape()->size(); ++i) os << (i ? "x" : "") << t->shape()->Get(i);
  return os.str() + "]";
}

// CUDA modules: the images, and per kernel its launch, ptxas's registers and
// shared memory, and the theoretical occupancy on the module's architecture.
void PrintCudaKernels(const fb::Module* module) {
  int arch = 0;
  if (module->cuda_images()) {
    for (const fb::CudaImage* image : *module->cuda_images()) {
      bool cubin = image->kind() == fb::CudaImageKind::Cubin;
      if (cubin && arch == 0) arch = static_cast<int>(image->arch());
      std::cout << "cuda image: " << (cubin ? "cubin for sm_" : "PTX for sm_") << image->arch()
                << (cubin ? "" : " and newer") << ", " << image->image()->size() << " bytes\n";
    }
  }
  const target::CudaArch* info = target::FindCudaArch(arch);
  std::cout << "cuda kernels" << (info ? " (occupancy on " + info->name() + ", " + info->example + ")" : "") << ":\n";
  for (const fb::Kernel* k : *module->kernels()) {
    const fb::CudaKernel* c = k->cuda();
    if (!c) continue;
    uint32_t threads = c->block()->x() * c->block()->y() * c->block()->z();
    uint32_t shared = c->shared_memory_bytes() + c->static_shared_memory_bytes();
    std::cout << "  " << k->name()->str() << ": grid " << c->grid()->x() << "x" << c->grid()->y() << "x"
              << c->grid()->z() << ", block " << c->block()->x() << "x" << c->block()->y() << "x" << c->block()->z()
              << ", " << c->registers_per_thread() << " registers/thread, " << c->shared_memory_bytes()
              << " B dynamic + " << c->static_shared_memory_bytes() << " B static shared memory";
    if (info && c->registers_per_thread() > 0) {
      target::Occupancy o = target::TheoreticalOccupancy(*info, threads, c->registers_per_thread(), shared);
      std::cout << ", occupancy " << static_cast<int>(o.fraction * 100 + 0.5) << "% (" << o.blocks_per_sm
                << " blocks/SM, limited by " << o.limited_by << ")";
    }
    std::cout << "\n";
  }
}

void InspectModule(const InspectFlags& flags) {
  AGATE_REQUIRE(flags.dot.empty(), kInvalidArgument) << "--dot needs a model (.onnx): a module holds no graph";
  std::vector<uint8_t> bytes = ReadFile(flags.path);
  // Verified as every runtime does before it reads a module; nothing is loaded or
  // run, so a module for a GPU or another machine is inspected here too.
  const fb::Module* module = nullptr;
  rt::ModuleFacts facts;
  agate_status_t status = rt::VerifyModule(bytes.data(), bytes.size(), &module, &facts);
  if (status != AGATE_OK) {
    throw Error(static_cast<StatusCode>(status), "module '" + flags.path + "': " + rt::LastMessage());
  }
  std::cout << "module: " << flags.path << " (" << bytes.size() << " bytes, format " << module->format_major() << "."
            << module->format_minor() << ", verified)\n";
  std::cout << "target: " << module->target()->str() << "\n";
  if (module->cpu_features() != nullptr && module->cpu_features()->size() != 0) {
    std::cout << "cpu features (the runtime refuses CPUs without them): " << module->cpu_features()->str() << "\n";
  }
  if (const fb::Metadata* metadata = serialize::ReadModuleMetadata(bytes)) {
    if (metadata->compiler_version()) std::cout << "compiler: agate " << metadata->compiler_version()->str();
    if (metadata->content_hash()) std::cout << ", " << metadata->content_hash()->str();
    std::cout << "\n";
    if (metadata->options()) {
      std::cout << "options:";
      for (const fb::Option* option : *metadata->options())
        std::cout << " " << option->key()->str() << "=\"" << option->value()->str() << "\"";
      std::cout << "\n";
    }
  }
  for (const fb::Tensor* in : *module->inputs()) std::cout << "input  " << TensorText(in) << "\n";
  for (const fb::Tensor* out : *module->outputs()) std::cout << "output " << TensorText(out) << "\n";
  if (facts.dynamic != nullptr) {
    // Format 2.0/3.0: "N=1..32, variants 1,8,32", and which tensors carry it (shapes above are upper bounds).
    const fb::DynamicShapes& d = *facts.dynamic;
    const bool padded = d.padded();
    auto variant_extent = [&](uint32_t v, uint32_t s) {
      const fb::Variant& variant = *d.variants()->Get(v);
      return padded ? variant.extents()->Get(s) : variant.extent();
    };
    for (uint32_t s = 0; s < d.symbols()->size(); ++s) {
      const fb::Symbol* symbol = d.symbols()->Get(s);
      std::cout << "symbol " << symbol->name()->str() << "=" << symbol->min() << ".." << symbol->max();
      if (d.variants() != nullptr) {
        std::cout << ", variants ";
        std::vector<int64_t> extents;  // each distinct extent once, in order
        for (uint32_t v = 0; v < d.variants()->size(); ++v) {
          if (std::find(extents.begin(), extents.end(), variant_extent(v, s)) == extents.end()) {
            extents.push_back(variant_extent(v, s));
          }
        }
        std::sort(extents.begin(), extents.end());
        for (size_t i = 0; i < extents.size(); ++i) std::cout << (i ? "," : "") << extents[i];
      }
      // A batch symbol is axis 0 of its tensors; a padded one lists the axes of each.
      std::cout << (padded ? ", padded (on" : " (axis 0 of:");
      auto carriers = [&](const fb::Tensor& t, const fb::TensorDims* dims) {
        std::string axes;
        for (uint32_t a = 0; dims != nullptr && a < dims->kinds()->size(); ++a) {
          if (dims->kinds()->Get(a) == fb::DimKind::Symbolic && rt::AxisSymbol(*dims, a) == s) {
            axes += " " + std::to_string(a);
          }
        }
        if (axes.empty()) return;
        std::cout << " " << t.name()->str() << (padded ? "[axis" + axes + "]" : "");
      };
      for (uint32_t i = 0; i < module->inputs()->size(); ++i) carriers(*module->inputs()->Get(i), rt::InputDims(facts, i));
      for (uint32_t o = 0; o < module->outputs()->size(); ++o) carriers(*module->outputs()->Get(o), rt::OutputDims(facts, o));
      std::cout << "; shapes above are upper bounds)\n";
    }
    if (d.variants() != nullptr) {
      for (uint32_t v = 0; v < d.variants()->size(); ++v) {
        std::cout << "variant ";
        if (d.symbols()->size() == 1) {
          std::cout << variant_extent(v, 0);
        } else {
          for (uint32_t s = 0; s < d.symbols()->size(); ++s) {
            std::cout << (s ? "," : "") << d.symbols()->Get(s)->name()->str() << "=" << variant_extent(v, s);
          }
        }
        std::cout << ": " << d.variants()->Get(v)->plan()->size() << " kernel calls\n";
      }
    }
  }
  uint64_t constant_bytes = 0;
  if (module->constants())
    for (const fb::Constant* c : *module->constants()) constant_bytes += c->data()->size();
  std::cout << "arena: " << module->arena_bytes() << " bytes; workspace: " << module->workspace_bytes()
            << " bytes; constants: " << constant_bytes << " bytes in "
            << (module->constants() ? module->constants()->size() : 0) << " tensors\n";
  if (module->host_object()) std::cout << "host object: " << module->host_object()->data()->size() << " bytes\n";
  std::cout << "plan: " << module->plan()->size() << " kernel calls\n";
  for (const fb::Call* call : *module->plan()) {
    const fb::Kernel* kernel = module->kernels()->Get(call->kernel());
    std::cout << "  " << kernel->name()->str() << "(";
    for (size_t i = 0; i < call->args()->size(); ++i) {
      const fb::Arg* arg = call->args()->Get(i);
      std::cout << (i ? ", " : "") << ArgKindName(arg->kind());
      if (arg->kind() == fb::ArgKind::Arena) {
        std::cout << "@" << arg->offset();
      } else {
        std::cout << " " << arg->index();
      }
      std::cout << ":" << arg->bytes() << "B";
    }
    std::cout << ")\n";
  }
  if (module->target_kind() == fb::TargetKind::Cuda) PrintCudaKernels(module);
}

int RunInspect(const InspectFlags& flags) {
  if (EndsWith(flags.path, ".onnx")) {
    InspectModel(flags);
  } else {
    InspectModule(flags);
  }
  return 0;
}

}  // namespace

CommandRunner RegisterInspectCommand(CLI::App& app) {
  auto flags = std::make_shared<InspectFlags>();
  CLI::App* cmd = app.add_subcommand("inspect", "summarise a model (.onnx) or a compiled module (.agm)");
  cmd->add_option("path", flags->path, "a model (.onnx) or module")->required()->check(CLI::ExistingFile);
  cmd->add_option("--dot", flags->dot, "write the fused graph as Graphviz (models only)");
  cmd->add_option("--target", flags->target, "target to plan kernels for (models only)")->capture_default_str();
  cmd->add_option("--fusion", flags->fusion,
                  "fusion policy (models only): rule, none, all, adaptive[,policy=FILE][,fallback=rule] or random,seed=N")
      ->check(CLI::Validator(fusion::FusionPolicySyntaxError, "POLICY"))
      ->capture_default_str();
  cmd->add_option("--input-shape", flags->input_shape, "override input shapes (models only)");
  return [flags] { return RunInspect(*flags); };
}

}  // namespace cli
}  // namespace agate
