// The GPU lowering passes (gpu_verify, gpu_bind, gpu_allreduce, gpu_sync,
// gpu_vectorize, the launch checks): the launches they build (checked on the
// printed IR and the launch geometry) compute the same numbers as plain C++
// loops when the evaluator runs them with CUDA semantics, without races, on
// shapes that divide the tiles and shapes that do not.
#include <gtest/gtest.h>

#include "core/loop_eval/evaluator.h"
#include "core/ir/gpu_launch.h"
#include "core/lower/lower.h"
#include "core/lower/testing/lower_and_run.h"
#include "core/lower/testing/shared_gemm.h"
#include "core/support/error.h"

namespace agate {
namespace lower {
namespace {

using namespace te;  // NOLINT
using testing::AllClose;
using testing::RandomData;
using testing::SharedGemm;

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

LowerOptions Gpu() {
  LowerOptions opt;
  opt.gpu = true;
  return opt;
}

ir::LoweredFunc LowerGpu(const Schedule& s, const std::vector<Tensor>& args, const std::string& name = "k") {
  ir::LoweredFunc f = Lower(s, args, name, Gpu());
  if (getenv("AGATE_SHOW_IR")) std::cerr << ir::ToString(f);
  return f;
}

template <typename F>
std::string ErrorOf(F f, StatusCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.message();
  }
  return "no error";
}

TEST(GpuBindTest, ElementwiseBecomesOneLaunchWithGuardedTail) {
  for (int64_t n : {1024, 1000}) {
    Tensor a = placeholder({Expr(n)}, DType::Float(32), "A");
    Tensor b = placeholder({Expr(n)}, DType::Float(32), "B");
    Tensor c = compute({Expr(n)}, [&](Var i) { return a(i) * 2.0f + b(i); }, "C");
    Schedule s = create_schedule({c});
    auto [bo, bi] = s[c].split(s[c].axis(0), 128);
    s[c].bind(bo, "blockIdx.x").bind(bi, "threadIdx.x");
    ir::LoweredFunc f = LowerGpu(s, {a, b, c});
    std::vector<ir::GpuLaunch> launches = ir::CollectGpuLaunches(f.body);
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0].name, "k");
    EXPECT_EQ(launches[0].grid[0], (n + 127) / 128);
    EXPECT_EQ(launches[0].block[0], 128);
    EXPECT_EQ(launches[0].shared_bytes, 0);
    std::vector<float> av = RandomData(n, 1), bv = RandomData(n, 2), cv(n), want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = av[i] * 2 + bv[i];
    EXPECT_EQ(loop_eval::RunFloat(f, {&av, &bv, &cv}), 0);
    EXPECT_TRUE(AllClose(cv, want));
    EXPECT_EQ(Count(ir::ToString(f), "sync_threads"), 0);
  }
}

TEST(GpuVerifyTest, UnboundLoopIsRefusedNamingLoopAndStage) {
  Tensor a = placeholder({Expr(64), Expr(32)}, DType::Float(32), "A");
  Tensor c = compute({Expr(64), Expr(32)}, [&](Var i, Var j) { return a(i, j) + 1.0f; }, "Out");
  Schedule s = create_schedule({c});
  StatusCode code = StatusCode::kOk;
  std::string msg = ErrorOf([&] { LowerGpu(s, {a, c}); }, &code);
  EXPECT_EQ(code, StatusCode::kIllegalSchedule);
  EXPECT_TRUE(Has(msg, "loop 'i'") && Has(msg, "stage 'Out'") && Has(msg, "not bound")) << msg;

  // A serial loop around the bound loops is refused too.
  Schedule s2 = create_schedule({c});
  s2[c].bind(s2[c].axis(1), "threadIdx.x");
  msg = ErrorOf([&] { LowerGpu(s2, {a, c}); }, &code);
  EXPECT_TRUE(Has(msg, "loop 'i'") && Has(msg, "encloses")) << msg;

  // A CPU parallel loop is not a GPU loop.
  Schedule s3 = create_schedule({c});
  s3[c].bind(s3[c].axis(0), "blockIdx.x");
  s3[c].parallel(s3[c].axis(1));
  msg = ErrorOf([&] { LowerGpu(s3, {a, c}); }, &code);
  EXPECT_TRUE(Has(msg, "marked parallel")) << msg;
}

TEST(GpuBindTest, RootNestsBecomeSeparateLaunches) {
  int64_t n = 300;
  Tensor a = placeholder({Expr(n)}, DType::Float(32), "A");
  Tensor t = compute({Expr(n)}, [&](Var i) { return a(i) + 1.0f; }, "T");
  // Reads the whole of T: it must run after every block of T's launch.
  Tensor c = compute({Expr(n)}, [&](Var i) { return t(i) * t(Expr(int64_t{n - 1}) - i); }, "C");
  Schedule s = create_schedule({c});
  for (Tensor x : {t, c}) {
    auto [o, i] = s[x].split(s[x].axis(0), 64);
    s[x].bind(o, "blockIdx.x").bind(i, "threadIdx.x");
  }
  ir::LoweredFunc f = LowerGpu(s, {a, c});
  std::vector<ir::GpuLaunch> launches = ir::CollectGpuLaunches(f.body);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].name, "k");
  EXPECT_EQ(launches[1].name, "k_1");
  EXPECT_GT(f.workspace_bytes, 0);  // T lives in global memory between the launches
  std::vector<float> av = RandomData(n, 3), cv(n), want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = (av[i] + 1) * (av[n - 1 - i] + 1);
  EXPECT_EQ(loop_eval::RunFloat(f, {&av, &cv}), 0);
  EXPECT_TRUE(AllClose(cv, want));
}

// Row sums with the reduction across threadIdx.x: one warp (butterfly only) and
// four warps (butterfly, partials in shared memory, second butterfly).
TEST(GpuAllReduceTest, RowSumAcrossThreads) {
  for (int64_t threads : {32, 128, 8}) {
    for (int64_t cols : {int64_t{256}, int64_t{1000}, int64_t{5}}) {
      int64_t rows = 6;
      Tensor a = placeholder({Expr(rows), Expr(cols)}, DType::Float(32), "A");
      IterVar k = reduce_axis({0, Expr(cols)}, "k");
      Tensor c = compute({Expr(rows)}, [&](Var i) { return sum(a(i, k), {k}); }, "S");
      Schedule s = create_schedule({c});
      auto [ko, ki] = s[c].split(k, threads);
      s[c].bind(s[c].axis(0), "blockIdx.x").bind(ki, "threadIdx.x");
      ir::LoweredFunc f = LowerGpu(s, {a, c});
      std::string text = ir::ToString(f);
      EXPECT_EQ(Count(text, "shuffle_xor"), threads > 32 ? 5 + 2 : (threads == 8 ? 3 : 5)) << text;
      EXPECT_EQ(Count(text, "sync_threads"), threads > 32 ? 1 : 0) << text;
      std::vector<float> av = RandomData(rows * cols, 4), cv(rows), want(rows, 0.0f);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) want[i] += av[i * cols + j];
      EXPECT_EQ(loop_eval::RunFloat(f, {&av, &cv}), 0);
      EXPECT_TRUE(AllClose(cv, want)) << threads << " threads, " << cols << " columns";
    }
  }
}

TEST(GpuAllReduceTest, ArgmaxIsATupleReductionAcrossThreads) {
  int64_t rows = 3, cols = 77;
  Tensor a = placeholder({Expr(rows), Expr(cols)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, Expr(cols)}, "k");
  std::vector<Tensor> am = compute_multi({Expr(rows)}, [&](const std::vector<Var>& i) {
    return argmax(cast(DType::Index(), Expr(k)), a(i[0], k), {k});
  }, "AM");
  Tensor idx = compute({Expr(rows)}, [&](Var i) { return cast(DType::Float(32), am[0](i)); }, "I");
  Schedule s = create_schedule({idx});
  Stage r = s[am[0]];
  auto [ko, ki] = r.split(k, 64);
  r.bind(ki, "threadIdx.x");
  auto [o, i] = s[idx].split(s[idx].axis(0), 1);
  s[idx].bind(o, "blockIdx.x");
  r.compute_at(s[idx], o);
  ir::LoweredFunc f = LowerGpu(s, {a, idx});
  std::vector<float> av = RandomData(rows * cols, 5), out(rows), want(rows);
  av[1 * cols + 70] = 5.0f;
  av[1 * cols + 3] = 5.0f;  // a tie: the smaller index wins
  for (int64_t row = 0; row < rows; ++row) {
    int64_t best = 0;
    for (int64_t j = 1; j < cols; ++j)
      if (av[row * cols + j] > av[row * cols + best]) best = j;
    want[row] = static_cast<float>(best);
  }
  EXPECT_EQ(loop_eval::RunFloat(f, {&av, &out}), 0);
  EXPECT_TRUE(AllClose(out, want)) << ir::ToString(f);
}

TEST(GpuAllReduceTest, ThreadCountMustMatchTheBlock) {
  int64_t cols = 64;
  Tensor a = placeholder({Expr(4), Expr(cols)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, Expr(cols)}, "k");
  Tensor m = compute({Expr(4)}, [&](Var i) { return te::max(a(i, k), {k}); }, "M");
  Tensor c = compute({Expr(4), Expr(cols)}, [&](Var i, Var j) { return a(i, j) - m(i); }, "C");
  Schedule s = create_schedule({c});
  s[c].bind(s[c].axis(0), "blockIdx.x").bind(s[c].axis(1), "threadIdx.x");  // 64 threads
  auto [ko, ki] = s[m].split(k, 32);
  s[m].bind(ki, "threadIdx.x");  // 32 threads
  s[m].compute_at(s[c], s[c].axis(0));
  StatusCode code = StatusCode::kOk;
  std::string msg = ErrorOf([&] { LowerGpu(s, {a, c}); }, &code);
  EXPECT_EQ(code, StatusCode::kIllegalSchedule);
  EXPECT_TRUE(Has(msg, "32 threads") && Has(msg, "64 threads")) << msg;
}

// Softmax-like: the row maximum (across threads) is shared by the block, then
// every thread normalizes its columns: a barrier between the write of the
// statistic and its reads, none elsewhere.
TEST(GpuSyncTest, BlockStatisticIsSharedWithOneBarrier) {
  int64_t rows = 5, cols = 200, threads = 64;
  Tensor a = placeholder({Expr(rows), Expr(cols)}, DType::Float(32), "A");
  IterVar k = reduce_axis({0, Expr(cols)}, "k");
  Tensor m = compute({Expr(rows)}, [&](Var i) { return te::max(a(i, k), {k}); }, "M");
  Tensor c = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) { return ir::exp(a(i, j) - m(i)); }, "C");
  Schedule s = create_schedule({c});
  auto [jo, ji] = s[c].split(s[c].axis(1), threads);
  s[c].bind(s[c].axis(0), "blockIdx.x").bind(ji, "threadIdx.x");
  auto [ko, ki] = s[m].split(k, threads);
  s[m].bind(ki, "threadIdx.x");
  s[m].compute_at(s[c], s[c].axis(0));
  ir::LoweredFunc f = LowerGpu(s, {a, c});
  std::string text = ir::ToString(f);
  EXPECT_TRUE(Has(text, "M[float32 * 1], shared")) << text;
  EXPECT_EQ(Count(text, "sync_threads"), 2) << text;  // partials of the two warps; the statistic
  std::vector<float> av = RandomData(rows * cols, 6), cv(rows * cols), want(rows * cols);
  for (int64_t i = 0; i < rows; ++i) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, av[i * cols + j]);
    for (int64_t j = 0; j < cols; ++j) want[i * cols + j] = std::exp(av[i * cols + j] - mx);
  }
  EXPECT_EQ(loop_eval::RunFloat(f, {&av, &cv}), 0);
  EXPECT_TRUE(AllClose(cv, want)) << text;
}


TEST(GpuSyncTest, SharedMemoryGemmGetsTwoBarriersPerTile) {
  for (auto [m, n, k] : {std::make_tuple(64, 64, 32), std::make_tuple(45, 37, 21)}) {
    SharedGemm g(m, n, k);
    Schedule s = g.MakeSchedule();
    ir::LoweredFunc f = LowerGpu(s, {g.a, g.b, g.c});
    std::vector<ir::GpuLaunch> launches = ir::CollectGpuLaunches(f.body);
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0].block[0], 8);
    EXPECT_EQ(launches[0].block[1], 8);
    EXPECT_EQ(launches[0].grid[0], (n + 31) / 32);
    EXPECT_EQ(launches[0].grid[1], (m + 31) / 32);
    EXPECT_EQ(launches[0].shared_bytes, 2 * 32 * 8 * 4);  // two 32x8 float tiles
    std::string text = ir::ToString(f);
    // Before each tile's fetch and before its use; the tail of a partitioned k loop has its own pair.
    EXPECT_EQ(Count(text, "sync_threads"), k % 8 == 0 ? 2 : 4) << text;
    std::vector<float> av = RandomData(m * k, 7), bv = RandomData(k * n, 8), cv(m * n);
    EXPECT_EQ(loop_eval::RunFloat(f, {&av, &bv, &cv}), 0);
    EXPECT_TRUE(AllClose(cv, g.Reference(av, bv))) << m << "x" << n << "x" << k;
  }
}

// Each thread writes and reads back its own element: no barrier.
TEST(GpuSyncTest, ThreadPrivateSharedElementsNeedNoBarrier) {
  int64_t n = 256;
  Tensor a = placeholder({Expr(n)}, DType::Float(32), "A");
  Tensor t = compute({Expr(n)}, [&](Var i) { return a(i) * 3.0f; }, "T");
  Tensor c = compute({Expr(n)}, [&](Var i) { return t(i) + 1.0f; }, "C");
  Schedule s = create_schedule({c});
  auto [o, i] = s[c].split(s[c].axis(0), 64);
  s[c].bind(o, "blockIdx.x").bind(i, "threadIdx.x");
  s[t].set_scope(ir::MemoryScope::kShared);
  s[t].compute_at(s[c], o);
  auto [to, ti] = s[t].split(s[t].axis(0), 64);
  s[t].bind(ti, "threadIdx.x");
  ir::LoweredFunc f = LowerGpu(s, {a, c});
  std::string text = ir::ToString(f);
  EXPECT_TRUE(Has(text, "shared")) << text;
  EXPECT_EQ(Count(text, "sync_threads"), 0) << text;
  std::vector<float> av = RandomData(n, 9), cv(n), want(n);
  for (int64_t x = 0; x < n; ++x) want[x] = av[x] * 3 + 1;
  EXPECT_EQ(loop_eval::RunFloat(f, {&av, &cv}), 0);
  EXPECT_TRUE(AllClose(cv, want));
}

TEST(GpuLaunchCheckTest, TooManyThreadsOrTooMuchSharedMemory) {
  Tensor a = placeholder({Expr(4096)}, DType::Float(32), "A");
  Tensor c = compute({Expr(4096)}, [&](Var i) { return a(i) + 1.0f; }, "C");
  Schedule s = create_schedule({c});
  auto [o, i] = s[c].split(s[c].axis(0), 2048);
  s[c].bind(o, "blockIdx.x").bind(i, "threadIdx.x");
  StatusCode code = StatusCode::kOk;
  std::string msg = ErrorOf([&] { LowerGpu(s, {a, c}); }, &code);
  EXPECT_EQ(code, StatusCode::kResourceExhausted);
  EXPECT_TRUE(Has(msg, "2048 threads per block") && Has(msg, "1024")) << msg;

  SharedGemm g(256, 256, 256);
  Schedule sg = g.MakeSchedule();
  LowerOptions opt = Gpu();
  opt.gpu_limits.max_shared_bytes_per_block = 1024;
  opt.gpu_limits.arch = "sm_test";
  msg = ErrorOf([&] { Lower(sg, {g.a, g.b, g.c}, "k", opt); }, &code);
  EXPECT_EQ(code, StatusCode::kResourceExhausted);
  EXPECT_TRUE(Has(msg, "2048 bytes of shared memory") && Has(msg, "sm_test")) << msg;
}

// Fused axes split back into dimensions: the non-negative divisions become C
// division, and indices that fit in int32 are computed in int32.
TEST(GpuIndexMathTest, FusedIndicesUseInt32AndCDivision) {
  Tensor a = placeholder({Expr(3), Expr(5), Expr(7)}, DType::Float(32), "A");
  Tensor c = compute({Expr(7), Expr(3), Expr(5)}, [&](Var i, Var j, Var k) { return a(j, k, i) * 2.0f; }, "C");
  Schedule s = create_schedule({c});
  IterVar fused = s[c].fuse(s[c].fuse(s[c].axis(0), s[c].axis(1)), s[c].axis(2));
  auto [bo, t] = s[c].split(fused, 32);
  s[c].bind(bo, "blockIdx.x").bind(t, "threadIdx.x");
  ir::LoweredFunc f = LowerGpu(s, {a, c});
  std::string text = ir::ToString(f);
  EXPECT_FALSE(Has(text, "floordiv(") || Has(text, "floormod(")) << text;
  EXPECT_TRUE(Has(text, "int32(")) << text;
  std::vector<float> av = RandomData(105, 12), cv(105), want(105);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) want[(i * 3 + j) * 5 + k] = av[(j * 5 + k) * 7 + i] * 2;
  EXPECT_EQ(loop_eval::RunFloat(f, {&av, &cv}), 0);
  EXPECT_TRUE(AllClose(cv, want));
}

// A vectorized inner loop of 4 floats at provably aligned offsets stays a vector
// access; one whose offset is not a multiple of 4 becomes per-element code.
TEST(GpuVectorizeTest, WideAccessesOnlyWhereAligned) {
  for (int64_t offset : {0, 1}) {
    int64_t n = 512;
    Tensor a = placeholder({Expr(n + 1)}, DType::Float(32), "A");
    Tensor c = compute({Expr(n)}, [&](Var i) { return a(i + Expr(offset)) + 1.0f; }, "C");
    Schedule s = create_schedule({c});
    auto [o, v] = s[c].split(s[c].axis(0), 4);
    auto [bo, t] = s[c].split(o, 32);
    s[c].bind(bo, "blockIdx.x").bind(t, "threadIdx.x").vectorize(v);
    ir::LoweredFunc f = LowerGpu(s, {a, c});
    std::string text = ir::ToString(f);
    EXPECT_EQ(Has(text, "ramp("), offset == 0) << text;
    std::vector<float> av = RandomData(n + 1, 10), cv(n), want(n);
    for (int64_t x = 0; x < n; ++x) want[x] = av[x + offset] + 1;
    EXPECT_EQ(loop_eval::RunFloat(f, {&av, &cv}), 0);
    EXPECT_TRUE(AllClose(cv, want));
  }
}

}  // namespace
}  // namespace lower
}  // namespace agate
