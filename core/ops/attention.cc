#include "core/ops/attention.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/ops/op_context.h"
#include "core/ops/registry.h"
#include "core/ops/schedule_common.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

namespace {

constexpr const char* kAttentionTag = "attention";

// Query rows per block and keys per tile.
struct AttentionTiles {
  int64_t query_block = 1;
  int64_t key_tile = 1;
};

// Query blocks of up to 8 rows (the register tile of the score and P V
// products: rows x one or two vectors of keys or values), as many as the
// target's vector registers hold with the two loaded vectors and a broadcast:
// 8 x 2 accumulators on AVX-512's 32 registers, 6 x 2 on AVX2's 16 (8 rows
// spilled accumulators to the stack every step there: GPT-2's attention ran at
// 13 GFLOP/s on Zen 3). Keys: the whole
// (vector-rounded) key range as one tile up to 256 keys, else the tile of 64 to 128
// keys that pads the range least (ties: the larger, fewer tiles). Why: each
// key tile ends with the online-softmax combine, two exps per row and value
// vector, which cost as much as a sixth of ViT-B/16's attention kernel with 64-key
// tiles (perf); and 197 keys in 64-key tiles computed 256 (23% padding) where
// one 208-key tile computes 5% more than needed. The scores and probabilities of
// a block (8 x 256 floats) stay in L1; K^T and V tiles stream from L2 either way,
// every query block reading all of them. Sequences no tile divides are padded
// with masked keys (Kt, Vp), so every loop is whole vectors.
AttentionTiles ChooseAttentionTiles(int64_t sq, int64_t skv, int lanes, int registers, const LowerGroupOptions& o) {
  AttentionTiles t;
  const int64_t pair = 2;  // vectors per register tile row (the widest the schedules take)
  int64_t fit = registers > 0 ? std::max<int64_t>(4, (registers - pair - 1) / pair) : 8;
  int64_t rows = o.dense_m_block > 0 ? o.dense_m_block : std::min<int64_t>(8, fit);
  t.query_block = DivisorAtMost(sq, rows);
  if (t.query_block < 4 && sq > rows) t.query_block = LeastWastefulTile(sq, 4, rows);
  int64_t v = std::max(1, lanes);
  int64_t vectors = (skv + v - 1) / v;
  if (vectors * v <= 256) {
    t.key_tile = vectors * v;
    return t;
  }
  int64_t lo = std::max<int64_t>(1, 64 / v), hi = std::max<int64_t>(lo, 128 / v);
  t.key_tile = LeastWastefulTile(vectors, lo, hi) * v;
  return t;
}

struct Stages {
  Tensor kt, vp, qs, scores, tile_max, probs, tile_sum, pv, out;
  std::vector<Tensor> state;  // m, l, acc
  AttentionTiles tiles;
  int64_t padded_keys = 0;
};

// Splits `axis` of `stage` by the vector lanes when they divide its extent and vectorizes the inner part.
ir::IterVar VectorizeInner(te::Stage stage, const ir::IterVar& axis, int lanes) {
  int64_t extent = ConstExtent(axis);
  if (lanes <= 1 || extent <= 0 || extent % lanes != 0) return axis;
  auto [outer, inner] = stage.split(axis, Expr(int64_t{lanes}));
  stage.vectorize(inner);
  return outer;
}

std::string ScheduleAttention(const ScheduleRequest& r, const Stages& st) {
  te::Schedule s = r.schedule;
  int lanes = VectorLanes(*r.target, st.out.dtype());
  bool parallel = ParallelAllowed(*r.target) && r.options->allow_parallel;
  // The group's output stage: Y itself, or an elementwise epilogue of it (Y inlined).
  Tensor out = r.epilogue.defined() && StaticShape(r.epilogue) == StaticShape(st.out) ? r.epilogue : st.out;
  if (r.outputs.size() != 1 || (!out.same_as(st.out) && !r.outputs[0].same_as(out)) ||
      (out.same_as(st.out) && !r.outputs[0].same_as(st.out)))
    return ScheduleAnchorDefault(r, "attention (several outputs: default schedule)");
  if (!out.same_as(st.out)) s[st.out].compute_inline();

  // K^T and V, padded: root stages parallel over (batch, kv head).
  for (const Tensor& packed : {st.kt, st.vp}) {
    te::Stage p = s[packed];
    ir::IterVar bh = p.fuse(p.axis(0), p.axis(1));
    if (parallel) p.parallel(bh);
    VectorizeInner(p, p.axis(3), lanes);
  }

  // Y: (batch x head x query block) in parallel, each block's rows and values inside: consecutive
  // tasks share a head's K^T and V tiles in the cache (12 heads' worth would not stay in L2). The
  // stages per block run over queries padded to whole blocks, so only Y's last block is guarded.
  te::Stage y = s[out];
  auto [io, ii] = y.split(y.axis(2), Expr(st.tiles.query_block));
  y.reorder({y.axis(0), y.axis(1), io, ii, y.axis(3)});
  ir::IterVar block = y.fuse(y.fuse(y.axis(0), y.axis(1)), io);
  if (parallel) y.parallel(block);
  VectorizeInner(y, y.axis(3), lanes);

  te::Stage qs = s[st.qs];
  qs.compute_at(y, block);
  VectorizeInner(qs, qs.axis(3), lanes);

  // The online softmax over key tiles: key tiles outside, the block's (row, value vector) accumulators inside.
  // Several key tiles: the per-tile stages are computed at the combine's key-tile loop. One tile: at the
  // query block, and Y divides P V by the row sum directly (no combine).
  te::Stage state = y;
  ir::IterVar jb = block;
  if (!st.state.empty()) {
    state = s[st.state[0]];
    state.compute_at(y, block);
    jb = state.reduce_axis(0);
    state.reorder({state.axis(0), state.axis(1), jb, state.axis(2), state.axis(3)});
    VectorizeInner(state, state.axis(3), lanes);
  }

  // Per key tile: scores (rows x key vectors, reduction over the head size outside the register tile).
  te::Stage sc = s[st.scores];
  sc.compute_at(state, jb);
  {
    ir::IterVar j = sc.axis(3);
    int64_t keys = st.tiles.key_tile;
    int64_t vec = lanes > 1 && keys % lanes == 0 ? lanes : 1;
    int64_t pair = vec > 1 && keys % (2 * vec) == 0 ? 2 : 1;
    auto [jo, ji] = sc.split(j, Expr(vec * pair));
    std::vector<ir::IterVar> order{sc.axis(0), sc.axis(1), jo, sc.reduce_axis(0), sc.axis(2)};
    ir::IterVar lane = ji;
    if (pair > 1) {
      auto [jp, jv] = sc.split(ji, Expr(vec));
      order.push_back(jp);
      lane = jv;
      sc.unroll(jp);
    }
    order.push_back(lane);
    sc.reorder(order);
    sc.unroll(sc.axis(2));
    if (vec > 1) sc.vectorize(lane);
  }
  // The tile's row max and row sum in vector partials (rfactor), the probabilities a vector at a time.
  VectorizeReduction(s, st.tile_max, lanes);
  s[st.tile_max].compute_at(state, jb);
  te::Stage p = s[st.probs];
  p.compute_at(state, jb);
  VectorizeInner(p, p.axis(3), lanes);
  VectorizeReduction(s, st.tile_sum, lanes);
  s[st.tile_sum].compute_at(state, jb);
  // P V: rows x value vectors, the tile's keys outside the register tile.
  te::Stage pv = s[st.pv];
  pv.compute_at(state, jb);
  {
    ir::IterVar c = pv.axis(4);
    int64_t dv = ConstExtent(c);
    int64_t vec = lanes > 1 && dv % lanes == 0 ? lanes : 1;
    int64_t pair = vec > 1 && dv % (2 * vec) == 0 ? 2 : 1;
    auto [co, ci] = pv.split(c, Expr(vec * pair));
    std::vector<ir::IterVar> order{pv.axis(0), pv.axis(1), pv.axis(3), co, pv.reduce_axis(0), pv.axis(2)};
    ir::IterVar lane = ci;
    if (pair > 1) {
      auto [cp, cv] = pv.split(ci, Expr(vec));
      order.push_back(cp);
      lane = cv;
      pv.unroll(cp);
    }
    order.push_back(lane);
    pv.reorder(order);
    pv.unroll(pv.axis(2));
    if (vec > 1) pv.vectorize(lane);
  }
  std::ostringstream text;
  text << "attention query_block=" << st.tiles.query_block << " key_tile=" << st.tiles.key_tile
       << " keys=" << st.padded_keys
       << (st.state.empty() ? ", softmax over one key tile" : ", online softmax over key tiles")
       << (out.same_as(st.out) ? "" : ", epilogue inlined");
  return text.str();
}

std::vector<Tensor> AttentionOp(const OpContext& ctx) {
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  ir::DType dt = q.dtype();
  AGATE_REQUIRE(dt == ir::DType::Float(32) && k.dtype() == dt && v.dtype() == dt, kUnsupported)
      << ctx.Describe() << ": only float32 attention is implemented";
  graph::Shape qs = StaticShape(q), ks = StaticShape(k), vs = StaticShape(v);
  AGATE_REQUIRE(qs.size() == 4 && ks.size() == 4 && vs.size() == 4, kUnsupported)
      << ctx.Describe() << ": Q, K and V must be 4-D [batch, heads, sequence, head size]";
  int64_t batch = qs[0], heads = qs[1], sq = qs[2], d = qs[3], kv_heads = ks[1], skv = ks[2], dv = vs[3];
  AGATE_REQUIRE(kv_heads > 0 && heads % kv_heads == 0 && ks[0] == batch && vs[0] == batch && ks[3] == d &&
                    vs[1] == kv_heads && vs[2] == skv,
                kInvalidArgument)
      << ctx.Describe() << ": Q " << graph::ShapeToString(qs) << ", K " << graph::ShapeToString(ks) << ", V "
      << graph::ShapeToString(vs) << " disagree";
  int64_t group = heads / kv_heads;
  double scale = ctx.attrs().GetFloat("scale", 1.0 / std::sqrt(static_cast<double>(d)));
  bool causal = ctx.attrs().GetInt("is_causal", 0) != 0;
  Tensor mask = ctx.has_input(3) ? ctx.input(3) : Tensor();
  std::string name = ctx.node().outputs[0];
  int lanes = VectorLanes(ctx.target(), dt);

  Stages st;
  st.tiles = ChooseAttentionTiles(sq, skv, lanes, ctx.target().vector_registers(), ctx.options());
  int64_t tile = st.tiles.key_tile;
  int64_t tiles = (skv + tile - 1) / tile;
  int64_t skp = tiles * tile;
  st.padded_keys = skp;
  // Queries padded to whole blocks too (rows of zeros): the stages computed per block then have a
  // constant, guard-free extent; only the output's last block is cut to the real queries.
  int64_t block_rows = st.tiles.query_block;
  int64_t sqp = (sq + block_rows - 1) / block_rows * block_rows;
  Expr zero = ir::make_zero(dt);
  Expr neg_inf = ir::make_const(dt, -std::numeric_limits<double>::infinity());
  Expr last_key(skv - 1);
  auto key_index = [&](Expr j) { return skp == skv ? j : ir::min(j, last_key); };
  auto kv_head = [&](Expr h) { return group == 1 ? h : ir::floordiv(h, Expr(group)); };

  st.kt = te::compute(ToExprShape({batch, kv_heads, d, skp}), [&](const std::vector<Var>& i) {
    Expr value = k(i[0], i[1], key_index(i[3]), i[2]);
    return skp == skv ? value : ir::select(i[3] < Expr(skv), value, zero);
  }, name + "_kt", kAttentionTag);
  st.vp = te::compute(ToExprShape({batch, kv_heads, skp, dv}), [&](const std::vector<Var>& i) {
    Expr value = v(i[0], i[1], key_index(i[2]), i[3]);
    return skp == skv ? value : ir::select(i[2] < Expr(skv), value, zero);
  }, name + "_vp", kAttentionTag);
  Expr last_query(sq - 1);
  auto query_index = [&](Expr i) { return sqp == sq ? i : ir::min(i, last_query); };
  st.qs = te::compute(ToExprShape({batch, heads, sqp, d}), [&](const std::vector<Var>& i) {
    Expr value = q(i[0], i[1], query_index(i[2]), i[3]) * ir::make_const(dt, scale);
    return sqp == sq ? value : ir::select(i[2] < Expr(sq), value, zero);
  }, name + "_qs", kAttentionTag);
  ir::IterVar rc = te::reduce_axis({Expr(int64_t{0}), Expr(d)}, "c");
  st.scores = te::compute(ToExprShape({batch, heads, sqp, skp}), [&](const std::vector<Var>& i) {
    return te::sum(st.qs(i[0], i[1], i[2], rc) * st.kt(i[0], kv_head(i[1]), rc, i[3]), {rc});
  }, name + "_scores", kAttentionTag);

  // The score of (b, h, i, j) with every mask applied (-inf where masked out).
  auto masked = [&](Expr b, Expr h, Expr i, Expr j) {
    Expr score = st.scores(b, h, i, j);
    Expr valid;
    auto both = [&](Expr c) { valid = valid.defined() ? (valid && c) : c; };
    if (skp != skv) both(j < Expr(skv));
    if (causal) both(j <= i);
    if (mask.defined()) {
      std::vector<Expr> full{b, h, query_index(i), key_index(j)};
      std::vector<Expr> idx(full.end() - mask.ndim(), full.end());
      Expr m = BroadcastRead(mask, idx);
      if (mask.dtype().is_bool()) {
        both(m);
      } else {
        score = score + m;
      }
    }
    return valid.defined() ? ir::select(valid, score, neg_inf) : score;
  };
  ir::IterVar rj = te::reduce_axis({Expr(int64_t{0}), Expr(tile)}, "j");
  st.tile_max = te::compute(ToExprShape({batch, heads, sqp, tiles}), [&](const std::vector<Var>& i) {
    return te::max(masked(i[0], i[1], i[2], i[3] * tile + rj), {rj});
  }, name + "_tile_max", kAttentionTag);
  // The tile's max, at least the lowest finite value: a tile whose keys are all masked out then has
  // probabilities exp(-inf) = 0 instead of exp(-inf - -inf).
  Expr lowest = ir::min_value(dt);
  auto tile_max = [&](Expr b, Expr h, Expr i, Expr t) { return ir::max(st.tile_max(b, h, i, t), lowest); };
  st.probs = te::compute(ToExprShape({batch, heads, sqp, skp}), [&](const std::vector<Var>& i) {
    return ir::exp(masked(i[0], i[1], i[2], i[3]) - tile_max(i[0], i[1], i[2], ir::floordiv(i[3], Expr(tile))));
  }, name + "_probs", kAttentionTag);
  ir::IterVar rs = te::reduce_axis({Expr(int64_t{0}), Expr(tile)}, "j");
  st.tile_sum = te::compute(ToExprShape({batch, heads, sqp, tiles}), [&](const std::vector<Var>& i) {
    return te::sum(st.probs(i[0], i[1], i[2], i[3] * tile + rs), {rs});
  }, name + "_tile_sum", kAttentionTag);
  ir::IterVar rv = te::reduce_axis({Expr(int64_t{0}), Expr(tile)}, "j");
  st.pv = te::compute(ToExprShape({batch, heads, sqp, tiles, dv}), [&](const std::vector<Var>& i) {
    Expr key = i[3] * tile + rv;
    return te::sum(st.probs(i[0], i[1], i[2], key) * st.vp(i[0], kv_head(i[1]), key, i[4]), {rv});
  }, name + "_pv", kAttentionTag);

  if (tiles == 1) {
    // One key tile: the tile's probabilities are the softmax's numerators, its sum the denominator.
    st.out = te::compute(ToExprShape({batch, heads, sq, dv}), [&](const std::vector<Var>& i) {
      return st.pv(i[0], i[1], i[2], Expr(int64_t{0}), i[3]) / st.tile_sum(i[0], i[1], i[2], Expr(int64_t{0}));
    }, name, tag::kOpaque);
    ctx.SetSchedule([st](const ScheduleRequest& r) { return ScheduleAttention(r, st); }, st.out);
    return {st.out};
  }
  // Online softmax: (m, l, acc) combined over key tiles.
  ir::CommReducer online = te::MakeCommReducer(
      {dt, dt, dt},
      [](const std::vector<Var>& a, const std::vector<Var>& b) {
        Expr m = ir::max(a[0], b[0]);
        Expr keep = ir::exp(a[0] - m), take = ir::exp(b[0] - m);
        return std::vector<Expr>{m, a[1] * keep + b[1] * take, a[2] * keep + b[2] * take};
      },
      {neg_inf, zero, zero});
  ir::IterVar rt = te::reduce_axis({Expr(int64_t{0}), Expr(tiles)}, "key_tile");
  st.state = te::compute_multi(ToExprShape({batch, heads, sqp, dv}), [&](const std::vector<Var>& i) {
    return te::comm_reducer(online)(
        {tile_max(i[0], i[1], i[2], rt), st.tile_sum(i[0], i[1], i[2], rt), st.pv(i[0], i[1], i[2], rt, i[3])}, {rt},
        Expr());
  }, name + "_online", kAttentionTag);
  st.out = te::compute(ToExprShape({batch, heads, sq, dv}), [&](const std::vector<Var>& i) {
    std::vector<Expr> idx(i.begin(), i.end());
    return st.state[2](idx) / st.state[1](idx);
  }, name, tag::kOpaque);
  ctx.SetSchedule([st](const ScheduleRequest& r) { return ScheduleAttention(r, st); }, st.out);
  return {st.out};
}

}  // namespace

void RegisterAttentionOps(OpTable* t) { t->Register("Attention", AttentionOp); }

}  // namespace ops
}  // namespace agate
