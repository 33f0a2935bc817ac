// Depthwise into pointwise as one kernel (core/ops/fused_conv_chain.h) against the
// same two convolutions as two kernels (what `rule` compiles), per inverted-residual
// block shape of MobileNetV2 (and MobileNetV3-small's blocks without squeeze-excite),
// batch 1, through the path a user's model takes: the layout pass's NCHW<c>c, the
// fusion partition, ops::LowerGroup, LLVM host code.
//
// Each block: x [1, C, H, W] (the expanded tensor) -> depthwise kxk stride s (bias)
// -> Clip(0, 6) -> 1x1 conv to OC (bias). "separate" runs the depthwise kernel, which
// writes the C x OH x OW intermediate, then the 1x1 kernel, which reads it back;
// "fused" runs one kernel that computes the depthwise output per output row into a
// small buffer. Interleaved rounds (harness TimeInterleaved), thread CPU time at 1
// thread (time slices given to the other builds on a shared machine do not count),
// wall time at 2; medians with the lowest and highest round, the load average
// before and after; max |fused - separate| checks both compute the same thing.
//
//   bazel run -c opt //benchmarks/fusion:conv_chain_benchmark [-- --threads=1,2 --rounds=15 --filter=mbv2]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/harness/harness.h"
#include "agate/kernel_abi.h"
#include "core/codegen/llvm/build_llvm.h"
#include "core/fusion/fusion.h"
#include "core/graph/passes/layout_transformation.h"
#include "core/graph/shape_inference.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/target/target.h"
#include "runtime_minimal/host/thread_pool.h"

namespace agate {
namespace {

struct Block {
  std::string name;
  int64_t c, hw, k, stride, oc;
};

std::vector<Block> Blocks() {
  // MobileNetV2 (torchvision): the depthwise conv of every distinct block shape and its projection.
  std::vector<Block> b = {
      {"mbv2_32_112_s1_16", 32, 112, 3, 1, 16},   {"mbv2_96_112_s2_24", 96, 112, 3, 2, 24},
      {"mbv2_144_56_s1_24", 144, 56, 3, 1, 24},   {"mbv2_144_56_s2_32", 144, 56, 3, 2, 32},
      {"mbv2_192_28_s1_32", 192, 28, 3, 1, 32},   {"mbv2_192_28_s2_64", 192, 28, 3, 2, 64},
      {"mbv2_384_14_s1_64", 384, 14, 3, 1, 64},   {"mbv2_384_14_s1_96", 384, 14, 3, 1, 96},
      {"mbv2_576_14_s1_96", 576, 14, 3, 1, 96},   {"mbv2_576_14_s2_160", 576, 14, 3, 2, 160},
      {"mbv2_960_7_s1_160", 960, 7, 3, 1, 160},   {"mbv2_960_7_s1_320", 960, 7, 3, 1, 320},
      // MobileNetV3-small's blocks without squeeze-excite (ReLU): 72 and 88 channels, 3x3.
      {"mbv3s_72_56_s2_24", 72, 56, 3, 2, 24},    {"mbv3s_88_28_s1_24", 88, 28, 3, 1, 24},
  };
  return b;
}

graph::Tensor RandomTensor(const graph::Shape& shape, uint32_t seed, float scale = 1.0f) {
  graph::Tensor t(ir::DType::Float(32), shape);
  float* p = t.mutable_data<float>();
  uint32_t state = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    p[i] = scale * static_cast<float>((state >> 8) / static_cast<double>(1u << 24) * 2.0 - 1.0);
  }
  return t;
}

// The block in NCHW, then blocked by the layout pass as in a compiled model.
graph::Graph BlockGraph(const Block& b) {
  graph::Graph g;
  const ir::DType f32 = ir::DType::Float(32);
  g.AddInput("x", graph::TensorType{f32, {1, b.c, b.hw, b.hw}});
  g.AddConstant("wd", RandomTensor({b.c, 1, b.k, b.k}, 2, 0.3f));
  g.AddConstant("bd", RandomTensor({b.c}, 3));
  g.AddConstant("wp", RandomTensor({b.oc, b.c, 1, 1}, 4, 0.1f));
  g.AddConstant("bp", RandomTensor({b.oc}, 5));
  g.AddConstant("lo", graph::Tensor::Scalar(f32, 0));
  g.AddConstant("hi", graph::Tensor::Scalar(f32, 6));
  auto node = [&](const std::string& op, const std::string& name, std::vector<std::string> in, std::string out) {
    graph::Node n;
    n.op = op;
    n.name = name;
    n.inputs = std::move(in);
    n.outputs = {std::move(out)};
    return n;
  };
  graph::Node dw = node("Conv", "dw", {"x", "wd", "bd"}, "d");
  int64_t p = b.k / 2;
  dw.attrs.Set("group", graph::Attribute(b.c));
  dw.attrs.Set("strides", graph::Attribute(std::vector<int64_t>{b.stride, b.stride}));
  dw.attrs.Set("pads", graph::Attribute(std::vector<int64_t>{p, p, p, p}));
  g.AddNode(dw);
  g.AddNode(node("Clip", "relu6", {"d", "lo", "hi"}, "r"));
  g.AddNode(node("Conv", "pw", {"r", "wp", "bp"}, "y"));
  g.outputs = {"y"};
  g = graph::InferShapes(g);
  return graph::TransformLayout(g, 16);
}

// One lowered kernel with its arguments bound to named buffers (shared between the kernels of a variant).
struct Kernel {
  codegen::HostKernels lib;
  agate_kernel_fn fn = nullptr;
  std::vector<void*> pointers;
  std::vector<uint8_t> workspace;
  std::vector<graph::Tensor> constants;
  std::string summary;
};

struct Variant {
  std::vector<std::unique_ptr<Kernel>> kernels;  // run in order
  std::map<std::string, graph::Tensor> buffers;  // value name -> storage
};

// Lowers the groups of `partition` that hold a Conv (the layout transforms at the graph's
// boundary are left out: both variants share them) and binds them to the variant's buffers.
std::unique_ptr<Variant> Build(const graph::Graph& blocked, const fusion::Partition& partition, const std::string& tag,
                               const graph::Tensor& chain_input) {
  auto v = std::make_unique<Variant>();
  graph::Graph g = blocked;
  g.groups = fusion::MakeGroups(g, partition);
  target::Target host = target::Target::Host();
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const graph::FusedGroup& group = g.groups[i];
    if (group.anchor < 0 || g.nodes[group.anchor].op != "Conv") continue;
    std::string name = tag + "_k" + std::to_string(i);
    ops::GroupKernel k = ops::LowerGroup(g, group, host, name);
    if (std::getenv("AGATE_SHOW_IR")) std::fprintf(stderr, "%s\n", ir::ToString(k.func).c_str());
    auto kernel = std::make_unique<Kernel>(Kernel{codegen::HostKernels::Build({k.func}, host)});
    kernel->fn = kernel->lib.Get(name);
    kernel->summary = k.schedule_summary;
    kernel->constants.reserve(k.params.size());
    for (const ops::KernelParam& p : k.params) {
      if (p.kind == ops::KernelParam::Kind::kConstant || g.IsConstant(p.value)) {
        kernel->constants.push_back(p.kind == ops::KernelParam::Kind::kConstant ? p.constant : g.ConstantOf(p.value));
        kernel->pointers.push_back(kernel->constants.back().mutable_raw_data());
        continue;
      }
      auto it = v->buffers.find(p.value);
      if (it == v->buffers.end()) {
        const graph::TensorType& t = g.TypeOf(p.value);
        graph::Tensor storage(t.dtype, t.shape);
        if (v->buffers.empty()) storage = chain_input;  // the first kernel's activation: the blocked input
        it = v->buffers.emplace(p.value, storage).first;
      }
      kernel->pointers.push_back(it->second.mutable_raw_data());
    }
    kernel->workspace.resize(std::max<int64_t>(k.func.workspace_bytes, 64) + 64);
    v->kernels.push_back(std::move(kernel));
  }
  return v;
}

void Run(Variant& v, rt::ThreadPool& pool, int threads) {
  for (auto& k : v.kernels) {
    agate_kernel_ctx ctx{};
    ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
    ctx.parallel_for = rt::PoolParallelFor;
    ctx.pool = &pool;
    ctx.num_threads = threads;
    ctx.workspace = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(k->workspace.data()) + 63) & ~uintptr_t{63});
    ctx.workspace_bytes = k->workspace.size() - 64;
    if (k->fn(k->pointers.data(), &ctx) != 0) {
      std::fprintf(stderr, "a kernel failed\n");
      std::exit(1);
    }
  }
}

int Index(const graph::Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  for (size_t start = 0; start < text.size();) {
    size_t comma = text.find(',', start);
    out.push_back(std::stoi(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int Main(int argc, char** argv) {
  std::vector<int> threads_list{1};
  std::string filter;
  int rounds = 15;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) threads_list = ParseList(arg.substr(10));
    if (arg.rfind("--filter=", 0) == 0) filter = arg.substr(9);
    if (arg.rfind("--rounds=", 0) == 0) rounds = std::stoi(arg.substr(9));
  }
  bench::PrintMachine();
  std::printf("timing: %d interleaved rounds; 1 thread: the calling thread's CPU time, 2 threads: wall time\n", rounds);
  bench::Table table({"block", "threads", "intermediate KiB", "separate us [min-max]", "fused us [min-max]",
                      "separate/fused", "max |diff|", "fused schedule"});
  for (const Block& b : Blocks()) {
    if (!filter.empty() && b.name.find(filter) == std::string::npos) continue;
    graph::Graph g = BlockGraph(b);
    int dw = Index(g, "dw"), clip = Index(g, "relu6"), pw = Index(g, "pw");
    fusion::Partition separate = {{dw, clip}, {pw}}, fused = {{dw, clip, pw}};
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (static_cast<int>(i) != dw && static_cast<int>(i) != clip && static_cast<int>(i) != pw) {
        separate.push_back({static_cast<int>(i)});
        fused.push_back({static_cast<int>(i)});
      }
    const graph::TensorType& in = g.TypeOf(g.nodes[dw].inputs[0]);
    graph::Tensor x = RandomTensor(in.shape, 1);
    auto sep = Build(g, separate, b.name + "_sep", x);
    auto one = Build(g, fused, b.name + "_fused", x);
    if (one->kernels.size() != 1 || one->kernels[0]->summary.find("conv_chain") == std::string::npos) {
      std::printf("%s: the fused group was not lowered as a conv chain (%s)\n", b.name.c_str(),
                  one->kernels.empty() ? "no kernel" : one->kernels[0]->summary.c_str());
      return 1;
    }
    const graph::TensorType& mid = g.TypeOf(g.nodes[clip].outputs[0]);
    for (int threads : threads_list) {
      rt::ThreadPool pool(threads);
      std::vector<bench::Timing> t = bench::TimeInterleaved(
          {[&] { Run(*sep, pool, threads); }, [&] { Run(*one, pool, threads); }}, rounds, 5.0, threads > 1 ? 2.0 : 0.0,
          threads == 1);
      const std::string& out = g.nodes[pw].outputs[0];  // blocked: the layout pass converts it back after
      const graph::Tensor& ys = sep->buffers.at(out);
      const graph::Tensor& yf = one->buffers.at(out);
      double diff = 0;
      for (int64_t i = 0; i < ys.numel(); ++i)
        diff = std::max(diff, static_cast<double>(std::fabs(ys.data<float>()[i] - yf.data<float>()[i])));
      auto us = [](const bench::Timing& x) {
        return bench::Fixed(x.median_ms * 1e3, 1) + " [" + bench::Fixed(x.min_ms * 1e3, 1) + "-" +
               bench::Fixed(x.max_ms * 1e3, 1) + "]";
      };
      table.AddRow({b.name, std::to_string(threads), bench::Fixed(mid.bytes() / 1024.0, 0), us(t[0]), us(t[1]),
                    bench::Fixed(t[0].median_ms / t[1].median_ms, 2), bench::Fixed(diff, 6), one->kernels[0]->summary});
    }
  }
  table.Print();
  std::printf("load average at the end: %s\n", bench::LoadAverage().c_str());
  return 0;
}

}  // namespace
}  // namespace agate

int main(int argc, char** argv) { return agate::Main(argc, argv); }
