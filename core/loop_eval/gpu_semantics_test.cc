// The evaluator's GPU semantics on hand-built launches (core/ir/gpu_launch.h):
// per-block shared memory, barriers as phases, warp shuffles, and the racecheck
// that reports what would be undefined on a GPU.
#include <gtest/gtest.h>

#include "core/loop_eval/evaluator.h"
#include "core/ir/gpu_launch.h"
#include "core/support/error.h"

namespace agate {
namespace loop_eval {
namespace {

using namespace ir;  // NOLINT

Stmt Sync() { return Evaluate::make(Call::make(DType::Int(32), CallOp::kSyncThreads, {})); }

// One launch: `blocks` blocks of `threads` threads along x, shared buffers at the given offsets.
struct Launch {
  Var bx{"blockIdx.x"}, tx{"threadIdx.x"};
  int64_t blocks, threads;
  std::vector<std::pair<Buffer, int64_t>> shared;  // buffer, byte offset
  Launch(int64_t b, int64_t t) : blocks(b), threads(t) {}
  Stmt Make(const Stmt& code, int64_t shared_bytes) const {
    Stmt s = For::make(tx, 0, Expr(threads), ForKind::kThreadBinding, code, "threadIdx.x");
    for (auto it = shared.rbegin(); it != shared.rend(); ++it) {
      s = Allocate::make(it->first, it->first->shape, 16, MemoryScope::kShared, s, it->second);
    }
    s = For::make(bx, 0, Expr(blocks), ForKind::kThreadBinding, s, "blockIdx.x");
    return AttrStmt::make(attr::kGpuLaunch, "k", Expr(shared_bytes), s);
  }
};

Buffer Shared(const std::string& name, int64_t n) {
  return CreateBuffer(name, DType::Float(32), {Expr(n)}, MemoryScope::kShared, 16);
}

std::string Message(const LoweredFunc& f, std::vector<float>* out) {
  try {
    RunFloat(f, {out});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInternal);
    return e.message();
  }
  return "no error";
}

bool Has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// out[b * 32 + t] = sh[(t + 1) % 32] after every thread wrote sh[t] = b * 100 + t.
LoweredFunc Rotate(bool with_barrier) {
  Launch l(2, 32);
  Buffer out = CreateBuffer("out", DType::Float(32), {Expr(64)});
  Buffer sh = Shared("sh", 32);
  l.shared.push_back({sh, 0});
  Expr t = l.tx, b = l.bx;
  Stmt write = Store::make(sh, cast(DType::Float(32), b * Expr(int64_t{100}) + t), t);
  Stmt read = Store::make(out, Load::make(sh, floormod(t + Expr(int64_t{1}), Expr(int64_t{32}))),
                          b * Expr(int64_t{32}) + t);
  Stmt code = with_barrier ? Seq::make({write, Sync(), read}) : Seq::make({write, read});
  return LoweredFunc{"k", {out}, l.Make(code, 128), 0};
}

TEST(GpuSemanticsTest, BarrierSeparatesPhasesAndSharedMemoryIsPerBlock) {
  std::vector<float> out(64);
  EXPECT_EQ(RunFloat(Rotate(true), {&out}), 0);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 32; ++t) EXPECT_EQ(out[b * 32 + t], b * 100 + (t + 1) % 32);
}

TEST(GpuSemanticsTest, MissingBarrierIsARace) {
  std::vector<float> out(64);
  std::string msg = Message(Rotate(false), &out);
  EXPECT_TRUE(Has(msg, "race in GPU kernel k") && Has(msg, "sh[") && Has(msg, "block (0,0,0) thread (") &&
              Has(msg, "no __syncthreads"))
      << msg;
}

TEST(GpuSemanticsTest, TwoThreadsWritingOneElementIsARace) {
  Launch l(1, 8);
  Buffer out = CreateBuffer("out", DType::Float(32), {Expr(1)});
  Buffer sh = Shared("sh", 1);
  l.shared.push_back({sh, 0});
  Stmt code = Seq::make({Store::make(sh, cast(DType::Float(32), Expr(l.tx)), Expr(int64_t{0})), Sync(),
                         IfThenElse::make(Expr(l.tx) == Expr(int64_t{0}), Store::make(out, Load::make(sh, Expr(int64_t{0})), Expr(int64_t{0})))});
  std::vector<float> o(1);
  std::string msg = Message(LoweredFunc{"k", {out}, l.Make(code, 16), 0}, &o);
  EXPECT_TRUE(Has(msg, "writes sh[0]")) << msg;
}

TEST(GpuSemanticsTest, GlobalWritesOfTwoBlocksRace) {
  Launch l(2, 1);
  Buffer out = CreateBuffer("out", DType::Float(32), {Expr(1)});
  Stmt code = Store::make(out, cast(DType::Float(32), Expr(l.bx)), Expr(int64_t{0}));
  std::vector<float> o(1);
  std::string msg = Message(LoweredFunc{"k", {out}, l.Make(code, 0), 0}, &o);
  EXPECT_TRUE(Has(msg, "block (1,0,0) thread (0,0,0) writes out[0]") && Has(msg, "block (0,0,0)")) << msg;
}

TEST(GpuSemanticsTest, BarrierInDivergentCodeIsAnError) {
  Launch l(1, 32);
  Buffer out = CreateBuffer("out", DType::Float(32), {Expr(32)});
  Stmt code = Seq::make({IfThenElse::make(Expr(l.tx) < Expr(int64_t{16}), Sync()),
                         Store::make(out, Expr(1.0f), l.tx)});
  std::vector<float> o(32);
  std::string msg = Message(LoweredFunc{"k", {out}, l.Make(code, 0), 0}, &o);
  EXPECT_TRUE(Has(msg, "__syncthreads reached by 16 of the 32 threads")) << msg;
}

TEST(GpuSemanticsTest, ShufflesExchangeLanesOfAWarp) {
  Launch l(1, 64);
  Buffer out = CreateBuffer("out", DType::Float(32), {Expr(64)});
  Expr own = cast(DType::Float(32), Expr(l.tx));
  Expr shuffled = Call::make(DType::Float(32), CallOp::kShuffleXor, {own, Expr(5), Expr(8)});
  Stmt code = Store::make(out, shuffled, l.tx);
  std::vector<float> o(64);
  EXPECT_EQ(RunFloat(LoweredFunc{"k", {out}, l.Make(code, 0), 0}, {&o}), 0);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(o[t], t ^ 5);

  // A shuffle that only some lanes of a warp execute is undefined.
  Stmt partial = IfThenElse::make(Expr(l.tx) < Expr(int64_t{40}), Store::make(out, shuffled, l.tx));
  std::string msg = Message(LoweredFunc{"k", {out}, l.Make(partial, 0), 0}, &o);
  EXPECT_TRUE(Has(msg, "shuffle runs in only part of a warp")) << msg;
}

// Shared buffers laid out on the same bytes (disjoint lifetimes before they
// were moved to the block) race like one buffer.
TEST(GpuSemanticsTest, OverlappingSharedBuffersRaceLikeOne) {
  Launch l(1, 4);
  Buffer out = CreateBuffer("out", DType::Float(32), {Expr(4)});
  Buffer first = Shared("first", 4), second = Shared("second", 4);
  l.shared.push_back({first, 0});
  l.shared.push_back({second, 0});
  Expr t = l.tx;
  Stmt code = Seq::make({Store::make(first, Expr(1.0f), t), Sync(),
                         Store::make(out, Load::make(first, Expr(int64_t{3}) - t), t),
                         Store::make(second, Expr(2.0f), t)});
  std::vector<float> o(4);
  std::string msg = Message(LoweredFunc{"k", {out}, l.Make(code, 16), 0}, &o);
  EXPECT_TRUE(Has(msg, "writes second[")) << msg;
}

TEST(GpuSemanticsTest, LaunchesRunInOrderAndShareTheWorkspace) {
  // Launch 1 writes a workspace buffer, launch 2 (another grid) reads all of it.
  Buffer out = CreateBuffer("out", DType::Float(32), {Expr(8)});
  Buffer ws = CreateBuffer("ws", DType::Float(32), {Expr(8)}, MemoryScope::kWorkspace);
  Launch a(8, 1), b(1, 8);
  Stmt first = a.Make(Store::make(ws, cast(DType::Float(32), Expr(a.bx)), a.bx), 0);
  Expr total = Expr(0.0f);
  for (int i = 0; i < 8; ++i) total = total + Load::make(ws, Expr(int64_t{i}));
  Stmt second = b.Make(Store::make(out, total + cast(DType::Float(32), Expr(b.tx)), b.tx), 0);
  Stmt body = Allocate::make(ws, {Expr(8)}, 64, MemoryScope::kWorkspace, Seq::make({first, second}), 0);
  std::vector<float> o(8);
  EXPECT_EQ(RunFloat(LoweredFunc{"k", {out}, body, 32}, {&o}), 0);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(o[t], 28 + t);
  EXPECT_EQ(CollectGpuLaunches(body).size(), 2u);
}

}  // namespace
}  // namespace loop_eval
}  // namespace agate
