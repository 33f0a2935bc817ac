// ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul through LowerGroup (loop-IR
// interpreter and LLVM host code) against the reference interpreter, bit for bit;
// the requantisation's rounding and saturation against hand-computed values; bad
// quantization parameters refused by name.
#include <gtest/gtest.h>

#include <random>

#include "core/codegen/llvm/build_llvm.h"
#include "core/graph/passes/quantize_dynamic.h"
#include "core/graph/testing/graph_builder.h"
#include "core/graph_eval/interpreter.h"
#include "core/ir/printer.h"
#include "core/ops/knob_space.h"
#include "core/ops/lower_group.h"
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
using testing::CheckAgainstReference;
using testing::CheckOptions;

const ir::DType kF32 = ir::DType::Float(32);
const ir::DType kI32 = ir::DType::Int(32);
const ir::DType kU8 = ir::DType::UInt(8);
const ir::DType kS8 = ir::DType::Int(8);
using Ints = std::vector<int64_t>;

// Uniform 8-bit (or int32 in [-1000, 1000)) values over the type's whole range.
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

// Every output must equal the reference exactly (integer outputs).
CheckOptions Exact(std::map<std::string, graph::Tensor> inputs) {
  CheckOptions o;
  o.tolerance = 0;
  o.inputs = std::move(inputs);
  return o;
}

// The int8 instruction sets the conv and matmul templates tile for (core/ops/vnni_common.h),
// as a CPU that has each, with what its schedule summary says and the loop-IR intrinsic its
// tiles use; and a CPU with none of them (the generic integer templates).
struct IsaTarget {
  const char* target;
  const char* conv_summary;
  const char* matmul_summary;
  const char* intrinsic;
};
const IsaTarget kVnniIsa{"llvm -mcpu=cascadelake", "conv int8 vnni (vpdpbusd)", "matmul int8 vnni (vpdpbusd)",
                         "dot4_u8s8("};
const IsaTarget kAvx512PairsIsa{"llvm -mcpu=skylake-avx512", "conv int8 avx512bw (vpmaddwd, centred int16)",
                                "matmul int8 avx512bw (vpmaddwd, centred int16)", "dot2_i16("};
const IsaTarget kAvx2PairsIsa{"llvm -mcpu=haswell", "conv int8 avx2 (vpmaddwd, centred int16)",
                              "matmul int8 avx2 (vpmaddwd, centred int16)", "dot2_i16("};
// AArch64 with the dotprod extension (a Cortex-A76-class Android phone): sdot on int8, uint8
// operands shifted by -128. Run on the loop-IR interpreter here.
const IsaTarget kArmDotIsa{"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76", "conv int8 dotprod (sdot)",
                           "matmul int8 dotprod (sdot)", "dot4_s8s8("};
const IsaTarget kEveryIsa[] = {kVnniIsa, kAvx512PairsIsa, kAvx2PairsIsa, kArmDotIsa};
const char* const kNoInt8Isa = "llvm -mcpu=x86-64";  // SSE2: the generic templates

// CheckAgainstReference for the host and for every instruction set's templates (those the
// host lacks on the loop-IR interpreter only); the failure names the target.
::testing::AssertionResult CheckOnEveryIsa(const Graph& graph, CheckOptions options) {
  std::vector<std::string> targets{""};
  for (const IsaTarget& isa : kEveryIsa) targets.push_back(isa.target);
  for (const std::string& t : targets) {
    options.cpu_target = t;
    ::testing::AssertionResult r = CheckAgainstReference(graph, options);
    if (!r) return r << " (target '" << (t.empty() ? "host" : t) << "')";
  }
  return ::testing::AssertionSuccess();
}

struct ConvCase {
  ir::DType x_type, w_type;
  Ints x_shape, w_shape;
  std::vector<std::pair<std::string, Attribute>> attrs;
  bool per_channel;
  bool constant_weights;
};

std::vector<ConvCase> ConvCases() {
  return {
      {kU8, kS8, {1, 8, 6, 7}, {16, 8, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}, true, true},
      {kU8, kU8, {1, 4, 9, 9}, {8, 4, 3, 3}, {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{0, 1, 2, 1})}},
       false, false},
      {kS8, kS8, {2, 6, 5, 8}, {6, 1, 3, 3}, {{"group", Attribute(int64_t{6})}, {"pads", Attribute(Ints{1, 1, 1, 1})}},
       true, true},  // depthwise
      {kU8, kS8, {1, 8, 5, 5}, {4, 4, 1, 1}, {{"group", Attribute(int64_t{2})}}, true, false},
      {kS8, kU8, {1, 3, 11}, {5, 3, 3}, {{"dilations", Attribute(Ints{2})}}, false, true},  // 1-D
  };
}

TEST(QLinearTest, QLinearConvMatchesTheReferenceBitForBit) {
  int index = 0;
  for (const ConvCase& c : ConvCases()) {
    for (ir::DType out : {kU8, kS8}) {
      Graph g;
      int64_t oc = c.w_shape[0];
      std::vector<double> w_scale{0.004};
      std::vector<int64_t> w_zp{c.w_type == kU8 ? 128 : 0};
      if (c.per_channel) {
        w_scale.clear();
        w_zp.clear();
        for (int64_t i = 0; i < oc; ++i) {
          w_scale.push_back(0.002 + 0.0005 * i);
          w_zp.push_back(c.w_type == kU8 ? 120 + i : static_cast<int64_t>(i % 5) - 2);
        }
      }
      std::map<std::string, graph::Tensor> inputs{{"x", RandomInts(c.x_type, c.x_shape, 10 + index)}};
      g.AddInput("x", TensorType{c.x_type, c.x_shape});
      g.AddConstant("xs", Scales({0.02}));
      g.AddConstant("xz", ZeroPoints(c.x_type, {c.x_type == kU8 ? 131 : -3}));
      graph::Tensor w = RandomInts(c.w_type, c.w_shape, 20 + index);
      if (c.constant_weights) {
        g.AddConstant("w", w);
        g.AddConstant("ws", Scales(w_scale));
        g.AddConstant("wz", ZeroPoints(c.w_type, w_zp));
      } else {  // run-time weights and scales: the multiplier is computed in the kernel
        g.AddInput("w", TensorType{c.w_type, c.w_shape});
        g.AddInput("ws", TensorType{kF32, w_scale.size() == 1 ? graph::Shape{} : graph::Shape{oc}});
        g.AddInput("wz", TensorType{c.w_type, w_zp.size() == 1 ? graph::Shape{} : graph::Shape{oc}});
        inputs["w"] = w;
        inputs["ws"] = Scales(w_scale);
        inputs["wz"] = ZeroPoints(c.w_type, w_zp);
      }
      // A y_scale small enough that some outputs saturate at both ends.
      g.AddConstant("ys", Scales({0.05}));
      g.AddConstant("yz", ZeroPoints(out, {out == kU8 ? 100 : 5}));
      g.AddConstant("b", RandomInts(kI32, {oc}, 30 + index));
      Add(&g, "QLinearConv", "qconv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, c.attrs);
      Graph graph = Finish(g, {"y"});
      // Every instruction set: uint8 and int8 activations packed as each one's type wants them
      // (shifted by 128 where the types differ), the generic templates where a case is outside them.
      EXPECT_TRUE(CheckOnEveryIsa(graph, Exact(inputs))) << "case " << index << " out " << out;
      ++index;
    }
  }
}

// Convs the int8 conv template takes (u8 activations, constant symmetric s8 weights, group
// 1) on each instruction set: channels that are not a multiple of 4 (or 2), output
// channels that are not a multiple of the register tile, padding with the zero point,
// strides (1x1 subsampled, KxK by stride phases), dilation, batch 2, both output types.
TEST(QLinearTest, VnniConvsMatchTheReferenceBitForBit) {
  struct VnniCase {
    Ints x_shape, w_shape;
    std::vector<std::pair<std::string, Attribute>> attrs;
  };
  std::vector<VnniCase> cases = {
      {{1, 6, 6, 7}, {10, 6, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{1, 16, 9, 9}, {24, 16, 1, 1}, {{"strides", Attribute(Ints{2, 2})}}},
      {{2, 5, 7, 6}, {8, 5, 3, 3}, {{"dilations", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{2, 1, 2, 2})}}},
      {{1, 32, 14, 14}, {12, 32, 1, 1}, {}},
      {{1, 8, 14, 14}, {8, 8, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}},  // ResNet's 14x14 and 7x7 stages
      {{1, 4, 7, 7}, {16, 4, 3, 3}, {{"pads", Attribute(Ints{1, 1, 1, 1})}}},
      // strided KxK: stride phases
      {{1, 8, 9, 10}, {8, 8, 3, 3}, {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{1, 3, 15, 15}, {8, 3, 7, 7}, {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{3, 3, 3, 3})}}},
      {{1, 4, 8, 9}, {4, 4, 3, 2},
       {{"strides", Attribute(Ints{1, 2})}, {"pads", Attribute(Ints{0, 1, 1, 0})}, {"dilations", Attribute(Ints{2, 1})}}},
      // small maps where tap planes replace the wide rows: strided, dilated, uneven padding
      {{1, 12, 13, 7}, {20, 12, 3, 3}, {{"strides", Attribute(Ints{2, 1})}, {"pads", Attribute(Ints{1, 1, 2, 1})}}},
      {{1, 8, 7, 7}, {8, 8, 3, 3}, {{"dilations", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{2, 2, 2, 2})}}},
      // rows of 12 back to back: the output written 16 pixels per vector across rows
      {{1, 8, 4, 12}, {20, 8, 1, 1}, {}},
      // pixels in whole tiles, channels in whole blocks: the tile loop writes the output in place
      {{1, 16, 8, 16}, {24, 16, 1, 1}, {}},
  };
  int index = 0;
  for (const VnniCase& c : cases) {
    ir::DType out = index % 2 ? kS8 : kU8;
    Graph g;
    int64_t oc = c.w_shape[0];
    std::vector<double> w_scale;
    for (int64_t i = 0; i < oc; ++i) w_scale.push_back(0.002 + 0.0005 * i);
    g.AddInput("x", TensorType{kU8, c.x_shape});
    g.AddConstant("xs", Scales({0.02}));
    g.AddConstant("xz", ZeroPoints(kU8, {131}));
    g.AddConstant("w", RandomInts(kS8, c.w_shape, 80 + index));
    g.AddConstant("ws", Scales(w_scale));
    g.AddConstant("wz", ZeroPoints(kS8, std::vector<int64_t>(oc, 0)));
    g.AddConstant("ys", Scales({0.05}));
    g.AddConstant("yz", ZeroPoints(out, {out == kU8 ? 100 : 5}));
    g.AddConstant("b", RandomInts(kI32, {oc}, 90 + index));
    Add(&g, "QLinearConv", "qconv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, c.attrs);
    std::map<std::string, graph::Tensor> inputs{{"x", RandomInts(kU8, c.x_shape, 100 + index)}};
    Graph finished = Finish(g, {"y"});
    EXPECT_TRUE(CheckOnEveryIsa(finished, Exact(inputs))) << "case " << index;
    // The template is chosen by the target's features: vpdpbusd tiles with VNNI, vpmaddwd
    // tiles of centred int16 with AVX-512BW or AVX2, the generic integer conv without.
    Graph fused = testing::Fuse(finished);
    for (const IsaTarget& isa : kEveryIsa) {
      GroupKernel with = LowerGroup(fused, fused.groups.back(), target::Target::Parse(isa.target), "int8");
      EXPECT_NE(with.schedule_summary.find(isa.conv_summary), std::string::npos) << with.schedule_summary;
      // Packed row by row, also where the channels are not whole groups (6, 5, 3).
      EXPECT_NE(with.schedule_summary.find("packed by rows"), std::string::npos) << with.schedule_summary;
      EXPECT_NE(ir::ToString(with.func).find(isa.intrinsic), std::string::npos) << isa.target;
    }
    GroupKernel without = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kNoInt8Isa), "plain");
    EXPECT_EQ(without.schedule_summary.find("conv int8"), std::string::npos) << without.schedule_summary;
    EXPECT_EQ(ir::ToString(without.func).find("dot4_u8s8("), std::string::npos);
    EXPECT_EQ(ir::ToString(without.func).find("dot2_i16("), std::string::npos);
    // AArch64 without dotprod (a Cortex-A53): the generic templates too.
    GroupKernel a53 = LowerGroup(fused, fused.groups.back(),
                                 target::Target::Parse("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a53"), "a53");
    EXPECT_EQ(a53.schedule_summary.find("conv int8"), std::string::npos) << a53.schedule_summary;
    if (index == 0) {  // the machine code: sdot on 128-bit registers
      codegen::LLVMBuildOptions keep;
      keep.keep_assembly = true;
      GroupKernel arm = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kArmDotIsa.target), "arm");
      std::string assembly = codegen::BuildLLVMObject({arm.func}, target::Target::Parse(kArmDotIsa.target), keep).assembly;
      EXPECT_NE(assembly.find("sdot\t"), std::string::npos);
      EXPECT_NE(assembly.find(".4s"), std::string::npos);
    }
    if (index == 5 || index == 9 || index == 10) {  // 7x7 maps, 32 registers: a plane per tap (64 pixels for 49, not 96)
      GroupKernel k = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kEveryIsa[0].target), "taps");
      EXPECT_NE(k.schedule_summary.find("tap_planes=9"), std::string::npos) << k.schedule_summary;
    }
    if (index == 3) {  // the tuner's knobs set the register tile
      CheckOptions tuned = Exact(inputs);
      tuned.lower.int8_oc_block = 4;
      tuned.lower.int8_pixel_vectors = 3;
      EXPECT_TRUE(CheckOnEveryIsa(finished, tuned));
      GroupKernel k = LowerGroup(fused, fused.groups.back(), target::Target::Parse("llvm -mcpu=cascadelake"), "tuned",
                                 tuned.lower);
      EXPECT_NE(k.schedule_summary.find("oc_block=4 pixel_vectors=3"), std::string::npos) << k.schedule_summary;
      // Either tile order computes the same result; a 1x1 conv takes pixel tiles outermost by default.
      EXPECT_NE(k.schedule_summary.find("pixel tiles outer"), std::string::npos) << k.schedule_summary;
      tuned.lower.int8_tile_order = 0;
      EXPECT_TRUE(CheckOnEveryIsa(finished, tuned));
      k = LowerGroup(fused, fused.groups.back(), target::Target::Parse("llvm -mcpu=cascadelake"), "tuned", tuned.lower);
      EXPECT_EQ(k.schedule_summary.find("pixel tiles outer"), std::string::npos) << k.schedule_summary;
      // The tile is declared to the tuner where the template applies.
      EXPECT_NE(KnobSpaceOf(fused, fused.groups.back(), target::Target::Parse("llvm -mcpu=cascadelake")).ToString().find(
                    "int8_oc_block{0,4,6,8} int8_pixel_vectors{0,1,2,3,4} int8_tile_order{-1,0,1}"),
                std::string::npos);
      EXPECT_NE(KnobSpaceOf(fused, fused.groups.back(), target::Target::Parse(kAvx2PairsIsa.target)).ToString().find(
                    "int8_oc_block{0,4,6,8} int8_pixel_vectors{0,1,2,3}"),
                std::string::npos);
      EXPECT_EQ(KnobSpaceOf(fused, fused.groups.back(), target::Target::Parse(kNoInt8Isa)).ToString().find("int8_"),
                std::string::npos);
    }
    if (index == 4) {  // wide rows (a 3x3 conv): channel blocks outermost unless the knob says otherwise
      GroupKernel k = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kEveryIsa[0].target), "rows");
      EXPECT_NE(k.schedule_summary.find("wide_row="), std::string::npos) << k.schedule_summary;
      EXPECT_EQ(k.schedule_summary.find("pixel tiles outer"), std::string::npos) << k.schedule_summary;
      CheckOptions pixels_outer = Exact(inputs);
      pixels_outer.lower.int8_tile_order = 1;
      EXPECT_TRUE(CheckOnEveryIsa(finished, pixels_outer));
    }
    ++index;
  }
}

// The VNNI conv's packing by rows (whole channel groups: the channels a multiple of 4)
// and its epilogue at the register tile: padding on each side, strides (1x1 subsampled,
// KxK phases, unequal), dilation, batch 2, the input zero point at both ends of uint8
// and the output zero point at both ends of its type, per-tensor and per-channel
// weight scales, one and two threads; bit for bit against the reference.
TEST(QLinearTest, VnniPackingByRowsAndTileEpilogueMatchTheReference) {
  struct Case {
    Ints x_shape, w_shape;
    std::vector<std::pair<std::string, Attribute>> attrs;
  };
  std::vector<Case> cases = {
      {{1, 8, 7, 9}, {12, 8, 3, 3}, {{"pads", Attribute(Ints{1, 2, 0, 1})}}},
      {{2, 4, 9, 7}, {8, 4, 3, 3}, {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{1, 12, 10, 11}, {20, 12, 1, 1}, {{"strides", Attribute(Ints{2, 2})}}},
      {{1, 8, 12, 12}, {6, 8, 3, 3}, {{"dilations", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{2, 2, 2, 2})}}},
      {{1, 4, 8, 11}, {8, 4, 2, 3}, {{"strides", Attribute(Ints{1, 2})}, {"pads", Attribute(Ints{0, 3, 1, 0})}}},
      {{1, 16, 5, 40}, {4, 16, 1, 1}, {}},  // one row of 16-pixel vectors and a remainder
  };
  int index = 0;
  for (const Case& c : cases) {
    for (int64_t x_zp : {int64_t{0}, int64_t{255}}) {
      ir::DType out = index % 2 ? kS8 : kU8;
      int64_t y_zp = out == kU8 ? (x_zp ? 255 : 0) : (x_zp ? 127 : -128);
      bool per_channel = index % 3 != 0;
      Graph g;
      int64_t oc = c.w_shape[0];
      std::vector<double> w_scale{0.003};
      if (per_channel) {
        w_scale.clear();
        for (int64_t i = 0; i < oc; ++i) w_scale.push_back(0.001 + 0.0007 * i);
      }
      g.AddInput("x", TensorType{kU8, c.x_shape});
      g.AddConstant("xs", Scales({0.02}));
      g.AddConstant("xz", ZeroPoints(kU8, {x_zp}));
      g.AddConstant("w", RandomInts(kS8, c.w_shape, 300 + index));
      g.AddConstant("ws", Scales(w_scale));
      g.AddConstant("wz", ZeroPoints(kS8, std::vector<int64_t>(w_scale.size(), 0)));
      g.AddConstant("ys", Scales({0.05}));
      g.AddConstant("yz", ZeroPoints(out, {y_zp}));
      g.AddConstant("b", RandomInts(kI32, {oc}, 400 + index));
      Add(&g, "QLinearConv", "qconv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, c.attrs);
      Graph finished = Finish(g, {"y"});
      CheckOptions options = Exact({{"x", RandomInts(kU8, c.x_shape, 500 + index)}});
      options.threads = 1 + index % 2;
      EXPECT_TRUE(CheckOnEveryIsa(finished, options)) << "case " << index;
      Graph fused = testing::Fuse(finished);
      GroupKernel k = LowerGroup(fused, fused.groups.back(),
                                 target::Target::Parse(kEveryIsa[index % 4].target), "vnni");
      EXPECT_NE(k.schedule_summary.find("packed by rows, epilogue at the register tile"), std::string::npos)
          << k.schedule_summary;
      // The int32 accumulator exists only as one register tile's local buffer.
      std::string ir_text = ir::ToString(k.func);
      size_t acc = ir_text.find("allocate y_vnni[int32");
      ASSERT_NE(acc, std::string::npos) << ir_text;
      EXPECT_NE(ir_text.substr(acc, ir_text.find('\n', acc) - acc).find("local"), std::string::npos)
          << ir_text.substr(acc, 120);
      // The output reads the tile's per-channel planes by contiguous rows, not by a vector
      // of divided indices (a gather).
      EXPECT_EQ(ir_text.find("floordiv(ramp("), std::string::npos) << ir_text;
      EXPECT_EQ(ir_text.find("floormod(ramp("), std::string::npos) << ir_text;
      ++index;
    }
  }
}

// Depthwise QLinearConv on the VNNI template's planes (widened 16-pixel tiles): output
// widths that are not a multiple of 16, stride 2, a 5x5 window, asymmetric padding,
// channel counts that the 4-channel tile does not divide (6: blocks of 2, 5: of 1),
// batch 2, nonzero per-channel and per-tensor weight zero points, the input and output
// zero points at both ends; bit for bit against the reference, and the generic
// template without VNNI.
TEST(QLinearTest, VnniDepthwiseConvsMatchTheReference) {
  struct Case {
    Ints x_shape;
    int64_t k;
    std::vector<std::pair<std::string, Attribute>> attrs;
  };
  std::vector<Case> cases = {
      {{1, 8, 14, 14}, 3, {{"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{1, 12, 15, 13}, 3, {{"strides", Attribute(Ints{2, 2})}, {"pads", Attribute(Ints{1, 1, 1, 1})}}},
      {{2, 6, 9, 11}, 5, {{"pads", Attribute(Ints{2, 1, 2, 3})}}},
      {{1, 5, 10, 9}, 3, {{"strides", Attribute(Ints{2, 1})}, {"pads", Attribute(Ints{0, 1, 1, 1})}}},
  };
  int index = 0;
  for (const Case& c : cases) {
    for (int64_t x_zp : {int64_t{0}, int64_t{255}}) {
      ir::DType out = index % 2 ? kS8 : kU8;
      int64_t y_zp = out == kU8 ? (x_zp ? 0 : 255) : (x_zp ? -128 : 127);
      int64_t ch = c.x_shape[1];
      bool per_channel = index % 2 == 0;
      std::vector<double> w_scale{0.004};
      std::vector<int64_t> w_zp{-3};
      if (per_channel) {
        w_scale.clear();
        w_zp.clear();
        for (int64_t i = 0; i < ch; ++i) {
          w_scale.push_back(0.002 + 0.0006 * i);
          w_zp.push_back(i % 2 ? 0 : 5 - i);
        }
      }
      Graph g;
      g.AddInput("x", TensorType{kU8, c.x_shape});
      g.AddConstant("xs", Scales({0.02}));
      g.AddConstant("xz", ZeroPoints(kU8, {x_zp}));
      g.AddConstant("w", RandomInts(kS8, {ch, 1, c.k, c.k}, 600 + index));
      g.AddConstant("ws", Scales(w_scale));
      g.AddConstant("wz", ZeroPoints(kS8, w_zp));
      g.AddConstant("ys", Scales({0.03}));
      g.AddConstant("yz", ZeroPoints(out, {y_zp}));
      g.AddConstant("b", RandomInts(kI32, {ch}, 700 + index));
      auto attrs = c.attrs;
      attrs.push_back({"group", Attribute(ch)});
      Add(&g, "QLinearConv", "qconv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"y"}, attrs);
      Graph finished = Finish(g, {"y"});
      CheckOptions options = Exact({{"x", RandomInts(kU8, c.x_shape, 800 + index)}});
      options.threads = 1 + index % 2;
      EXPECT_TRUE(CheckOnEveryIsa(finished, options)) << "case " << index;
      Graph fused = testing::Fuse(finished);
      GroupKernel with = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kVnniIsa.target), "dw");
      EXPECT_NE(with.schedule_summary.find("depthwise conv int8 (widened 16-pixel vectors)"), std::string::npos)
          << with.schedule_summary;
      EXPECT_EQ(with.schedule_summary.find("pixel tiles outer"), std::string::npos) << with.schedule_summary;
      if (index == 0) {  // the other tile order, when the tuner asks for it
        CheckOptions pixels_outer = options;
        pixels_outer.lower.int8_tile_order = 1;
        EXPECT_TRUE(CheckOnEveryIsa(finished, pixels_outer));
      }
      GroupKernel avx2 = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kAvx2PairsIsa.target), "dw");
      EXPECT_NE(avx2.schedule_summary.find("depthwise conv int8 (widened 8-pixel vectors, centred)"), std::string::npos)
          << avx2.schedule_summary;
      GroupKernel without = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kNoInt8Isa), "plain");
      EXPECT_EQ(without.schedule_summary.find("depthwise conv int8"), std::string::npos) << without.schedule_summary;
      ++index;
    }
  }
}

TEST(QLinearTest, ConvIntegerMatchesTheReference) {
  int index = 0;
  for (const ConvCase& c : ConvCases()) {
    Graph g;
    g.AddInput("x", TensorType{c.x_type, c.x_shape});
    g.AddInput("xz", TensorType{c.x_type, {}});
    std::map<std::string, graph::Tensor> inputs{{"x", RandomInts(c.x_type, c.x_shape, 40 + index)},
                                                {"xz", ZeroPoints(c.x_type, {c.x_type == kU8 ? 7 : -9})}};
    g.AddConstant("w", RandomInts(c.w_type, c.w_shape, 50 + index));
    std::vector<int64_t> w_zp{c.w_type == kU8 ? 3 : -1};
    if (c.per_channel) {
      w_zp.clear();
      for (int64_t i = 0; i < c.w_shape[0]; ++i) w_zp.push_back(i % 4);
    }
    g.AddConstant("wz", ZeroPoints(c.w_type, w_zp));
    Add(&g, "ConvInteger", "conv", {"x", "w", "xz", "wz"}, {"y"}, c.attrs);
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}), Exact(inputs))) << "case " << index;
    ++index;
  }
}

struct MatMulCase {
  Ints a_shape, b_shape;
  ir::DType a_type, b_type;
  bool per_row_a, per_column_b, constant_b;
};

std::vector<MatMulCase> MatMulCases() {
  return {
      {{5, 24}, {24, 16}, kU8, kS8, false, true, true},
      {{3, 7, 12}, {3, 12, 9}, kS8, kS8, true, false, false},
      {{2, 4, 33}, {33, 32}, kU8, kU8, false, true, false},
      {{24}, {24, 8}, kU8, kS8, false, true, true},  // 1-D a
  };
}

TEST(QLinearTest, QLinearMatMulMatchesTheReferenceBitForBit) {
  int index = 0;
  for (const MatMulCase& c : MatMulCases()) {
    for (ir::DType out : {kU8, kS8}) {
      Graph g;
      int64_t n = c.b_shape.back();
      g.AddInput("a", TensorType{c.a_type, c.a_shape});
      std::map<std::string, graph::Tensor> inputs{{"a", RandomInts(c.a_type, c.a_shape, 60 + index)}};
      g.AddConstant("as", Scales({0.03}));
      g.AddConstant("az", ZeroPoints(c.a_type, {c.a_type == kU8 ? 128 : 1}));
      std::vector<double> b_scale{0.01};
      std::vector<int64_t> b_zp{c.b_type == kU8 ? 125 : 0};
      if (c.per_column_b) {
        b_scale.clear();
        b_zp.clear();
        for (int64_t i = 0; i < n; ++i) {
          b_scale.push_back(0.005 + 0.001 * i);
          b_zp.push_back(c.b_type == kU8 ? 110 + i : i % 3);
        }
      }
      graph::Tensor b = RandomInts(c.b_type, c.b_shape, 70 + index);
      if (c.constant_b) {
        g.AddConstant("b", b);
      } else {
        g.AddInput("b", TensorType{c.b_type, c.b_shape});
        inputs["b"] = b;
      }
      g.AddConstant("bs", Scales(b_scale));
      g.AddConstant("bz", ZeroPoints(c.b_type, b_zp));
      g.AddInput("ys", TensorType{kF32, {}});  // a run-time output scale
      inputs["ys"] = Scales({0.4});
      g.AddConstant("yz", ZeroPoints(out, {out == kU8 ? 128 : -4}));
      Add(&g, "QLinearMatMul", "qmm", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
      EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}), Exact(inputs))) << "case " << index << " out " << out;
      ++index;
    }
  }
}

TEST(QLinearTest, MatMulIntegerMatchesTheReference) {
  int index = 0;
  for (const MatMulCase& c : MatMulCases()) {
    Graph g;
    int64_t m = c.a_shape.size() >= 2 ? c.a_shape[c.a_shape.size() - 2] : 1, n = c.b_shape.back();
    g.AddInput("a", TensorType{c.a_type, c.a_shape});
    g.AddInput("b", TensorType{c.b_type, c.b_shape});
    std::map<std::string, graph::Tensor> inputs{{"a", RandomInts(c.a_type, c.a_shape, 80 + index)},
                                                {"b", RandomInts(c.b_type, c.b_shape, 90 + index)}};
    std::vector<int64_t> a_zp{c.a_type == kU8 ? 12 : -12}, b_zp{c.b_type == kU8 ? 200 : 3};
    if (c.per_row_a) {
      a_zp.clear();
      for (int64_t i = 0; i < m; ++i) a_zp.push_back(i - 3);
    }
    if (c.per_column_b) {
      b_zp.clear();
      for (int64_t i = 0; i < n; ++i) b_zp.push_back(i % 7);
    }
    g.AddConstant("az", ZeroPoints(c.a_type, a_zp));
    g.AddConstant("bz", ZeroPoints(c.b_type, b_zp));
    Add(&g, "MatMulInteger", "mm", {"a", "b", "az", "bz"}, {"y"});
    EXPECT_TRUE(CheckAgainstReference(Finish(g, {"y"}), Exact(inputs))) << "case " << index;
    ++index;
  }
}

// The products the int8 matmul template takes on each instruction set (constant B):
// one row (a decoder step), ragged M, N and K (K % 4 != 0 pads the 4-deep panels), A's
// batch folded into the rows, uint8 and int8 A (shifted by 128) and B, a's zero point a
// constant or a run-time scalar (DynamicQuantizeLinear's) at both ends of its type, B's
// zero points 0 (symmetric), 128 for uint8 (no row sums) and arbitrary per column (row
// sums of A); MatMulInteger's int32 and QLinearMatMul's requantised outputs with
// per-tensor and per-column scales, one and two threads; bit for bit against the
// reference, on the loop-IR interpreter and as LLVM host code.
TEST(QLinearTest, VnniMatMulsMatchTheReferenceBitForBit) {
  struct Case {
    Ints a_shape;
    int64_t n;
    ir::DType a_type, b_type;
    int b_zero;  // 0: zero zero points, 1: the type's midpoint (uint8: 128), 2: arbitrary per column
  };
  std::vector<Case> cases = {
      {{1, 40}, 24, kU8, kS8, 0},       // M = 1
      {{5, 24}, 16, kU8, kS8, 0},       // one column panel
      {{2, 7, 30}, 50, kS8, kS8, 2},    // batch folded, K % 4 = 2, N ragged, row sums
      {{3, 33}, 17, kU8, kU8, 1},       // uint8 B at 128: no row sums
      {{9, 64}, 96, kU8, kU8, 2},       // several row tiles and panels, row sums
      {{4, 2, 13}, 70, kS8, kU8, 0},    // int8 A, uint8 B with zero point 0 (row sums)
  };
  int index = 0;
  for (const Case& c : cases) {
    const int64_t k = c.a_shape.back(), n = c.n;
    std::vector<int64_t> b_zp;
    for (int64_t j = 0; j < n; ++j) {
      int64_t mid = c.b_type == kU8 ? 128 : 0;
      b_zp.push_back(c.b_zero == 0 ? 0 : c.b_zero == 1 ? mid : mid + (j * 37) % 21 - 10);
    }
    if (c.b_zero != 2) b_zp.resize(index % 2 ? 1 : n);  // per tensor or per column
    graph::Tensor a = RandomInts(c.a_type, c.a_shape, 1000 + index), b = RandomInts(c.b_type, {k, n}, 1100 + index);
    for (int64_t a_zp : {c.a_type == kU8 ? int64_t{0} : int64_t{-128}, c.a_type == kU8 ? int64_t{255} : int64_t{127}}) {
      // MatMulInteger with a's zero point at run time (as DynamicQuantizeLinear gives it).
      Graph g;
      g.AddInput("a", TensorType{c.a_type, c.a_shape});
      g.AddInput("az", TensorType{c.a_type, {}});
      g.AddConstant("b", b);
      g.AddConstant("bz", ZeroPoints(c.b_type, b_zp));
      Add(&g, "MatMulInteger", "mm", {"a", "b", "az", "bz"}, {"y"});
      Graph finished = Finish(g, {"y"});
      CheckOptions options = Exact({{"a", a}, {"az", ZeroPoints(c.a_type, {a_zp})}});
      options.threads = 1 + index % 2;
      EXPECT_TRUE(CheckOnEveryIsa(finished, options)) << "MatMulInteger case " << index << " a_zp " << a_zp;
      Graph fused = testing::Fuse(finished);
      GroupKernel with = LowerGroup(fused, fused.groups.back(), target::Target::Parse("llvm -mcpu=cascadelake"), "vnni");
      EXPECT_NE(with.schedule_summary.find("matmul int8 vnni (vpdpbusd)"), std::string::npos) << with.schedule_summary;
      // Row sums of A only where B's zero points are not at the middle of uint8 (or 0 for int8).
      bool row_sums = false;
      for (int64_t z : b_zp) row_sums = row_sums || z != (c.b_type == kU8 ? 128 : 0);
      EXPECT_EQ(with.schedule_summary.find("row sums") != std::string::npos, row_sums) << with.schedule_summary;
      std::string ir_text = ir::ToString(with.func);
      EXPECT_NE(ir_text.find("dot4_u8s8("), std::string::npos);
      // The int32 tile exists only as a local buffer inside the loop over tiles.
      size_t acc = ir_text.find("allocate y_vnni[int32");
      ASSERT_NE(acc, std::string::npos) << ir_text;
      EXPECT_NE(ir_text.substr(acc, ir_text.find('\n', acc) - acc).find("local"), std::string::npos);
      for (const IsaTarget* isa : {&kAvx512PairsIsa, &kAvx2PairsIsa}) {
        // Centred int16 operands: no zero-point terms at all.
        GroupKernel pairs = LowerGroup(fused, fused.groups.back(), target::Target::Parse(isa->target), "pairs");
        EXPECT_NE(pairs.schedule_summary.find(isa->matmul_summary), std::string::npos) << pairs.schedule_summary;
        EXPECT_EQ(pairs.schedule_summary.find("row sums"), std::string::npos) << pairs.schedule_summary;
        EXPECT_NE(ir::ToString(pairs.func).find("dot2_i16("), std::string::npos);
      }
      // sdot: both operands int8, uint8 ones shifted; the same zero-point terms as VNNI.
      GroupKernel arm = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kArmDotIsa.target), "arm");
      EXPECT_NE(arm.schedule_summary.find(kArmDotIsa.matmul_summary), std::string::npos) << arm.schedule_summary;
      EXPECT_EQ(arm.schedule_summary.find("row sums") != std::string::npos, row_sums) << arm.schedule_summary;
      EXPECT_NE(ir::ToString(arm.func).find("dot4_s8s8("), std::string::npos);
      GroupKernel without = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kNoInt8Isa), "plain");
      EXPECT_EQ(without.schedule_summary.find("matmul int8"), std::string::npos) << without.schedule_summary;
      EXPECT_EQ(ir::ToString(without.func).find("dot4_u8s8("), std::string::npos);
      EXPECT_EQ(ir::ToString(without.func).find("dot2_i16("), std::string::npos);
      if (index == 0 && a_zp == 0) {  // the machine code: vpdpbusd on 512-bit registers
        codegen::LLVMBuildOptions keep;
        keep.keep_assembly = true;
        std::string assembly =
            codegen::BuildLLVMObject({with.func}, target::Target::Parse("llvm -mcpu=cascadelake"), keep).assembly;
        EXPECT_NE(assembly.find("vpdpbusd\t"), std::string::npos);
        EXPECT_NE(assembly.find("%zmm"), std::string::npos);
        // vpmaddwd on 256-bit registers with AVX2.
        GroupKernel avx2 = LowerGroup(fused, fused.groups.back(), target::Target::Parse(kAvx2PairsIsa.target), "avx2");
        std::string avx2_assembly =
            codegen::BuildLLVMObject({avx2.func}, target::Target::Parse(kAvx2PairsIsa.target), keep).assembly;
        EXPECT_NE(avx2_assembly.find("vpmaddwd\t"), std::string::npos);
        EXPECT_NE(avx2_assembly.find("%ymm"), std::string::npos);
        EXPECT_EQ(avx2_assembly.find("%zmm"), std::string::npos);
      }

      // QLinearMatMul: constant a zero point, per-tensor or per-column scales, both output types.
      ir::DType out = index % 2 ? kS8 : kU8;
      std::vector<double> b_scale{0.004};
      if (index % 3 != 0) {
        b_scale.clear();
        for (int64_t j = 0; j < n; ++j) b_scale.push_back(0.001 + 0.0003 * j);
      }
      Graph q;
      q.AddInput("a", TensorType{c.a_type, c.a_shape});
      q.AddConstant("as", Scales({0.03}));
      q.AddConstant("az", ZeroPoints(c.a_type, {a_zp}));
      q.AddConstant("b", b);
      q.AddConstant("bs", Scales(b_scale));
      q.AddConstant("bz", ZeroPoints(c.b_type, b_zp));
      q.AddConstant("ys", Scales({0.2}));
      q.AddConstant("yz", ZeroPoints(out, {out == kU8 ? 120 : -7}));
      Add(&q, "QLinearMatMul", "qmm", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
      Graph qfinished = Finish(q, {"y"});
      CheckOptions qoptions = Exact({{"a", a}});
      qoptions.threads = 2 - index % 2;
      EXPECT_TRUE(CheckOnEveryIsa(qfinished, qoptions)) << "QLinearMatMul case " << index << " a_zp " << a_zp;
      Graph qfused = testing::Fuse(qfinished);
      GroupKernel qk = LowerGroup(qfused, qfused.groups.back(), target::Target::Parse("llvm -mcpu=cascadelake"), "q");
      EXPECT_NE(qk.schedule_summary.find("matmul int8 vnni (vpdpbusd)"), std::string::npos) << qk.schedule_summary;
    }
    ++index;
  }
}

// a [1, 6] x b [6, 1] per element: y = saturate(round_half_even(a * 0.5) + zp), hand-computed.
TEST(QLinearTest, RequantisationRoundsHalfToEvenAndSaturates) {
  Graph g;
  g.AddInput("a", TensorType{kU8, {6, 1}});
  g.AddConstant("as", Scales({0.5}));
  g.AddConstant("az", ZeroPoints(kU8, {0}));
  g.AddConstant("b", graph::Tensor::FromInts(kS8, {1, 1}, {1}));
  g.AddConstant("bs", Scales({1.0}));
  g.AddConstant("bz", ZeroPoints(kS8, {0}));
  g.AddConstant("ys", Scales({1.0}));
  g.AddConstant("yz", ZeroPoints(kS8, {-2}));
  Add(&g, "QLinearMatMul", "qmm", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  Graph graph = Finish(g, {"y"});
  // 1.5 -> 2, 2.5 -> 2, 3.5 -> 4, 0.5 -> 0; 255 * 0.5 = 127.5 -> 128 - 2 = 126; 254 * 0.5 - 2 = 125.
  std::map<std::string, graph::Tensor> in{{"a", graph::Tensor::FromInts(kU8, {6, 1}, {3, 5, 7, 1, 255, 254})}};
  std::vector<int64_t> want{0, 0, 2, -2, 126, 125};
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    auto got = testing::RunGroups(testing::Fuse(graph), in, backend, target::Target::Host());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.at("y").GetInt(i), want[i]) << i;
  }
  // Saturation: a y_scale of 1/64 pushes 255 * 0.5 * 64 far above 127.
  Graph sat = g;
  sat.constants["ys"] = Scales({1.0 / 64});
  auto got = testing::RunGroups(testing::Fuse(Finish(sat, {"y"})), in, testing::Backend::kLLVM, target::Target::Host());
  EXPECT_EQ(got.at("y").GetInt(4), 127);
  EXPECT_EQ(got.at("y").GetInt(0), 94);  // 1.5 * 64 - 2
}

// DynamicQuantizeLinear as `agate compile` runs it (decomposed by the graph pipeline, then compiled)
// against ONNX's definition (the reference kernel of the undecomposed node), with exact halves: the
// range [-126.5, 128.5] gives a scale of exactly 1, a zero point of round(126.5) = 126 (ties to even;
// half away from zero would give 127) and quotients x / 1 on .5 steps. A dynamically quantized model's
// difference from the reference starts where a float input one ulp off moves such a tie
// (benchmarks/quantized/RESULTS.md); the compiled quantization itself must round exactly as ONNX does.
TEST(QLinearTest, CompiledDynamicQuantizeLinearRoundsTiesToEven) {
  Graph g;
  g.AddInput("x", TensorType{kF32, {9}});
  Add(&g, "DynamicQuantizeLinear", "dq", {"x"}, {"y", "y_scale", "y_zero_point"});
  Graph graph = Finish(g, {"y", "y_scale", "y_zero_point"});
  std::map<std::string, graph::Tensor> in{
      {"x", graph::Tensor::FromDoubles(kF32, {9}, {-126.5, 128.5, 0.5, 1.5, 2.5, -0.5, -1.5, 127.25, -125.5})}};
  auto want = graph_eval::Interpret(graph, in);
  EXPECT_EQ(want.at("y_scale").GetDouble(0), 1.0);
  EXPECT_EQ(want.at("y_zero_point").GetInt(0), 126);
  // round half to even, plus 126: -126, 128, 0, 2, 2, -0, -2, 127, -126.
  std::vector<int64_t> y{0, 254, 126, 128, 128, 126, 124, 253, 0};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(want.at("y").GetInt(i), y[i]) << i;
  Graph compiled = testing::Fuse(graph::DecomposeDynamicQuantize(graph));
  for (testing::Backend backend : {testing::Backend::kEval, testing::Backend::kLLVM}) {
    auto got = testing::RunGroups(compiled, in, backend, target::Target::Host());
    for (const std::string& out : graph.outputs) {
      EXPECT_EQ(got.at(out).ToDoubles(), want.at(out).ToDoubles()) << out << " backend " << static_cast<int>(backend);
    }
  }
}

TEST(QLinearTest, NonPositiveScalesAndMismatchedParametersAreRefusedByName) {
  for (double bad : {0.0, -0.5}) {
    Graph g;
    g.AddInput("a", TensorType{kU8, {2, 4}});
    g.AddConstant("as", Scales({0.5}));
    g.AddConstant("az", ZeroPoints(kU8, {0}));
    g.AddConstant("b", RandomInts(kS8, {4, 3}, 1));
    g.AddConstant("bad_scale", Scales({0.1, bad, 0.2}));
    g.AddConstant("bz", ZeroPoints(kS8, {0}));
    g.AddConstant("ys", Scales({1.0}));
    g.AddConstant("yz", ZeroPoints(kU8, {0}));
    Add(&g, "QLinearMatMul", "qmm", {"a", "as", "az", "b", "bad_scale", "bz", "ys", "yz"}, {"y"});
    Graph graph = testing::Fuse(Finish(g, {"y"}));
    try {
      LowerGroup(graph, graph.groups[0], target::Target::Host(), "k");
      ADD_FAILURE() << "scale " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad_scale"), std::string::npos) << e.what();
    }
  }
  // A per-channel zero point whose length is not the channel count.
  Graph g;
  g.AddInput("x", TensorType{kU8, {1, 2, 4, 4}});
  g.AddConstant("w", RandomInts(kS8, {4, 2, 1, 1}, 2));
  g.AddConstant("odd_zp", ZeroPoints(kS8, {0, 1, 2}));
  Add(&g, "ConvInteger", "conv", {"x", "w", "", "odd_zp"}, {"y"});
  Graph graph = testing::Fuse(Finish(g, {"y"}));
  try {
    LowerGroup(graph, graph.groups[0], target::Target::Host(), "k");
    ADD_FAILURE() << "a 3-element zero point for 4 channels accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("odd_zp"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ops
}  // namespace agate
