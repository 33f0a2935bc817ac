#include "tests/onnx_conformance/conformance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/graph_eval/interpreter.h"
#include "core/support/error.h"
#include "frontends/onnx/importer.h"
#include "frontends/onnx/tensor_proto.h"

namespace agate {
namespace conformance {

namespace fs = std::filesystem;
using graph::Tensor;

const std::set<std::string>& KnownFailures() {
  static const std::set<std::string> known = {"test_cast_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16"};
  return known;
}

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPassed: return "passed";
    case Outcome::kFailed: return "FAILED";
    case Outcome::kUnsupported: return "unsupported";
  }
  return "?";
}

std::vector<std::string> ListCases(const std::string& root, bool include_expanded) {
  std::vector<std::string> cases;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory()) continue;
    std::string name = entry.path().filename().string();
    bool expanded = name.size() > 9 && name.compare(name.size() - 9, 9, "_expanded") == 0;
    if (expanded && !include_expanded) continue;
    if (!fs::exists(entry.path() / "model.onnx")) continue;
    cases.push_back(entry.path().string());
  }
  AGATE_REQUIRE(!ec, kIo) << "cannot list '" << root << "': " << ec.message();
  std::sort(cases.begin(), cases.end());
  return cases;
}

namespace {

std::vector<std::string> SortedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    files.emplace_back(std::stoi(name.substr(prefix.size())), entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> paths;
  for (auto& f : files) paths.push_back(f.second);
  return paths;
}

// "" when `actual` matches `expected` within ONNX's tolerances, else the first difference.
std::string Compare(Tensor expected, const Tensor& actual, const std::string& name) {
  std::ostringstream why;
  // ONNX 1.12's data sets store bfloat16 outputs as uint16 bit patterns.
  if (expected.dtype() == ir::DType::UInt(16) && actual.dtype() == ir::DType::BFloat16())
    expected = Tensor::FromBytes(actual.dtype(), expected.shape(), expected.raw_data(), expected.nbytes());
  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    why << "output '" << name << "': expected " << expected.dtype() << graph::ShapeToString(expected.shape())
        << ", got " << actual.dtype() << graph::ShapeToString(actual.shape());
    return why.str();
  }
  bool is_float = expected.dtype().is_float();
  for (int64_t i = 0; i < expected.numel(); ++i) {
    bool ok;
    if (is_float) {
      double e = expected.GetDouble(i), a = actual.GetDouble(i);
      ok = (std::isnan(e) && std::isnan(a)) || e == a || std::fabs(a - e) <= 1e-7 + 1e-3 * std::fabs(e);
      if (!ok) why << "output '" << name << "' element " << i << ": expected " << e << ", got " << a;
    } else {
      ok = expected.GetInt(i) == actual.GetInt(i);
      if (!ok) why << "output '" << name << "' element " << i << ": expected " << expected.GetInt(i) << ", got "
                   << actual.GetInt(i);
    }
    if (!ok) return why.str();
  }
  return "";
}

std::string FirstOp(const onnx::ModelProto& model) {
  return model.graph().node_size() ? model.graph().node(0).op_type() : "(no node)";
}

}  // namespace

bool AllOutputsFolded(const graph::Graph& graph) {
  auto folded = [&graph](const std::string& out) {
    if (graph.IsConstant(out)) return true;
    // The compiler writes a constant output with a copy kernel from a module constant
    // (EnsureOutputsProduced in core/compiler): still no arithmetic.
    for (const graph::Node& node : graph.nodes) {
      bool produces = std::find(node.outputs.begin(), node.outputs.end(), out) != node.outputs.end();
      if (produces) return node.op == "Identity" && node.inputs.size() == 1 && graph.IsConstant(node.inputs[0]);
    }
    return false;
  };
  return !graph.outputs.empty() && std::all_of(graph.outputs.begin(), graph.outputs.end(), folded);
}

RunOutput InterpretGraph(const graph::Graph& graph, const std::map<std::string, graph::Tensor>& inputs) {
  std::map<std::string, graph::Tensor> outputs = graph_eval::Interpret(graph, inputs);
  // A value of run-time extents (Graph::run_time_extents) is the front of its upper-bound
  // tensor at the extents the run computed, as the runtime reports it.
  for (const auto& [value, extents] : graph.run_time_extents) {
    const graph::Tensor& bounded = outputs.at(value);
    std::vector<int64_t> shape = outputs.at(extents).ToInts();
    size_t bytes = static_cast<size_t>(graph::NumElements(shape)) * bounded.dtype().element_bytes();
    AGATE_CHECK(bytes <= bounded.nbytes()) << "'" << value << "': extents past the bound";
    outputs[value] = graph::Tensor::FromBytes(bounded.dtype(), shape, bounded.raw_data(), bytes);
    outputs.erase(extents);
  }
  return RunOutput{std::move(outputs), AllOutputsFolded(graph)};
}

const char* InputBindingName(InputBinding binding) {
  return binding == InputBinding::kAllAtRunTime
             ? "every input at run time (as agate compile + agate run)"
             : "inputs that fix shapes bound at compile time (as agate compile --input-value), the rest at run time";
}

CaseResult RunCase(const std::string& case_dir, const Executor& executor, InputBinding binding) {
  CaseResult result;
  result.name = fs::path(case_dir).filename().string();
  result.op = "(unreadable)";
  try {
    onnx::ModelProto model = onnx_frontend::ParseModel(onnx_frontend::ReadFile(case_dir + "/model.onnx"),
                                                       "'" + case_dir + "/model.onnx'");
    result.op = FirstOp(model);
    std::set<std::string> initializers;
    for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
    std::vector<std::string> input_names;
    for (const auto& in : model.graph().input())
      if (!initializers.count(in.name())) input_names.push_back(in.name());
    for (const auto& in : model.graph().input()) {
      AGATE_REQUIRE(in.type().has_tensor_type(), kUnsupported)
          << "graph input '" << in.name() << "' is not a tensor (sequences and optionals are not supported)";
    }
    std::map<std::string, ir::DType> declared;
    for (const auto& in : model.graph().input())
      declared[in.name()] = in.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16 ? ir::DType::BFloat16()
                                                                                              : ir::DType::Void();
    std::set<std::string> static_inputs;
    if (binding == InputBinding::kShapeOperandsAtCompileTime) static_inputs = onnx_frontend::StaticOperandInputs(model);
    std::vector<fs::path> data_sets;
    for (const auto& entry : fs::directory_iterator(case_dir))
      if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
        data_sets.push_back(entry.path());
    std::sort(data_sets.begin(), data_sets.end());
    AGATE_REQUIRE(!data_sets.empty(), kNotFound) << "no test_data_set_* in " << case_dir;
    for (const fs::path& data_set : data_sets) {
      std::vector<std::string> input_files = SortedFiles(data_set, "input_");
      std::vector<std::string> output_files = SortedFiles(data_set, "output_");
      AGATE_REQUIRE(input_files.size() <= input_names.size(), kInvalidArgument)
          << data_set << " has more inputs than the model";
      onnx_frontend::ImportOptions options;
      std::map<std::string, Tensor> runtime_inputs;
      for (size_t i = 0; i < input_files.size(); ++i) {
        Tensor value = onnx_frontend::LoadTensorFile(input_files[i]);
        // ONNX 1.12's data sets store bfloat16 inputs as uint16 bit patterns.
        if (declared[input_names[i]] == ir::DType::BFloat16() && value.dtype() == ir::DType::UInt(16))
          value = Tensor::FromBytes(ir::DType::BFloat16(), value.shape(), value.raw_data(), value.nbytes());
        // The data set's shapes win over the model's declarations (a few cases disagree).
        options.input_shapes[input_names[i]] = value.shape();
        if (static_inputs.count(input_names[i])) {
          options.input_values[input_names[i]] = value;
          result.bound_inputs_at_compile_time = true;
        } else {
          runtime_inputs[input_names[i]] = value;
        }
      }
      graph::Graph g = onnx_frontend::ImportOnnxModel(model, options, case_dir);
      // Optional inputs the data set omits are absent at run time: not supported as graph inputs.
      for (const std::string& in : g.inputs)
        AGATE_REQUIRE(runtime_inputs.count(in), kUnsupported) << "graph input '" << in << "' has no test data";
      g = executor.transform(g);
      if (executor.begin_run)
        executor.begin_run(result.name + "." + std::to_string(&data_set - data_sets.data()));
      RunOutput run = executor.run(g, runtime_inputs);
      const std::map<std::string, Tensor>& outputs = run.outputs;
      // A case is folded only when every data set's outputs were constants.
      result.folded = (data_set == data_sets.front() || result.folded) && run.folded;
      // The outputs the model declares (not the values holding run-time extents).
      const std::vector<std::string> model_outputs = g.VisibleOutputs();
      AGATE_REQUIRE(output_files.size() == model_outputs.size(), kInvalidArgument)
          << data_set << " has " << output_files.size() << " outputs, the model " << model_outputs.size();
      for (size_t i = 0; i < output_files.size(); ++i) {
        std::string why = Compare(onnx_frontend::LoadTensorFile(output_files[i]), outputs.at(model_outputs[i]),
                                  model_outputs[i]);
        if (!why.empty()) {
          result.outcome = Outcome::kFailed;
          result.detail = data_set.filename().string() + ": " + why;
          return result;
        }
      }
    }
    result.outcome = Outcome::kPassed;
  } catch (const Error& e) {
    result.outcome = e.code() == StatusCode::kUnsupported ? Outcome::kUnsupported : Outcome::kFailed;
    result.detail = e.what();
  } catch (const std::exception& e) {
    result.outcome = Outcome::kFailed;
    result.detail = std::string("exception: ") + e.what();
  }
  return result;
}

BothBindings RunCasesBothWays(const std::vector<std::string>& case_dirs, const Executor& executor) {
  BothBindings both;
  for (const std::string& dir : case_dirs) {
    CaseResult compile_time = RunCase(dir, executor, InputBinding::kShapeOperandsAtCompileTime);
    both.run_time.push_back(compile_time.bound_inputs_at_compile_time
                                ? RunCase(dir, executor, InputBinding::kAllAtRunTime)
                                : compile_time);
    both.compile_time.push_back(std::move(compile_time));
  }
  return both;
}

SuiteReport Tally(std::vector<CaseResult> cases) {
  SuiteReport report;
  for (const CaseResult& c : cases) {
    OpTally& t = report.by_op[c.op];
    switch (c.outcome) {
      case Outcome::kPassed:
        ++t.passed, ++report.passed;
        if (c.folded) ++t.folded, ++report.folded;
        break;
      case Outcome::kFailed: ++t.failed, ++report.failed; break;
      case Outcome::kUnsupported: ++t.unsupported, ++report.unsupported; break;
    }
  }
  report.cases = std::move(cases);
  return report;
}

std::string FormatReport(const SuiteReport& report, const std::string& suite, const std::string& executor_label,
                         InputBinding binding, bool list_cases) {
  std::ostringstream os;
  char line[256];
  os << "ONNX conformance: " << suite << "\nexecuted by: " << executor_label << "\ninputs: " << InputBindingName(binding)
     << "\n\n";
  os << "pass = computed + folded; folded: every output was a compile-time constant, no arithmetic ran\n\n";
  std::snprintf(line, sizeof(line), "%-34s %6s %6s %8s %6s %6s %6s\n", "operator", "cases", "pass", "computed",
                "folded", "fail", "unsup");
  os << line;
  for (const auto& [op, t] : report.by_op) {
    std::snprintf(line, sizeof(line), "%-34s %6d %6d %8d %6d %6d %6d\n", op.c_str(), t.total(), t.passed,
                  t.computed(), t.folded, t.failed, t.unsupported);
    os << line;
  }
  if (list_cases) {
    os << "\n";
    for (const CaseResult& c : report.cases) {
      if (c.outcome == Outcome::kPassed) continue;
      std::string detail = c.detail.substr(0, 300);
      std::replace(detail.begin(), detail.end(), '\n', ' ');
      os << OutcomeName(c.outcome) << " " << c.name << " (" << c.op << "): " << detail << "\n";
    }
  }
  std::snprintf(line, sizeof(line),
                "\ntotal: %d cases, %d passed (%.1f%%: %d computed, %d folded at compile time), %d failed, "
                "%d unsupported [%s]\n",
                report.total(), report.passed, 100.0 * report.pass_rate(), report.computed(), report.folded,
                report.failed, report.unsupported, executor_label.c_str());
  os << line;
  return os.str();
}

}  // namespace conformance
}  // namespace agate
