// agate run MODEL.agm [--inputs in.npz] [--outputs out.npz] [--repeat N] [--number M]
//           [--print-time] [--json] [--profile] [--seed S] [--threads T] [--device N] [--device-resident]
//           [--public-key FILE]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>

#include "core/serialize/module_signing.h"
#include "core/support/error.h"
#include "tools/cli/command.h"
#include "tools/cli/module_runner.h"
#include "tools/cli/timing.h"

namespace agate {
namespace cli {
namespace {

struct RunFlags {
  std::string module;
  std::string inputs;
  std::string outputs;
  int repeat = 1;
  int number = 1;
  bool print_time = false;
  bool json = false;
  bool profile = false;
  uint64_t seed = 0;
  int threads = 0;
  int device = 0;
  bool device_resident = false;  // CUDA modules: inputs copied to the GPU once, not per run
  std::string public_key;  // run only modules signed with its secret key
};

int RunRun(const RunFlags& flags) {
  std::vector<uint8_t> key;
  if (!flags.public_key.empty()) key = serialize::ReadPublicKeyFile(flags.public_key);
  ModuleRunner runner(flags.module, flags.threads, flags.device, key);
  std::vector<npz::Array> inputs = flags.inputs.empty() ? runner.RandomInputs(flags.seed) : npz::Load(flags.inputs);
  runner.BindInputs(inputs, flags.device_resident);
  runner.Run();  // the first run also checks the module runs at all
  RunStatistics stats = MeasureRuns([&] { runner.Run(); }, flags.repeat, flags.number);
  if (!flags.outputs.empty()) npz::Save(flags.outputs, runner.Outputs());
  if (flags.json) {
    std::cout << stats.ToJson() << "\n";
  } else if (flags.print_time) {
    std::cout << stats.ToTable();
  }
  if (flags.profile) {
    std::vector<std::vector<uint64_t>> runs;
    for (int r = 0; r < flags.repeat; ++r) runs.push_back(runner.RunProfiled());
    if (runner.device() != "cpu") std::cout << "Device times on " << runner.device() << " (CUDA events).\n";
    std::cout << ProfileTable(runner.CallKernelNames(), runs);
  }
  if (!flags.json && !flags.profile && flags.outputs.empty()) {
    for (const npz::Array& out : runner.Outputs()) std::cout << DescribeArray(out) << "\n";
  }
  return 0;
}

}  // namespace

CommandRunner RegisterRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "run a compiled module");
  cmd->add_option("module", flags->module, "the compiled module (.agm)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--inputs", flags->inputs, "inputs as .npz/.npy (keys: input names); random inputs if absent")
      ->check(CLI::ExistingFile);
  cmd->add_option("--outputs", flags->outputs, "write the outputs to this .npz");
  cmd->add_option("--repeat", flags->repeat, "measurements (each one the mean of --number runs)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--number", flags->number, "runs per measurement")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--print-time", flags->print_time, "print mean/median/min/max/std in ms");
  cmd->add_flag("--json", flags->json, "print one JSON line with the timing figures");
  cmd->add_flag("--profile", flags->profile, "print each kernel's median time over --repeat profiled runs");
  cmd->add_option("--seed", flags->seed, "seed of the random inputs")->capture_default_str();
  cmd->add_option("--threads", flags->threads, "threads (default: AGATE_NUM_THREADS or the physical cores)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", flags->device, "CUDA modules: the GPU to run on (CUDA device ordinal)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--device-resident", flags->device_resident,
               "CUDA modules: copy the inputs to the GPU once and time runs that read them there (what a caller "
               "whose data is already on the GPU gets); without it every run copies them from host memory");
  cmd->add_option("--public-key", flags->public_key,
                  "run the module only if it is signed with this Ed25519 public key's secret key (agate keygen)")
      ->check(CLI::ExistingFile);
  return [flags] { return RunRun(*flags); };
}

}  // namespace cli
}  // namespace agate
