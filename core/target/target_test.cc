#include "core/target/target.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/support/error.h"

namespace agate {
namespace target {
namespace {

// Expects Parse(text) to fail with kInvalidArgument and a message containing every fragment.
void ExpectRejected(const std::string& text, const std::vector<std::string>& fragments) {
  try {
    Target::Parse(text);
    ADD_FAILURE() << "'" << text << "' was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
    for (const auto& fragment : fragments) {
      EXPECT_NE(e.message().find(fragment), std::string::npos) << "'" << fragment << "' missing from: " << e.message();
    }
  }
}

TEST(TargetTest, HostIsResolvedToAConcreteMachine) {
  Target host = Target::Parse("llvm");
  EXPECT_EQ(host.kind(), TargetKind::kLLVM);
  EXPECT_FALSE(host.triple().empty());
  EXPECT_NE(host.cpu(), "native");
  EXPECT_EQ(host, Target::Parse("llvm -mcpu=native"));
  EXPECT_EQ(host, Target::Host());
  EXPECT_FALSE(host.is_bare_metal());
#if defined(__x86_64__)
  EXPECT_EQ(host.arch(), Arch::kX86_64);
  EXPECT_TRUE(host.HasFeature("sse2"));
#endif
  // Whatever this machine has, the vector width follows the widest SIMD unit.
#if defined(__AVX512F__)
  EXPECT_TRUE(host.HasFeature("avx512f"));
  EXPECT_EQ(host.vector_width_bits(), 512);
#endif
  if (host.HasFeature("avx512f")) {
    EXPECT_EQ(host.vector_width_bits(), 512);
    EXPECT_EQ(host.NativeLanes(ir::DType::Float(32)), 16);
  } else if (host.HasFeature("avx2")) {
    EXPECT_EQ(host.vector_width_bits(), 256);
  }
}

TEST(TargetTest, PrintedFormRoundTrips) {
  for (const char* text :
       {"llvm", "llvm -mcpu=native -fast-math -num-threads=2", "llvm -mtriple=aarch64-linux-gnu",
        "llvm -mtriple=aarch64-linux-gnu -mattr=+neon", "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",
        "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4", "llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=hard",
        "llvm -mtriple=thumbv8m.main-none-eabi -mcpu=cortex-m33", "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512",
        "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3 -vector-width=128", "c", "c -mcpu=cortex-m4", "c -fast-math",
        "cuda", "cuda -arch=sm_80 -fast-math", "llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m7",
        "llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -cache-kb=32,512,32768", "c -cache-kb=16,128,0"}) {
    Target target = Target::Parse(text);
    Target again = Target::Parse(target.ToString());
    EXPECT_EQ(target.ToString(), again.ToString()) << text;
    EXPECT_EQ(target.vector_width_bits(), again.vector_width_bits()) << text;
    EXPECT_EQ(target.features(), again.features()) << text;
    EXPECT_EQ(target.l1d_cache_bytes(), again.l1d_cache_bytes()) << text;
    EXPECT_EQ(target.l2_cache_bytes(), again.l2_cache_bytes()) << text;
    EXPECT_EQ(target.l3_cache_bytes(), again.l3_cache_bytes()) << text;
  }
}

// The host's caches are what the CPU reports, spelled out in the printed form so
// that a module's target string means the same machine everywhere; other targets
// get -cache-kb or their architecture's defaults; GEMM blocks are sized from them.
TEST(TargetTest, CacheSizes) {
  Target host = Target::Host();
  EXPECT_GT(host.l1d_cache_bytes(), 0);
  EXPECT_GE(host.l2_cache_bytes(), host.l1d_cache_bytes());
  EXPECT_NE(host.ToString().find(" -cache-kb="), std::string::npos) << host.ToString();
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (l1 > 0) EXPECT_EQ(host.l1d_cache_bytes(), l1 / 1024 * 1024);

  Target given = Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -cache-kb=48,2048,0");
  EXPECT_EQ(given.l1d_cache_bytes(), 48 * 1024);
  EXPECT_EQ(given.l2_cache_bytes(), 2048 * 1024);
  EXPECT_EQ(given.l3_cache_bytes(), 0);
  EXPECT_EQ(given.ToString(), "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell -cache-kb=48,2048,0");

  Target x86 = Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
  EXPECT_EQ(x86.l1d_cache_bytes(), 32 * 1024);
  EXPECT_EQ(x86.l2_cache_bytes(), 1024 * 1024);
  EXPECT_EQ(x86.ToString().find("-cache-kb"), std::string::npos) << "defaults are not printed";
  Target a64 = Target::Parse("llvm -mtriple=aarch64-linux-gnu");
  EXPECT_EQ(a64.l1d_cache_bytes(), 32 * 1024);
  EXPECT_EQ(a64.l2_cache_bytes(), 512 * 1024);
  Target m4 = Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4");
  EXPECT_EQ(m4.l1d_cache_bytes(), 0);
  EXPECT_EQ(m4.l2_cache_bytes(), 0);
}

TEST(TargetTest, VectorRegisters) {
  EXPECT_EQ(Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512").vector_registers(), 32);
  EXPECT_EQ(Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell").vector_registers(), 16);
  EXPECT_EQ(Target::Parse("llvm -mtriple=aarch64-linux-gnu").vector_registers(), 32);
  EXPECT_EQ(Target::Parse("llvm -mtriple=thumbv8.1m.main-none-eabi -mcpu=cortex-m55").vector_registers(), 8);
}

TEST(TargetTest, PointerBits) {
  EXPECT_EQ(Target::Parse("llvm -mtriple=x86_64-linux-gnu").pointer_bits(), 64);
  EXPECT_EQ(Target::Parse("llvm -mtriple=aarch64-linux-gnu").pointer_bits(), 64);
  EXPECT_EQ(Target::Parse("llvm -mtriple=thumbv7em-none-eabihf -mcpu=cortex-m4").pointer_bits(), 32);
  EXPECT_EQ(Target::Parse("c -mcpu=cortex-m4").pointer_bits(), 32);
  EXPECT_EQ(Target::Parse("c").pointer_bits(), 0);  // portable C: any compiler, any width
  EXPECT_EQ(Target::Parse("cuda -arch=sm_80").pointer_bits(), 0);
}

// Bare-metal Arm targets take the float ABI of the named CPU (what arm-none-eabi-gcc
// firmware for it uses), so their objects link with that firmware; -mfloat-abi overrides.
TEST(TargetTest, CortexMFloatABIFollowsTheCPU) {
  struct Case {
    const char* text;
    FloatABI abi;
  };
  for (const Case& c : {Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4", FloatABI::kHard},
                        Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m7", FloatABI::kHard},
                        Case{"llvm -mtriple=thumbv8m.main-none-eabi -mcpu=cortex-m33", FloatABI::kHard},
                        Case{"llvm -mtriple=thumbv8.1m.main-none-eabi -mcpu=cortex-m55", FloatABI::kHard},
                        Case{"llvm -mtriple=thumbv6m-none-eabi -mcpu=cortex-m0", FloatABI::kDefault},
                        Case{"llvm -mtriple=thumbv7m-none-eabi -mcpu=cortex-m3", FloatABI::kDefault},
                        Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=soft", FloatABI::kSoft},
                        Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=softfp", FloatABI::kSoftFP},
                        Case{"llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mattr=-fpregs", FloatABI::kDefault},
                        Case{"llvm -mtriple=armv7a-linux-gnueabi -mcpu=cortex-a7", FloatABI::kDefault}}) {
    Target target = Target::Parse(c.text);
    EXPECT_EQ(target.float_abi(), c.abi) << c.text;
    EXPECT_EQ(Target::Parse(target.ToString()).float_abi(), c.abi) << target.ToString();
  }
  EXPECT_NE(Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4").ToString().find("-mfloat-abi=hard"),
            std::string::npos);
  EXPECT_FALSE(Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=soft").HasFeature("vfp4d16sp"));
}

TEST(TargetTest, CrossTargetsCarryTripleCPUAndWidth) {
  Target a64 = Target::Parse("llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  EXPECT_EQ(a64.arch(), Arch::kAArch64);
  EXPECT_EQ(a64.triple(), "aarch64-unknown-linux-gnu");
  EXPECT_EQ(a64.cpu(), "generic");
  EXPECT_TRUE(a64.HasFeature("neon"));
  EXPECT_EQ(a64.vector_width_bits(), 128);
  EXPECT_EQ(a64.ToString(), "llvm -mtriple=aarch64-unknown-linux-gnu -mcpu=generic -mattr=+neon");

  Target m4 = Target::Parse("llvm -mtriple=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=hard");
  EXPECT_EQ(m4.arch(), Arch::kARM);
  EXPECT_TRUE(m4.is_bare_metal());
  EXPECT_EQ(m4.float_abi(), FloatABI::kHard);
  EXPECT_TRUE(m4.HasFeature("dsp"));
  EXPECT_TRUE(m4.HasFeature("vfp4d16sp"));
  EXPECT_FALSE(m4.HasFeature("neon"));
  EXPECT_EQ(m4.vector_width_bits(), 32);
  EXPECT_EQ(m4.NativeLanes(ir::DType::Int(8)), 4);
  EXPECT_EQ(m4.NativeLanes(ir::DType::Float(32)), 1);

  Target m33 = Target::Parse("llvm -mtriple=thumbv8m.main-none-eabi -mcpu=cortex-m33");
  EXPECT_TRUE(m33.is_bare_metal());
  EXPECT_TRUE(m33.HasFeature("dsp"));
  EXPECT_EQ(m33.float_abi(), FloatABI::kHard);  // the CPU has an FPU: hard-float firmware links with it

  Target m55 = Target::Parse("llvm -mtriple=thumbv8.1m.main-none-eabi -mcpu=cortex-m55");
  EXPECT_TRUE(m55.HasFeature("mve"));
  EXPECT_EQ(m55.vector_width_bits(), 128);

  Target skx = Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512");
  EXPECT_TRUE(skx.HasFeature("avx512f"));
  EXPECT_TRUE(skx.HasFeature("fma"));
  EXPECT_EQ(skx.vector_width_bits(), 512);
  Target hsw = Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
  EXPECT_TRUE(hsw.HasFeature("avx2"));
  EXPECT_FALSE(hsw.HasFeature("avx512f"));
  EXPECT_EQ(hsw.vector_width_bits(), 256);
  Target hsw_no_avx = Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -mattr=-avx");
  EXPECT_FALSE(hsw_no_avx.HasFeature("avx2"));
  EXPECT_EQ(hsw_no_avx.vector_width_bits(), 128);
}

TEST(TargetTest, OptionsAreRead) {
  Target t = Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell -fast-math -num-threads=4 -vector-width=128");
  EXPECT_TRUE(t.fast_math());
  EXPECT_EQ(t.num_threads(), 4);
  EXPECT_EQ(t.vector_width_bits(), 128);
  EXPECT_EQ(t.NativeLanes(ir::DType::Float(32)), 4);
  EXPECT_FALSE(Target::Parse("llvm -mtriple=x86_64-linux-gnu").fast_math());
  EXPECT_EQ(Target::Parse("llvm -mtriple=x86_64-linux-gnu").num_threads(), 0);
}

TEST(TargetTest, CTargets) {
  Target c = Target::Parse("c");
  EXPECT_EQ(c.kind(), TargetKind::kC);
  EXPECT_EQ(c.triple(), "");
  EXPECT_EQ(c.ToString(), "c");
  EXPECT_EQ(c.vector_width_bits(), 128);
  EXPECT_FALSE(c.is_bare_metal());
  Target cm4 = Target::Parse("c -mcpu=cortex-m4");
  EXPECT_EQ(cm4.arch(), Arch::kARM);
  EXPECT_TRUE(cm4.is_bare_metal());
  EXPECT_TRUE(cm4.HasFeature("dsp"));
  EXPECT_EQ(cm4.vector_width_bits(), 32);
  EXPECT_EQ(cm4.ToString(), "c -mcpu=cortex-m4");
}

TEST(TargetTest, CudaTarget) {
  Target t = Target::Parse("cuda -arch=sm_80");
  EXPECT_EQ(t.kind(), TargetKind::kCUDA);
  EXPECT_EQ(t.arch(), Arch::kNVPTX);
  EXPECT_EQ(t.cpu(), "sm_80");
  EXPECT_EQ(t.cuda_arch().sm, 80);
  EXPECT_EQ(t.cuda_arch().max_shared_bytes_per_block, 166912);
  for (const char* arch : {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"}) {
    Target a = Target::Parse(std::string("cuda -arch=") + arch);
    EXPECT_EQ(a.ToString(), std::string("cuda -arch=") + arch);
    EXPECT_EQ(a.cuda_arch().name(), arch);
    EXPECT_EQ(a.cuda_arch().warp_size, 32);
  }
  // Without -arch: the local GPU's architecture (or the newest known one below it), else sm_80.
  int local = LocalCudaArch();
  std::string expected = local == 0 ? "sm_80" : "";
  if (local != 0) {
    for (const CudaArch& a : CudaArchs())
      if (a.sm <= local) expected = a.name();
  }
  EXPECT_EQ(Target::Parse("cuda").cpu(), expected);
  EXPECT_THROW(Target::Parse("llvm").cuda_arch(), Error);
}

TEST(TargetTest, CudaOccupancy) {
  const CudaArch& a100 = *FindCudaArch(80);
  // 256 threads, 32 registers, no shared memory: 8 blocks fill the 64 warps.
  Occupancy full = TheoreticalOccupancy(a100, 256, 32, 0);
  EXPECT_EQ(full.blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(full.fraction, 1.0);
  // 128 registers per thread: 64K / (128 * 32) = 16 warps.
  Occupancy regs = TheoreticalOccupancy(a100, 256, 128, 0);
  EXPECT_EQ(regs.warps_per_sm, 16);
  EXPECT_EQ(regs.limited_by, "registers");
  // 48 KiB of shared memory per block (+1 KiB reserved): 3 blocks of 164 KiB.
  Occupancy shared = TheoreticalOccupancy(a100, 128, 32, 48 * 1024);
  EXPECT_EQ(shared.blocks_per_sm, 3);
  EXPECT_EQ(shared.limited_by, "shared memory");
  EXPECT_EQ(TheoreticalOccupancy(a100, 2048, 32, 0).blocks_per_sm, 0);
  // Turing holds 1024 threads per SM.
  EXPECT_EQ(TheoreticalOccupancy(*FindCudaArch(75), 1024, 16, 0).blocks_per_sm, 1);
}

TEST(TargetTest, BadStringsNameTheProblemAndTheChoices) {
  ExpectRejected("", {"unknown target kind", "llvm, c, cuda"});
  ExpectRejected("opencl", {"'opencl'", "llvm, c, cuda"});
  ExpectRejected("llvm -mcpu=cortex-m99 -mtriple=thumbv7em-none-eabi", {"cortex-m99", "cortex-m4"});
  ExpectRejected("llvm -mtriple=mips-linux-gnu", {"mips-linux-gnu", "aarch64"});
  ExpectRejected("llvm -foo=1", {"'-foo'", "-mtriple", "-vector-width"});
  ExpectRejected("llvm -mattr=avx2", {"'avx2'", "+feature"});
  ExpectRejected("llvm -mtriple=x86_64-linux-gnu -mattr=+avx521", {"avx521", "avx512f"});
  ExpectRejected("llvm -mtriple=x86_64-linux-gnu -mfloat-abi=hard", {"-mfloat-abi", "32-bit Arm"});
  ExpectRejected("llvm -mtriple=thumbv7em-none-eabi -mfloat-abi=fast", {"'fast'", "hard, soft, softfp"});
  ExpectRejected("llvm -num-threads=0", {"-num-threads='0'", "1..1024"});
  ExpectRejected("llvm -num-threads=two", {"'two'"});
  ExpectRejected("llvm -vector-width=100", {"'100'", "power of two"});
  ExpectRejected("llvm -cache-kb=48,1024", {"-cache-kb='48,1024'", "L1D,L2,L3"});
  ExpectRejected("llvm -cache-kb=48,-1,0", {"'48,-1,0'", "KiB"});
  ExpectRejected("llvm -cache-kb=a,b,c", {"'a,b,c'"});
  ExpectRejected("cuda -cache-kb=1,2,3", {"'-cache-kb'"});
  ExpectRejected("llvm -fast-math=1", {"-fast-math", "flag"});
  ExpectRejected("llvm -mcpu", {"-mcpu", "needs a value"});
  ExpectRejected("llvm -mcpu=native -mcpu=native", {"given twice"});
  ExpectRejected("c -mtriple=x86_64-linux-gnu", {"'-mtriple'", "kind 'c'", "-mcpu"});
  ExpectRejected("c -mcpu=pentium9000", {"pentium9000", "cortex-m4"});
  ExpectRejected("cuda -arch=compute_80", {"compute_80", "sm_80"});
  ExpectRejected("cuda -arch=sm_61", {"sm_61", "sm_70, sm_75, sm_80, sm_86, sm_89, sm_90"});
  ExpectRejected("llvm -mtriple=aarch64-linux-gnu -mcpu=native", {"native"});
}

}  // namespace
}  // namespace target
}  // namespace agate
