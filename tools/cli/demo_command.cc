// agate demo: the smallest complete use of agate, end to end.
//
// Compiles the bundled model (examples/demo: a small residual CNN exported from PyTorch,
// with its input and PyTorch's output), writes the module, loads it in the minimal runtime
// through the C ABI, runs it, and checks the answer against PyTorch's.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/compiler/compiler.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "tools/cli/command.h"
#include "tools/cli/import_and_compile.h"
#include "tools/cli/module_runner.h"
#include "tools/cli/timing.h"

namespace agate {
namespace cli {
namespace {

struct DemoFlags {
  std::string model = "examples/demo/demo_cnn.onnx";
  std::string output_dir;
  std::string fusion = "rule";
};

std::string Stem(const std::string& onnx_path) { return onnx_path.substr(0, onnx_path.size() - 5); }

// Largest |a - b| and whether every element is within atol + rtol * |b|.
bool Close(const npz::Array& got, const npz::Array& want, double rtol, double atol, double* max_abs_diff) {
  AGATE_REQUIRE(got.dtype == ir::DType::Float(32) && got.shape == want.shape, kInvalidArgument)
      << "output '" << got.name << "' has another type or shape than the reference";
  const float* a = reinterpret_cast<const float*>(got.data.data());
  const float* b = reinterpret_cast<const float*>(want.data.data());
  bool ok = true;
  *max_abs_diff = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double d = std::fabs(double(a[i]) - double(b[i]));
    *max_abs_diff = std::max(*max_abs_diff, d);
    ok = ok && d <= atol + rtol * std::fabs(double(b[i]));
  }
  return ok;
}

int RunDemo(const DemoFlags& flags) {
  std::string dir = flags.output_dir;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = std::string(tmp ? tmp : "/tmp") + "/agate-demo-XXXXXX";
    AGATE_REQUIRE(::mkdtemp(&dir[0]) != nullptr, kIo) << "cannot create a folder for the demo's module";
  }
  std::string module_path = dir + "/demo_cnn.agm";

  std::cout << "1. compile " << flags.model << " for the host (fusion: " << flags.fusion << ")\n";
  compiler::CompileOptions options;
  options.target = "llvm -mcpu=native";
  options.fusion = fusion::ParseFusionPolicy(flags.fusion);
  options.recorded_options = {{"target", options.target}, {"fusion", flags.fusion}};
  compiler::CompileResult result = ImportAndCompile(flags.model, onnx_frontend::ImportOptions(), options);
  std::cout << result.Summary();
  WriteFileAtomically(module_path, result.module);
  std::cout << "2. wrote " << module_path << "\n";

  ModuleRunner runner(module_path, 0);
  std::cout << "3. loaded it in the minimal runtime (target " << runner.target() << ", arena " << runner.arena_bytes()
            << " bytes)\n";
  // The runtime borrows input memory until the runs that read it: keep the arrays alive.
  std::vector<npz::Array> inputs = npz::Load(Stem(flags.model) + ".inputs.npz");
  runner.BindInputs(inputs);
  runner.Run();
  std::vector<npz::Array> outputs = runner.Outputs();
  std::vector<npz::Array> reference = npz::Load(Stem(flags.model) + ".reference.npz");
  RunStatistics stats = MeasureRuns([&] { runner.Run(); }, 20, 10);
  std::cout << "4. ran it: median " << stats.median() << " ms, min " << stats.min() << " ms over 20x10 runs\n";

  bool all_ok = true;
  for (const npz::Array& want : reference) {
    const npz::Array* got = nullptr;
    for (const npz::Array& o : outputs)
      if (o.name == want.name) got = &o;
    AGATE_REQUIRE(got != nullptr, kNotFound) << "the module has no output '" << want.name << "'";
    double max_diff = 0;
    bool ok = Close(*got, want, 1e-4, 1e-4, &max_diff);
    all_ok = all_ok && ok;
    std::cout << "5. " << DescribeArray(*got) << "\n   PyTorch: " << DescribeArray(want) << "\n   max |diff| "
              << max_diff << (ok ? "  -> matches PyTorch (rtol 1e-4, atol 1e-4)" : "  -> DOES NOT MATCH") << "\n";
  }
  std::cout << (all_ok ? "demo passed\n" : "demo FAILED\n");
  return all_ok ? 0 : 1;
}

}  // namespace

CommandRunner RegisterDemoCommand(CLI::App& app) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* cmd = app.add_subcommand("demo", "compile the bundled model, run it in the minimal runtime, check it");
  cmd->add_option("--model", flags->model, "an ONNX model with <stem>.inputs.npz and <stem>.reference.npz beside it")
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  cmd->add_option("--output-dir", flags->output_dir, "where to write the module (default: a new temporary folder)");
  cmd->add_option("--fusion", flags->fusion, "fusion policy")
      ->check(CLI::IsMember({"rule", "none", "all"}))
      ->capture_default_str();
  return [flags] { return RunDemo(*flags); };
}

}  // namespace cli
}  // namespace agate
