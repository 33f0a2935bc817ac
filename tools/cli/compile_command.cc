// agate compile MODEL.onnx -o MODEL.agm [--target T] [--fusion rule|none|all|adaptive[,...]] [--opt-level N]
//               [--input-shape name:1x3x224x224[,...]] [--bounds N=1..32[:1,8,32]]
//               [--input-value name=FILE.npy ...] [--dump-ir DIR] [--knob name=value ...]
//               [--tuning-records FILE] [--sign-key SECRET_KEY_FILE] [--prefix NAME] [--package DIR]
//               [--precision fp32|fp16|bf16]
//               [--quantize int8 --calibration SAMPLES.npz [--calibration-method minmax|entropy|percentile[:P]]
//                [--keep-float OP_OR_NODE,...]] [--quantize int8-dynamic [--keep-float OP_OR_NODE,...]]
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/autotune/records.h"
#include "core/compiler/batch_variants.h"
#include "core/compiler/compiler.h"
#include "core/compiler/package.h"
#include "core/ops/weight_precision.h"
#include "core/quantize/quantize_model.h"
#include "core/serialize/module_signing.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "core/support/parse_int.h"
#include "core/target/target.h"
#include "frontends/onnx/importer.h"
#include "frontends/onnx/symbolic_inputs.h"
#include "tools/cli/command.h"
#include "tools/cli/import_and_compile.h"
#include "tools/npz/npz.h"

namespace agate {
namespace cli {
namespace {

struct CompileFlags {
  std::string model;
  std::string output;
  std::string target = "llvm -mcpu=native";
  std::string fusion = "rule";
  int opt_level = 3;
  std::string input_shape;
  std::vector<std::string> input_values;  // name=FILE: the input frozen to the array in FILE
  std::vector<std::string> bounds;  // SYMBOL=MIN..MAX[:variants] each: one module for every extent of them
  std::string dump_ir;
  std::vector<std::string> knobs;  // name=value
  std::string tuning_records;      // agate tune's JSON lines
  std::string sign_key;            // Ed25519 secret key file: the module is signed with it
  std::string prefix;              // kernel symbol prefix; microcontroller targets: from the output name
  std::string package;             // microcontroller package folder (core/compiler/package.h)
  std::string memory_plan = "greedy";  // greedy | min-peak
  int64_t max_workspace = -1;          // bytes per kernel; -1: no limit
  std::string quantize;                // "int8": post-training quantization (core/quantize)
  std::string precision = "fp32";      // fp32 | fp16 | bf16: packed weights' storage (core/ops/weight_precision.h)
  std::string calibration;             // its samples (.npz, one [N, *shape] array per input)
  std::string calibration_method;      // minmax (default) | entropy | percentile[:P]
  std::string keep_float;              // op types or node names kept in fp32, comma-separated
};

bool IsMicrocontrollerTarget(const std::string& text) {
  target::Target target = target::Target::Parse(text);
  return target.kind() == target::TargetKind::kC || (target.kind() == target::TargetKind::kLLVM && target.is_bare_metal());
}

// Kernels get a prefix when one is given, and for microcontroller targets (whose kernels are
// linked into a firmware, perhaps beside another model's) one made from the output's name.
std::string KernelPrefixOf(const CompileFlags& flags) {
  if (!flags.prefix.empty()) return flags.prefix;
  if (!IsMicrocontrollerTarget(flags.target)) return "";
  return compiler::KernelPrefixFromPath(flags.package.empty() ? flags.output : flags.package);
}

// The best record per task of `path`, for `target`. The whole file is read and checked before
// anything is applied: a record for another target or knob-space version refuses the file.
std::map<std::string, ops::KnobConfig> LoadTuningRecords(const std::string& path, const std::string& target) {
  autotune::RecordFile file = autotune::ReadRecords(path, target::Target::Parse(target).ToString());
  for (const std::string& w : file.warnings) std::cerr << "agate: warning: " << w << "\n";
  std::map<std::string, ops::KnobConfig> knobs;
  for (const auto& [task, record] : autotune::BestPerTask(file.records)) knobs[task] = autotune::KnobsToApply(record);
  return knobs;
}

// Which kernels the records tuned, and which tunable ones they had nothing for.
void ReportTuning(const compiler::CompileResult& result, const std::string& path) {
  int tuned = 0, tunable = 0;
  std::string missing;
  for (const compiler::KernelSummary& k : result.kernels) {
    tuned += k.tuned;
    tunable += k.tunable;
    if (k.tunable && !k.tuned) missing += (missing.empty() ? "" : ", ") + k.name + " (" + k.task_key + ")";
  }
  std::cout << "tuning records " << path << ": " << tuned << " of " << tunable << " tunable kernels tuned";
  if (!missing.empty()) std::cout << "; no record for: " << missing;
  std::cout << "\n";
}

// True when `target` means "the CPU this compiler runs on": `llvm` without -mcpu or -mtriple (the
// default), or -mcpu=native. Such a module uses every feature of this CPU (AVX-512 here, maybe not
// on the machine that runs it), and the runtime refuses it on a CPU that lacks one.
bool ImpliesNativeCpu(const std::string& target_text) {
  std::istringstream words(target_text);
  std::string kind, word;
  words >> kind;
  bool names_cpu = false, names_triple = false, native = false;
  while (words >> word) {
    names_cpu = names_cpu || word.rfind("-mcpu=", 0) == 0;
    names_triple = names_triple || word.rfind("-mtriple=", 0) == 0;
    native = native || word == "-mcpu=native";
  }
  return (kind == "llvm" || kind == "c") && (native || (kind == "llvm" && !names_cpu && !names_triple));
}

void WarnIfNative(const std::string& target_text) {
  if (!ImpliesNativeCpu(target_text)) return;
  const target::Target target = target::Target::Parse(target_text);
  std::cerr << "agate: warning: target '" << target_text << "' compiles for this machine's CPU (" << target.cpu()
            << "): the module is refused on CPUs without its features; to run it on other machines pick a portable "
            << "target, e.g. --target \"llvm -mcpu=x86-64-v3\" (x86-64 with AVX2 and FMA), \"llvm -mcpu=x86-64-v2\" "
            << "(SSE4.2), or \"llvm -mtriple=aarch64-linux-gnu -mcpu=generic\"\n";
}

// "--input-value mask=mask.npy": the input becomes a compile-time constant. FILE is a .npy array, or
// an .npz archive holding one array or an entry named like the input. The importer checks the
// array's dtype and shape against the model's declaration of the input.
std::map<std::string, graph::Tensor> LoadInputValues(const std::vector<std::string>& specs) {
  std::map<std::string, graph::Tensor> values;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    AGATE_REQUIRE(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(), kInvalidArgument)
        << "--input-value '" << spec << "': expected NAME=FILE.npy (or NAME=FILE.npz)";
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    AGATE_REQUIRE(!values.count(name), kInvalidArgument) << "--input-value names input '" << name << "' twice";
    std::vector<npz::Array> arrays = npz::Load(path);
    const npz::Array* chosen = arrays.size() == 1 ? &arrays[0] : nullptr;
    for (const npz::Array& a : arrays)
      if (a.name == name) chosen = &a;
    AGATE_REQUIRE(chosen != nullptr, kInvalidArgument)
        << "--input-value " << name << ": '" << path << "' holds " << arrays.size()
        << " arrays and none is named '" << name << "'";
    values[name] = graph::Tensor::FromBytes(chosen->dtype, chosen->shape, chosen->data.data(), chosen->data.size());
  }
  return values;
}

// What the module's metadata records of a repeatable flag: its values joined by `separator`
// ("name=FILE,..." for --input-value, whose values themselves are the module's constants;
// "B=1..8 S=1..128" for --bounds).
std::string FlagRecord(const std::vector<std::string>& values, const char* separator) {
  std::string text;
  for (const std::string& value : values) text += (text.empty() ? "" : separator) + value;
  return text;
}

// --quantize int8 --calibration FILE [--calibration-method M] [--keep-float A,B]: the options of
// core/quantize, the samples read from FILE. Every flag of the group without --quantize, or
// --quantize without samples, is refused naming the flag.
std::shared_ptr<const quantize::QuantizeOptions> QuantizeOptionsOf(const CompileFlags& flags) {
  if (flags.quantize.empty()) {
    for (const auto& [flag, value] : {std::make_pair("--calibration", &flags.calibration),
                                      std::make_pair("--calibration-method", &flags.calibration_method),
                                      std::make_pair("--keep-float", &flags.keep_float)}) {
      AGATE_REQUIRE(value->empty(), kInvalidArgument)
          << flag << " is an option of post-training quantization: add --quantize int8";
    }
    return nullptr;
  }
  bool dynamic = flags.quantize == "int8-dynamic";
  AGATE_REQUIRE(!dynamic || (flags.calibration.empty() && flags.calibration_method.empty()), kInvalidArgument)
      << "--quantize int8-dynamic quantizes activations per run: it takes no --calibration or --calibration-method";
  AGATE_REQUIRE(dynamic || !flags.calibration.empty(), kInvalidArgument)
      << "--quantize int8 needs --calibration SAMPLES.npz: one array per model input, named like the input, "
      << "of shape [N, *input shape] (N samples); or use --quantize int8-dynamic (no samples)";
  AGATE_REQUIRE(flags.bounds.empty(), kInvalidArgument)
      << "--quantize and --bounds: quantize a model with fixed input shapes";
  auto options = std::make_shared<quantize::QuantizeOptions>();
  options->dynamic = dynamic;
  if (!flags.calibration_method.empty()) options->calibration = quantize::ParseCalibrationMethod(flags.calibration_method);
  std::stringstream names(flags.keep_float);
  for (std::string name; std::getline(names, name, ',');) options->keep_float.push_back(name);
  AGATE_REQUIRE(flags.keep_float.empty() || flags.keep_float.back() != ',', kInvalidArgument)
      << "--keep-float '" << flags.keep_float << "': an empty name after the last comma";
  if (dynamic) return options;
  for (npz::Array& a : npz::Load(flags.calibration)) {
    options->samples[a.name] = graph::Tensor::FromBytes(a.dtype, a.shape, a.data.data(), a.data.size());
  }
  options->samples_source = flags.calibration;
  return options;
}

// "--knob conv_winograd=0": sets one schedule knob of every kernel.
void ApplyKnobs(const std::vector<std::string>& knobs, ops::LowerGroupOptions* options) {
  for (const std::string& knob : knobs) {
    size_t eq = knob.find('=');
    AGATE_REQUIRE(eq != std::string::npos && eq > 0, kInvalidArgument)
        << "--knob '" << knob << "': expected name=value; the knobs are:\n" << ops::DescribeScheduleKnobs();
    std::string name = knob.substr(0, eq), value = knob.substr(eq + 1);
    int64_t number = 0;
    AGATE_REQUIRE(ParseInt64(value, &number), kInvalidArgument)
        << "--knob " << name << ": '" << value << "' is not an integer";
    ops::SetScheduleKnob(options, name, number);
  }
}

// --bounds: the model imported once per variant of the symbol (core/compiler/batch_variants.h).
compiler::CompileResult CompileWithBounds(const CompileFlags& flags, onnx_frontend::ImportOptions import,
                                          const compiler::CompileOptions& options) {
  AGATE_REQUIRE(flags.package.empty(), kInvalidArgument) << "--bounds and --package: microcontroller runtimes "
                                                         << "are built without dynamic shapes";
  std::vector<compiler::BatchSymbol> symbols;
  std::map<std::string, int64_t> at_min;
  for (const std::string& text : flags.bounds) {
    symbols.push_back(compiler::ParseBounds(text));
    at_min[symbols.back().name] = symbols.back().min;
  }
  const std::vector<uint8_t> bytes = ReadFile(flags.model);
  const onnx::ModelProto model = onnx_frontend::ParseModel(std::string(bytes.begin(), bytes.end()), flags.model);
  std::set<std::string> symbolic_inputs;
  onnx_frontend::InputShapesAt(model, flags.input_shape, at_min, &symbolic_inputs);
  auto graph_at = [&](const std::map<std::string, int64_t>& values) {
    std::set<std::string> ignored;
    import.input_shapes = onnx_frontend::InputShapesAt(model, flags.input_shape, values, &ignored);
    return onnx_frontend::ImportOnnxFile(flags.model, import);
  };
  return compiler::CompileSymbolVariants(graph_at, symbolic_inputs, symbols, options);
}

int RunCompile(const CompileFlags& flags) {
  onnx_frontend::ImportOptions import;
  compiler::CompileOptions options;
  options.target = flags.target;
  WarnIfNative(flags.target);
  options.fusion = fusion::ParseFusionPolicy(flags.fusion, flags.target);
  options.opt_level = flags.opt_level;
  if (!flags.input_shape.empty() && flags.bounds.empty()) {
    import.input_shapes = onnx_frontend::ParseInputShapes(flags.input_shape);
  }
  import.input_values = LoadInputValues(flags.input_values);
  options.dump_ir_dir = flags.dump_ir;
  options.kernel_prefix = KernelPrefixOf(flags);
  options.memory_plan =
      flags.memory_plan == "min-peak" ? graph::MemoryPlanPolicy::kMinPeak : graph::MemoryPlanPolicy::kGreedyBySize;
  options.max_workspace_bytes = flags.max_workspace;
  options.precision = ops::ParseWeightPrecision(flags.precision);
  AGATE_REQUIRE(flags.quantize.empty() || flags.precision == "fp32", kInvalidArgument)
      << "--precision " << flags.precision << " and --quantize " << flags.quantize
      << ": the weights are either int8 or narrow floats; choose one";
  options.quantize = QuantizeOptionsOf(flags);
  compiler::CheckKernelPrefix(options.kernel_prefix);
  AGATE_REQUIRE(!flags.output.empty() || !flags.package.empty(), kInvalidArgument)
      << "nothing to write: give -o MODEL.agm, --package DIR, or both";
  AGATE_REQUIRE(flags.package.empty() || IsMicrocontrollerTarget(flags.target), kInvalidArgument)
      << "--package is for microcontroller targets (c, c -mcpu=cortex-m4, llvm -mtriple=thumbv7em-none-eabi ...); "
      << "target '" << flags.target << "' has an OS or a GPU: write a module with -o";
  ApplyKnobs(flags.knobs, &options.schedule_knobs);
  if (!flags.tuning_records.empty()) options.task_knobs = LoadTuningRecords(flags.tuning_records, flags.target);
  std::string knobs;
  for (const std::string& k : flags.knobs) knobs += (knobs.empty() ? "" : ",") + k;
  options.recorded_options = {{"target", flags.target},
                              {"fusion", flags.fusion},
                              {"opt-level", std::to_string(flags.opt_level)},
                              {"input-shape", flags.input_shape},
                              {"input-values", FlagRecord(flags.input_values, ",")},
                              {"bounds", FlagRecord(flags.bounds, " ")},
                              {"knobs", knobs},
                              {"tuning-records", flags.tuning_records},
                              {"kernel-prefix", options.kernel_prefix},
                              {"memory-plan", flags.memory_plan},
                              {"max-workspace", std::to_string(flags.max_workspace)},
                              {"precision", flags.precision}};
  std::vector<uint8_t> secret_key;  // read first: a bad key file fails before the compile
  if (!flags.sign_key.empty()) secret_key = serialize::ReadSecretKeyFile(flags.sign_key);
  compiler::CompileResult result = flags.bounds.empty() ? ImportAndCompile(flags.model, import, options)
                                                        : CompileWithBounds(flags, import, options);
  // The package holds the module as compiled: a firmware's flash is its own authenticity.
  std::vector<FolderFile> package;
  if (!flags.package.empty()) {
    for (compiler::PackageFile& f : compiler::MakePackage(result, options.kernel_prefix)) {
      package.push_back({std::move(f.name), std::move(f.contents)});
    }
  }
  if (!secret_key.empty()) result.module = serialize::SignModule(result.module, secret_key);
  // Written only after everything succeeded, atomically: a failed compile leaves no file.
  if (!flags.package.empty()) WriteFolderAtomically(flags.package, package, ".agate-package");
  if (flags.output.empty()) {
    std::cout << result.Summary();
    std::cout << "wrote package " << flags.package << " (prefix " << options.kernel_prefix << ", "
              << package.size() << " files; see its README.md)\n";
    return 0;
  }
  if (!result.firmware_kernels.empty()) {
    WriteFileAtomically(flags.output + ".kernels" + result.firmware_kernels_suffix, result.firmware_kernels.data(),
                        result.firmware_kernels.size());
  }
  WriteFileAtomically(flags.output, result.module);
  std::cout << result.Summary();
  if (!flags.tuning_records.empty()) ReportTuning(result, flags.tuning_records);
  if (!result.firmware_kernels.empty()) {
    std::cout << "firmware kernels: " << flags.output << ".kernels" << result.firmware_kernels_suffix
              << " (link them into the firmware; the module names them)\n";
  }
  if (!flags.package.empty()) {
    std::cout << "wrote package " << flags.package << " (prefix " << options.kernel_prefix << ", " << package.size()
              << " files; see its README.md)\n";
  }
  std::cout << "wrote " << flags.output << (secret_key.empty() ? "" : " (signed)") << "\n";
  return 0;
}

}  // namespace

CommandRunner RegisterCompileCommand(CLI::App& app) {
  auto flags = std::make_shared<CompileFlags>();
  CLI::App* cmd = app.add_subcommand("compile", "compile an ONNX model into a module");
  cmd->add_option("model", flags->model, "the ONNX model")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", flags->output, "the module to write (.agm)");
  cmd->add_option("--target", flags->target, "target, e.g. \"llvm -mcpu=native\", \"llvm -mtriple=aarch64-linux-gnu\", \"c\", \"cuda -arch=sm_80\"")
      ->capture_default_str();
  cmd->add_option("--fusion", flags->fusion,
                  "operator fusion policy: rule, none, all, adaptive[,policy=FILE][,fallback=rule] or random,seed=N")
      ->check(CLI::Validator(fusion::FusionPolicySyntaxError, "POLICY"))
      ->capture_default_str();
  cmd->add_option("--opt-level", flags->opt_level, "0: no fusion; 1-3: every graph pass")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_option("--input-shape", flags->input_shape, "override input shapes: name:1x3x224x224[,name2:...]");
  cmd->add_option("--input-value", flags->input_values,
                  "freeze an input to the array in FILE (.npy, or .npz with one array or an entry NAME): "
                  "NAME=FILE, repeatable; the input becomes a constant and is no longer an input of the module")
      ->take_all();
  cmd->add_option("--bounds", flags->bounds,
                  "one module for every extent of a symbolic dimension: SYMBOL=MIN..MAX[:V1,V2,...] (the extents "
                  "compiled), repeatable (up to 4 symbols, e.g. --bounds B=1..8 --bounds S=1..128); the symbol is "
                  "named in --input-shape (input:Nx3x224x224) or is the model's dim_param. One symbol only on axis 0 "
                  "whose rows never mix is a batch (default variants 1, min(MAX,8), MAX when a power of two <= 64; "
                  "a run is split into them); any other is padded (default variants 16, 32, 64... and MAX; a run "
                  "pads its inputs to the next one)")
      ->take_all();
  cmd->add_option("--dump-ir", flags->dump_ir, "write every pass's IR and every kernel's loop IR into this folder");
  cmd->add_option("--knob", flags->knobs, "schedule knob name=value for every kernel (repeatable), e.g. conv_winograd=0")
      ->take_all();
  cmd->add_option("--tuning-records", flags->tuning_records,
                  "apply the best record per kernel workload of this `agate tune` file (same target)");
  cmd->add_option("--sign-key", flags->sign_key,
                  "sign the module with this Ed25519 secret key file (agate keygen); agate run --public-key checks it")
      ->check(CLI::ExistingFile);
  cmd->add_option("--prefix", flags->prefix,
                  "prefix of every kernel symbol (a C identifier: NAME_k0_conv...); microcontroller targets default "
                  "to the output's file name");
  cmd->add_option("--package", flags->package,
                  "microcontroller targets: write a firmware package folder (module as a C array, kernels, kernel "
                  "table, header with agate_PREFIX_run and the RAM sizes, README)");
  cmd->add_option("--memory-plan", flags->memory_plan,
                  "arena placement: greedy (largest first) or min-peak (the smallest of several placements; "
                  "for RAM-bound targets)")
      ->check(CLI::IsMember({"greedy", "min-peak"}))
      ->capture_default_str();
  cmd->add_option("--max-workspace", flags->max_workspace,
                  "bytes of workspace one kernel may take: kernels over it drop Winograd, and a kernel still over "
                  "it is an error (-1: no limit)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--precision", flags->precision,
                  "storage of the float32 weights kernels pack at compile time (dense/MatMul/Gemm panels, blocked "
                  "conv weights): fp32, fp16 or bf16, widened to float32 as they are loaded; accumulation, inputs "
                  "and outputs stay float32 (llvm, c and cuda targets; fp16 on LLVM needs F16C on x86-64, or AArch64)")
      ->capture_default_str();
  cmd->add_option("--quantize", flags->quantize,
                  "post-training quantization: int8 (per-channel symmetric int8 weights, per-tensor uint8 "
                  "activations calibrated on --calibration; inputs and outputs stay float), or int8-dynamic "
                  "(MatMul/Gemm only, activations quantized per run by DynamicQuantizeLinear, no calibration)")
      ->check(CLI::IsMember({"int8", "int8-dynamic"}));
  cmd->add_option("--calibration", flags->calibration,
                  "--quantize's calibration samples: an .npz with one array per model input, named like the input, "
                  "of shape [N, *input shape] (N samples; a [1,3,224,224] input takes [N,1,3,224,224])")
      ->check(CLI::ExistingFile);
  cmd->add_option("--calibration-method", flags->calibration_method,
                  "activation ranges: minmax (default), entropy (experimental: each side of 0 clipped where the KL "
                  "divergence of its 8-bit quantization is least; it lost accuracy on ResNet-18, see "
                  "benchmarks/quantized/RESULTS.md), percentile (99.99) or percentile:P (the Pth and (100-P)th "
                  "percentiles of each activation over the samples)");
  cmd->add_option("--keep-float", flags->keep_float,
                  "with --quantize: op types or node names kept in fp32, comma-separated (e.g. Softmax,LayerNormalization)");
  return [flags] { return RunCompile(*flags); };
}

}  // namespace cli
}  // namespace agate
