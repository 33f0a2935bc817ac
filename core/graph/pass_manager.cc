#include "core/graph/pass_manager.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/graph/printer.h"
#include "core/graph/shape_inference.h"
#include "core/support/error.h"
#include "core/support/logging.h"

namespace agate {
namespace graph {
namespace {

void VerifyTypes(const Graph& graph, const std::string& pass) {
  Graph inferred = InferShapes(graph);
  for (const Node& node : graph.nodes) {
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      AGATE_REQUIRE(inferred.types.at(out) == graph.TypeOf(out), kInternal)
          << "pass " << pass << " left value '" << out << "' typed " << graph.TypeOf(out).ToString()
          << " but " << node.Describe() << " produces " << inferred.types.at(out).ToString();
    }
  }
}

}  // namespace

PassManager& PassManager::Add(std::string name, PassFn run) {
  passes_.push_back(Pass{std::move(name), std::move(run)});
  return *this;
}

void PassManager::Dump(int index, const std::string& name, const Graph& graph) const {
  if (options_.dump_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(options_.dump_dir, ec);
  AGATE_REQUIRE(!ec, kIo) << "cannot create --dump-ir directory '" << options_.dump_dir << "': " << ec.message();
  char prefix[8];
  std::snprintf(prefix, sizeof(prefix), "%02d_", index);
  std::string path = options_.dump_dir + "/" + prefix + name + ".txt";
  std::ofstream file(path);
  AGATE_REQUIRE(file.good(), kIo) << "cannot write '" << path << "'";
  file << PrintGraph(graph);
  AGATE_REQUIRE(file.good(), kIo) << "cannot write '" << path << "'";
}

Graph PassManager::Run(const Graph& graph) {
  timings_.clear();
  Dump(0, "input", graph);
  Graph current = graph;
  for (size_t i = 0; i < passes_.size(); ++i) {
    const Pass& pass = passes_[i];
    auto start = std::chrono::steady_clock::now();
    try {
      current = pass.run(current);
      if (options_.verify) {
        current.Verify();
        VerifyTypes(current, pass.name);
      }
    } catch (const Error& e) {
      throw Error(e.code(), "in pass " + pass.name + ": " + e.message());
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    timings_.push_back(PassTiming{pass.name, ms, current.nodes.size()});
    AGATE_LOG(INFO) << "pass " << pass.name << ": " << ms << " ms, " << current.nodes.size() << " nodes";
    Dump(static_cast<int>(i) + 1, pass.name, current);
  }
  return current;
}

std::string PassManager::TimingReport() const {
  std::ostringstream os;
  double total = 0;
  for (const PassTiming& t : timings_) {
    char line[160];
    std::snprintf(line, sizeof(line), "%-28s %9.3f ms %6zu nodes\n", t.name.c_str(), t.milliseconds, t.nodes_after);
    os << line;
    total += t.milliseconds;
  }
  char line[160];
  std::snprintf(line, sizeof(line), "%-28s %9.3f ms\n", "total", total);
  os << line;
  return os.str();
}

}  // namespace graph
}  // namespace agate
