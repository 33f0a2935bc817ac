// GEMM-class products as models run them, against oneDNN in the same run.
//
// Two agate paths, both what ships:
//   * "library": the product as a one-node graph (MatMul, with a Transpose in
//     front when B arrives transposed), fused by the rule policy, every group
//     lowered by ops::LowerGroup, built by the LLVM backend and run on the
//     runtime's shared thread pool, as the compiler and runtime do for a model;
//   * "cli": the same one-node ONNX model compiled by the `agate compile`
//     binary and run by tools/cli's ModuleRunner, the code of `agate run`
//     (module loaded through the C ABI, the executor, its thread pool).
// The peers: oneDNN's sgemm (dnnl_sgemm, row-major) for 2-D products and its
// matmul primitive for batched ones (sgemm has no batch); sgemm packs both
// operands inside every call. For a constant B (a weight) also oneDNN's matmul
// primitive as its users run a Linear layer: B reordered once into the layout
// it picks, a bias and GELU (the "+bias, GELU" rows) as its bias and post-op.
// agate packs a constant B once at compile time, as a model would; rows marked
// "run-time B" make agate pack B in every call too.
//
// Timing: contenders interleaved (one sample each per round, a pause between
// them so the other side's spinning threads go idle), --rounds rounds; the
// table shows the median GFLOP/s and [min, max] over the rounds, and each
// side's share of the FMA peak measured in the same run. The load average is
// printed beside every table: the machine is shared.
//
//   bazel run -c opt //benchmarks/gemm:gemm_benchmark [-- --threads=1,2 --filter=vit --rounds=7
//       --min_run_ms=20 --no_cli --knob=dense_m_block=8 --cpu_time]
//   --cpu_time: 1-thread rows are timed in thread CPU time (robust on a busy machine).
//   --baseline_cli=PATH: also time the modules another agate binary compiles (e.g. main's), column "baseline".
//   --compile_args="ARGS": extra `agate compile` arguments for the cli column (not the baseline's), e.g.
//       "--tuning-records FILE" with --baseline_cli set to the same binary: tuned against untuned.
//   --dump_asm=DIR: write each problem's library kernels as assembly, DIR/<problem>.s.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "benchmarks/harness/harness.h"
#include "core/codegen/llvm/build_llvm.h"
#include "core/fusion/fusion.h"
#include "core/graph/graph.h"
#include "core/graph/shape_inference.h"
#include "core/ops/lower_group.h"
#include "core/support/error.h"
#include "core/target/target.h"
#include "frontends/onnx/model_builder.h"
#include "runtime_minimal/host/thread_pool.h"
#include "tools/cli/module_runner.h"
#include "tools/npz/graph_tensor.h"

namespace agate {
namespace {

const ir::DType kF32 = ir::DType::Float(32);

struct Problem {
  std::string name;
  std::vector<int64_t> batch;  // leading dims of A and B (B's too when runtime and batched)
  int64_t m, k, n;
  bool b_constant;  // a weight: an initializer of the model, packed at compile time
  bool b_transposed = false;  // B arrives as [.., N, K] through a Transpose (runtime) or Gemm transB (constant)
  // A bias Add and an erf GELU after the product (a transformer's or ConvNeXt's first MLP
  // layer), fused into agate's kernel as its epilogue and into oneDNN's matmul as its bias
  // and post-op; sgemm has neither, so these rows compare with the matmul primitive only.
  bool bias_gelu = false;
};

std::vector<Problem> Problems() {
  // The products of the model suite (benchmarks/models), M x K x N: ViT-B/16 (197 tokens),
  // BERT-base and GPT-2 (128 tokens), ConvNeXt-T / Swin-T stage 1 and 2 (3136 and 784
  // positions, channels-last Linear layers), BERT-small (64 tokens); weights constant as in
  // a model, attention's operands at run time.
  return {
      {"square", {}, 1024, 1024, 1024, false},
      {"square_weights", {}, 1024, 1024, 1024, true},
      {"vit_mlp_up", {}, 197, 768, 3072, true},
      {"vit_mlp_up_rt", {}, 197, 768, 3072, false},
      {"vit_mlp_up_gelu", {}, 197, 768, 3072, true, false, true},
      {"vit_mlp_down", {}, 197, 3072, 768, true},
      {"vit_mlp_down_rt", {}, 197, 3072, 768, false},
      {"vit_proj", {}, 197, 768, 768, true},
      {"bert_proj", {}, 128, 768, 768, true},
      {"bert_qkv", {}, 128, 768, 2304, true},
      {"bert_mlp_up", {}, 128, 768, 3072, true},
      {"bert_mlp_down", {}, 128, 3072, 768, true},
      {"convnext_pw_up", {}, 3136, 96, 384, true},
      {"convnext_pw_up_gelu", {}, 3136, 96, 384, true, false, true},
      {"convnext_pw_down", {}, 3136, 384, 96, true},
      {"convnext_s2_pw_up", {}, 784, 192, 768, true},
      {"bert_small_mlp_up", {}, 64, 128, 512, true},
      {"vit_attn_qk", {12}, 197, 64, 197, false, true},
      {"vit_attn_av", {12}, 197, 197, 64, false},
      {"bert_attn_qk", {12}, 128, 64, 128, false, true},
      {"bert_attn_av", {12}, 128, 128, 64, false},
      {"ragged_prime", {}, 257, 331, 509, false},
      {"ragged_weights_t", {}, 61, 1031, 97, true, true},
      {"ragged_small_k", {}, 1000, 13, 1000, false},
      {"ragged_tall", {}, 4099, 67, 23, true},
      // Small products: is the parallel split worth its fork (never slower on 2 threads)?
      {"small_64", {}, 64, 64, 64, false},
      {"small_96", {}, 96, 96, 96, true},
      {"small_128", {}, 128, 128, 128, false},
  };
}

std::string ShapeText(const Problem& p) {
  std::string s;
  for (int64_t b : p.batch) s += std::to_string(b) + "x";
  if (!p.batch.empty()) s = "(" + s.substr(0, s.size() - 1) + ") ";
  return s + std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n);
}

int64_t BatchCount(const Problem& p) {
  int64_t b = 1;
  for (int64_t d : p.batch) b *= d;
  return b;
}

double Flops(const Problem& p) { return 2.0 * BatchCount(p) * p.m * p.n * p.k; }

graph::Shape WithBatch(const Problem& p, int64_t rows, int64_t cols) {
  graph::Shape s(p.batch.begin(), p.batch.end());
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

graph::Tensor RandomTensor(const graph::Shape& shape, uint32_t seed) {
  graph::Tensor t(kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

// The operands as stored: A [batch.., M, K]; B [batch.., K, N] or [batch.., N, K]
// (2-D when constant); the bias [N] of bias_gelu problems.
struct Operands {
  graph::Tensor a, b, bias;
};

Operands MakeOperands(const Problem& p) {
  graph::Shape bshape = p.b_transposed ? graph::Shape{p.n, p.k} : graph::Shape{p.k, p.n};
  if (!p.b_constant) bshape = WithBatch(p, bshape[0], bshape[1]);
  return {RandomTensor(WithBatch(p, p.m, p.k), 1), RandomTensor(bshape, 2), RandomTensor({p.n}, 3)};
}

// ---------------------------------------------------------------- agate: the operator library

graph::Graph MakeGraph(const Problem& p, const Operands& x) {
  graph::Graph g;
  g.AddInput("a", graph::TensorType{kF32, x.a.shape()});
  std::string b = "b";
  if (p.b_constant) {
    g.AddConstant("b", x.b);
  } else {
    g.AddInput("b", graph::TensorType{kF32, x.b.shape()});
  }
  graph::Node mm;
  mm.name = "mm";
  mm.outputs = {p.bias_gelu ? "mm" : "y"};
  if (p.b_constant && p.b_transposed) {
    mm.op = "Gemm";  // PyTorch's Linear on a 2-D input
    mm.inputs = {"a", "b"};
    mm.attrs.Set("transB", graph::Attribute(int64_t{1}));
  } else {
    if (p.b_transposed) {
      graph::Node t;
      t.name = "transpose";
      t.op = "Transpose";
      t.inputs = {"b"};
      t.outputs = {"bt"};
      std::vector<int64_t> perm;
      for (size_t i = 0; i < p.batch.size(); ++i) perm.push_back(static_cast<int64_t>(i));
      perm.push_back(static_cast<int64_t>(p.batch.size() + 1));
      perm.push_back(static_cast<int64_t>(p.batch.size()));
      t.attrs.Set("perm", graph::Attribute(perm));
      g.AddNode(t);
      b = "bt";
    }
    mm.op = "MatMul";
    mm.inputs = {"a", b};
  }
  g.AddNode(mm);
  if (p.bias_gelu) {
    // What activation_fusion makes of the exporters' Div, Erf, Add, Mul, Mul.
    g.AddConstant("bias", x.bias);
    graph::Node add;
    add.name = "add";
    add.op = "Add";
    add.inputs = {"mm", "bias"};
    add.outputs = {"biased"};
    g.AddNode(add);
    graph::Node gelu;
    gelu.name = "gelu";
    gelu.op = "Gelu";
    gelu.inputs = {"biased"};
    gelu.outputs = {"y"};
    g.AddNode(gelu);
  }
  g.outputs = {"y"};
  return fusion::FuseOperators(graph::InferShapes(g), fusion::FusionPolicy::kRule);
}

// Every group of the graph lowered, built and bound, run in order as the executor would.
struct LibraryRun {
  std::unique_ptr<codegen::HostKernels> kernels;
  struct Call {
    agate_kernel_fn fn = nullptr;
    std::vector<void*> args;
    std::vector<uint8_t> workspace;
  };
  std::vector<Call> calls;
  std::map<std::string, graph::Tensor> values;
  std::vector<std::string> schedules;
  int32_t status = 0;

  void Run(int threads) {
    for (Call& c : calls) {
      agate_kernel_ctx ctx{};
      ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
      ctx.parallel_for = rt::SharedParallelFor;
      ctx.pool = rt::SharedPoolHandle();
      ctx.num_threads = threads;
      ctx.workspace = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(c.workspace.data()) + 63) & ~uintptr_t{63});
      ctx.workspace_bytes = c.workspace.size() - 64;
      status |= c.fn(c.args.data(), &ctx);
    }
  }
};

// `asm_path`: when not empty, the kernels' assembly is written there (evidence of
// what the register tile compiled to, where timings on a shared machine are noisy).
std::unique_ptr<LibraryRun> BuildLibrary(const Problem& p, const Operands& x, const ops::LowerGroupOptions& options,
                                         const std::string& prefix, const std::string& asm_path = "") {
  graph::Graph g = MakeGraph(p, x);
  target::Target host = target::Target::Host();
  auto run = std::make_unique<LibraryRun>();
  run->values["a"] = x.a;
  if (!p.b_constant) run->values["b"] = x.b;
  std::vector<ops::GroupKernel> kernels;
  std::vector<ir::LoweredFunc> funcs;
  for (size_t i = 0; i < g.groups.size(); ++i) {
    // Kernel names are unique per build: the shared objects live in one process.
    kernels.push_back(ops::LowerGroup(g, g.groups[i], host, prefix + "_k" + std::to_string(i), options));
    funcs.push_back(kernels.back().func);
    run->schedules.push_back(kernels.back().schedule_summary);
  }
  run->kernels = std::make_unique<codegen::HostKernels>(codegen::HostKernels::Build(funcs, host));
  if (!asm_path.empty()) {
    codegen::LLVMBuildOptions keep;
    keep.keep_assembly = true;
    std::ofstream(asm_path) << codegen::BuildLLVMObject(funcs, host, keep).assembly;
  }
  for (const ops::GroupKernel& k : kernels) {
    LibraryRun::Call call;
    call.fn = run->kernels->Get(k.func.name);
    for (const ops::KernelParam& param : k.params) {
      graph::Tensor* t = nullptr;
      if (param.kind == ops::KernelParam::Kind::kConstant) {
        run->values["#const" + std::to_string(run->values.size())] = param.constant;
        t = &run->values["#const" + std::to_string(run->values.size() - 1)];
      } else if (g.IsConstant(param.value)) {
        run->values[param.value] = g.ConstantOf(param.value);
        t = &run->values[param.value];
      } else {
        if (!run->values.count(param.value)) {
          const graph::TensorType& type = g.TypeOf(param.value);
          run->values[param.value] = graph::Tensor(type.dtype, type.shape);
        }
        t = &run->values[param.value];
      }
      call.args.push_back(t->mutable_raw_data());
    }
    call.workspace.resize(static_cast<size_t>(std::max<int64_t>(k.func.workspace_bytes, 64)) + 64);
    run->calls.push_back(std::move(call));
  }
  return run;
}

// ---------------------------------------------------------------- agate: compile + run

std::string AgateBinary(const char* argv0) {
  // `bazel run` starts in the binary's runfiles tree; a direct start finds it beside the binary.
  for (const std::string& path : {std::string("tools/cli/agate"), std::string(argv0) + ".runfiles/agate/tools/cli/agate"}) {
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string WriteModel(const Problem& p, const Operands& x, const std::string& dir) {
  onnx_frontend::ModelBuilder b(13);
  b.Input("a", onnx::TensorProto::FLOAT, x.a.shape());
  std::string bname = "b";
  if (p.b_constant) {
    b.Initializer("b", x.b);
  } else {
    b.Input("b", onnx::TensorProto::FLOAT, x.b.shape());
  }
  if (p.b_constant && p.b_transposed) {
    b.Node("Gemm", {"a", "b"}, {"y"}, {{"transB", graph::Attribute(int64_t{1})}});
  } else {
    if (p.b_transposed) {
      std::vector<int64_t> perm;
      for (size_t i = 0; i < p.batch.size(); ++i) perm.push_back(static_cast<int64_t>(i));
      perm.push_back(static_cast<int64_t>(p.batch.size() + 1));
      perm.push_back(static_cast<int64_t>(p.batch.size()));
      b.Node("Transpose", {"b"}, {"bt"}, {{"perm", graph::Attribute(perm)}});
      bname = "bt";
    }
    b.Node("MatMul", {"a", bname}, {p.bias_gelu ? "mm" : "y"});
  }
  if (p.bias_gelu) {
    // GELU as PyTorch 1.13 exports it at opset 13: x * 0.5 * (1 + erf(x / sqrt(2))).
    auto scalar = [](float v) {
      graph::Tensor t(kF32, {});
      *t.mutable_data<float>() = v;
      return t;
    };
    b.Initializer("bias", x.bias);
    b.Initializer("sqrt2", scalar(1.41421356f));
    b.Initializer("one", scalar(1.0f));
    b.Initializer("half", scalar(0.5f));
    b.Node("Add", {"mm", "bias"}, {"biased"});
    b.Node("Div", {"biased", "sqrt2"}, {"scaled"});
    b.Node("Erf", {"scaled"}, {"erf"});
    b.Node("Add", {"erf", "one"}, {"erf1"});
    b.Node("Mul", {"biased", "erf1"}, {"gated"});
    b.Node("Mul", {"gated", "half"}, {"y"});
  }
  b.Output("y");
  std::string path = dir + "/" + p.name + ".onnx";
  std::ofstream(path, std::ios::binary) << b.Serialize();
  return path;
}

struct CliRun {
  std::unique_ptr<cli::ModuleRunner> runner;
};

// ---------------------------------------------------------------- oneDNN

// oneDNN's Debian build runs on GNU OpenMP; its thread count is set through libgomp.
void SetOmpThreads(int threads) {
  using SetThreads = void (*)(int);
  void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  auto set = reinterpret_cast<SetThreads>(dlsym(gomp ? gomp : RTLD_DEFAULT, "omp_set_num_threads"));
  if (set) set(threads);
}

struct OneDnn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // 2-D products: dnnl_sgemm (both operands packed inside every call), or nothing
  // for bias_gelu problems (sgemm has no epilogue).
  bool sgemm = false;
  // The matmul primitive: batched products (sgemm has no batch), and for a constant
  // B the primitive as oneDNN's users run a Linear layer: weights reordered once into
  // the layout it chooses (format_tag::any), bias and GELU as its bias and post-op.
  dnnl::matmul matmul;
  std::unordered_map<int, dnnl::memory> args;
  bool has_matmul = false;
};

std::unique_ptr<OneDnn> BuildOneDnn(const Problem& p, Operands& x, graph::Tensor* sgemm_out,
                                    graph::Tensor* matmul_out) {
  auto d = std::make_unique<OneDnn>();
  const bool batched = !p.batch.empty();
  d->sgemm = !batched && !p.bias_gelu;
  if (!batched && !p.b_constant) return d;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t b = BatchCount(p);
  dnnl::memory::dims src_dims = batched ? dnnl::memory::dims{b, p.m, p.k} : dnnl::memory::dims{p.m, p.k};
  dnnl::memory::dims wei_dims = batched ? dnnl::memory::dims{b, p.k, p.n} : dnnl::memory::dims{p.k, p.n};
  dnnl::memory::dims dst_dims = batched ? dnnl::memory::dims{b, p.m, p.n} : dnnl::memory::dims{p.m, p.n};
  const tag plain = batched ? tag::abc : tag::ab;
  // A transposed B is stored [.., N, K]: K and N swapped in memory.
  const tag b_stored = batched ? (p.b_transposed ? tag::acb : tag::abc) : (p.b_transposed ? tag::ba : tag::ab);
  dnnl::memory::desc src(src_dims, dt::f32, plain), dst(dst_dims, dt::f32, plain);
  dnnl::memory::desc wei_plain(wei_dims, dt::f32, b_stored);
  dnnl::memory::desc wei = p.b_constant ? dnnl::memory::desc(wei_dims, dt::f32, tag::any) : wei_plain;
  dnnl::primitive_attr attr;
  dnnl::matmul::primitive_desc pd;
  if (p.bias_gelu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    attr.set_post_ops(ops);
    dnnl::memory::desc bias({1, p.n}, dt::f32, tag::ab);
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, bias, dst), attr, d->engine);
    d->args[DNNL_ARG_BIAS] = dnnl::memory(bias, d->engine, x.bias.mutable_raw_data());
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), d->engine);
  }
  d->matmul = dnnl::matmul(pd);
  d->has_matmul = true;
  d->args[DNNL_ARG_SRC] = dnnl::memory(src, d->engine, x.a.mutable_raw_data());
  dnnl::memory weights_plain(wei_plain, d->engine, x.b.mutable_raw_data());
  if (pd.weights_desc() == wei_plain) {
    d->args[DNNL_ARG_WEIGHTS] = weights_plain;
  } else {
    dnnl::memory packed(pd.weights_desc(), d->engine);
    dnnl::reorder(weights_plain, packed).execute(d->stream, weights_plain, packed);
    d->stream.wait();
    d->args[DNNL_ARG_WEIGHTS] = packed;
  }
  d->args[DNNL_ARG_DST] = dnnl::memory(dst, d->engine, (batched ? sgemm_out : matmul_out)->mutable_raw_data());
  return d;
}

void RunSgemm(const Problem& p, Operands& x, graph::Tensor* out) {
  dnnl_sgemm('N', p.b_transposed ? 'T' : 'N', p.m, p.n, p.k, 1.0f, x.a.data<float>(), p.k, x.b.data<float>(),
             p.b_transposed ? p.k : p.n, 0.0f, out->mutable_data<float>(), p.n);
}

void RunMatmul(OneDnn& d) {
  d.matmul.execute(d.stream, d.args);
  d.stream.wait();
}

double MaxRelativeError(const graph::Tensor& got, const graph::Tensor& want) {
  double err = 0;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  for (int64_t i = 0; i < want.numel(); ++i)
    err = std::max(err, std::fabs(g[i] - w[i]) / std::max(1.0, static_cast<double>(std::fabs(w[i]))));
  return err;
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    out.push_back(std::stoi(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string Gflops(const bench::Timing& t, double flops) {
  return bench::Fixed(flops / (t.median_ms * 1e6), 1) + " [" + bench::Fixed(flops / (t.max_ms * 1e6), 0) + "-" +
         bench::Fixed(flops / (t.min_ms * 1e6), 0) + "]";
}

int Main(int argc, char** argv) {
  std::vector<int> threads_list{1, 2};
  std::string filter;
  int rounds = 7;
  double min_run_ms = 20;
  bool cli = true;
  bool cpu_time = false;
  std::string baseline, dump_asm, compile_args;
  ops::LowerGroupOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) threads_list = ParseList(arg.substr(10));
    if (arg.rfind("--filter=", 0) == 0) filter = arg.substr(9);
    if (arg.rfind("--rounds=", 0) == 0) rounds = std::stoi(arg.substr(9));
    if (arg.rfind("--min_run_ms=", 0) == 0) min_run_ms = std::stod(arg.substr(13));
    if (arg == "--no_cli") cli = false;
    if (arg == "--cpu_time") cpu_time = true;
    if (arg.rfind("--baseline_cli=", 0) == 0) baseline = arg.substr(15);
    if (arg.rfind("--dump_asm=", 0) == 0) dump_asm = arg.substr(11);
    if (arg.rfind("--compile_args=", 0) == 0) compile_args = arg.substr(15);
    if (arg.rfind("--knob=", 0) == 0) {
      std::string kv = arg.substr(7);
      size_t eq = kv.find('=');
      ops::SetScheduleKnob(&options, kv.substr(0, eq), std::stoll(kv.substr(eq + 1)));
    }
  }
  std::string agate = cli ? AgateBinary(argv[0]) : "";
  if (cli && agate.empty()) {
    std::printf("the agate binary was not found (run through `bazel run`); the cli column is skipped\n");
    cli = false;
  }
  char dir_template[] = "/tmp/agate-gemm-XXXXXX";
  std::string dir = mkdtemp(dir_template);

  std::vector<double> peaks = bench::PrintMachine();
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d (%s runtime); agate target %s\n", v->major, v->minor, v->patch,
              v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other", target::Target::Host().ToString().c_str());
  std::printf("timing: %d interleaved rounds, samples of >= %.0f ms, GFLOP/s median [min-max] over the rounds%s\n",
              rounds, min_run_ms, cpu_time ? "; 1-thread rows in the calling thread's CPU time (--cpu_time)" : "");
  std::printf("load average at start: %s\n\n", bench::LoadAverage().c_str());

  // oneDNN sgemm: dnnl_sgemm for 2-D products, the matmul primitive for batched ones;
  // oneDNN matmul: the primitive with B packed once (constant B only), bias and GELU fused.
  std::vector<std::string> header = {"problem", "MxKxN", "B", "threads", "agate library GFLOP/s",
                                     "agate compile+run GFLOP/s", "oneDNN sgemm GFLOP/s", "oneDNN matmul GFLOP/s",
                                     "library/sgemm", "library/matmul", "cli/best oneDNN", "agate % peak",
                                     "oneDNN % peak", "max rel err", "agate kernels"};
  if (!baseline.empty()) header.insert(header.begin() + 11, "baseline cli/best oneDNN");
  bench::Table table(header);
  std::vector<double> best_onednn(3, 0);
  int kernel_id = 0;
  for (const Problem& p : Problems()) {
    if (!filter.empty() && p.name.find(filter) == std::string::npos) continue;
    Operands x = MakeOperands(p);
    graph::Tensor want(kF32, WithBatch(p, p.m, p.n)), want_matmul(kF32, WithBatch(p, p.m, p.n));
    std::unique_ptr<LibraryRun> lib = BuildLibrary(p, x, options, "gemm" + std::to_string(kernel_id++),
                                                   dump_asm.empty() ? "" : dump_asm + "/" + p.name + ".s");
    std::string model;
    if (cli) {
      model = WriteModel(p, x, dir);
      // --compile_args (e.g. "--tuning-records FILE") go to the main module only, so a baseline
      // of the same binary is the untuned module.
      struct Build {
        std::string binary, out, args;
      };
      for (const Build& build : {Build{agate, model + ".agm", compile_args}, Build{baseline, model + ".baseline.agm", ""}}) {
        const std::string& binary = build.binary;
        const std::string& out = build.out;
        if (binary.empty()) continue;
        std::string cmd = binary + " compile " + model + " " + build.args + " -o " + out + " > " + out + ".log 2>&1";
        if (std::system(cmd.c_str()) != 0) {
          std::printf("%s: %s compile failed (see %s.log)\n", p.name.c_str(), binary.c_str(), out.c_str());
          return 1;
        }
      }
    }
    for (int threads : threads_list) {
      rt::SetSharedPoolThreads(threads);
      SetOmpThreads(threads);
      std::unique_ptr<OneDnn> d = BuildOneDnn(p, x, &want, &want_matmul);
      CliRun c, base;
      std::vector<npz::Array> inputs = {npz::ArrayOf("a", x.a)};
      if (!p.b_constant) inputs.push_back(npz::ArrayOf("b", x.b));
      if (cli) {
        c.runner = std::make_unique<cli::ModuleRunner>(model + ".agm", threads);
        c.runner->BindInputs(inputs);
        if (!baseline.empty()) {
          base.runner = std::make_unique<cli::ModuleRunner>(model + ".baseline.agm", threads);
          base.runner->BindInputs(inputs);
        }
      }
      // Contender indices (-1: not run for this problem).
      const bool batched = !p.batch.empty();
      std::vector<std::function<void()>> contenders = {[&] { lib->Run(threads); }};
      auto add = [&](std::function<void()> fn) {
        contenders.push_back(std::move(fn));
        return static_cast<int>(contenders.size()) - 1;
      };
      int i_sgemm = d->sgemm ? add([&] { RunSgemm(p, x, &want); }) : batched ? add([&] { RunMatmul(*d); }) : -1;
      int i_matmul = !batched && d->has_matmul ? add([&] { RunMatmul(*d); }) : -1;
      int i_cli = cli ? add([&] { c.runner->Run(); }) : -1;
      int i_base = base.runner ? add([&] { base.runner->Run(); }) : -1;
      std::vector<bench::Timing> t = bench::TimeInterleaved(contenders, rounds, min_run_ms, 20.0, cpu_time && threads == 1);
      // The reference: sgemm's (or the batched matmul's) output, else the packed matmul's.
      const graph::Tensor& ref = i_sgemm >= 0 ? want : want_matmul;
      double err = MaxRelativeError(lib->values.at("y"), ref);
      if (i_sgemm >= 0 && i_matmul >= 0) err = std::max(err, MaxRelativeError(want_matmul, want));
      if (cli) {
        std::vector<npz::Array> outs = c.runner->Outputs();
        graph::Tensor got = graph::Tensor::FromBytes(kF32, ref.shape(), outs[0].data.data(), outs[0].data.size());
        err = std::max(err, MaxRelativeError(got, ref));
      }
      double flops = Flops(p);
      auto rate = [&](int i) { return i >= 0 ? flops / (t[i].median_ms * 1e6) : 0.0; };
      auto ratio = [&](double num, double den) { return num > 0 && den > 0 ? bench::Fixed(num / den, 2) : "-"; };
      double g_lib = rate(0), g_sgemm = rate(i_sgemm), g_matmul = rate(i_matmul), g_cli = rate(i_cli);
      double g_dnn = std::max(g_sgemm, g_matmul);
      double peak = threads <= 2 ? peaks[threads - 1] : 0;
      for (int i : {i_sgemm, i_matmul})
        if (i >= 0 && threads <= 2) best_onednn[threads] = std::max(best_onednn[threads], flops / (t[i].min_ms * 1e6));
      std::string schedules;
      for (const std::string& s : lib->schedules) schedules += (schedules.empty() ? "" : "; ") + s;
      std::vector<std::string> row = {p.name + (p.bias_gelu ? " (+bias, GELU)" : ""), ShapeText(p),
                                      p.b_constant ? "weights" : "run-time", std::to_string(threads),
                                      Gflops(t[0], flops), cli ? Gflops(t[i_cli], flops) : "-",
                                      i_sgemm >= 0 ? Gflops(t[i_sgemm], flops) : "-",
                                      i_matmul >= 0 ? Gflops(t[i_matmul], flops) : "-", ratio(g_lib, g_sgemm),
                                      ratio(g_lib, g_matmul), ratio(g_cli, g_dnn),
                                      peak > 0 ? bench::Fixed(100 * std::max(g_lib, g_cli) / peak, 0) : "-",
                                      peak > 0 ? bench::Fixed(100 * g_dnn / peak, 0) : "-", bench::Fixed(err, 7),
                                      schedules};
      if (!baseline.empty()) row.insert(row.begin() + 11, ratio(rate(i_base), g_dnn));
      table.AddRow(row);
      if (lib->status != 0) std::printf("%s: an agate kernel returned %d\n", p.name.c_str(), lib->status);
      std::fflush(stdout);
    }
  }
  table.Print();
  std::printf("\nload average at the end: %s\n", bench::LoadAverage().c_str());
  for (int t : threads_list) {
    if (t > 2 || best_onednn[t] == 0) continue;
    double share = best_onednn[t] / peaks[t - 1];
    std::printf("peak check, %d thread(s): oneDNN's fastest sample %.1f GFLOP/s = %.0f%% of the measured peak %.1f%s\n",
                t, best_onednn[t], 100 * share, peaks[t - 1],
                share > 1.0 ? "  (ABOVE the peak: the peak was measured in a busy moment; re-run)" : "");
  }
  return 0;
}

}  // namespace
}  // namespace agate

int main(int argc, char** argv) {
  try {
    return agate::Main(argc, argv);
  } catch (const agate::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
