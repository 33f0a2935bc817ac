#include "core/schedule/schedule.h"

#include <gtest/gtest.h>

#include "core/support/error.h"

namespace agate {
namespace te {
namespace {

struct Matmul {
  Tensor a = placeholder({Expr(64), Expr(32)}, DType::Float(32), "A");
  Tensor b = placeholder({Expr(32), Expr(48)}, DType::Float(32), "B");
  IterVar k = reduce_axis({0, 32}, "k");
  Tensor c = compute({Expr(64), Expr(48)}, [&](Var i, Var j) { return sum(a(i, k) * b(k, j), {k}); }, "C");
};

std::string LeafNames(const Stage& s) {
  std::string out;
  for (const IterVar& iv : s.leaf_iter_vars()) out += (out.empty() ? "" : " ") + iv.name();
  return out;
}

TEST(ScheduleTest, SplitTileFuseReorderChangeTheLeaves) {
  Matmul m;
  Schedule s = create_schedule({m.c});
  Stage c = s[m.c];
  EXPECT_EQ(LeafNames(c), "i j k");
  auto t = c.tile(c.axis(0), c.axis(1), 8, 8);
  EXPECT_EQ(LeafNames(c), "i.outer j.outer i.inner j.inner k");
  c.reorder({t[2], m.k, t[3]});
  EXPECT_EQ(LeafNames(c), "i.outer j.outer i.inner k j.inner");
  IterVar f = c.fuse(t[0], t[1]);
  EXPECT_EQ(LeafNames(c), "i.outer.j.outer.fused i.inner k j.inner");
  c.parallel(f).vectorize(t[3]);
}

void ExpectIllegal(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    FAIL() << "accepted an illegal schedule";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kIllegalSchedule) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
}

TEST(ScheduleTest, IllegalPrimitivesNameStageAndAxis) {
  Matmul m;
  Schedule s = create_schedule({m.c});
  Stage c = s[m.c];
  auto kparts = c.split(m.k, 4);
  IterVar ko = kparts.first, ki = kparts.second;
  ExpectIllegal([&] { c.parallel(ko); }, "stage C: axis k.outer");
  ExpectIllegal([&] { c.vectorize(ki); }, "k.inner");
  ExpectIllegal([&] { c.split(m.k, 2); }, "axis k was already split");
  ExpectIllegal([&] { c.fuse(c.axis(0), ko); }, "must directly enclose");
  ExpectIllegal([&] { c.compute_inline(); }, "stage C");
  ExpectIllegal([&] { s.cache_write(m.c, ir::MemoryScope::kLocal); }, "before other primitives");
  IterVar foreign = reduce_axis({0, 3}, "z");
  ExpectIllegal([&] { c.unroll(foreign); }, "does not belong");
}

TEST(ScheduleTest, CacheWriteAddsAStageThatKeepsTheUserAxes) {
  Matmul m;
  Schedule s = create_schedule({m.c});
  Tensor cl = s.cache_write(m.c, ir::MemoryScope::kLocal);
  EXPECT_EQ(cl.name(), "C.local");
  Stage local = s[cl];
  EXPECT_TRUE(local.reduce_axis(0).same_as(m.k));
  Stage c = s[m.c];
  EXPECT_EQ(c.leaf_iter_vars().size(), 2u);
  auto [io, ii] = c.split(c.axis(0), 8);
  local.compute_at(c, io);
  EXPECT_NE(s.ToString().find("stage C.local at C.i.outer"), std::string::npos) << s.ToString();
}

TEST(ScheduleTest, CacheReadRewritesReaders) {
  Matmul m;
  Schedule s = create_schedule({m.c});
  Tensor al = s.cache_read(m.a, ir::MemoryScope::kLocal, {m.c});
  auto inputs = s[m.c]->op->InputTensors();
  bool reads_cache = false;
  for (const Tensor& t : inputs) reads_cache |= t.same_as(al);
  EXPECT_TRUE(reads_cache);
  EXPECT_THROW(s.cache_read(m.b, ir::MemoryScope::kLocal, {al}), Error);  // al does not read B
}

}  // namespace
}  // namespace te
}  // namespace agate
