// fusion_env: adaptive fusion's training environment, over agate's own compiler.
//
// Why a tool: the training script (train_fusion.py, python3 + Debian's torch)
// must see exactly the graph, the legal actions and the groups the compiler sees;
// re-implementing the graph passes or the legality checks in Python would drift.
// This binary runs the compiler's graph passes (compiler::PlanGraph) and the
// legal walk (core/fusion/action_space.h) and speaks JSON lines.
//
//   fusion_env MODEL.onnx [--target T] --groups POLICY
//       one JSON object: every operator's raw features and op, and the fused groups
//       the compiler makes under POLICY (any --fusion text), in kernel order (group i
//       is kernel k<i>_...), each with its explicit cost terms (group_terms.h).
//   fusion_env MODEL.onnx [--target T] --interactive
//       first line: the features and each operator's terms as a group of its own; then, per decision, {"seed": s, "chain": [...]};
//       it reads the action k (one integer per line) and answers with the closed
//       group and its terms plus the next decision, until {"done": true}; -1 starts
//       a new episode (answered with the first decision).
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "core/compiler/compiler.h"
#include "core/fusion/action_space.h"
#include "core/fusion/embedding.h"
#include "core/fusion/group_terms.h"
#include "core/support/error.h"
#include "frontends/onnx/importer.h"

namespace agate {
namespace {

std::string Floats(const std::vector<float>& v) {
  std::ostringstream s;
  s << "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.6g", v[i]);
    s << (i ? "," : "") << buf;
  }
  return s.str() + "]";
}

std::string Ints(const std::vector<int>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str() + "]";
}

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string FeaturesJson(const graph::Graph& graph, const fusion::NodeGraph& g) {
  std::ostringstream s;
  s << "\"features\":[";
  for (int v = 0; v < g.size(); ++v) s << (v ? "," : "") << Floats(fusion::OperatorFeatures(graph, g, v));
  s << "],\"ops\":[";
  for (int v = 0; v < g.size(); ++v) s << (v ? "," : "") << Quoted(graph.nodes[v].op);
  s << "]";
  return s.str();
}

std::string GroupJson(const graph::Graph& graph, const fusion::NodeGraph& g, const std::vector<int>& nodes,
                      const target::Target& target) {
  return "{\"nodes\":" + Ints(nodes) + ",\"terms\":" + Floats(fusion::GroupTerms(graph, g, nodes, target)) + "}";
}

int Run(int argc, char** argv) {
  std::string model, target_text = "llvm", groups_policy;
  bool interactive = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--target" && i + 1 < argc) {
      target_text = argv[++i];
    } else if (arg == "--groups" && i + 1 < argc) {
      groups_policy = argv[++i];
    } else if (arg == "--interactive") {
      interactive = true;
    } else if (model.empty() && arg.rfind("--", 0) != 0) {
      model = arg;
    } else {
      AGATE_THROW(kInvalidArgument) << "unknown argument '" << arg << "'";
    }
  }
  AGATE_REQUIRE(!model.empty() && (interactive != !groups_policy.empty()), kInvalidArgument)
      << "usage: fusion_env MODEL.onnx [--target T] (--groups POLICY | --interactive)";
  target::Target target = target::Target::Parse(target_text);
  compiler::CompileOptions options;
  options.target = target_text;
  options.fusion = interactive ? fusion::FusionPolicy::kNone : fusion::ParseFusionPolicy(groups_policy, target_text);
  graph::Graph graph = compiler::PlanGraph(onnx_frontend::ImportOnnxFile(model), options);
  fusion::NodeGraph g(graph);
  if (!interactive) {
    std::cout << "{" << FeaturesJson(graph, g) << ",\"groups\":[";
    for (size_t i = 0; i < graph.groups.size(); ++i)
      std::cout << (i ? "," : "") << GroupJson(graph, g, graph.groups[i].nodes, target);
    std::cout << "]}\n";
    return 0;
  }
  // Each operator alone as a group: the trainer's baseline for its rewards.
  std::cout << "{" << FeaturesJson(graph, g) << ",\"singletons\":[";
  for (int v = 0; v < g.size(); ++v) std::cout << (v ? "," : "") << Floats(fusion::GroupTerms(graph, g, {v}, target));
  std::cout << "]}\n";
  auto walk = std::make_unique<fusion::GranularityWalk>(graph);
  std::string prefix;
  while (true) {
    if (walk->Done()) {
      std::cout << "{" << prefix << "\"done\":true}" << std::endl;
    } else {
      std::cout << "{" << prefix << "\"seed\":" << walk->Seed() << ",\"chain\":" << Ints(walk->Chain()) << "}"
                << std::endl;
    }
    int k = 0;
    if (!(std::cin >> k)) return 0;  // the trainer is done
    prefix.clear();
    if (k < 0 || walk->Done()) {  // -1 (or anything after the end): a new episode
      walk = std::make_unique<fusion::GranularityWalk>(graph);
      continue;
    }
    std::vector<int> closed = walk->Apply(k);
    prefix = "\"closed\":" + GroupJson(graph, g, closed, target) + ",";
  }
}

}  // namespace
}  // namespace agate

int main(int argc, char** argv) {
  try {
    return agate::Run(argc, argv);
  } catch (const agate::Error& e) {
    std::cerr << "fusion_env: " << e.what() << "\n";
    return 1;
  }
}
