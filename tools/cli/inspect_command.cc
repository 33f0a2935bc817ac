// agate inspect MODEL.onnx|MODEL.agm [--dot FILE] [--target T] [--fusion P] [--input-shape S]
//
// For a model: compiles it (without writing a module) and prints the fused groups with their
// kernels, shapes, constants and peak arena bytes. For a module: verifies it with the runtime
// and prints what it holds and needs: target, inputs/outputs, kernels, plan, arena, constants.
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/compiler/compiler.h"
#include "core/graph/graph.h"
#include "core/serialize/module_metadata.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "frontends/onnx/importer.h"
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
  options.fusion = fusion::ParseFusionPolicy(flags.fusion);
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

void InspectModule(const InspectFlags& flags) {
  AGATE_REQUIRE(flags.dot.empty(), kInvalidArgument) << "--dot needs a model (.onnx): a module holds no graph";
  ModuleRunner runner(flags.path, 1);  // loading verifies the module
  std::vector<uint8_t> bytes = ReadFile(flags.path);
  const fb::Module* module = fb::GetModule(bytes.data());
  std::cout << "module: " << flags.path << " (" << bytes.size() << " bytes, format " << module->format_major() << "."
            << module->format_minor() << ", verified)\n";
  std::cout << "target: " << module->target()->str() << "\n";
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
  for (const auto& in : runner.inputs()) {
    std::cout << "input  " << in.name << ": " << in.dtype << "[";
    for (size_t i = 0; i < in.shape.size(); ++i) std::cout << (i ? "x" : "") << in.shape[i];
    std::cout << "]\n";
  }
  for (const auto& out : runner.outputs()) {
    std::cout << "output " << out.name << ": " << out.dtype << "[";
    for (size_t i = 0; i < out.shape.size(); ++i) std::cout << (i ? "x" : "") << out.shape[i];
    std::cout << "]\n";
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
  cmd->add_option("--fusion", flags->fusion, "fusion policy (models only)")
      ->check(CLI::IsMember({"rule", "none", "all"}))
      ->capture_default_str();
  cmd->add_option("--input-shape", flags->input_shape, "override input shapes (models only)");
  return [flags] { return RunInspect(*flags); };
}

}  // namespace cli
}  // namespace agate
