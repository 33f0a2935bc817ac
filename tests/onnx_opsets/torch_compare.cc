// Checks agate's sampling operators against PyTorch: reads the cases torch_sampling.py wrote
// (DIR/cases.txt and one DIR/STEM.npz per case), builds each one-node model at its opset with
// ModelBuilder, imports it, and runs it on the reference interpreter and the compiled path
// (compiler -> module -> minimal runtime, as tests/onnx_conformance does). A case passes when both
// outputs are within 1e-4 * (1 + |torch|) of PyTorch's. Prints one line per case and, as the
// last line, "<passed> <failed>" (the suite format of tools/ci/suites).
//
//   torch_compare DIR
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/support/error.h"
#include "frontends/onnx/importer.h"
#include "frontends/onnx/model_builder.h"
#include "tests/onnx_conformance/compiled_executor.h"
#include "tests/onnx_conformance/conformance.h"
#include "tools/npz/npz.h"

namespace agate {
namespace {

using graph::Attribute;
using graph::Tensor;

std::vector<std::string> SplitOn(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

std::pair<std::string, Attribute> ParseAttribute(const std::string& spec) {
  size_t eq = spec.find('='), colon = spec.find(':');
  AGATE_REQUIRE(eq != std::string::npos && colon != std::string::npos && colon > eq, kInvalidArgument)
      << "attribute '" << spec << "' is not NAME=TYPE:VALUE";
  std::string name = spec.substr(0, eq), type = spec.substr(eq + 1, colon - eq - 1), value = spec.substr(colon + 1);
  if (type == "i") return {name, Attribute(int64_t{std::stoll(value)})};
  if (type == "s") return {name, Attribute(value)};
  AGATE_REQUIRE(type == "is", kInvalidArgument) << "attribute type '" << type << "' in '" << spec << "'";
  std::vector<int64_t> ints;
  for (const std::string& v : SplitOn(value, ',')) ints.push_back(std::stoll(v));
  return {name, Attribute(ints)};
}

int OnnxType(ir::DType dtype) {
  if (dtype == ir::DType::Float(32)) return onnx::TensorProto::FLOAT;
  if (dtype == ir::DType::Int(64)) return onnx::TensorProto::INT64;
  AGATE_THROW(kInvalidArgument) << "input of " << dtype;
}

// Max |got - want| / (1 + |want|), or infinity on a shape mismatch.
double RelativeError(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return INFINITY;
  std::vector<double> g = got.ToDoubles(), w = want.ToDoubles();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double e = std::fabs(g[i] - w[i]) / (1 + std::fabs(w[i]));
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  return worst;
}

// Runs one case; returns "" or why it failed.
std::string RunCase(const std::string& dir, const std::string& line, std::string* stem_out) {
  std::vector<std::string> fields = SplitOn(line, ' ');
  AGATE_REQUIRE(fields.size() >= 4, kInvalidArgument) << "case line '" << line << "'";
  const std::string& stem = fields[0];
  *stem_out = stem;
  std::map<std::string, Tensor> arrays;
  for (const npz::Array& a : npz::Load(dir + "/" + stem + ".npz")) {
    arrays[a.name] = Tensor::FromBytes(a.dtype, a.shape, a.data.data(), a.data.size());
  }
  onnx_frontend::ModelBuilder b(std::stoi(fields[2]));
  std::vector<std::string> inputs;
  std::map<std::string, Tensor> feeds;
  for (std::string name : SplitOn(fields[3], ',')) {
    bool constant = name[0] == '@';
    if (constant) name = name.substr(1);
    const Tensor& value = arrays.at(name);
    if (constant) {
      b.Initializer(name, value);
    } else {
      b.Input(name, OnnxType(value.dtype()), value.shape());
      feeds[name] = value;
    }
    inputs.push_back(name);
  }
  std::vector<std::pair<std::string, Attribute>> attrs;
  for (size_t i = 4; i < fields.size(); ++i) attrs.push_back(ParseAttribute(fields[i]));
  b.Node(fields[1], inputs, {"y"}, attrs, stem).Output("y");
  graph::Graph g = onnx_frontend::ImportOnnxModel(b.Build());
  const Tensor& want = arrays.at("expected");
  double reference = RelativeError(conformance::InterpretGraph(g, feeds).outputs.at("y"), want);
  conformance::Executor compiled = conformance::CompiledExecutor(fusion::FusionPolicy::kRule, "llvm");
  double module = RelativeError(compiled.run(compiled.transform(g), feeds).outputs.at("y"), want);
  char text[160];
  std::snprintf(text, sizeof(text), "interpreter %.1e, compiled %.1e", reference, module);
  return reference <= 1e-4 && module <= 1e-4 ? std::string("ok: ") + text : std::string("FAIL: ") + text;
}

}  // namespace
}  // namespace agate

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (written by torch_sampling.py)\n", argv[0]);
    return 2;
  }
  std::ifstream cases(std::string(argv[1]) + "/cases.txt");
  int passed = 0, failed = 0;
  std::string line;
  while (std::getline(cases, line)) {
    if (line.empty()) continue;
    std::string stem = line, result;
    try {
      result = agate::RunCase(argv[1], line, &stem);
    } catch (const agate::Error& e) {
      result = std::string("FAIL: ") + e.what();
    }
    bool ok = result.rfind("ok", 0) == 0;
    (ok ? passed : failed)++;
    std::printf("%-44s %s\n", stem.c_str(), result.c_str());
  }
  std::printf("%d %d\n", passed, failed);
  return 0;
}
