// conv2d: agate's kernels (one fused group lowered by ops::LowerGroup, the
// layout pass's NCHW16c for blockable convs) against oneDNN's convolution with
// layouts of its own choosing (format_tag::any: its blocked layouts), in one run,
// on the ResNet-50 conv layers and the MobileNetV2 depthwise layers (batch 1).
// Prints GFLOP/s (from each side's fastest run over --rounds alternating rounds:
// the 2-core machine is shared with other builds), the agate/oneDNN ratio and
// the max difference of the outputs.
//
// 3x3 stride-1 layers (where Winograd applies) also time agate's two variants
// side by side, whatever the automatic choice: direct (conv_winograd=0) and
// Winograd (conv_winograd=1); their GFLOP/s count the direct conv's
// multiply-adds (2 * OC * OH * OW * IC * 9), so they compare as speed.
//
//   bazel run -c opt //benchmarks/ops:conv_benchmark [-- --threads=1,2 --filter=res2 --min_run_ms=2 --rounds=5]
//       [--winograd=0 (skip the side-by-side variants) --winograd_tile=2 --winograd_tile_block=8]
//       [--cold: every timed call starts with the caches flushed, as in a whole network where each
//        layer's weights were evicted since the previous inference]
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "benchmarks/harness/harness.h"
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

struct Layer {
  std::string name;
  int64_t c, h, w, oc, k, stride, pad, group;
  // Rectangular kernels (Inception's 1x7 / 7x1): kernel width and column padding when they
  // differ from k and pad; 0 / -1 mean "as k" / "as pad".
  int64_t kw = 0, pad_w = -1;
  int64_t KW() const { return kw > 0 ? kw : k; }
  int64_t PadW() const { return pad_w >= 0 ? pad_w : pad; }
};

std::vector<Layer> Layers() {
  std::vector<Layer> l = {
      {"res_conv1_7x7s2", 3, 224, 224, 64, 7, 2, 3, 1},
      {"res2_1x1_64_64", 64, 56, 56, 64, 1, 1, 0, 1},
      {"res2_3x3_64", 64, 56, 56, 64, 3, 1, 1, 1},
      {"res2_1x1_64_256", 64, 56, 56, 256, 1, 1, 0, 1},
      {"res2_1x1_256_64", 256, 56, 56, 64, 1, 1, 0, 1},
      {"res3_1x1_256_128", 256, 56, 56, 128, 1, 1, 0, 1},
      {"res3_3x3_128_s2", 128, 56, 56, 128, 3, 2, 1, 1},
      {"res3_1x1_128_512", 128, 28, 28, 512, 1, 1, 0, 1},
      {"res3_down_256_512_s2", 256, 56, 56, 512, 1, 2, 0, 1},
      {"res3_1x1_512_128", 512, 28, 28, 128, 1, 1, 0, 1},
      {"res3_3x3_128", 128, 28, 28, 128, 3, 1, 1, 1},
      {"res4_1x1_512_256", 512, 28, 28, 256, 1, 1, 0, 1},
      {"res4_3x3_256_s2", 256, 28, 28, 256, 3, 2, 1, 1},
      {"res4_1x1_256_1024", 256, 14, 14, 1024, 1, 1, 0, 1},
      {"res4_down_512_1024_s2", 512, 28, 28, 1024, 1, 2, 0, 1},
      {"res4_1x1_1024_256", 1024, 14, 14, 256, 1, 1, 0, 1},
      {"res4_3x3_256", 256, 14, 14, 256, 3, 1, 1, 1},
      {"res5_1x1_1024_512", 1024, 14, 14, 512, 1, 1, 0, 1},
      {"res5_3x3_512_s2", 512, 14, 14, 512, 3, 2, 1, 1},
      {"res5_1x1_512_2048", 512, 7, 7, 2048, 1, 1, 0, 1},
      {"res5_down_1024_2048_s2", 1024, 14, 14, 2048, 1, 2, 0, 1},
      {"res5_1x1_2048_512", 2048, 7, 7, 512, 1, 1, 0, 1},
      {"res5_3x3_512", 512, 7, 7, 512, 3, 1, 1, 1},
      // Inception-v3's 3x3 stride-1 layers (few input channels in the stem, many late).
      {"inc_2a_3x3_32", 32, 149, 149, 32, 3, 1, 0, 1},
      {"inc_2b_3x3_32_64", 32, 147, 147, 64, 3, 1, 1, 1},
      {"inc_4a_3x3_80_192", 80, 73, 73, 192, 3, 1, 0, 1},
      {"inc_5b_3x3_64_96", 64, 35, 35, 96, 3, 1, 1, 1},
      {"inc_5b_3x3_96", 96, 35, 35, 96, 3, 1, 1, 1},
      {"inc_7b_3x3_448_384", 448, 8, 8, 384, 3, 1, 1, 1},
      {"inc_6a_3x3_288_384_s2", 288, 35, 35, 384, 3, 2, 0, 1},
      {"inc_6b_1x7_128", 128, 17, 17, 128, 1, 1, 0, 1, 7, 3},
      {"inc_6b_7x1_128_192", 128, 17, 17, 192, 7, 1, 3, 1, 1, 0},
      {"inc_6e_1x7_192", 192, 17, 17, 192, 1, 1, 0, 1, 7, 3},
      {"inc_6e_1x1_768_192", 768, 17, 17, 192, 1, 1, 0, 1},
      // VGG-16's 3x3 layers: Winograd's transformed input and products are tens of MB at 224x224.
      {"vgg_3x3_64_224", 64, 224, 224, 64, 3, 1, 1, 1},
      {"vgg_3x3_64_128_112", 64, 112, 112, 128, 3, 1, 1, 1},
      {"vgg_3x3_128_112", 128, 112, 112, 128, 3, 1, 1, 1},
      {"vgg_3x3_256_56", 256, 56, 56, 256, 3, 1, 1, 1},
      {"vgg_3x3_512_28", 512, 28, 28, 512, 3, 1, 1, 1},
      // One shape with more and more input channels: the register tile's weights (16 channels x
      // IC x 7 taps) outgrow L1 past 64 input channels (32 KiB on Zen 3).
      {"l1probe_1x7_32", 32, 17, 17, 192, 1, 1, 0, 1, 7, 3},
      {"l1probe_1x7_64", 64, 17, 17, 192, 1, 1, 0, 1, 7, 3},
      {"l1probe_1x7_128", 128, 17, 17, 192, 1, 1, 0, 1, 7, 3},
      {"l1probe_1x7_256", 256, 17, 17, 192, 1, 1, 0, 1, 7, 3},
      {"l1probe_1x7_512", 512, 17, 17, 192, 1, 1, 0, 1, 7, 3},
      // Input channels swept at one map size: where Winograd's transforms stop paying for themselves.
      {"icsweep_16_56", 16, 56, 56, 64, 3, 1, 1, 1},
      {"icsweep_32_56", 32, 56, 56, 64, 3, 1, 1, 1},
      {"icsweep_48_56", 48, 56, 56, 64, 3, 1, 1, 1},
      {"icsweep_32_56_oc128", 32, 56, 56, 128, 3, 1, 1, 1},
      {"icsweep_48_112", 48, 112, 112, 48, 3, 1, 1, 1},
  };
  for (auto [c, hw, s] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {32, 112, 1}, {96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1}, {192, 28, 2},
           {384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1}}) {
    l.push_back({"mbv2_dw_" + std::to_string(c) + "_" + std::to_string(hw) + "_s" + std::to_string(s), c, hw, hw, c, 3,
                 s, 1, c});
  }
  // Large-kernel depthwise layers: ConvNeXt-T's 7x7 (every stage) and MobileNetV3-small's 5x5.
  for (auto [c, hw] : std::vector<std::pair<int64_t, int64_t>>{{96, 56}, {192, 28}, {384, 14}, {768, 7}}) {
    l.push_back({"convnext_dw7_" + std::to_string(c) + "_" + std::to_string(hw), c, hw, hw, c, 7, 1, 3, c});
  }
  for (auto [c, hw, s] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {96, 28, 2}, {240, 14, 1}, {120, 14, 1}, {144, 14, 1}, {288, 14, 2}, {576, 7, 1}}) {
    l.push_back({"mbv3_dw5_" + std::to_string(c) + "_" + std::to_string(hw) + "_s" + std::to_string(s), c, hw, hw, c, 5,
                 s, 2, c});
  }
  return l;
}

graph::Tensor RandomTensor(const graph::Shape& shape, uint32_t seed) {
  graph::Tensor t(ir::DType::Float(32), shape);
  float* p = t.mutable_data<float>();
  uint32_t state = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    p[i] = static_cast<float>((state >> 8) / static_cast<double>(1u << 24) * 2.0 - 1.0);
  }
  return t;
}

int64_t OutRows(const Layer& l) { return (l.h + 2 * l.pad - l.k) / l.stride + 1; }
int64_t OutCols(const Layer& l) { return (l.w + 2 * l.PadW() - l.KW()) / l.stride + 1; }
double Flops(const Layer& l) {
  return 2.0 * l.oc * OutRows(l) * OutCols(l) * (l.c / l.group) * l.k * l.KW();
}

// ---------------------------------------------------------------- agate

struct AgateConv {
  codegen::HostKernels kernels;
  agate_kernel_fn fn;
  std::vector<graph::Tensor> args;
  std::vector<void*> pointers;
  std::vector<uint8_t> workspace;
  int output_arg = -1;
  int64_t block = 0;
  std::string summary;
};

std::unique_ptr<AgateConv> BuildAgate(const Layer& l, const graph::Tensor& x, const graph::Tensor& w,
                                      const graph::Tensor& b, const ops::LowerGroupOptions& options,
                                      const std::string& kernel_name = "conv") {
  graph::Graph g;
  g.AddInput("x", graph::TensorType{ir::DType::Float(32), {1, l.c, l.h, l.w}});
  std::string conv_input = "x";
  g.AddConstant("w", w);
  g.AddConstant("b", b);
  graph::Node conv;
  conv.name = "conv";
  conv.op = "Conv";
  conv.inputs = {conv_input, "w", "b"};
  conv.outputs = {"y"};
  conv.attrs.Set("strides", graph::Attribute(std::vector<int64_t>{l.stride, l.stride}));
  conv.attrs.Set("pads", graph::Attribute(std::vector<int64_t>{l.pad, l.PadW(), l.pad, l.PadW()}));
  conv.attrs.Set("group", graph::Attribute(l.group));
  g.AddNode(conv);
  g.outputs = {"y"};
  g = graph::InferShapes(g);
  target::Target host = target::Target::Host();
  // The block the compiler picks for this target (core/compiler: the float32 SIMD lanes, NCHW8c
  // on AVX2, NCHW16c on AVX-512), so the kernel timed is the one a compiled model runs.
  g = graph::TransformLayout(g, host.NativeLanes(ir::DType::Float(32)));
  g = fusion::FuseOperators(g, fusion::FusionPolicy::kRule);
  const graph::FusedGroup* group = nullptr;
  for (const graph::FusedGroup& fg : g.groups)
    if (fg.anchor >= 0 && g.nodes[fg.anchor].op == "Conv") group = &fg;
  // Every variant gets its own kernel name: the shared objects are loaded into one
  // process, and same-named symbols (outlined parallel tasks) would interpose.
  ops::GroupKernel k = ops::LowerGroup(g, *group, host, kernel_name, options);
  if (std::getenv("AGATE_SHOW_IR")) std::fprintf(stderr, "%s\n", ir::ToString(k.func).c_str());
  auto* raw = new AgateConv{codegen::HostKernels::Build({k.func}, host), nullptr, {}, {}, {}, -1, 0, k.schedule_summary};
  std::unique_ptr<AgateConv> a(raw);
  a->fn = a->kernels.Get(kernel_name);
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ops::KernelParam& p = k.params[i];
    if (p.kind == ops::KernelParam::Kind::kConstant) {
      a->args.push_back(p.constant);
    } else if (g.IsConstant(p.value)) {
      a->args.push_back(g.ConstantOf(p.value));
    } else {
      const graph::TensorType& t = g.TypeOf(p.value);
      graph::Tensor v(t.dtype, t.shape);
      bool is_output = false;
      for (const std::string& o : group->outputs) is_output |= o == p.value;
      if (!is_output) {  // the (possibly blocked) activation
        const float* src = x.data<float>();
        float* dst = v.mutable_data<float>();
        int64_t in_block = t.rank() == 5 ? t.shape[4] : 0, bl = in_block ? in_block : 1, hw = l.h * l.w;
        for (int64_t c = 0; c < l.c; ++c)
          for (int64_t i = 0; i < hw; ++i)
            dst[in_block ? ((c / bl) * hw + i) * bl + c % bl : c * hw + i] = src[c * hw + i];
      }
      for (const std::string& o : group->outputs)
        if (o == p.value) {
          a->output_arg = static_cast<int>(i);
          a->block = t.rank() == 5 ? t.shape[4] : 0;  // the output's layout decides how MaxDiff reads it
        }
      a->args.push_back(v);
    }
  }
  for (graph::Tensor& t : a->args) a->pointers.push_back(t.mutable_raw_data());
  a->workspace.resize(std::max<int64_t>(k.func.workspace_bytes, 64) + 64);
  return a;
}

// ---------------------------------------------------------------- oneDNN

struct OneDnnConv {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::convolution_forward conv;
  dnnl::memory src, weights, bias, dst, dst_plain;
  dnnl::reorder to_plain;
};

// `algorithm`: convolution_direct, or convolution_winograd (nullptr when oneDNN has
// no Winograd implementation for the layer on this machine).
std::unique_ptr<OneDnnConv> BuildOneDnn(const Layer& l, graph::Tensor& x, graph::Tensor& w, graph::Tensor& b,
                                        dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  auto d = std::make_unique<OneDnnConv>();
  int64_t oh = OutRows(l), ow = OutCols(l);
  dnnl::memory::dims src_dims{1, l.c, l.h, l.w}, dst_dims{1, l.oc, oh, ow}, bias_dims{l.oc};
  dnnl::memory::dims w_dims = l.group == 1 ? dnnl::memory::dims{l.oc, l.c, l.k, l.KW()}
                                           : dnnl::memory::dims{l.group, l.oc / l.group, l.c / l.group, l.k, l.KW()};
  auto any = [](const dnnl::memory::dims& dims) { return dnnl::memory::desc(dims, dt::f32, tag::any); };
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm,
                                       any(src_dims), any(w_dims), dnnl::memory::desc(bias_dims, dt::f32, tag::x),
                                       any(dst_dims), {l.stride, l.stride}, {l.pad, l.PadW()}, {l.pad, l.PadW()});
  dnnl::convolution_forward::primitive_desc pd;
  try {
    pd = dnnl::convolution_forward::primitive_desc(desc, d->engine);
  } catch (const dnnl::error&) {
    if (algorithm == dnnl::algorithm::convolution_direct) throw;
    return nullptr;
  }
  d->conv = dnnl::convolution_forward(pd);
  dnnl::memory src_plain({src_dims, dt::f32, tag::nchw}, d->engine, x.mutable_raw_data());
  dnnl::memory w_plain({w_dims, dt::f32, l.group == 1 ? tag::oihw : tag::goihw}, d->engine, w.mutable_raw_data());
  d->src = dnnl::memory(pd.src_desc(), d->engine);
  d->weights = dnnl::memory(pd.weights_desc(), d->engine);
  d->bias = dnnl::memory({bias_dims, dt::f32, tag::x}, d->engine, b.mutable_raw_data());
  d->dst = dnnl::memory(pd.dst_desc(), d->engine);
  d->dst_plain = dnnl::memory({dst_dims, dt::f32, tag::nchw}, d->engine);
  dnnl::reorder(src_plain, d->src).execute(d->stream, src_plain, d->src);
  dnnl::reorder(w_plain, d->weights).execute(d->stream, w_plain, d->weights);
  d->to_plain = dnnl::reorder(d->dst, d->dst_plain);
  d->stream.wait();
  return d;
}

void RunOneDnn(OneDnnConv& d) {
  d.conv.execute(d.stream, {{DNNL_ARG_SRC, d.src}, {DNNL_ARG_WEIGHTS, d.weights}, {DNNL_ARG_BIAS, d.bias},
                            {DNNL_ARG_DST, d.dst}});
  d.stream.wait();
}

// oneDNN's Debian build runs on GNU OpenMP; its thread count is set through libgomp.
void SetOmpThreads(int threads) {
  using SetThreads = void (*)(int);
  void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  auto set = reinterpret_cast<SetThreads>(dlsym(gomp ? gomp : RTLD_DEFAULT, "omp_set_num_threads"));
  if (!set) {
    std::printf("warning: omp_set_num_threads not found; oneDNN runs with its default thread count\n");
    return;
  }
  set(threads);
}

double MaxDiff(const AgateConv& a, OneDnnConv& d, const Layer& l) {
  d.to_plain.execute(d.stream, d.dst, d.dst_plain);
  d.stream.wait();
  const float* want = static_cast<const float*>(d.dst_plain.get_data_handle());
  const float* got = a.args[a.output_arg].data<float>();
  int64_t hw = OutRows(l) * OutCols(l);
  double diff = 0;
  for (int64_t c = 0; c < l.oc; ++c)
    for (int64_t i = 0; i < hw; ++i) {
      int64_t at = a.block ? ((c / a.block) * hw + i) * a.block + c % a.block : c * hw + i;
      diff = std::max(diff, static_cast<double>(std::fabs(got[at] - want[c * hw + i])));
    }
  return diff;
}

// Writes a buffer larger than the last-level cache, so the next call finds its
// weights and activations in memory only.
void FlushCaches() {
  static std::vector<uint8_t> buffer(256u << 20);
  static uint8_t value = 0;
  ++value;
  for (size_t i = 0; i < buffer.size(); i += 64) buffer[i] = value;
}

// Fastest of `runs` single calls, each after FlushCaches (the flush not timed).
double ColdMinMs(const std::function<void()>& fn, int runs) {
  fn();
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    FlushCaches();
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
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

std::string OneDnnVersion() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

int Main(int argc, char** argv) {
  std::vector<int> threads_list{1, 2};
  std::string filter;
  double min_run_ms = 2.0;
  int rounds = 5;
  std::vector<int> oc_variants{0};  // LowerGroupOptions::conv_oc_block per agate variant (0: default)
  std::vector<int> ow_variants{0};  // LowerGroupOptions::conv_ow_block, crossed with oc_variants
  bool winograd_columns = true, cold = false;
  int winograd_tile = 0, winograd_tile_block = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) threads_list = ParseList(arg.substr(10));
    if (arg.rfind("--filter=", 0) == 0) filter = arg.substr(9);
    if (arg.rfind("--min_run_ms=", 0) == 0) min_run_ms = std::stod(arg.substr(13));
    if (arg.rfind("--rounds=", 0) == 0) rounds = std::stoi(arg.substr(9));
    if (arg.rfind("--oc_variants=", 0) == 0) oc_variants = ParseList(arg.substr(14));
    if (arg.rfind("--ow_variants=", 0) == 0) ow_variants = ParseList(arg.substr(14));
    if (arg == "--cold") cold = true;
    if (arg.rfind("--winograd=", 0) == 0) winograd_columns = std::stoi(arg.substr(11)) != 0;
    if (arg.rfind("--winograd_tile=", 0) == 0) winograd_tile = std::stoi(arg.substr(16));
    if (arg.rfind("--winograd_tile_block=", 0) == 0) winograd_tile_block = std::stoi(arg.substr(22));
  }
  std::vector<double> peaks = bench::PrintMachine();  // with the load average at the start
  std::printf("peer: oneDNN %s only (no PyTorch, no OpenBLAS: OPENBLAS_CORETYPE has no effect on this table)\n",
              OneDnnVersion().c_str());
  std::printf("timing: %s\n", cold ? "cold caches (flushed before every call)" : "warm caches (repeated calls)");
  bench::Table table({"layer", "threads", "agate GFLOP/s", "oneDNN GFLOP/s", "agate/oneDNN", "agate % peak",
                      "max |diff|", "direct GFLOP/s", "Winograd GFLOP/s", "Winograd/direct", "Winograd |diff|",
                      "oneDNN Winograd GFLOP/s",
                      "agate schedule"});
  std::vector<double> ratios_resnet[3];
  for (const Layer& l : Layers()) {
    if (!filter.empty() && l.name.find(filter) == std::string::npos) continue;
    graph::Tensor x = RandomTensor({1, l.c, l.h, l.w}, 1);
    graph::Tensor w = RandomTensor({l.oc, l.c / l.group, l.k, l.KW()}, 2);
    graph::Tensor b = RandomTensor({l.oc}, 3);
    std::vector<std::unique_ptr<AgateConv>> variants;
    for (int oc : oc_variants) {
      for (int ow : ow_variants) {
        ops::LowerGroupOptions options;
        options.conv_oc_block = oc;
        options.conv_ow_block = ow;
        options.winograd_tile = winograd_tile;
        options.winograd_tile_block = winograd_tile_block;
        variants.push_back(BuildAgate(l, x, w, b, options, l.name + "_v" + std::to_string(variants.size())));
      }
    }
    // Side by side on Winograd-eligible layers: the last two variants are direct and Winograd.
    size_t num_default = variants.size();
    bool side_by_side = winograd_columns && l.k == 3 && l.KW() == 3 && l.stride == 1 && l.group == 1;
    if (side_by_side) {
      for (int forced : {0, 1}) {
        ops::LowerGroupOptions options;
        options.conv_winograd = forced;
        options.winograd_tile = winograd_tile;
        options.winograd_tile_block = winograd_tile_block;
        variants.push_back(BuildAgate(l, x, w, b, options, l.name + "_v" + std::to_string(variants.size())));
      }
    }
    for (int threads : threads_list) {
      rt::ThreadPool pool(threads);
      // oneDNN fixes its thread split when a primitive is created: create it per thread count.
      SetOmpThreads(threads);
      std::unique_ptr<OneDnnConv> d = BuildOneDnn(l, x, w, b);
      std::unique_ptr<OneDnnConv> dw =
          side_by_side ? BuildOneDnn(l, x, w, b, dnnl::algorithm::convolution_winograd) : nullptr;
      double best_dw = 1e30;
      // The machine is shared: alternate agate's variants and oneDNN for `rounds`
      // rounds and keep each one's fastest run.
      std::vector<double> best(variants.size(), 1e30);
      double best_d = 1e30;
      std::vector<int32_t> status(variants.size(), 0);
      for (int round = 0; round < rounds; ++round) {
        for (size_t v = 0; v < variants.size(); ++v) {
          AgateConv& a = *variants[v];
          agate_kernel_ctx ctx{};
          ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
          ctx.parallel_for = rt::PoolParallelFor;
          ctx.pool = &pool;
          ctx.num_threads = threads;
          ctx.workspace = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(a.workspace.data()) + 63) & ~uintptr_t{63});
          ctx.workspace_bytes = a.workspace.size() - 64;
          auto run = [&] { status[v] |= a.fn(a.pointers.data(), &ctx); };
          best[v] = std::min(best[v], cold ? ColdMinMs(run, 5) : bench::TimeIt(run, 1, 5, min_run_ms).min_ms);
        }
        auto time = [&](const std::function<void()>& fn) {
          return cold ? ColdMinMs(fn, 5) : bench::TimeIt(fn, 1, 5, min_run_ms).min_ms;
        };
        best_d = std::min(best_d, time([&] { RunOneDnn(*d); }));
        if (dw) best_dw = std::min(best_dw, time([&] { RunOneDnn(*dw); }));
      }
      double gd = Flops(l) / best_d * 1e-6;
      double peak = peaks.size() >= static_cast<size_t>(threads) ? peaks[threads - 1] : 0;
      for (size_t v = 0; v < variants.size(); ++v)
        if (status[v] != 0) std::printf("%s: agate kernel returned %d\n", l.name.c_str(), status[v]);
      std::vector<std::string> wino{"-", "-", "-", "-"};
      if (side_by_side) {
        double gdir = Flops(l) / best[num_default] * 1e-6, gwin = Flops(l) / best[num_default + 1] * 1e-6;
        wino = {bench::Fixed(gdir, 1), bench::Fixed(gwin, 1), bench::Fixed(gwin / gdir, 2),
                bench::Fixed(MaxDiff(*variants[num_default + 1], *d, l), 5)};
      }
      for (size_t v = 0; v < num_default; ++v) {
        double ga = Flops(l) / best[v] * 1e-6;
        if (v == 0 && l.name.rfind("res", 0) == 0 && threads <= 2) ratios_resnet[threads].push_back(ga / gd);
        table.AddRow({l.name + (variants[v]->summary.find("depthwise_nchwc") != std::string::npos ? " (blocked)" : ""),
                      std::to_string(threads), bench::Fixed(ga, 1), bench::Fixed(gd, 1),
                      bench::Fixed(ga / gd, 2), peak > 0 ? bench::Fixed(100 * ga / peak, 0) : "-",
                      bench::Fixed(MaxDiff(*variants[v], *d, l), 5), wino[0], wino[1], wino[2], wino[3],
                      dw ? bench::Fixed(Flops(l) / best_dw * 1e-6, 1) : std::string("-"),
                      variants[v]->summary});
      }
    }
    variants.clear();
  }
  table.Print();
  std::printf("load average at the end: %s\n", bench::LoadAverage().c_str());
  for (int t = 1; t <= 2; ++t) {
    if (ratios_resnet[t].empty()) continue;
    double log_sum = 0, worst = 1e9;
    for (double r : ratios_resnet[t]) {
      log_sum += std::log(r);
      worst = std::min(worst, r);
    }
    std::printf("ResNet-50 convs, %d thread(s): geomean agate/oneDNN %.2f, worst %.2f, %zu layers\n", t,
                std::exp(log_sum / ratios_resnet[t].size()), worst, ratios_resnet[t].size());
  }
  return 0;
}

}  // namespace
}  // namespace agate

int main(int argc, char** argv) { return agate::Main(argc, argv); }
