// The microcontroller int8 conv template (qlinear_mcu.h) against the reference
// interpreter, bit for bit: QLinearConv with padding, stride 2, asymmetric pads,
// dilation, groups, depthwise, 1x1, ragged shapes, per-channel scales and zero
// points, int8 and uint8 operands. Lowered for the C backend and the LLVM Cortex-M
// targets and run on the loop-IR interpreter, and, where arm-none-eabi-gcc and
// qemu-system-arm are installed, compiled by the C backend and run on a Cortex-M4
// under QEMU. Every kernel must need no workspace (the generic template stages a
// widened, padded copy of the input).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/codegen/c/codegen_c.h"
#include "core/codegen/llvm/build_llvm.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ir/printer.h"
#include "core/ops/lower_group.h"
#include "core/ops/qlinear_mcu.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
namespace ct = codegen::testing;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI32 = ir::DType::Int(32);
const ir::DType kU8 = ir::DType::UInt(8);
const ir::DType kS8 = ir::DType::Int(8);
using Ints = std::vector<int64_t>;

// With Arm's DSP extension (SMLAD on int16 pairs) and without it (one product per
// multiply-accumulate: the portable C target, a Cortex-M0).
const char* const kMcuTargets[] = {
    "c -mcpu=cortex-m4",
    "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4",
    "llvm -mtriple=thumbv8.1m.main-none-eabi -mcpu=cortex-m55",
    "c",
    "llvm -mtriple=thumbv6m-none-eabi -mcpu=cortex-m0",
};

graph::Tensor RandomInts(ir::DType t, const graph::Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  graph::Tensor x(t, shape);
  int64_t lo = t == kU8 ? 0 : t == kS8 ? -128 : -1000, hi = t == kU8 ? 255 : t == kS8 ? 127 : 999;
  for (int64_t i = 0; i < x.numel(); ++i) x.SetInt(i, std::uniform_int_distribution<int64_t>(lo, hi)(rng));
  return x;
}

graph::Tensor Scales(const std::vector<double>& v) {
  return graph::Tensor::FromDoubles(kF32, v.size() == 1 ? graph::Shape{} : graph::Shape{int64_t(v.size())}, v);
}

graph::Tensor ZeroPoints(ir::DType t, const std::vector<int64_t>& v) {
  return graph::Tensor::FromInts(t, v.size() == 1 ? graph::Shape{} : graph::Shape{int64_t(v.size())}, v);
}

struct ConvCase {
  ir::DType x_type, w_type, y_type;
  Ints x_shape, w_shape;
  std::vector<std::pair<std::string, Attribute>> attrs;
  bool per_channel;
  bool symmetric = false;  // weight zero points 0 (what post-training quantizers give): centred they fit int8
};

std::vector<ConvCase> Cases() {
  return {
      // 3x3, padding 1, per-channel int8 weights: the DS-CNN's blocks without the groups
      {kU8, kS8, kU8, {1, 8, 6, 7}, {16, 8, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}, true},
      // stride 2 with asymmetric padding, per-tensor
      {kS8, kS8, kS8, {1, 4, 9, 9}, {6, 4, 3, 3},
       {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{0, 1, 2, 1})}}, false},
      // depthwise, batch 2, per channel
      {kU8, kS8, kS8, {2, 6, 5, 8}, {6, 1, 3, 3}, {{"group", Attribute(int64_t{6})}, {"pads", Attribute(Ints{1, 1, 1, 1})}},
       true},
      // 1x1 over a ragged 25x5 map, no padding (read without bounds tests)
      {kS8, kS8, kU8, {1, 5, 25, 5}, {7, 5, 1, 1}, {}, true},
      // groups of 3 channels, row dilation, uint8 weights (centred values need int16)
      {kU8, kU8, kU8, {1, 6, 7, 5}, {4, 3, 3, 2},
       {{"group", Attribute(int64_t{2})}, {"dilations", Attribute(Ints{2, 1})}, {"pads", Attribute(Ints{1, 0, 1, 1})}},
       true},
      // the DS-CNN's stem: one channel, 10x4 window, stride 2, input already padded
      {kS8, kS8, kS8, {1, 1, 15, 8}, {5, 1, 10, 4}, {{"strides", Attribute(Ints{2, 2})}}, true},
      // symmetric int8 weights (SMLAD with packed int8 weights): a depthwise 3x3 (tap pairs, the
      // last word half empty), a 1x1 over 6 channels to 8 (channel pairs, 4 output channels per
      // activation pair), a 3x3 to 6 channels (2 per activation pair)
      {kS8, kS8, kS8, {1, 4, 6, 5}, {4, 1, 3, 3}, {{"group", Attribute(int64_t{4})}, {"pads", Attribute(Ints{1, 1, 1, 1})}},
       true, true},
      {kU8, kS8, kU8, {1, 6, 5, 4}, {8, 6, 1, 1}, {}, true, true},
      {kS8, kS8, kS8, {1, 4, 5, 6}, {6, 4, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}, false, true},
  };
}

// One QLinearConv node with a bias; y_scale small enough that outputs saturate.
Graph ConvGraph(const ConvCase& c, int index) {
  Graph g;
  int64_t oc = c.w_shape[0];
  std::vector<double> w_scale{0.004};
  std::vector<int64_t> w_zp{c.w_type == kU8 ? 128 : 0};
  if (c.per_channel) {
    w_scale.clear();
    w_zp.clear();
    for (int64_t i = 0; i < oc; ++i) {
      w_scale.push_back(0.002 + 0.0005 * i);
      w_zp.push_back(c.symmetric ? 0 : c.w_type == kU8 ? 120 + i : i % 5 - 2);
    }
  }
  g.AddInput("x", TensorType{c.x_type, c.x_shape});
  g.AddConstant("xs", Scales({0.02}));
  g.AddConstant("xz", ZeroPoints(c.x_type, {c.x_type == kU8 ? 131 : -3}));
  g.AddConstant("w", RandomInts(c.w_type, c.w_shape, 20 + index));
  g.AddConstant("ws", Scales(w_scale));
  g.AddConstant("wz", ZeroPoints(c.w_type, w_zp));
  g.AddConstant("ys", Scales({0.05}));
  g.AddConstant("yz", ZeroPoints(c.y_type, {c.y_type == kU8 ? 100 : 5}));
  g.AddConstant("b", RandomInts(kI32, {oc}, 30 + index));
  Add(&g, "QLinearConv", "qconv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, c.attrs);
  return Finish(g, {"y"});
}

TEST(QLinearMcuTest, SelectedForMicrocontrollerTargetsOnly) {
  for (const char* t : kMcuTargets) EXPECT_TRUE(UseMcuIntegerConv(target::Target::Parse(t))) << t;
  EXPECT_TRUE(UseMcuIntegerConv(target::Target::Parse("c")));
  EXPECT_FALSE(UseMcuIntegerConv(target::Target::Host()));
  EXPECT_FALSE(UseMcuIntegerConv(target::Target::Parse("llvm -mtriple=aarch64-linux-gnu")));
  // On the host the generic (or VNNI) template stays.
  Graph fused = testing::Fuse(ConvGraph(Cases()[0], 0));
  GroupKernel host = LowerGroup(fused, fused.groups.back(), target::Target::Host(), "host");
  EXPECT_EQ(host.schedule_summary.find("mcu"), std::string::npos) << host.schedule_summary;
}

TEST(QLinearMcuTest, ConvsMatchTheReferenceBitForBitWithNoWorkspace) {
  int index = 0;
  for (const ConvCase& c : Cases()) {
    Graph graph = ConvGraph(c, index);
    std::map<std::string, graph::Tensor> inputs{{"x", RandomInts(c.x_type, c.x_shape, 10 + index)}};
    graph::Tensor want = graph_eval::Interpret(graph, inputs).at("y");
    Graph fused = testing::Fuse(graph);
    for (const char* text : kMcuTargets) {
      target::Target t = target::Target::Parse(text);
      std::vector<std::string> summaries;
      auto got = testing::RunGroups(fused, inputs, testing::Backend::kEval, t, {}, &summaries);
      EXPECT_TRUE(testing::TensorsClose(got.at("y"), want, 0)) << "case " << index << " on " << text;
      ASSERT_EQ(summaries.size(), 1u);
      EXPECT_NE(summaries[0].find("conv int8 mcu direct"), std::string::npos) << summaries[0];
      EXPECT_EQ(summaries[0].find("dsp: SMLAD") != std::string::npos, t.HasFeature("dsp")) << summaries[0];
      GroupKernel k = LowerGroup(fused, fused.groups.back(), t, "k");
      EXPECT_EQ(k.func.workspace_bytes, 0) << "case " << index << " on " << text;
    }
    ++index;
  }
}

// On a Cortex-M4 the products are SMLADs: in LLVM's machine code, and in the C backend's
// source through ACLE's __smlad (arm-none-eabi-gcc defines __ARM_FEATURE_SIMD32 for it).
// Channel pairs with four output channels per activation pair (cases 0 and 7), window-tap
// pairs (the depthwise cases 2 and 6, the one-channel stem, case 5); a Cortex-M0 has no SMLAD.
// Weights that fit int8 centred (cases 6 and 7) are packed four to a word and unpacked by
// SXTB16; the others are int16 pairs.
TEST(QLinearMcuTest, CortexM4ConvsMultiplyPairsWithSmlad) {
  const std::vector<ConvCase> cases = Cases();
  for (int index : {0, 2, 5, 6, 7}) {
    bool packed = index >= 6;
    Graph fused = testing::Fuse(ConvGraph(cases[index], index));
    codegen::LLVMBuildOptions keep;
    keep.keep_assembly = true;
    target::Target m4 = target::Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4");
    GroupKernel k = LowerGroup(fused, fused.groups.back(), m4, "m4");
    bool channel_pairs = index == 0 || index == 7;
    EXPECT_NE(k.schedule_summary.find(channel_pairs ? "pairs of input channels" : "pairs of window taps"),
              std::string::npos)
        << k.schedule_summary;
    EXPECT_NE(k.schedule_summary.find(channel_pairs ? "4 output channel(s)" : "1 output channel(s)"), std::string::npos)
        << k.schedule_summary;
    EXPECT_NE(k.schedule_summary.find(packed ? "int8 weights unpacked by SXTB16" : "int16 weights"), std::string::npos)
        << k.schedule_summary;
    std::string assembly = codegen::BuildLLVMObject({k.func}, m4, keep).assembly;
    EXPECT_NE(assembly.find("smlad\t"), std::string::npos) << "case " << index;
    EXPECT_EQ(assembly.find("sxtb16\t") != std::string::npos, packed) << "case " << index;
    target::Target c_m4 = target::Target::Parse("c -mcpu=cortex-m4");
    GroupKernel c = LowerGroup(fused, fused.groups.back(), c_m4, "cm4");
    std::string source = codegen::GenerateC({c.func}, c_m4);
    EXPECT_NE(source.find("__smlad("), std::string::npos) << "case " << index;
    EXPECT_EQ(source.find("__sxtb16(") != std::string::npos, packed) << "case " << index;
    // Every packed pair is one word (no byte-by-byte fallback).
    if (packed) EXPECT_EQ(source.find("agate_pack_i16x2(_"), std::string::npos) << source;
    target::Target m0 = target::Target::Parse("llvm -mtriple=thumbv6m-none-eabi -mcpu=cortex-m0");
    GroupKernel k0 = LowerGroup(fused, fused.groups.back(), m0, "m0");
    EXPECT_EQ(codegen::BuildLLVMObject({k0.func}, m0, keep).assembly.find("smlad"), std::string::npos);
  }
}

// The knobs: int8_mcu_packed=0 stores SMLAD's weights as int16 pairs (twice the flash of the
// packed int8 words), int8_mcu_smlad=0 multiplies one product per multiply-accumulate;
// int8_mcu_oc_block narrows the channels sharing an activation pair (1: a word's two output
// channels would not be unrolled together, so the pairs are int16). Every setting stays bit
// for bit with the reference.
TEST(QLinearMcuTest, KnobsTradeSmladForFlashAndNarrowTheChannelBlock) {
  // 4 -> 6 channels, per-tensor int8 weights with zero point 0 (centred, they fit int8):
  // channel pairs, 2 output channels per pair (4 does not divide 6).
  const ConvCase c = Cases()[1];
  Graph graph = ConvGraph(c, 1);
  std::map<std::string, graph::Tensor> inputs{{"x", RandomInts(c.x_type, c.x_shape, 11)}};
  graph::Tensor want = graph_eval::Interpret(graph, inputs).at("y");
  Graph fused = testing::Fuse(graph);
  target::Target m4 = target::Target::Parse("c -mcpu=cortex-m4");
  auto weight_bytes = [](const GroupKernel& k) {
    int64_t bytes = 0;
    for (const KernelParam& p : k.params) {
      if (p.kind == KernelParam::Kind::kConstant && p.constant.shape().size() >= 4) bytes += p.constant.nbytes();
    }
    return bytes;
  };
  struct Setting {
    int smlad, oc_block, packed;
    const char* summary;
    int64_t weight_bytes;
  };
  const int64_t weights = 6 * 4 * 3 * 3;  // the centred weights fit int8
  for (const Setting& setting :
       {Setting{-1, 0, -1, "input channels, int8 weights unpacked by SXTB16, 2 output channel(s)", weights},
        Setting{1, 4, 1, "input channels, int8 weights unpacked by SXTB16, 2 output channel(s)", weights},
        Setting{1, 0, 0, "input channels, int16 weights, 2 output channel(s)", 2 * weights},
        Setting{1, 1, -1, "input channels, int16 weights, 1 output channel(s)", 2 * weights},
        Setting{0, 0, -1, "one int32 accumulator per output", weights}}) {
    LowerGroupOptions options;
    SetScheduleKnob(&options, "int8_mcu_smlad", setting.smlad);
    SetScheduleKnob(&options, "int8_mcu_oc_block", setting.oc_block);
    SetScheduleKnob(&options, "int8_mcu_packed", setting.packed);
    GroupKernel k = LowerGroup(fused, fused.groups.back(), m4, "k", options);
    EXPECT_NE(k.schedule_summary.find(setting.summary), std::string::npos) << k.schedule_summary;
    EXPECT_EQ(weight_bytes(k), setting.weight_bytes) << setting.summary;
    auto got = testing::RunGroups(fused, inputs, testing::Backend::kEval, m4, options);
    EXPECT_TRUE(testing::TensorsClose(got.at("y"), want, 0)) << setting.summary;
  }
  LowerGroupOptions bad;
  EXPECT_THROW(SetScheduleKnob(&bad, "int8_mcu_oc_block", 3), Error);

  // The padded input read in place: by default the output loops are cut so that the interior
  // reads without bounds tests (fewer selects in the kernel); loop_partition=0 keeps one loop
  // that tests every tap (less code). Both bit for bit.
  auto selects = [](const GroupKernel& k) {
    std::string text = ir::ToString(k.func.body);
    int64_t n = 0;
    for (size_t at = text.find("select("); at != std::string::npos; at = text.find("select(", at + 1)) ++n;
    return n;
  };
  LowerGroupOptions whole;
  SetScheduleKnob(&whole, "loop_partition", 0);
  GroupKernel cut = LowerGroup(fused, fused.groups.back(), m4, "k", LowerGroupOptions());
  GroupKernel kept = LowerGroup(fused, fused.groups.back(), m4, "k", whole);
  EXPECT_GT(selects(kept), 0);
  EXPECT_NE(ir::ToString(cut.func.body), ir::ToString(kept.func.body));
  // Output columns 1..3 of 5 (left and right padding 1, stride 2) read no padding.
  EXPECT_NE(ir::ToString(cut.func.body).find("for (i3, 1, 3)"), std::string::npos) << ir::ToString(cut.func.body);
  auto got = testing::RunGroups(fused, inputs, testing::Backend::kEval, m4, whole);
  EXPECT_TRUE(testing::TensorsClose(got.at("y"), want, 0));
}

// The C backend's kernels for every case, linked into one Cortex-M4 firmware and run
// under qemu-system-arm on the same inputs.
TEST(QLinearMcuTest, CortexM4KernelsFromTheCBackendRunOnQemu) {
  if (!ct::HaveCortexM4Emulation()) {
    GTEST_SKIP() << "needs arm-none-eabi-gcc (gcc-arm-none-eabi) and qemu-system-arm (qemu-system-arm)";
  }
  target::Target m4 = target::Target::Parse("c -mcpu=cortex-m4");
  struct Run {
    GroupKernel kernel;
    std::map<std::string, graph::Tensor> values;  // the inputs and the graph's constants
    graph::Tensor want;
  };
  std::vector<Run> runs;
  std::vector<ir::LoweredFunc> funcs;
  int index = 0;
  for (const ConvCase& c : Cases()) {
    Graph graph = ConvGraph(c, index);
    std::map<std::string, graph::Tensor> inputs{{"x", RandomInts(c.x_type, c.x_shape, 10 + index)}};
    Graph fused = testing::Fuse(graph);
    ASSERT_EQ(fused.groups.size(), 1u);
    GroupKernel k = LowerGroup(fused, fused.groups[0], m4, "qconv_mcu_" + std::to_string(index));
    funcs.push_back(k.func);
    std::map<std::string, graph::Tensor> values = inputs;
    for (const auto& kv : fused.constants) values[kv.first] = kv.second;
    runs.push_back({k, values, graph_eval::Interpret(graph, inputs).at("y")});
    ++index;
  }
  std::string dir = ct::MakeTempDir();
  ct::WriteTextFile(dir + "/kernels.c", codegen::GenerateC(funcs, m4));
  ASSERT_EQ(ct::LinkCortexM4Firmware(dir, {dir + "/kernels.c"}, funcs), "");
  for (const Run& run : runs) {
    std::vector<ct::HostArray> args;
    int output = -1;
    for (size_t i = 0; i < run.kernel.params.size(); ++i) {
      const KernelParam& p = run.kernel.params[i];
      const graph::Tensor* value = p.kind == KernelParam::Kind::kConstant ? &p.constant : nullptr;
      if (value == nullptr && run.values.count(p.value)) value = &run.values.at(p.value);
      if (value == nullptr) {  // the output
        output = static_cast<int>(i);
        value = &run.want;
      }
      args.emplace_back(value->dtype(), static_cast<size_t>(value->numel()));
      if (output != static_cast<int>(i)) std::memcpy(args.back().data(), value->raw_data(), value->nbytes());
    }
    ASSERT_GE(output, 0);
    ct::WriteArgsFile(dir + "/in.bin", args, 0);
    std::string log;
    ASSERT_EQ(ct::RunCortexM4Firmware(dir, run.kernel.func.name, &log), 0) << run.kernel.func.name << ": " << log;
    ASSERT_EQ(ct::ReadResultsFile(dir + "/out.bin", &args), 0) << run.kernel.func.name;
    EXPECT_EQ(std::memcmp(args[output].data(), run.want.raw_data(), run.want.nbytes()), 0) << run.kernel.func.name;
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
