// CodeGenLLVM on hand-built kernels: run on the host (1 and 2 threads), check the
// generated code's shape (vector width, alignment, FMA, no libm calls, parallel
// outlining), run the AArch64 object under qemu, and link Cortex-M objects with
// the Arm embedded toolchain.
#include "core/codegen/llvm/codegen_llvm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

#include "core/codegen/llvm/build_llvm.h"
#include "core/codegen/testing/loop_kernels.h"
#include "core/ir/buffer.h"
#include "core/ir/stmt.h"
#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

using testing::AllKernelCases;
using testing::AllKernelFuncs;
using testing::KernelCase;

TEST(CodeGenLLVMTest, EveryKernelMatchesItsReferenceOnTheHost) {
  HostKernels kernels = HostKernels::Build(AllKernelFuncs());
  for (const KernelCase& c : AllKernelCases()) {
    for (int threads : {1, 2, 4}) {
      EXPECT_EQ(testing::RunAndCheck(c, kernels.Get(c.func.name), threads), "") << c.func.name << ", " << threads << " threads";
    }
  }
}

TEST(CodeGenLLVMTest, GeneratedCodeKeepsTheScheduleDecisions) {
  target::Target host = target::Target::Host();
  LLVMBuildOptions options;
  options.keep_assembly = true;
  options.keep_llvm_ir = true;
  LLVMArtifacts artifacts = BuildLLVMObject(AllKernelFuncs(), host, options);
  const std::string& ir = artifacts.llvm_ir;
  // Parallel loops are outlined and launched through the context.
  EXPECT_NE(ir.find("define internal i32 @matmul_tiled_parallel_0(i32"), std::string::npos) << ir;
  // Buffers carry alias scopes; the argument array is noalias.
  EXPECT_NE(ir.find("!alias.scope"), std::string::npos);
  EXPECT_NE(ir.find("@matmul_tiled(i8** noalias"), std::string::npos);
  // The matmul's 16-lane accesses of B and C are provably 64-byte aligned.
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos);
  EXPECT_NE(ir.find("align 64, !alias.scope"), std::string::npos);
  // Non-power-of-two vectors are split into power-of-two pieces.
  EXPECT_EQ(ir.find("<40 x float>"), std::string::npos);
  EXPECT_EQ(ir.find("<7 x float>"), std::string::npos);
  EXPECT_NE(ir.find("<32 x float>"), std::string::npos);
  // Math expands inline: no libm calls anywhere.
  for (const char* libm : {"@expf", "@tanhf", "@erff", "@logf", "@llvm.exp.", "@llvm.log."}) {
    EXPECT_EQ(ir.find(libm), std::string::npos) << libm;
  }
  if (host.HasFeature("avx512f")) {
    EXPECT_NE(artifacts.assembly.find("vfmadd231ps\t%zmm"), std::string::npos) << "expected 512-bit FMAs";
  } else if (host.HasFeature("fma")) {
    EXPECT_NE(artifacts.assembly.find("vfmadd"), std::string::npos);
  }
}

// A strided vector load (a transposed read: a GEMM packing K^T) is a gather;
// from a buffer whose elements all have 32-bit indices, its lanes are 32-bit
// (x86 gathers 16 floats per instruction instead of 8), and the values are right.
TEST(CodeGenLLVMTest, GathersFromSmallBuffersUse32BitLanes) {
  using namespace ir;  // NOLINT
  const int64_t rows = 16, cols = 200;
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(rows), Expr(cols)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(cols * rows)});
  Var j("j");
  // C[j*16 + 0..15] = A[0..15][j]: a column of A as one vector.
  Stmt body = For::make(j, 0, cols, ForKind::kSerial,
                        Store::make(c, Load::make(a, Ramp::make(j, Expr(cols), rows)), Ramp::make(j * rows, Expr(int64_t{1}), rows)));
  LoweredFunc f{"gather_columns", {a, c}, body, 0};
  target::Target host = target::Target::Host();
  if (host.HasFeature("avx512f")) {
    LLVMBuildOptions options;
    options.keep_assembly = true;
    std::string assembly = BuildLLVMObject({f}, host, options).assembly;
    EXPECT_NE(assembly.find("vgatherdps"), std::string::npos) << assembly;
    EXPECT_EQ(assembly.find("vgatherqps"), std::string::npos) << assembly;
  }
  HostKernels kernels = HostKernels::Build({f});
  // The kernel ABI promises 64-byte aligned buffers, and the kernel stores whole vectors
  // with aligned moves: std::vector's 16-byte alignment crashed it in some runs.
  testing::HostArray a_data(DType::Float(32), rows * cols), c_data(DType::Float(32), rows * cols);
  float* av = a_data.as<float>();
  float* cv = c_data.as<float>();
  for (int64_t i = 0; i < rows * cols; ++i) av[i] = static_cast<float>(i), cv[i] = 0.0f;
  void* args[2] = {av, cv};
  testing::TestContext context(1, 0);
  ASSERT_EQ(kernels.Get("gather_columns")(args, &context.ctx), 0);
  for (int64_t jj = 0; jj < cols; ++jj)
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(cv[jj * rows + r], av[r * cols + jj]) << jj << ", " << r;
}

// Four stores of one channel each into every fourth byte (the int8 conv's packing of
// four channels per vpdpbusd lane) are one 64-byte store of the values interleaved by
// shuffles, not 64 byte stores; a group whose value reads the stored buffer, or whose
// offsets are not 0, 1, 2, 3, stays store by store. Either way the bytes are right.
TEST(CodeGenLLVMTest, InterleavedStoresAreOneContiguousStore) {
  using namespace ir;  // NOLINT
  const int64_t channels = 4, pixels = 48;  // 16-lane groups and an 8-lane tail group
  Buffer x = CreateBuffer("X", DType::UInt(8), {Expr(channels * pixels)});
  Buffer y = CreateBuffer("Y", DType::UInt(8), {Expr(channels * pixels)});
  Buffer z = CreateBuffer("Z", DType::UInt(8), {Expr(channels * pixels)});
  Var p("p");
  auto group = [&](const Buffer& out, const Expr& p0, int lanes, bool reads_out, bool shuffled) {
    std::vector<Stmt> stores;
    for (int64_t c = 0; c < channels; ++c) {
      int64_t at = shuffled ? (c + 1) % channels : c;
      Expr value = Load::make(x, Ramp::make(c * pixels + p0, Expr(int64_t{1}), lanes));
      if (reads_out && c == 2) value = value + Load::make(out, Ramp::make(p0 * channels, Expr(int64_t{4}), lanes));
      stores.push_back(Store::make(out, value, Ramp::make(p0 * channels + at, Expr(int64_t{4}), lanes)));
    }
    return Seq::make(stores);
  };
  auto kernel = [&](const std::string& name, const Buffer& out, bool reads_out, bool shuffled) {
    Stmt body = Seq::make({For::make(p, 0, 2, ForKind::kSerial, group(out, p * 16, 16, reads_out, shuffled)),
                           group(out, Expr(int64_t{32}), 8, reads_out, shuffled),
                           group(out, Expr(int64_t{40}), 8, reads_out, shuffled)});
    return LoweredFunc{name, {x, out}, body, 0};
  };
  LoweredFunc packed = kernel("pack_channels", y, false, false);
  LoweredFunc reading = kernel("pack_reading_output", z, true, false);
  LoweredFunc shuffled = kernel("pack_shuffled", z, false, true);
  llvm::LLVMContext context;
  auto module = GenerateLLVM({packed}, target::Target::Host(), &context);
  std::string ir_text;
  llvm::raw_string_ostream(ir_text) << *module;
  EXPECT_NE(ir_text.find("store <64 x i8>"), std::string::npos) << ir_text;
  EXPECT_NE(ir_text.find("store <32 x i8>"), std::string::npos) << ir_text;
  EXPECT_EQ(ir_text.find("scatter"), std::string::npos) << ir_text;
  auto unmerged = GenerateLLVM({reading, shuffled}, target::Target::Host(), &context);
  std::string unmerged_text;
  llvm::raw_string_ostream(unmerged_text) << *unmerged;
  EXPECT_EQ(unmerged_text.find("store <64 x i8>"), std::string::npos) << unmerged_text;

  HostKernels kernels = HostKernels::Build({packed, reading, shuffled});
  testing::HostArray xs(DType::UInt(8), channels * pixels), ys(DType::UInt(8), channels * pixels);
  uint8_t* xv = xs.as<uint8_t>();
  uint8_t* yv = ys.as<uint8_t>();
  for (int64_t i = 0; i < channels * pixels; ++i) xv[i] = static_cast<uint8_t>(i * 7 + 3);
  testing::TestContext ctx(1, 0);
  for (const char* name : {"pack_channels", "pack_reading_output", "pack_shuffled"}) {
    std::memset(yv, 1, channels * pixels);
    void* args[2] = {xv, yv};
    ASSERT_EQ(kernels.Get(name)(args, &ctx.ctx), 0) << name;
    std::string n = name;
    for (int64_t q = 0; q < pixels; ++q) {
      for (int64_t c = 0; c < channels; ++c) {
        int64_t at = n == "pack_shuffled" ? (c + 1) % channels : c;
        // Channel 2's value adds the byte channel 0's store wrote just before it; had the stores been
        // merged (values computed first), it would add the 1 the buffer was filled with.
        uint8_t want = xv[c * pixels + q];
        if (n == "pack_reading_output" && c == 2) want = static_cast<uint8_t>(want + xv[q]);
        EXPECT_EQ(yv[q * channels + at], want) << name << " pixel " << q << " channel " << c;
      }
    }
  }
}

// Strided loads of bytes (the int8 depthwise conv's stride-2 packing) have no x86 gather:
// with AVX-512BW they are one masked load of the span and a shuffle, never lane-by-lane
// inserts; the last load ends exactly at the buffer's last element (the masked-off tail
// is never read). Values checked for strides 2 and 3, uint8 and int16.
TEST(CodeGenLLVMTest, StridedByteLoadsAreAMaskedLoadAndAShuffle) {
  using namespace ir;  // NOLINT
  const int64_t n = 100;
  Buffer x = CreateBuffer("X", DType::UInt(8), {Expr(n)});
  Buffer h = CreateBuffer("H", DType::Int(16), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::UInt(8), {Expr(int64_t{56})});
  Buffer z = CreateBuffer("Z", DType::Int(16), {Expr(int64_t{16})});
  Var j("j");
  auto one = Expr(int64_t{1});
  Stmt body = Seq::make({
      For::make(j, 0, 3, ForKind::kSerial,
                Store::make(y, Load::make(x, Ramp::make(j * 32, Expr(int64_t{2}), 16)), Ramp::make(j * 16, one, 16))),
      Store::make(y, Load::make(x, Ramp::make(Expr(n - 1 - 3 * 7), Expr(int64_t{3}), 8)), Ramp::make(Expr(int64_t{48}), one, 8)),
      Store::make(z, Load::make(h, Ramp::make(Expr(n - 31), Expr(int64_t{2}), 16)), Ramp::make(Expr(int64_t{0}), one, 16)),
  });
  LoweredFunc f{"strided_loads", {x, h, y, z}, body, 0};
  target::Target host = target::Target::Host();
  if (host.HasFeature("avx512bw")) {
    LLVMBuildOptions options;
    options.keep_assembly = true;
    std::string assembly = BuildLLVMObject({f}, host, options).assembly;
    EXPECT_EQ(assembly.find("vpinsrb"), std::string::npos) << assembly;
    EXPECT_EQ(assembly.find("vpinsrw"), std::string::npos) << assembly;
  }
  HostKernels kernels = HostKernels::Build({f});
  testing::HostArray xs(DType::UInt(8), n), hs(DType::Int(16), n), ys(DType::UInt(8), 56), zs(DType::Int(16), 16);
  for (int64_t i = 0; i < n; ++i) xs.as<uint8_t>()[i] = static_cast<uint8_t>(i * 5 + 1), hs.as<int16_t>()[i] = static_cast<int16_t>(i * 301 - 9000);
  void* args[4] = {xs.as<uint8_t>(), hs.as<int16_t>(), ys.as<uint8_t>(), zs.as<int16_t>()};
  testing::TestContext ctx(1, 0);
  ASSERT_EQ(kernels.Get("strided_loads")(args, &ctx.ctx), 0);
  for (int64_t i = 0; i < 48; ++i) EXPECT_EQ(ys.as<uint8_t>()[i], xs.as<uint8_t>()[(i / 16) * 32 + (i % 16) * 2]) << i;
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(ys.as<uint8_t>()[48 + i], xs.as<uint8_t>()[n - 22 + 3 * i]) << i;
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(zs.as<int16_t>()[i], hs.as<int16_t>()[n - 31 + 2 * i]) << i;
}

// The same loads on AVX2 (no masked byte loads, slow gathers): the span from the first lane's
// element to the last lane's is read as whole 256-bit vectors, the last ending exactly at the
// last lane, and the lanes picked by shuffles; never byte inserts or gathers. Each load here
// ends at its buffer's last element, so a read past the span would leave the buffer. Values
// checked for uint8 at strides 2 and 4 (two and four vectors), float32 at stride 3 (three
// overlapping vectors), int16 at stride 2, and 8 bytes at stride 2 (a span under one vector:
// two 8-byte loads).
TEST(CodeGenLLVMTest, StridedLoadsOnAvx2ReadTheirSpanAsWholeVectors) {
  using namespace ir;  // NOLINT
  const int64_t n = 200;
  Buffer x = CreateBuffer("X", DType::UInt(8), {Expr(n)});
  Buffer f = CreateBuffer("F", DType::Float(32), {Expr(n)});
  Buffer h = CreateBuffer("H", DType::Int(16), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::UInt(8), {Expr(int64_t{72})});
  Buffer g = CreateBuffer("G", DType::Float(32), {Expr(int64_t{8})});
  Buffer z = CreateBuffer("Z", DType::Int(16), {Expr(int64_t{16})});
  auto one = Expr(int64_t{1});
  auto at = [](int64_t v) { return Expr(v); };
  Stmt body = Seq::make({
      Store::make(y, Load::make(x, Ramp::make(at(n - 63), at(2), 32)), Ramp::make(at(0), one, 32)),
      Store::make(y, Load::make(x, Ramp::make(at(n - 125), at(4), 32)), Ramp::make(at(32), one, 32)),
      Store::make(y, Load::make(x, Ramp::make(at(n - 15), at(2), 8)), Ramp::make(at(64), one, 8)),
      Store::make(g, Load::make(f, Ramp::make(at(n - 22), at(3), 8)), Ramp::make(at(0), one, 8)),
      Store::make(z, Load::make(h, Ramp::make(at(n - 31), at(2), 16)), Ramp::make(at(0), one, 16)),
  });
  LoweredFunc fn{"strided_span_loads", {x, f, h, y, g, z}, body, 0};
  target::Target avx2 = target::Target::Parse("llvm -mcpu=haswell");
  llvm::LLVMContext context;
  auto module = GenerateLLVM({fn}, avx2, &context);
  std::string ir_text;
  llvm::raw_string_ostream(ir_text) << *module;
  EXPECT_NE(ir_text.find("load <32 x i8>"), std::string::npos) << ir_text;
  EXPECT_NE(ir_text.find("load <8 x float>"), std::string::npos) << ir_text;
  EXPECT_NE(ir_text.find("load <8 x i8>"), std::string::npos) << ir_text;
  EXPECT_EQ(ir_text.find("gather"), std::string::npos) << ir_text;
  EXPECT_EQ(ir_text.find("masked.load"), std::string::npos) << ir_text;
  EXPECT_EQ(ir_text.find("gather.v32"), std::string::npos) << ir_text;
  EXPECT_EQ(ir_text.find("gather.v8f32"), std::string::npos) << ir_text;
  if (!target::Target::Host().HasFeature("avx2")) GTEST_SKIP() << "the host cannot run AVX2 code";
  HostKernels kernels = HostKernels::Build({fn}, avx2);
  testing::HostArray xs(DType::UInt(8), n), fs(DType::Float(32), n), hs(DType::Int(16), n);
  testing::HostArray ys(DType::UInt(8), 72), gs(DType::Float(32), 8), zs(DType::Int(16), 16);
  for (int64_t i = 0; i < n; ++i) {
    xs.as<uint8_t>()[i] = static_cast<uint8_t>(i * 5 + 1);
    fs.as<float>()[i] = static_cast<float>(i) * 0.5f - 3.0f;
    hs.as<int16_t>()[i] = static_cast<int16_t>(i * 301 - 30000);
  }
  void* args[6] = {xs.as<uint8_t>(), fs.as<float>(), hs.as<int16_t>(), ys.as<uint8_t>(), gs.as<float>(), zs.as<int16_t>()};
  testing::TestContext ctx(1, 0);
  ASSERT_EQ(kernels.Get("strided_span_loads")(args, &ctx.ctx), 0);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(ys.as<uint8_t>()[i], xs.as<uint8_t>()[n - 63 + 2 * i]) << i;
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(ys.as<uint8_t>()[32 + i], xs.as<uint8_t>()[n - 125 + 4 * i]) << i;
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(ys.as<uint8_t>()[64 + i], xs.as<uint8_t>()[n - 15 + 2 * i]) << i;
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(gs.as<float>()[i], fs.as<float>()[n - 22 + 3 * i]) << i;
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(zs.as<int16_t>()[i], hs.as<int16_t>()[n - 31 + 2 * i]) << i;
}

// A byte store predicated on `ramp < L` (a buffer's last partial vector) where x86 has no
// masked byte store (AVX2): one scalar test of the last lane picks a whole vector store, its
// value's loads unpredicated too, or the masked store; with AVX-512BW the masked store stays
// alone. Values checked for vectors wholly in range, partly in range and wholly past it.
TEST(CodeGenLLVMTest, ByteStoresMaskedByARangeAreWholeWhenTheRangeHolds) {
  using namespace ir;  // NOLINT
  const int64_t n = 100, limit = 70;
  Buffer x = CreateBuffer("X", DType::UInt(8), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::UInt(8), {Expr(n)});
  Var t("t");
  Expr index = Ramp::make(t * 16, Expr(int64_t{1}), 16);
  Expr in_range = LT::make(index, Broadcast::make(Expr(limit), 16));
  Expr value = Load::make(x, index, in_range) + Broadcast::make(make_const(DType::UInt(8), 3), 16);
  Stmt body = For::make(t, 0, 6, ForKind::kSerial, Store::make(y, value, index, in_range));
  LoweredFunc fn{"range_masked_store", {x, y}, body, 0};
  auto ir_of = [&](const std::string& target) {
    llvm::LLVMContext context;
    auto module = GenerateLLVM({fn}, target::Target::Parse(target), &context);
    std::string text;
    llvm::raw_string_ostream(text) << *module;
    return text;
  };
  EXPECT_NE(ir_of("llvm -mcpu=haswell").find("whole_store"), std::string::npos);
  EXPECT_EQ(ir_of("llvm -mcpu=skylake-avx512").find("whole_store"), std::string::npos);
  if (!target::Target::Host().HasFeature("avx2")) GTEST_SKIP() << "the host cannot run AVX2 code";
  HostKernels kernels = HostKernels::Build({fn}, target::Target::Parse("llvm -mcpu=haswell"));
  testing::HostArray xs(DType::UInt(8), n), ys(DType::UInt(8), n);
  for (int64_t i = 0; i < n; ++i) xs.as<uint8_t>()[i] = static_cast<uint8_t>(i * 7), ys.as<uint8_t>()[i] = 1;
  void* args[2] = {xs.as<uint8_t>(), ys.as<uint8_t>()};
  testing::TestContext ctx(1, 0);
  ASSERT_EQ(kernels.Get("range_masked_store")(args, &ctx.ctx), 0);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t want = i < limit ? static_cast<uint8_t>(i * 7 + 3) : 1;
    EXPECT_EQ(ys.as<uint8_t>()[i], want) << i;
  }
}

TEST(CodeGenLLVMTest, FastMathFlagsFollowTheTarget) {
  std::vector<ir::LoweredFunc> funcs = {AllKernelCases()[0].func};
  llvm::LLVMContext context;
  auto strict = GenerateLLVM(funcs, target::Target::Parse("llvm"), &context);
  auto fast = GenerateLLVM(funcs, target::Target::Parse("llvm -fast-math"), &context);
  std::string strict_ir, fast_ir;
  llvm::raw_string_ostream(strict_ir) << *strict;
  llvm::raw_string_ostream(fast_ir) << *fast;
  EXPECT_EQ(strict_ir.find("fmul fast"), std::string::npos);
  EXPECT_NE(strict_ir.find("fmul contract"), std::string::npos);
  EXPECT_NE(fast_ir.find("fmul fast"), std::string::npos);
}

// Lowering contract violations and unsupported IR are errors, not crashes.
TEST(CodeGenLLVMTest, BadIRIsReportedWithTheKernelName) {
  using namespace ir;  // NOLINT
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(4)});
  Var i("i"), unbound("n");
  auto expect_error = [](const LoweredFunc& f, StatusCode code, const std::string& fragment) {
    llvm::LLVMContext context;
    try {
      GenerateLLVM({f}, target::Target::Host(), &context);
      ADD_FAILURE() << f.name << " generated";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(e.message().find(fragment), std::string::npos) << e.what();
      EXPECT_NE(e.message().find(f.name), std::string::npos) << e.what();
    }
  };
  expect_error(LoweredFunc{"unbound_var", {x}, Store::make(x, Expr(1.0f), unbound), 0}, StatusCode::kInternal, "'n'");
  expect_error(LoweredFunc{"gpu_loop", {x}, For::make(i, 0, 4, ForKind::kThreadBinding, Store::make(x, Expr(1.0f), i), "threadIdx.x"), 0},
               StatusCode::kUnsupported, "threadIdx.x");
  Buffer huge = CreateBuffer("huge", DType::Float(32), {Expr(int64_t{1} << 24)}, MemoryScope::kLocal);
  expect_error(LoweredFunc{"huge_stack", {x},
                           Allocate::make(huge, {Expr(int64_t{1} << 24)}, 64, MemoryScope::kLocal,
                                          Store::make(x, Load::make(huge, Expr(int64_t{0})), Expr(int64_t{0}))),
                           0},
               StatusCode::kResourceExhausted, "huge");
  ir::LoweredFunc twice{"twice", {x}, Store::make(x, Expr(1.0f), Expr(int64_t{0})), 0};
  llvm::LLVMContext context;
  try {
    GenerateLLVM({twice, twice}, target::Target::Host(), &context);
    ADD_FAILURE() << "duplicate kernel names accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  }
}

// float16 and bfloat16 are storage types: converted to and from float32 (bfloat16
// with round-to-nearest-even on its 16 high bits), vectors included.
TEST(CodeGenLLVMTest, HalfAndBFloat16Conversions) {
  using namespace ir;  // NOLINT
  const int n = 32;
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(n)});
  Buffer h = CreateBuffer("H", DType::Float(16), {Expr(n)});
  Buffer b = CreateBuffer("Bf", DType::BFloat16(), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(n)});
  Var i("i");
  Expr lanes = Ramp::make(i * 16, Expr(int64_t{1}), 16);
  Stmt body = For::make(
      i, 0, n / 16, ForKind::kSerial,
      Seq::make({Store::make(h, cast(DType::Float(16, 16), Load::make(x, lanes)), lanes),
                 Store::make(b, cast(DType::BFloat16(16), Load::make(x, lanes)), lanes),
                 Store::make(y,
                             cast(DType::Float(32, 16), Load::make(h, lanes)) + cast(DType::Float(32, 16), Load::make(b, lanes)),
                             lanes)}));
  HostKernels kernels = HostKernels::Build({LoweredFunc{"half_types", {x, h, b, y}, body, 0}});
  testing::HostArray xs(DType::Float(32), n), hs(DType::Float(16), n), bs(DType::BFloat16(), n), ys(DType::Float(32), n);
  for (int k = 0; k < n; ++k) xs.as<float>()[k] = (k - 16) * 0.3712f + 0.001f * k;
  void* args[4] = {xs.data(), hs.data(), bs.data(), ys.data()};
  testing::TestContext context(1, 0);
  ASSERT_EQ(kernels.Get("half_types")(args, &context.ctx), 0);
  for (int k = 0; k < n; ++k) {
    float v = xs.as<float>()[k];
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    uint16_t want_bf16 = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    EXPECT_EQ(bs.as<uint16_t>()[k], want_bf16) << k;
    EXPECT_NEAR(ys.as<float>()[k], 2 * v, 2 * std::fabs(v) * (1.0 / 256 + 1.0 / 2048) + 1e-6) << k;
  }
}

// Two libraries alive at once, each exporting a kernel of the same name with different code:
// each must run its own (the loader keys loaded libraries by path, so paths must not repeat).
TEST(CodeGenLLVMTest, LibrariesLoadedTogetherKeepTheirOwnCode) {
  using namespace ir;  // NOLINT
  auto fill_kernel = [](float value) {
    Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(4)});
    Var i("i");
    Stmt body = For::make(i, 0, 4, ForKind::kSerial, Store::make(y, Expr(value), i));
    return LoweredFunc{"fill", {y}, body, 0};
  };
  std::vector<HostKernels> libraries;
  for (float value : {1.0f, 2.0f, 3.0f}) libraries.push_back(HostKernels::Build({fill_kernel(value)}));
  testing::TestContext context(1, 0);
  for (int k = 0; k < 3; ++k) {
    float out[4] = {0, 0, 0, 0};
    void* args[1] = {out};
    ASSERT_EQ(libraries[k].Get("fill")(args, &context.ctx), 0);
    EXPECT_EQ(out[3], static_cast<float>(k + 1)) << "library " << k << " ran another library's code";
  }
}

// The kernel case named `name` among `cases` (nullptr when there is none).
const KernelCase* FindCase(const std::vector<KernelCase>& cases, const std::string& name) {
  for (const KernelCase& c : cases) {
    if (c.func.name == name) return &c;
  }
  return nullptr;
}

// The assembly LLVM writes for `func` on `target`.
std::string AssemblyOf(const ir::LoweredFunc& func, const std::string& target) {
  LLVMBuildOptions options;
  options.keep_assembly = true;
  return BuildLLVMObject({func}, target::Target::Parse(target), options).assembly;
}

// dot4_u8s8 is one vpdpbusd per vector where the target has AVX512-VNNI (or AVX-VNNI for
// 256/128 bits), and an exact widening sequence where it has not; both give the results
// of the reference (checked on the host with and without the feature when it has it).
TEST(CodeGenLLVMTest, Dot4IsVpdpbusdWithVnniAndExactWithout) {
  std::vector<KernelCase> cases = AllKernelCases();
  const KernelCase* dot = FindCase(cases, "dot4_u8s8");
  ASSERT_NE(dot, nullptr);
  auto assembly = [&](const std::string& target) { return AssemblyOf(dot->func, target); };
  std::string vnni = assembly("llvm -mcpu=skylake-avx512 -mattr=+avx512vnni");
  EXPECT_NE(vnni.find("vpdpbusd\t%zmm"), std::string::npos) << vnni;
  EXPECT_NE(vnni.find("vpdpbusd\t%ymm"), std::string::npos) << "256-bit form with avx512vl";
  std::string alderlake = assembly("llvm -mcpu=alderlake");
  EXPECT_NE(alderlake.find("vpdpbusd\t%ymm"), std::string::npos) << "AVX-VNNI";
  std::string plain = assembly("llvm -mcpu=skylake-avx512");
  EXPECT_EQ(plain.find("vpdpbusd"), std::string::npos);
  EXPECT_NE(plain.find("vpmaddwd"), std::string::npos) << "exact 16-bit products, 32-bit pair sums" << plain;
  EXPECT_EQ(plain.find("pmaddubsw"), std::string::npos) << "saturating 16-bit sums";

  target::Target host = target::Target::Host();
  if (!host.HasFeature("avx512vnni")) GTEST_SKIP() << "the host lacks AVX512-VNNI";
  for (const char* target : {"llvm", "llvm -mattr=-avx512vnni,-avxvnni"}) {
    HostKernels kernels = HostKernels::Build({dot->func}, target::Target::Parse(target));
    EXPECT_EQ(testing::RunAndCheck(*dot, kernels.Get("dot4_u8s8"), 1), "") << target;
  }
}

// dot2_i16 is pmaddwd plus an add on SSE2 (128 bits), AVX2 (256) and AVX512BW (512), and
// the exact widening sequence elsewhere (AArch64 here); every build the host can run gives
// the reference's results.
TEST(CodeGenLLVMTest, Dot2IsPmaddwdWhereTheTargetHasIt) {
  std::vector<KernelCase> cases = AllKernelCases();
  const KernelCase* dot = FindCase(cases, "dot2_i16");
  ASSERT_NE(dot, nullptr);
  auto assembly = [&](const std::string& target) { return AssemblyOf(dot->func, target); };
  // Whether some vpmaddwd instruction writes a register of this kind (its last operand).
  auto pmaddwd_to = [](const std::string& text, const std::string& reg) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      size_t at = line.find("vpmaddwd\t");
      if (at != std::string::npos && line.rfind(reg) != std::string::npos && line.rfind(reg) > line.rfind(',')) {
        return true;
      }
    }
    return false;
  };
  std::string avx2 = assembly("llvm -mcpu=haswell");
  EXPECT_TRUE(pmaddwd_to(avx2, "%ymm")) << avx2;
  EXPECT_TRUE(pmaddwd_to(avx2, "%xmm")) << "128-bit form";
  std::string avx512 = assembly("llvm -mcpu=skylake-avx512");
  EXPECT_TRUE(pmaddwd_to(avx512, "%zmm")) << avx512;
  EXPECT_FALSE(assembly("llvm -mtriple=aarch64-linux-gnu").empty());

  target::Target host = target::Target::Host();
  if (host.arch() != target::Arch::kX86_64) GTEST_SKIP() << "x86-64 builds only run on an x86-64 host";
  std::vector<std::string> targets = {"llvm -mattr=-avx,-avx2", "llvm"};
  if (!host.HasFeature("avx2")) targets.pop_back();
  for (const std::string& target : targets) {
    HostKernels kernels = HostKernels::Build({dot->func}, target::Target::Parse(target));
    EXPECT_EQ(testing::RunAndCheck(*dot, kernels.Get("dot2_i16"), 1), "") << target;
  }
}

TEST(CodeGenLLVMTest, HostKernelsRefuseFeaturesTheHostLacks) {
  target::Target host = target::Target::Host();
  if (host.arch() != target::Arch::kX86_64 || host.HasFeature("avx512fp16")) {
    GTEST_SKIP() << "needs an x86-64 host without AVX512-FP16";
  }
  try {
    HostKernels::Build({AllKernelCases()[0].func}, target::Target::Parse("llvm -mcpu=sapphirerapids"));
    ADD_FAILURE() << "built code this CPU cannot run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("does not have"), std::string::npos) << e.what();
  }
}

TEST(CodeGenLLVMTest, SharedObjectsForLinuxTargetsOnly) {
  // ld.lld links AArch64 shared objects on any host.
  std::string so = BuildLLVMSharedObject(AllKernelFuncs(), target::Target::Parse("llvm -mtriple=aarch64-linux-gnu"));
  ASSERT_GT(so.size(), 64u);
  EXPECT_EQ(so.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(so[16], 3) << "ET_DYN";
  uint16_t machine = 0;
  std::memcpy(&machine, so.data() + 18, 2);
  EXPECT_EQ(machine, 183) << "EM_AARCH64";
  try {
    BuildLLVMSharedObject(AllKernelFuncs(), target::Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4"));
    ADD_FAILURE() << "a bare-metal shared object was built";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("firmware"), std::string::npos) << e.what();
  }
}

// Every kernel case built for AArch64 runs under qemu: on plain NEON (the dot products as
// widening sequences), and with dotprod and i8mm on qemu's "max" CPU (dot4_s8s8 as sdot,
// dot4_u8s8 as usdot).
TEST(CodeGenLLVMTest, AArch64KernelsRunUnderQemu) {
  if (!testing::HaveTool("aarch64-linux-gnu-gcc") || !testing::HaveTool("qemu-aarch64-static")) {
    GTEST_SKIP() << "needs aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu) and qemu-aarch64-static (qemu-user-static)";
  }
  for (auto [mattr, cpu] : {std::pair<std::string, std::string>{"+neon", ""}, {"+neon,+dotprod,+i8mm", " -cpu max"}}) {
    std::string dir = testing::MakeTempDir();
    target::Target a64 = target::Target::Parse("llvm -mtriple=aarch64-linux-gnu -mattr=" + mattr);
    testing::WriteTextFile(dir + "/kernels.o", BuildLLVMObject(AllKernelFuncs(), a64).object);
    testing::WriteTextFile(dir + "/driver.c", testing::DriverSource(AllKernelFuncs()));
    std::string log;
    int status = testing::RunCommand("aarch64-linux-gnu-gcc -std=c99 -O1 -static -I" + testing::KernelAbiIncludeDir() +
                                         " " + dir + "/driver.c " + dir + "/kernels.o -o " + dir + "/driver -lm",
                                     &log);
    ASSERT_EQ(status, 0) << log;
    for (const KernelCase& c : AllKernelCases()) {
      std::vector<testing::HostArray> args = c.make_args();
      testing::WriteArgsFile(dir + "/in.bin", args, static_cast<uint64_t>(c.func.workspace_bytes));
      std::string run_log;
      ASSERT_EQ(testing::RunCommand("qemu-aarch64-static" + cpu + " " + dir + "/driver " + c.func.name + " " + dir +
                                        "/in.bin " + dir + "/out.bin",
                                    &run_log),
                0)
          << run_log;
      int32_t kernel_status = testing::ReadResultsFile(dir + "/out.bin", &args);
      EXPECT_EQ(testing::CheckOutputs(c, kernel_status, args), "") << "aarch64 " << mattr << " " << c.func.name;
    }
  }
}

// On AArch64 the 8-bit dot products are sdot (dot4_s8s8, with dotprod) and usdot
// (dot4_u8s8, with i8mm) on 128-bit vectors; without those extensions, widening sequences.
TEST(CodeGenLLVMTest, Dot4IsSdotOrUsdotOnAArch64) {
  std::vector<KernelCase> cases = AllKernelCases();
  const KernelCase* s8 = FindCase(cases, "dot4_s8s8");
  const KernelCase* u8 = FindCase(cases, "dot4_u8s8");
  ASSERT_NE(s8, nullptr);
  ASSERT_NE(u8, nullptr);
  std::string with = AssemblyOf(s8->func, "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod");
  EXPECT_NE(with.find("sdot\tv"), std::string::npos) << with;
  EXPECT_EQ(AssemblyOf(s8->func, "llvm -mtriple=aarch64-linux-gnu -mattr=+neon").find("sdot"), std::string::npos);
  std::string i8mm = AssemblyOf(u8->func, "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+i8mm");
  EXPECT_NE(i8mm.find("usdot\tv"), std::string::npos) << i8mm;
  EXPECT_EQ(AssemblyOf(u8->func, "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod").find("usdot"),
            std::string::npos);
}

// float32 round: inline on a Cortex-M4 (FPv4 has no VRINT; a call to nearbyintf per element
// otherwise), VRINT on a Cortex-M7 (FPv5), the library call on a Cortex-M0 (no FPU: the inline
// form's additions would be library calls too).
TEST(CodeGenLLVMTest, RoundIsInlineWhereTheFpuHasNoRoundingInstruction) {
  std::vector<KernelCase> cases = AllKernelCases();
  const KernelCase* round = FindCase(cases, "round_half_even");
  ASSERT_NE(round, nullptr);
  std::string m4 = AssemblyOf(round->func, "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4");
  EXPECT_EQ(m4.find("nearbyint"), std::string::npos) << m4;
  EXPECT_NE(m4.find("vadd.f32"), std::string::npos) << m4;
  std::string m7 = AssemblyOf(round->func, "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m7");
  EXPECT_NE(m7.find("vrintr.f32"), std::string::npos) << m7;
  EXPECT_NE(AssemblyOf(round->func, "llvm -mtriple=thumbv6m-none-eabi -mcpu=cortex-m0").find("nearbyintf"),
            std::string::npos);
}

TEST(CodeGenLLVMTest, CortexMObjectsLinkIntoFirmware) {
  if (!testing::HaveTool("arm-none-eabi-gcc")) GTEST_SKIP() << "needs arm-none-eabi-gcc (gcc-arm-none-eabi)";
  struct Case {
    const char* target;
    const char* gcc_flags;
  };
  // Without -mfloat-abi the CPU's own ABI: hard-float newlib firmware for a CPU with an FPU,
  // soft for one without; -mfloat-abi=soft for firmware built soft-float on an FPU CPU.
  for (const Case& c : {Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4",
                             "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"},
                        Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=soft",
                             "-mcpu=cortex-m4 -mthumb -mfloat-abi=soft"},
                        Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m7",
                             "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16"},
                        Case{"llvm -mtriple=thumbv8m.main-none-eabi -mcpu=cortex-m33",
                             "-mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16"},
                        Case{"llvm -mtriple=thumbv6m-none-eabi -mcpu=cortex-m0", "-mcpu=cortex-m0 -mthumb -mfloat-abi=soft"}}) {
    std::string dir = testing::MakeTempDir();
    target::Target target = target::Target::Parse(c.target);
    LLVMBuildOptions options;
    options.keep_assembly = true;
    LLVMArtifacts artifacts = BuildLLVMObject(AllKernelFuncs(), target, options);
    EXPECT_EQ(artifacts.assembly.find("bl\texpf"), std::string::npos) << c.target;
    testing::WriteTextFile(dir + "/kernels.o", artifacts.object);
    testing::WriteTextFile(dir + "/driver.c", testing::DriverSource(AllKernelFuncs()));
    std::string log;
    int status = testing::RunCommand(std::string("arm-none-eabi-gcc -std=c99 -O1 ") + c.gcc_flags + " -specs=nosys.specs -I" +
                                         testing::KernelAbiIncludeDir() + " " + dir + "/driver.c " + dir +
                                         "/kernels.o -o " + dir + "/firmware.elf -lm",
                                     &log);
    EXPECT_EQ(status, 0) << c.target << ":\n" << log;
    EXPECT_EQ(log.find("uses VFP register arguments"), std::string::npos) << log;
  }
}

TEST(CodeGenLLVMTest, CortexM4KernelsRunOnQemuMps2) {
  if (!testing::HaveCortexM4Emulation()) {
    GTEST_SKIP() << "needs arm-none-eabi-gcc (gcc-arm-none-eabi) and qemu-system-arm (qemu-system-arm)";
  }
  std::string dir = testing::MakeTempDir();
  target::Target m4 = target::Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=hard");
  testing::WriteTextFile(dir + "/kernels.o", BuildLLVMObject(AllKernelFuncs(), m4).object);
  std::string log = testing::LinkCortexM4Firmware(dir, {dir + "/kernels.o"}, AllKernelFuncs());
  ASSERT_EQ(log, "");
  for (const KernelCase& c : AllKernelCases()) {
    std::vector<testing::HostArray> args = c.make_args();
    testing::WriteArgsFile(dir + "/in.bin", args, static_cast<uint64_t>(c.func.workspace_bytes));
    std::string run_log;
    ASSERT_EQ(testing::RunCortexM4Firmware(dir, c.func.name, &run_log), 0) << c.func.name << ": " << run_log;
    int32_t status = testing::ReadResultsFile(dir + "/out.bin", &args);
    EXPECT_EQ(testing::CheckOutputs(c, status, args), "") << "cortex-m4 " << c.func.name;
  }
}

}  // namespace
}  // namespace codegen
}  // namespace agate
