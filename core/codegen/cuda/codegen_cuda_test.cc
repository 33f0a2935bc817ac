// The CUDA backend on schedules lowered for a GPU: the source reads as
// intended (launch bounds, const parameters, dynamic shared memory, barriers,
// shuffles, wide accesses only where aligned), NVRTC compiles it for every
// architecture it supports among agate's, and the registers read from the cubin
// equal what ptxas reports. Tests that need NVRTC skip, saying so, without it.
#include <gtest/gtest.h>

#include <regex>

#include "core/codegen/cuda/build_cuda.h"
#include "core/codegen/cuda/codegen_cuda.h"
#include "core/codegen/cuda/cubin_info.h"
#include "core/codegen/cuda/nvrtc.h"
#include "core/lower/lower.h"
#include "core/lower/testing/shared_gemm.h"
#include "core/support/error.h"
#include "core/target/target.h"

namespace agate {
namespace codegen {
namespace {

using namespace te;  // NOLINT

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

ir::LoweredFunc LowerGpu(const Schedule& s, const std::vector<Tensor>& args, const std::string& name) {
  lower::LowerOptions opt;
  opt.gpu = true;
  return lower::Lower(s, args, name, opt);
}

ir::LoweredFunc Elementwise(DType dtype, bool vectorize, const std::string& name = "add") {
  int64_t n = 4096;
  Tensor a = placeholder({Expr(n)}, dtype, "A");
  Tensor b = placeholder({Expr(n)}, dtype, "B");
  Tensor c = compute({Expr(n)}, [&](Var i) { return ir::exp(a(i)) * b(i) + ir::make_const(dtype, 0.5); }, "C");
  Schedule s = create_schedule({c});
  IterVar outer = s[c].axis(0);
  if (vectorize) {
    auto [o, v] = s[c].split(outer, 4);
    s[c].vectorize(v);
    outer = o;
  }
  auto [bo, t] = s[c].split(outer, 128);
  s[c].bind(bo, "blockIdx.x").bind(t, "threadIdx.x");
  return LowerGpu(s, {a, b, c}, name);
}

ir::LoweredFunc RowSum(int64_t threads) {
  Tensor a = placeholder({Expr(64), Expr(1000)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, Expr(1000)}, "k");
  Tensor c = compute({Expr(64)}, [&](Var i) { return sum(a(i, k), {k}); }, "S");
  Schedule s = create_schedule({c});
  auto [ko, ki] = s[c].split(k, threads);
  s[c].bind(s[c].axis(0), "blockIdx.x").bind(ki, "threadIdx.x");
  return LowerGpu(s, {a, c}, "row_sum");
}

// The shared-memory GEMM the GPU lowering tests use (core/lower/testing/shared_gemm.h).
ir::LoweredFunc SharedGemm() {
  lower::testing::SharedGemm g(96, 64, 40);
  return LowerGpu(g.MakeSchedule(), {g.a, g.b, g.c}, "gemm");
}

target::Target Cuda(int sm = 80) { return target::Target::Parse("cuda -arch=sm_" + std::to_string(sm)); }

TEST(CodegenCudaTest, ElementwiseSourceReadsAsOneGlobalFunctionPerLaunch) {
  CudaSource src = GenerateCuda({Elementwise(DType::Float(32), false)}, Cuda());
  ASSERT_EQ(src.kernels.size(), 1u);
  EXPECT_EQ(src.kernels[0].name, "add");
  EXPECT_EQ(src.kernels[0].launch.grid[0], 32);
  EXPECT_EQ(src.kernels[0].launch.block[0], 128);
  EXPECT_TRUE(Has(src.code, "extern \"C\" __global__ void __launch_bounds__(128) add(const float* __restrict__ A, "
                            "const float* __restrict__ B, float* __restrict__ C)"))
      << src.code;
  EXPECT_TRUE(Has(src.code, "= blockIdx.x;") && Has(src.code, "= threadIdx.x;")) << src.code;
  EXPECT_FALSE(Has(src.code, "#include")) << src.code;
  EXPECT_FALSE(Has(src.code, "agate_workspace")) << src.code;
}

TEST(CodegenCudaTest, SharedMemoryBarriersAndShuffles) {
  CudaSource gemm = GenerateCuda({SharedGemm()}, Cuda());
  EXPECT_TRUE(Has(gemm.code, "extern __shared__ __align__(16) unsigned char agate_shared[];")) << gemm.code;
  EXPECT_TRUE(Has(gemm.code, "reinterpret_cast<float*>(agate_shared + 1024)")) << gemm.code;
  EXPECT_TRUE(Has(gemm.code, "__syncthreads();")) << gemm.code;
  EXPECT_EQ(gemm.kernels[0].launch.shared_bytes, 2048);
  CudaSource sum = GenerateCuda({RowSum(128)}, Cuda());
  EXPECT_TRUE(Has(sum.code, "__shfl_xor_sync(agate_warp_mask(), ")) << sum.code;
}

TEST(CodegenCudaTest, WideAccessesOnlyWhereTheBufferIsAligned) {
  ir::LoweredFunc f = Elementwise(DType::Float(32), true);
  EXPECT_TRUE(Has(GenerateCuda({f}, Cuda()).code, "*reinterpret_cast<const uint4*>(A + ")) << GenerateCuda({f}, Cuda()).code;
  // Model inputs and outputs are only element-aligned: no wide access may touch them.
  for (ir::Buffer& p : f.params) {
    auto relaxed = std::make_shared<ir::BufferNode>(*p.get());
    relaxed->alignment = 4;
    p = ir::Buffer(relaxed);
  }
  std::string code = GenerateCuda({f}, Cuda()).code;
  EXPECT_FALSE(Has(code, "uint4")) << code;
}

// e = e * e + e, `depth` times over one load: a DAG of 2 * depth nodes whose tree has 3^depth
// loads; `guarded` also adds a read that only a Select arm may make (out of bounds past n - 1).
ir::LoweredFunc NestedSharing(int depth, bool guarded) {
  int64_t n = 1024;
  Tensor a = placeholder({Expr(n)}, DType::Float(32), "A");
  Tensor c = compute({Expr(n)}, [&](Var i) {
    Expr e = a(i);
    for (int d = 0; d < depth; ++d) e = e * e + e;
    if (guarded) {
      Expr next = ir::select(i < Expr(n - 1), a(i + 1), ir::make_const(DType::Float(32), 0.0));
      e = e + next * next;
    }
    return e;
  }, "C");
  Schedule s = create_schedule({c});
  auto [bo, t] = s[c].split(s[c].axis(0), 128);
  s[c].bind(bo, "blockIdx.x").bind(t, "threadIdx.x");
  return LowerGpu(s, {a, c}, "nested");
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(CodegenCudaTest, SharedSubexpressionsArePrintedOnce) {
  // Written out as a tree this kernel would repeat the load 3^10 = 59049 times (megabytes of CUDA C).
  std::string code = GenerateCuda({NestedSharing(10, false)}, Cuda()).code;
  EXPECT_LT(code.size(), 8000u) << code.substr(0, 4000);
  EXPECT_EQ(Count(code, "A["), 1u) << code;
  EXPECT_GE(Count(code, "const float cse"), 10u) << code;
}

TEST(CodegenCudaTest, GuardedReadsStayUnderTheirGuard) {
  // A[i + 1] is read twice, but only where i < 1023: it must not be hoisted out of the Select.
  std::string code = GenerateCuda({NestedSharing(2, true)}, Cuda()).code;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(code, m, std::regex(R"(\? A\[)"))) << code;
  EXPECT_FALSE(std::regex_search(code, std::regex(R"(const float cse\w* = A\[[^;]*\+ 1\)?\];)"))) << code;
}

TEST(CodegenCudaTest, RefusesFunctionsNotLoweredForAGpu) {
  Tensor a = placeholder({Expr(8)}, DType::Float(32), "A");
  Tensor c = compute({Expr(8)}, [&](Var i) { return a(i) + 1.0f; }, "C");
  Schedule s = create_schedule({c});
  ir::LoweredFunc cpu = lower::Lower(s, {a, c}, "cpu");
  try {
    GenerateCuda({cpu}, Cuda());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule);
    EXPECT_TRUE(Has(e.message(), "not lowered for a GPU")) << e.message();
  }
  EXPECT_THROW(GenerateCuda({Elementwise(DType::Float(32), false)}, target::Target::Parse("llvm")), Error);
}

TEST(CubinInfoTest, MalformedCubinIsCorrupt) {
  for (std::vector<uint8_t> bytes : {std::vector<uint8_t>{}, std::vector<uint8_t>(64, 0x7f),
                                     std::vector<uint8_t>{0x7f, 'E', 'L', 'F', 2, 1, 1, 0}}) {
    try {
      ReadCubinInfo(bytes);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kCorrupt) << e.message();
    }
  }
}

// Tensor names become C++ identifiers: C++'s keywords and alternative operator
// names ("and", "not", "xor" are ONNX test tensor names) are renamed.
TEST(NvrtcTest, TensorsNamedLikeCppKeywordsCompile) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "NVRTC is not installed; the cuda target is unavailable on this machine";
  Tensor a = placeholder({Expr(64)}, DType::Bool(), "and");
  Tensor b = placeholder({Expr(64)}, DType::Bool(), "not");
  Tensor c = compute({Expr(64)}, [&](Var i) { return a(i) && !b(i); }, "xor");
  Schedule s = create_schedule({c});
  auto [bo, t] = s[c].split(s[c].axis(0), 32);
  s[c].bind(bo, "blockIdx.x").bind(t, "threadIdx.x");
  CudaBuild build = BuildCuda({LowerGpu(s, {a, b, c}, "logic")}, Cuda(), "keywords");
  EXPECT_FALSE(Has(build.source, "* __restrict__ and,")) << build.source;
}

// Static shared memory and local memory as ptxas reports them ("256 bytes smem";
// sm_90 cubins fold the driver's 1 KiB reservation into the kernel's section).
TEST(NvrtcTest, CubinFiguresOfAHandWrittenKernel) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "NVRTC is not installed; the cuda target is unavailable on this machine";
  const char* source = R"(
extern "C" __global__ void staged(float* a) {
  __shared__ float tile[64];
  tile[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = tile[63 - threadIdx.x];
}
extern "C" __global__ void plain(float* a) { a[threadIdx.x] += 1.0f; }
)";
  std::vector<int> supported = NvrtcSupportedArchs();
  for (int arch : {80, 90}) {
    if (std::find(supported.begin(), supported.end(), arch) == supported.end()) continue;
    NvrtcResult r = CompileCuda(source, arch, false, "figures");
    std::map<std::string, CubinKernelInfo> info;
    for (const CubinKernelInfo& k : ReadCubinInfo(r.cubin)) info[k.name] = k;
    ASSERT_EQ(info.size(), 2u) << r.log;
    EXPECT_TRUE(Has(r.log, "256 bytes smem")) << r.log;
    int64_t reserved = info["staged"].shared_includes_reserved ? 1024 : 0;
    EXPECT_EQ(info["staged"].static_shared_bytes - reserved, 256) << "sm_" << arch;
    EXPECT_EQ(info["plain"].static_shared_bytes, 0) << "sm_" << arch;
    EXPECT_EQ(info["plain"].local_bytes, 0);
    EXPECT_GT(info["plain"].registers, 0);
  }
}

// Every kernel above, every float type, for every architecture agate knows that
// this NVRTC compiles for; the registers read from the cubin are ptxas's.
TEST(NvrtcTest, EveryKernelCompilesForEveryArchitecture) {
  if (!NvrtcAvailable()) GTEST_SKIP() << "NVRTC is not installed; the cuda target is unavailable on this machine";
  std::vector<int> supported = NvrtcSupportedArchs();
  std::vector<ir::LoweredFunc> funcs = {Elementwise(DType::Float(32), true, "f32"),
                                        Elementwise(DType::Float(16), false, "f16"),
                                        Elementwise(DType::BFloat16(), false, "bf16"),
                                        Elementwise(DType::Float(64), false, "f64"), RowSum(32), SharedGemm()};
  int compiled = 0;
  for (const target::CudaArch& arch : target::CudaArchs()) {
    bool ok = std::find(supported.begin(), supported.end(), arch.sm) != supported.end();
    if (!ok) {
      try {
        BuildCuda(funcs, Cuda(arch.sm), "all");
        FAIL() << arch.name() << " compiled although NVRTC does not list it";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), StatusCode::kUnsupported);
        EXPECT_TRUE(Has(e.message(), "cannot compile for " + arch.name())) << e.message();
      }
      continue;
    }
    CudaBuild build = BuildCuda(funcs, Cuda(arch.sm), "all");
    ++compiled;
    EXPECT_EQ(build.arch, arch.sm);
    EXPECT_TRUE(Has(build.ptx, ".target sm_" + std::to_string(arch.sm))) << build.ptx.substr(0, 400);
    ASSERT_EQ(build.kernels.size(), funcs.size());
    // ptxas -v: "Compiling entry function 'NAME' for 'sm_80'" ... "Used N registers".
    std::regex entry("Compiling entry function '([A-Za-z0-9_]+)'[^]*?Used ([0-9]+) registers");
    std::map<std::string, int> reported;
    for (auto it = std::sregex_iterator(build.log.begin(), build.log.end(), entry); it != std::sregex_iterator(); ++it) {
      reported[(*it)[1]] = std::stoi((*it)[2]);
    }
    for (const CudaKernelBinary& k : build.kernels) {
      EXPECT_GT(k.registers, 0) << k.source.name;
      ASSERT_TRUE(reported.count(k.source.name)) << build.log;
      EXPECT_EQ(k.registers, reported[k.source.name]) << k.source.name << " on " << arch.name();
      EXPECT_EQ(k.static_shared_bytes, 0) << k.source.name << "\n" << build.log;
    }
  }
  EXPECT_GE(compiled, 3) << "NVRTC compiles for fewer than three of agate's architectures";
}

}  // namespace
}  // namespace codegen
}  // namespace agate
