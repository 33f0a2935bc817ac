#include "core/ops/qlinear_vnni.h"

#include <algorithm>
#include <sstream>

#include "core/graph/shape_rules.h"
#include "core/ir/buffer.h"
#include "core/ir/stmt.h"
#include "core/ops/schedule_common.h"
#include "core/ops/window.h"
#include "core/schedule/schedule.h"
#include "core/support/error.h"

namespace agate {
namespace ops {

using te::Expr;
using te::Tensor;
using te::Var;

using vnni::I;
using vnni::kI16;
using vnni::kI32;
using vnni::kS8;
using vnni::kU8;

// Pixels per vector of the packing's row copies (any width is correct; 16 bytes of uint8).
constexpr int64_t kCopyPixels = 16;

namespace {

// The packed geometry of one conv (see the header).
struct VnniPlan {
  const vnni::Isa* isa = nullptr;
  int64_t lanes() const { return isa->lanes; }  // int32 lanes (pixels) per accumulator vector
  // The packed activations' type (a depthwise conv packs it too): int16 when the ISA's
  // operands are centred, whose padding is then 0, else the ISA's 8-bit type (uint8 for
  // VNNI, int8 for sdot) padded with the zero point, both shifted by x_shift.
  ir::DType packed() const { return isa->a_type; }
  int64_t x_shift = 0;  // added to the 8-bit activations as packed (Isa::ShiftFrom)
  int64_t n = 0, c = 0, c4 = 0, oc = 0, oc_padded = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  // Input channels per packed group: isa->group (vpdpbusd's groups of four, vpmaddwd's
  // pairs) or, for a depthwise conv, 1 (each channel its own plane); c4 is the number of groups.
  int64_t group_channels = 4;
  bool depthwise = false;
  int64_t wide = 0;        // Wp: pixels per output row in the accumulator (OW for 1x1, padded width otherwise)
  int64_t pixels = 0;      // OH * Wp, rounded up to the pixel block
  int64_t plane = 0;       // packed input pixels per channel group (q extent)
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;  // phase strides (the conv's, 1 for 1x1 convs) and dilations
  int64_t phases = 1;      // sh * sw packed planes (input pixels by row and column phase), or kh * kw
  // One plane per kernel tap (im2col; chosen in VnniIntegerConv): plane kh * KW + kw holds, at
  // q = oh * OW + ow, the input pixel tap (kh, kw) of output pixel (oh, ow) reads, so no
  // junk columns are computed (small maps, where the wide rows' extra columns and the
  // rounding to whole tiles cost more than packing every tap).
  bool tap_planes = false;

  // Kernel tap (kh, kw) reads plane Phase(kh, kw) at q = p + TapOffset(kh, kw).
  Expr Phase(const Expr& kh, const Expr& kw) const {
    if (tap_planes) return kh * this->kw + kw;
    return ir::floormod(kh * dh, I(sh)) * sw + ir::floormod(kw * dw, I(sw));
  }
  Expr TapOffset(const Expr& kh, const Expr& kw) const {
    if (tap_planes) return I(0);
    return ir::floordiv(kh * dh, I(sh)) * wide + ir::floordiv(kw * dw, I(sw));
  }
  // The input row and column offsets of plane ph (a stride phase, or a tap's dilated offset).
  int64_t RowPhase(int64_t ph) const { return tap_planes ? ph / kw * dh : ph / sw; }
  int64_t ColPhase(int64_t ph) const { return tap_planes ? ph % kw * dw : ph % sw; }
  Expr RowPhase(const Expr& ph) const { return tap_planes ? ir::floordiv(ph, I(kw)) * dh : ir::floordiv(ph, I(sw)); }
  Expr ColPhase(const Expr& ph) const { return tap_planes ? ir::floormod(ph, I(kw)) * dw : ir::floormod(ph, I(sw)); }
  // Packed pixel q of phase ph reads input row floordiv(q, wide) * row_step + RowPhase(ph) - pad_row
  // and column floormod(q, wide) * col_step + ColPhase(ph) - pad_col (the conv's strides for a
  // 1x1 conv, whose phase is 0, and for tap planes); rows at or past valid_rows hold the zero point.
  int64_t in_h = 0, in_w = 0, row_step = 1, col_step = 1, pad_row = 0, pad_col = 0, valid_rows = 0;
  int64_t oc_block = 0;    // output channels per register tile
  int64_t px_vectors = 0;  // lanes-pixel vectors per register tile
  int64_t col_tile = 0;    // output columns per epilogue tile
  bool one_by_one = false;
  bool flat_rows = false;  // the output's rows back to back in the planes, written 16 pixels per vector
  bool pixels_outer = false;  // the tile loop walks the channel blocks of a pixel tile (else the pixel tiles of a block)
};

// Whether the tile loop takes each pixel tile's channel blocks in turn (the knob, or by
// layout when it is -1). A tile reads K bytes (input channels x taps) for each of its
// pixels and for each of its output channels: with the channel blocks outermost, the
// activations (pixels x K, past L1) are read once per block from L2; with the pixel tiles
// outermost, the weights (channels x K) once per pixel tile, while the tile's own
// activations (px_vectors x 16 pixels x K) stay in L1. A pixel tile is 2-8x wider than a
// channel block, so the second reads 2-8x fewer bytes for a 1x1 conv (a plain GEMM):
// ResNet-50 int8's ran 1.05-1.6x faster so (the 7x7 and 14x14 ones the most). KxK convs
// keep the channel blocks outermost: on wide rows each activation line serves every tap
// while the block's weights (9x a 1x1's) stay in L1, and ResNet-50's ran 5-12% slower the
// other way; on tap planes (7x7 maps, 2.4 MB of weights past L2 either way) it ran within
// 2% on 1 thread and 4-7% slower on 2. A depthwise conv shares nothing across its channel
// blocks and walks each plane in order (MobileNetV2's ran 5-7% slower the other way).
bool PixelTilesOuter(int knob, bool one_by_one, bool depthwise) {
  if (knob >= 0) return knob == 1;
  return one_by_one && !depthwise;
}

// With the pixel tiles outermost, the threads (which take contiguous ranges of the tile loop)
// would split every output row between them: on small maps a row is a few cache lines, and
// the line where one thread's tiles end and another's begin is written by both. MobileNetV2
// int8's 14x14 1x1 convs (4 tiles of 64 pixels, rows of 198 bytes) ran slower on 2 threads
// than on 1 (0.048 -> 0.057 ms). With at most 8 pixel tiles the channel blocks are cut into
// 4 (or 2) parts outside the pixel tiles, so a thread owns whole rows; the tiles' activations
// are then read once per part (small there: they stay in L2). Those convs: 0.054 -> 0.031 ms
// on 2 threads; on larger maps (56x56) the same cut ran 10-25% slower, so they keep the loop.
int64_t ChannelParts(const VnniPlan& p) {
  if (!p.pixels_outer || p.pixels / (p.px_vectors * p.lanes()) > 8) return 1;
  int64_t blocks = p.oc_padded / p.oc_block;
  return blocks % 4 == 0 ? 4 : blocks % 2 == 0 ? 2 : 1;
}

// The default channels per register tile for `vectors` pixel vectors: 24-28 of 32
// registers hold accumulators; with 16, 8 to 12 (6 channels x 2 vectors, 8 x 1).
int64_t DefaultChannelBlock(const vnni::Isa& isa, int64_t vectors, int64_t oc) {
  if (isa.registers >= 32) return vectors >= 4 ? (oc % 6 == 0 ? 6 : 4) : 8;
  return vectors >= 2 ? 6 : 8;
}

// Pixel vectors per tile: 0 when `needed` (the pixels the output reads) fits one vector
// of `lanes` pixels (more than one tile must be read, so that bound inference sees the
// consumer cover whole tiles).
//  * 16 registers, and depthwise convs (1..most): the most vectors whose padded pixels stay within 1/16 of the
//    fewest (wider tiles reuse each weight broadcast).
//  * 32 registers (1, 2 or 4): the least estimated time, padded pixels x the instructions
//    per vpdpbusd of one reduction step, (b*v products + b weight broadcasts + v pixel
//    loads) / (b*v) for v vectors and b channels. The padding rule alone kept ResNet-50's
//    14x14 and 7x7 layers at one vector (8 broadcasts per 8 products): two vectors ran
//    their 1x1 convs 1.25-1.35x and the 7x7 3x3 ones 1.2x faster, four lost on 7x7
//    (4 x 16 pixels for 63); on 56x56 and 28x28 four stay best (three lost there).
int64_t PickPixelVectors(const vnni::Isa& isa, bool depthwise, int64_t needed, int64_t lanes, int64_t most, int64_t oc) {
  auto total = [&](int64_t v) { return (needed + v * lanes - 1) / (v * lanes) * (v * lanes); };
  if (isa.registers >= 32 && !depthwise) {
    int64_t best = 0;
    double best_cost = 0;
    for (int64_t v : {1, 2, 4}) {
      if (v > most || needed <= v * lanes) continue;
      double b = static_cast<double>(std::min(oc, DefaultChannelBlock(isa, v, oc)));
      double cost = static_cast<double>(total(v)) * (b * v + b + v) / (b * v);
      if (best == 0 || cost < best_cost) best = v, best_cost = cost;
    }
    return best;
  }
  int64_t fewest = INT64_MAX;
  for (int64_t v = 1; v <= most; ++v)
    if (needed > v * lanes) fewest = std::min(fewest, total(v));
  for (int64_t v = most; v >= 1; --v)
    if (needed > v * lanes && total(v) * 16 <= fewest * 17) return v;
  return 0;
}

// The packing of one channel group (group_channels whole input channels) into its phase
// planes, xp[ph][q][c % group_channels] for every phase, written row by row: input rows outside the image and
// the plane's rows past the valid ones are filled with `pad` (the zero point, or 0 when
// centred); in a valid row the padding columns (known at compile time) get `pad` and the
// columns in between are copied as 16-pixel vectors, one contiguous load per channel (a
// strided load for a strided conv, minus the zero point when centred) stored to every
// group_channels-th element. (The per-element compute it replaces evaluates the row, column
// and padding tests for every element.)
ir::Stmt PackGroup(const VnniPlan& p, const ir::Buffer& xb, const Expr& x_offset, const ir::Buffer& out,
                   const Expr& out_offset, const Expr& pad, const Expr& x_zp, int64_t channels) {
  using namespace ir;  // NOLINT
  auto lanes = [](const Expr& base, int64_t stride, int64_t n) {
    Expr b = cast(DType::Index(), base);
    return n == 1 ? b : Ramp::make(b, I(stride), static_cast<int>(n));
  };
  auto splat = [&](int64_t n) { return n == 1 ? pad : Broadcast::make(pad, static_cast<int>(n)); };
  auto packed = [&](const Expr& x, int64_t n) {  // loaded input values as packed
    auto wide = [&](int64_t v) {
      Expr c = make_const(kI16, static_cast<double>(v));
      return n == 1 ? c : Broadcast::make(c, static_cast<int>(n));
    };
    const DType i16 = DType::Int(16, static_cast<int>(n));
    if (!p.isa->centred) {
      if (p.x_shift == 0) return x;
      return Expr(cast(p.packed().with_lanes(static_cast<int>(n)), cast(i16, x) + wide(p.x_shift)));
    }
    Expr zp = n == 1 ? x_zp : Broadcast::make(x_zp, static_cast<int>(n));
    return Expr(cast(i16, x) - zp);
  };
  std::vector<Stmt> phases;
  for (int64_t ph = 0; ph < p.phases; ++ph) {
    int64_t row_phase = p.RowPhase(ph), col_phase = p.ColPhase(ph);
    auto src_col = [&](int64_t c) { return c * p.col_step + col_phase - p.pad_col; };
    int64_t left = 0, right = 0;  // columns [left, right) read the image
    while (left < p.wide && src_col(left) < 0) ++left;
    right = left;
    while (right < p.wide && src_col(right) < p.in_w) ++right;
    const int64_t gc = p.group_channels;
    Var r("r"), last("r_last");
    Expr src_row, row_base;
    auto fill = [&](int64_t from, int64_t to, std::vector<Stmt>* body) {
      for (int64_t b = from * gc; b < to * gc; b += 64) {
        int64_t n = std::min<int64_t>(64, to * gc - b);
        body->push_back(Store::make(out, splat(n), lanes(row_base + b, 1, n)));
      }
    };
    // Row r's first `columns` packed pixels (all of them but in the plane's last, partial row).
    auto row = [&](const Var& rv, int64_t columns) {
      src_row = rv * p.row_step + (row_phase - p.pad_row);
      row_base = out_offset + (ph * p.plane + rv * p.wide) * gc;
      std::vector<Stmt> copy, blank;
      int64_t l = std::min(left, columns), rt = std::min(right, columns);
      fill(0, l, &copy);
      fill(std::max(rt, l), columns, &copy);
      for (int64_t c0 = l, n = 0; c0 < rt; c0 += n) {
        // Power-of-two pieces (14 pixels: 8 + 4 + 2): the LLVM backend writes a piece's
        // group_channels strided stores as one interleaved store only then; other widths
        // were stored byte by byte (14x14 maps: a quarter of a 1x1 conv's time was packing).
        n = std::min<int64_t>(kCopyPixels, rt - c0);
        while (n & (n - 1)) n &= n - 1;
        for (int64_t ci = 0; ci < gc; ++ci) {
          Expr src = x_offset + (ci * p.in_h + src_row) * p.in_w + src_col(c0);
          Expr value = ci < channels ? packed(Load::make(xb, lanes(src, p.col_step, n)), n) : splat(n);
          copy.push_back(Store::make(out, value, lanes(row_base + c0 * gc + ci, gc, n)));
        }
      }
      fill(0, columns, &blank);
      Expr inside = rv < p.valid_rows && src_row >= I(0) && src_row < I(p.in_h);
      return IfThenElse::make(inside, Seq::make(copy), Seq::make(blank));
    };
    phases.push_back(For::make(r, I(0), I(p.plane / p.wide), ForKind::kSerial, row(r, p.wide)));
    if (p.plane % p.wide != 0) phases.push_back(LetStmt::make(last, I(p.plane / p.wide), row(last, p.plane % p.wide)));
  }
  return Seq::make(phases);
}

// The packing tile: one channel group, or (`all_groups`: the channels are not whole
// groups) every group of an image, the last one's missing channels the zero point.
ir::Stmt LowerPackTile(const VnniPlan& p, const ir::Buffer& xb, const Expr& x_offset, const ir::Buffer& out,
                       const Expr& out_offset, const Expr& pad, const Expr& x_zp, bool all_groups) {
  using namespace ir;  // NOLINT
  const int64_t gc = p.group_channels;
  if (!all_groups) return PackGroup(p, xb, x_offset, out, out_offset, pad, x_zp, gc);
  auto group = [&](const Expr& g, int64_t channels) {
    return PackGroup(p, xb, x_offset + g * (gc * p.in_h * p.in_w), out, out_offset + g * (p.phases * p.plane * gc), pad,
                     x_zp, channels);
  };
  std::vector<Stmt> body;
  Var g("g");
  int64_t whole = p.c / gc;
  if (whole > 0) body.push_back(For::make(g, I(0), I(whole), ForKind::kSerial, group(g, gc)));
  if (p.c % gc != 0) body.push_back(group(I(whole), p.c % gc));
  return Seq::make(body);
}

bool IsInt8Type(ir::DType t) { return t == kU8 || t == kS8; }

bool ZeroPointsAllZero(const graph::Tensor* t) {
  for (int64_t i = 0; i < t->numel(); ++i)
    if (t->GetInt(i) != 0) return false;
  return true;
}

}  // namespace

Tensor VnniIntegerConv(const OpContext& ctx, const VnniConvInputs& in, const TileEpilogue& epilogue,
                       const std::string& name) {
  const vnni::Isa* isa = vnni::PickIsa(ctx.target());
  if (isa == nullptr) return Tensor();
  const Tensor& x = ctx.input(in.x);
  const graph::Tensor* wc = ctx.constant(in.w);
  ir::DType wt = ctx.input(in.w).dtype();
  // vpdpbusd multiplies uint8 by int8, sdot int8 by int8: 8-bit activations of the other
  // type are packed shifted (Isa::ShiftFrom); centred int16 operands take either 8-bit type.
  if (wc == nullptr || !IsInt8Type(x.dtype()) || (isa->centred ? !IsInt8Type(wt) : wt != kS8)) return Tensor();
  int64_t groups = ctx.attrs().GetInt("group", 1);
  bool depthwise = groups != 1;
  const graph::Tensor* wz = nullptr;
  if (ctx.has_input(in.w_zp)) {
    wz = ctx.constant(in.w_zp);
    // vpdpbusd needs symmetric weights; centred operands and the depthwise widening
    // products subtract the zero points.
    if (wz == nullptr || (!isa->centred && !depthwise && !ZeroPointsAllZero(wz))) return Tensor();
  }
  int64_t x_zp = 0;
  if (ctx.has_input(in.x_zp)) {
    const graph::Tensor* xz = ctx.constant(in.x_zp);
    if (xz == nullptr || xz->numel() != 1) return Tensor();
    x_zp = xz->GetInt(0);
  }
  graph::Shape xs = StaticShape(x), ws = StaticShape(ctx.input(in.w));
  if (xs.size() != 4 || ws.size() != 4) return Tensor();
  if (depthwise ? (groups != xs[1] || ws[0] != xs[1] || ws[1] != 1) : ws[1] != xs[1]) return Tensor();
  graph::WindowGeometry g = graph::ComputeWindow(ctx.node(), xs, {ws[2], ws[3]});
  VnniPlan p;
  p.isa = isa;
  p.x_shift = isa->ShiftFrom(x.dtype());
  p.n = xs[0];
  p.c = xs[1];
  p.depthwise = depthwise;
  p.group_channels = depthwise ? 1 : isa->group;
  p.c4 = (p.c + p.group_channels - 1) / p.group_channels;
  p.oc = ws[0];
  p.kh = ws[2];
  p.kw = ws[3];
  p.oh = g.out[0];
  p.ow = g.out[1];
  p.one_by_one = p.kh == 1 && p.kw == 1;
  // KxK: the padded input split into stride phases, each a plane of Hs x Ws pixels, so
  // output pixel (oh, ow) under tap (kh, kw) reads phase pixel (oh + kh*dh/sh, ow + kw*dw/sw).
  int64_t hp = xs[2] + g.pad_begin[0] + g.pad_end[0], wpad = xs[3] + g.pad_begin[1] + g.pad_end[1];
  if (!p.one_by_one) {
    p.sh = g.strides[0];
    p.sw = g.strides[1];
    p.dh = g.dilations[0];
    p.dw = g.dilations[1];
    p.phases = p.sh * p.sw;
  }
  int64_t hs = (hp + p.sh - 1) / p.sh;
  p.wide = p.one_by_one ? p.ow : (wpad + p.sw - 1) / p.sw;
  // The epilogue's column tile (see the schedule): its whole tiles reach column Wp - 1,
  // so the rows it reads are contiguous in the wide plane and cover whole pixel tiles.
  auto column_tile = [&](int64_t wide) {
    int64_t tile = wide, overhang = INT64_MAX;
    for (int64_t f : {int64_t{16}, int64_t{8}}) {
      int64_t reach = (p.ow + f - 1) / f * f;
      if (reach >= wide && reach - wide < overhang) {
        tile = f;
        overhang = reach - wide;
      }
    }
    return tile;
  };
  // Planes without junk columns (wide == OW) whose rows are not whole 16-pixel vectors but
  // whose pixels are: the output is written 16 pixels per vector across rows (see the schedule).
  auto flat_rows = [&](int64_t wide) { return wide == p.ow && p.ow % 16 != 0 && p.oh * p.ow % 16 == 0; };
  // The pixels the output reads from rows of `wide` pixels.
  auto needed_pixels = [&](int64_t wide, int64_t tile) {
    if (flat_rows(wide)) return p.oh * p.ow;
    return std::max((p.oh - 1) * wide + (p.ow + tile - 1) / tile * tile, p.oh * wide);
  };
  // Accumulators, pixel vectors and the weight broadcast within the registers: up to 4
  // pixel vectors with 32 registers. With 16 (AVX2), vpmaddwd's product needs a register
  // of its own before vpaddd adds it: 12 accumulators + 3 pixel vectors + the broadcast +
  // the product do not fit (a 4x3 tile spills accumulators to the stack in the inner loop),
  // so at most 2 pixel vectors (6 channels x 2: 12 + 2 + 2 registers), and 1 (8 channels)
  // for a 1x1 conv on a map under 28x28. (On the noisy Zen 3 VM whole-model ResNet-50
  // timings did not separate 4x3, 4x2, 6x2 and 1 vector for every 1x1 conv: all within 5%,
  // as vpmaddwd issues one per cycle there, the FMA's 16 products a cycle.) Per kernel, on
  // an AVX2 EPYC (min of 3 interleaved profiles, MobileNetV2 and ResNet-50 int8), 2 vectors
  // ran the 1x1 convs of 112x112 to 28x28 maps 2-11% faster (pixel tiles outer: each
  // weight broadcast serves 2 vectors) and those of 14x14 and 7x7 maps 2-14% slower.
  const bool small_map = p.oh * p.ow < 28 * 28;
  const int64_t most_vectors = isa->registers >= 32 ? 4 : (p.one_by_one && small_map ? 1 : 2);
  // Knobs (LowerGroupOptions::int8_*): a pixel tile is taken when the output reads more than one.
  const int64_t knob_vectors = ctx.options().int8_pixel_vectors;
  // The epilogue's column tile, the pixel vectors per register tile and the pixels computed
  // (a whole number of tiles) for planes of rows of `wide` pixels; no vectors when the
  // output fits one vector.
  struct PixelLayout {
    int64_t col_tile = 0, vectors = 0, pixels = 0;
  };
  auto layout_for = [&](int64_t wide) {
    PixelLayout l;
    l.col_tile = column_tile(wide);
    int64_t needed = needed_pixels(wide, l.col_tile);
    l.vectors = PickPixelVectors(*isa, p.depthwise, needed, p.lanes(), most_vectors, p.oc);
    if (l.vectors == 0) return l;
    if (knob_vectors > 0 && needed > knob_vectors * p.lanes()) l.vectors = knob_vectors;
    int64_t block = l.vectors * p.lanes();
    l.pixels = (needed + block - 1) / block * block;
    return l;
  };
  const PixelLayout rows = layout_for(p.wide);
  if (rows.vectors == 0) return Tensor();
  p.col_tile = rows.col_tile;
  p.px_vectors = rows.vectors;
  p.pixels = rows.pixels;
  p.plane = p.pixels + (p.kh - 1) * p.dh / p.sh * p.wide + (p.kw - 1) * p.dw / p.sw;
  p.in_h = xs[2];
  p.in_w = xs[3];
  p.row_step = p.one_by_one ? g.strides[0] : p.sh;
  p.col_step = p.one_by_one ? g.strides[1] : p.sw;
  p.pad_row = g.pad_begin[0];
  p.pad_col = g.pad_begin[1];
  p.valid_rows = p.one_by_one ? p.oh : hs;
  // Tap planes (im2col) instead of wide rows where they compute fewer pixels and the packed
  // taps fit 1 MiB (the L2 they are read from): on small maps the wide rows' padding columns
  // and the rounding to whole tiles dominate (ResNet-50's 7x7 3x3 convs: rows of 9 for 7
  // columns, 96 pixels computed for 49; tap planes compute 64). With 32 registers (where the
  // cost model of PickPixelVectors applies) only for at least a fifth fewer pixels; with 16
  // (AVX2) for any saving: ResNet-50 int8's 7x7 3x3 convs ran 1.27x faster so (56 pixels for
  // 64), its 14x14 ones 5% (208 for 224), min of 3 interleaved profiles on an AVX2 EPYC. Not
  // for depthwise convs (their planes are per channel).
  if (!p.one_by_one && !depthwise) {
    const PixelLayout taps = layout_for(p.ow);
    int64_t bytes = p.c4 * p.group_channels * p.kh * p.kw * taps.pixels * p.packed().bytes();
    const bool fewer = isa->registers >= 32 ? taps.pixels * 5 <= p.pixels * 4 : taps.pixels < p.pixels;
    if (taps.vectors > 0 && fewer && bytes <= (int64_t{1} << 20)) {
      p.tap_planes = true;
      p.phases = p.kh * p.kw;
      p.wide = p.ow;
      p.col_tile = taps.col_tile;
      p.px_vectors = taps.vectors;
      p.pixels = taps.pixels;
      p.plane = taps.pixels;
      p.row_step = g.strides[0];
      p.col_step = g.strides[1];
      p.valid_rows = p.oh;
    }
  }
  p.flat_rows = flat_rows(p.wide);
  int64_t block = p.px_vectors * p.lanes();
  int64_t default_block = DefaultChannelBlock(*isa, p.px_vectors, p.oc);
  int64_t oc_block = ctx.options().int8_oc_block > 0 ? ctx.options().int8_oc_block : default_block;
  p.oc_block = std::min<int64_t>(p.oc, oc_block);  // one tile: all channels
  if (depthwise) {
    // Each output channel reads its own input plane: the block divides the channels
    // (no padded channel would have a plane to read).
    if (ctx.options().int8_oc_block <= 0 || p.oc % p.oc_block != 0) p.oc_block = p.oc % 4 == 0 ? 4 : p.oc % 2 == 0 ? 2 : 1;
  }
  p.oc_padded = (p.oc + p.oc_block - 1) / p.oc_block * p.oc_block;
  p.pixels_outer = PixelTilesOuter(ctx.options().int8_tile_order, p.one_by_one, depthwise);

  // Weights: wp[oc][kh][kw][c/g][c%g] (g the group: 4 int8 for VNNI, 2 int16 minus the
  // zero point when centred), zero where oc or c is padding (depthwise: wp[oc][kh][kw],
  // int32, minus the weight's zero point); unless centred, the zero-point compensation
  // x_zp * sum(w[oc]) per output channel.
  const int64_t wg = p.group_channels;
  graph::Tensor packed = depthwise ? graph::Tensor(kI32, {p.oc, p.kh, p.kw})
                                   : graph::Tensor(isa->b_type, {p.oc_padded, p.kh, p.kw, p.c4, wg});
  graph::Tensor compensation(kI32, {p.oc});
  int64_t wz_count = wz == nullptr ? 0 : wz->numel();
  for (int64_t o = 0; o < p.oc; ++o) {
    int64_t sum = 0;
    int64_t w_zp = wz_count == 0 ? 0 : wz->GetInt(wz_count == 1 ? 0 : o);
    for (int64_t c = 0; c < (depthwise ? 1 : p.c); ++c) {
      for (int64_t i = 0; i < p.kh; ++i) {
        for (int64_t j = 0; j < p.kw; ++j) {
          int64_t v = wc->GetInt(((o * (depthwise ? 1 : p.c) + c) * p.kh + i) * p.kw + j) - w_zp;
          int64_t at = (((o * p.kh + i) * p.kw + j) * p.c4 + c / wg) * wg + c % wg;
          if (depthwise) {
            packed.mutable_data<int32_t>()[(o * p.kh + i) * p.kw + j] = static_cast<int32_t>(v);
          } else if (isa->b_type == kI16) {
            packed.mutable_data<int16_t>()[at] = static_cast<int16_t>(v);
          } else {
            packed.mutable_data<int8_t>()[at] = static_cast<int8_t>(v);
          }
          sum += v;
        }
      }
    }
    compensation.mutable_data<int32_t>()[o] = static_cast<int32_t>((x_zp + p.x_shift) * sum);
  }
  Tensor wp = ctx.AddConstant(name + "_w_vnni", packed);
  Tensor comp = isa->centred ? Tensor() : ctx.AddConstant(name + "_zp_compensation", compensation);

  // Activations: xp[n][c/g][phase][q][c%g] (uint8, or int16 minus the zero point when
  // centred; depthwise: xp[n][c][phase][q][0]), the zero point (0 when centred) where q or
  // c is padding.
  // When the input is the kernel's input buffer the packing is tensorized (LowerPackTile):
  // one channel group per tile, or one image per tile when the channels are not whole
  // groups; otherwise (an input computed inside the group) it is an elementwise stage.
  Expr zp = ir::make_const(x.dtype(), static_cast<double>(x_zp));
  Expr pad = ir::make_const(p.packed(), isa->centred ? 0.0 : static_cast<double>(x_zp + p.x_shift));
  Expr zp16 = ir::make_const(kI16, static_cast<double>(x_zp));
  std::vector<int64_t> spatial{xs[2], xs[3]};
  const int64_t gc = p.group_channels;
  bool pack_by_rows = x.op()->kind == te::OpKind::kPlaceholder;
  bool all_groups = p.c % gc != 0;  // one packing tile per image, the ragged group's missing channels zp
  auto pack_body = [&](const Tensor& xt, const std::vector<Var>& i) {
    Expr c = i[1] * gc + i[4];
    Expr row = ir::floordiv(i[3], I(p.wide)) * p.row_step + p.RowPhase(i[2]) - p.pad_row;
    Expr col = ir::floormod(i[3], I(p.wide)) * p.col_step + p.ColPhase(i[2]) - p.pad_col;
    Expr valid = i[3] < p.valid_rows * p.wide;
    if (all_groups) valid = c < p.c && valid;
    Expr read = PaddedRead(xt, {i[0], all_groups ? ir::min(c, I(p.c - 1)) : c, row, col}, 2, spatial, zp);
    if (isa->centred) read = ir::cast(kI16, read) - zp16;
    if (p.x_shift != 0) {
      read = ir::cast(p.packed(), ir::cast(kI16, read) + ir::make_const(kI16, static_cast<double>(p.x_shift)));
    }
    return ir::select(valid, read, pad);
  };
  Tensor xp = te::compute(ToExprShape({p.n, p.c4, p.phases, p.plane, gc}),
                          [&](const std::vector<Var>& i) { return pack_body(x, i); }, name + "_x_vnni", tag::kOpaque);
  std::shared_ptr<te::TensorIntrin> pack_intrin;
  if (pack_by_rows) {
    Tensor xd = te::placeholder(x.shape(), x.dtype(), name + "_x_rows");
    pack_intrin = std::make_shared<te::TensorIntrin>();
    pack_intrin->name = "vnni_pack_rows";
    pack_intrin->desc = te::compute(ToExprShape({1, all_groups ? p.c4 : 1, p.phases, p.plane, gc}),
                                    [&](const std::vector<Var>& i) { return pack_body(xd, i); }, name + "_pack_tile");
    VnniPlan plan = p;
    pack_intrin->lower = [plan, pad, zp16, all_groups](const std::vector<ir::Buffer>& inputs,
                                                       const std::vector<Expr>& offsets, const ir::Buffer& out,
                                                       const Expr& out_offset) {
      return LowerPackTile(plan, inputs[0], offsets[0], out, out_offset, pad, zp16, all_groups);
    };
  }

  // The dot products over the wide pixels: accv[n][oc][p].
  // (depthwise: accv[n][oc][p] = sum over the taps of xp[n][oc] times the centered weight).
  auto dot_body = [&](const Tensor& xt, const Tensor& wt, const Expr& n, const Expr& oc, const Expr& px,
                      const std::vector<ir::IterVar>& r) {
    if (p.depthwise) {
      Expr q = px + p.TapOffset(r[0], r[1]);
      return te::sum(ir::cast(kI32, xt(n, oc, p.Phase(r[0], r[1]), q, I(0))) * wt(oc, r[0], r[1]), r);
    }
    Expr q = px + p.TapOffset(r[1], r[2]);
    return te::sum(ir::cast(kI32, xt(n, r[0], p.Phase(r[1], r[2]), q, r[3])) *
                       ir::cast(kI32, wt(oc, r[1], r[2], r[0], r[3])),
                   r);
  };
  auto reduce_axes = [&] {
    if (p.depthwise)
      return std::vector<ir::IterVar>{te::reduce_axis({I(0), I(p.kh)}, "rkh"), te::reduce_axis({I(0), I(p.kw)}, "rkw")};
    return std::vector<ir::IterVar>{te::reduce_axis({I(0), I(p.c4)}, "rc4"), te::reduce_axis({I(0), I(p.kh)}, "rkh"),
                                    te::reduce_axis({I(0), I(p.kw)}, "rkw"), te::reduce_axis({I(0), I(wg)}, "rc")};
  };
  std::vector<ir::IterVar> r = reduce_axes();
  // Blocked as [n][oc block][pixel block][oc in block][pixel in block], so that what
  // the consumer reads (floordiv/floormod of its oc and pixel) covers whole tiles and
  // bound inference computes every tile unguarded.
  Tensor accv = te::compute(ToExprShape({p.n, p.oc_padded / p.oc_block, p.pixels / block, p.oc_block, block}),
                            [&](const std::vector<Var>& o) {
    return dot_body(xp, wp, o[0], o[1] * p.oc_block + o[3], o[2] * block + o[4], r);
  }, name + "_vnni", tag::kConv2dNCHW);

  // The intrinsic: one register tile [1, oc_block, lanes * px_vectors] over the whole reduction.
  Tensor xd = te::placeholder(xp.shape(), p.packed(), name + "_x_tile");
  Tensor wd = te::placeholder(wp.shape(), wp.dtype(), name + "_w_tile");
  std::vector<ir::IterVar> rd = reduce_axes();
  Tensor desc = te::compute(ToExprShape({1, 1, 1, p.oc_block, block}), [&](const std::vector<Var>& o) {
    return dot_body(xd, wd, o[0], o[1] * p.oc_block + o[3], o[2] * block + o[4], rd);
  }, name + "_tile");
  auto intrin = std::make_shared<te::TensorIntrin>();
  intrin->name = depthwise ? "int8_depthwise_tile" : "vnni_conv_tile";
  intrin->desc = desc;
  VnniPlan plan = p;
  // Which of the intrinsic's inputs (in the order of desc's input tensors) is the activations.
  const int x_input = desc.op()->InputTensors()[0].same_as(xd) ? 0 : 1;
  intrin->lower = [plan, x_input](const std::vector<ir::Buffer>& inputs, const std::vector<Expr>& offsets,
                                  const ir::Buffer& out, const Expr& out_offset) {
    using namespace ir;  // NOLINT
    const int xi = x_input, wi = 1 - xi;
    const Buffer &xb = inputs[xi], &wb = inputs[wi];
    const int64_t lanes = plan.lanes(), group = plan.group_channels;
    vnni::RegisterTile acc("vnni_acc", plan.oc_block, plan.px_vectors, lanes);
    auto tile_at = [&](int64_t t, int64_t v) {  // where accumulator (t, v) goes in the tile buffer
      return vnni::Lanes(out_offset + out->FlatIndex({I(0), I(0), I(0), I(t), I(v * lanes)}), lanes);
    };
    std::vector<Stmt> update, store;
    Var c4("c4"), kh("kh"), kw("kw");
    if (plan.depthwise) {
      // Per tap: one widened load of `lanes` pixels of the channel's plane times its weight.
      // With centred int16 planes, pairs of vectors take one load of 2 * lanes pixels
      // instead, multiplied by vpmaddwd (dot2_i16) against the weight in the low half of
      // each 32-bit lane and against it in the high half: the even pixels' products and the
      // odd pixels', into two accumulators that are stored interleaved (one contiguous
      // store): no widening, and vpmaddwd where there was vpmulld (MobileNetV2 int8's
      // depthwise convs on AVX2).
      const bool pairs = plan.isa->centred && plan.packed() == DType::Int(16);
      const int64_t paired = pairs ? plan.px_vectors / 2 * 2 : 0;
      const DType halves = DType::Int(16, static_cast<int>(2 * lanes));
      for (int64_t t = 0; t < plan.oc_block; ++t) {
        Expr w_scalar = Load::make(wb, cast(DType::Index(), offsets[wi] + wb->FlatIndex({I(t), kh, kw})));
        Expr w = Broadcast::make(w_scalar, static_cast<int>(lanes));
        Expr w_low = reinterpret(halves, Broadcast::make(bitwise_and(w_scalar, make_const(DType::Int(32), 65535)),
                                                         static_cast<int>(lanes)));
        Expr w_high = reinterpret(halves, Broadcast::make(w_scalar * make_const(DType::Int(32), 65536),
                                                          static_cast<int>(lanes)));
        for (int64_t v = 0; v < paired; v += 2) {
          Expr q = I(v * lanes) + plan.TapOffset(kh, kw);
          Expr xv = Load::make(xb, vnni::Lanes(offsets[xi] + xb->FlatIndex({I(0), I(t), plan.Phase(kh, kw), q, I(0)}),
                                               2 * lanes));
          update.push_back(acc.Set(t, v, dot2_i16(acc.Value(t, v), xv, w_low)));
          update.push_back(acc.Set(t, v + 1, dot2_i16(acc.Value(t, v + 1), xv, w_high)));
          Expr at = cast(DType::Index(), out_offset + out->FlatIndex({I(0), I(0), I(0), I(t), I(v * lanes)}));
          store.push_back(Store::make(out, acc.Value(t, v), Ramp::make(at, I(2), static_cast<int>(lanes))));
          store.push_back(Store::make(out, acc.Value(t, v + 1), Ramp::make(at + 1, I(2), static_cast<int>(lanes))));
        }
        for (int64_t v = paired; v < plan.px_vectors; ++v) {
          Expr q = I(v * lanes) + plan.TapOffset(kh, kw);
          Expr xv = Load::make(xb, vnni::Lanes(offsets[xi] + xb->FlatIndex({I(0), I(t), plan.Phase(kh, kw), q, I(0)}),
                                               lanes));
          update.push_back(acc.Set(t, v, acc.Value(t, v) + cast(DType::Int(32, static_cast<int>(lanes)), xv) * w));
          store.push_back(Store::make(out, acc.Value(t, v), tile_at(t, v)));
        }
      }
      return acc.Around(
          For::make(kh, 0, plan.kh, ForKind::kSerial, For::make(kw, 0, plan.kw, ForKind::kSerial, Seq::make(update))),
          store);
    }
    for (int64_t t = 0; t < plan.oc_block; ++t) {
      Expr w = Load::make(wb, vnni::Lanes(offsets[wi] + wb->FlatIndex({I(t), kh, kw, c4, I(0)}), group));
      for (int64_t v = 0; v < plan.px_vectors; ++v) {
        Expr q = I(v * lanes) + plan.TapOffset(kh, kw);
        Expr xv = Load::make(xb, vnni::Lanes(offsets[xi] + xb->FlatIndex({I(0), c4, plan.Phase(kh, kw), q, I(0)}),
                                             group * lanes));
        update.push_back(acc.Set(t, v, plan.isa->Dot(acc.Value(t, v), xv, w)));
        store.push_back(Store::make(out, acc.Value(t, v), tile_at(t, v)));
      }
    }
    return acc.Around(For::make(kh, 0, plan.kh, ForKind::kSerial,
                                For::make(kw, 0, plan.kw, ForKind::kSerial,
                                          For::make(c4, 0, plan.c4, ForKind::kSerial, Seq::make(update)))),
                      store);
  };

  // The epilogue at the tile: the accumulator minus the zero-point term, requantised by
  // the caller's epilogue, as planes tile_out[n][oc][p] over the wide pixels (computed
  // tile by tile, see the schedule), so that the output's rows are contiguous in it;
  // padded channels read the last channel's parameters (their values are never read).
  auto tile_body = [&](const Expr& n, const Expr& oc, const Expr& px) {
    Expr channel = ir::min(oc, I(p.oc - 1));
    Expr v = accv(n, ir::floordiv(oc, I(p.oc_block)), ir::floordiv(px, I(block)), ir::floormod(oc, I(p.oc_block)),
                  ir::floormod(px, I(block)));
    if (comp.defined()) v = v - comp(channel);
    return epilogue ? epilogue(v, channel) : v;
  };
  // When the planes hold exactly the output (no padded channels, no junk columns, pixels in
  // whole tiles: 1x1 convs of 56x56 or 112x112 maps), the tile loop writes the output itself in
  // NCHW; otherwise the output is a copy of the planes' valid pixels. The copy was a second pass
  // over the output: MobileNetV2 int8's 112x112 1x1 conv wrote 1.2 MB twice and read it once.
  const bool in_place = p.oc_padded == p.oc && p.wide == p.ow && p.pixels == p.oh * p.ow;
  Tensor tile_out =
      in_place ? te::compute(ToExprShape({p.n, p.oc, p.oh, p.ow}),
                             [&](const std::vector<Var>& o) { return tile_body(o[0], o[1], o[2] * p.ow + o[3]); },
                             name, tag::kOpaque)
               : te::compute(ToExprShape({p.n, p.oc_padded, p.pixels}),
                             [&](const std::vector<Var>& o) { return tile_body(o[0], o[1], o[2]); }, name + "_tile_out",
                             tag::kOpaque);

  // The output: the planes' valid pixels in NCHW.
  Tensor out = in_place ? tile_out : te::compute(ToExprShape({p.n, p.oc, p.oh, p.ow}), [&](const std::vector<Var>& o) {
    return tile_out(o[0], o[1], o[2] * p.wide + o[3]);
  }, name, tag::kInjective);

  ctx.SetSchedule([plan, xp, accv, tile_out, intrin, pack_intrin](const ScheduleRequest& req) {
    te::Schedule s = req.schedule;
    auto [knobs, parallel] = vnni::ScheduleFlags(req);
    s[xp].compute_root();
    bool tile_per_image = plan.c % plan.group_channels != 0;
    if (pack_intrin && tile_per_image) {
      te::Stage pk = s[xp];
      auto [pno, pni] = pk.split(pk.axis(0), I(1));
      if (parallel) pk.parallel(pno);
      pk.tensorize(pni, *pack_intrin);
    } else if (pack_intrin) {
      te::Stage pk = s[xp];
      auto [pno, pni] = pk.split(pk.axis(0), I(1));
      auto [pgo, pgi] = pk.split(pk.axis(1), I(1));
      pk.reorder({pno, pgo, pni, pgi, pk.axis(2), pk.axis(3), pk.axis(4)});
      ir::IterVar groups = FuseRange(pk, {pno, pgo});
      if (parallel) pk.parallel(groups);
      pk.tensorize(pni, *pack_intrin);
    } else {
      ScheduleInjectiveStage(s, xp, *req.target, knobs);
    }
    // The epilogue over tiles: one (n, oc block, pixel block) per iteration, vectorized
    // along the pixels; the register tile is computed inside it, in a local buffer.
    te::Stage e = s[tile_out];
    ir::IterVar pixels = tile_out.ndim() == 4 ? FuseRange(e, {e.axis(2), e.axis(3)}) : e.axis(2);  // in place: rows
    auto [oco, oci] = e.split(e.axis(1), I(plan.oc_block));
    auto [po, pi] = e.split(pixels, I(plan.px_vectors * plan.lanes()));
    ir::IterVar first = plan.pixels_outer ? po : oco, second = plan.pixels_outer ? oco : po;
    std::vector<ir::IterVar> tile_loops{e.axis(0), first, second};
    if (int64_t parts = ChannelParts(plan); parts > 1) {
      auto [parts_outer, blocks_inner] = e.split_by_nparts(oco, I(parts));
      tile_loops = {e.axis(0), parts_outer, po, blocks_inner};
    }
    std::vector<ir::IterVar> order = tile_loops;
    order.push_back(oci);
    order.push_back(pi);
    e.reorder(order);
    ir::IterVar tiles = FuseRange(e, tile_loops);
    if (parallel) e.parallel(tiles);
    auto [vo, vi] = e.split(pi, I(plan.lanes()));
    e.vectorize(vi);
    // At the tile loop the accumulator's region is one tile: its loops are the
    // intrinsic's (the three outer ones of extent 1).
    vnni::ComputeTileAt(s, accv, e, tiles, *intrin);
    // Outputs in the conv's shape read the accumulator by whole column tiles (the
    // template sized the wide plane for that); others get the generic schedule.
    graph::Shape conv_shape{plan.n, plan.oc, plan.oh, plan.ow};
    for (const Tensor& out : req.outputs) {
      if (out.same_as(accv) || out.same_as(tile_out)) continue;
      if (StaticShape(out) != conv_shape) {
        ScheduleInjectiveStage(s, out, *req.target, knobs);
        continue;
      }
      te::Stage c = s[out];
      if (plan.flat_rows) {
        // Planes without junk columns (1x1 convs, tap planes) hold the output's rows back
        // to back: 16 pixels per vector across rows, where rows of 56 took 8-lane vectors
        // (and rows of 28, two 16-lane vectors for 28 pixels) for the fused consumers
        // (a residual block's dequantize, add, relu and quantize).
        auto [po, pi] = c.split(FuseRange(c, {c.axis(2), c.axis(3)}), I(16));
        ir::IterVar outer = FuseRange(c, {c.axis(0), c.axis(1)});
        if (parallel) c.parallel(outer);
        c.vectorize(pi);
        continue;
      }
      auto [wo, wi] = c.split(c.axis(3), I(plan.col_tile));
      ir::IterVar outer = FuseRange(c, {c.axis(0), c.axis(1)});
      if (parallel) c.parallel(outer);
      if (plan.col_tile <= 16) c.vectorize(wi);
    }
    std::ostringstream text;
    if (plan.depthwise) {
      text << "depthwise conv int8 (widened " << plan.lanes() << "-pixel vectors" << (plan.isa->centred ? ", centred" : "")
           << ")";
    } else {
      text << "conv int8 " << plan.isa->name << " (" << plan.isa->instruction << (plan.isa->centred ? ", centred int16" : "")
           << ")";
    }
    text << " oc_block=" << plan.oc_block << " pixel_vectors=" << plan.px_vectors
         << (plan.tap_planes ? " tap_planes=" : " wide_row=") << (plan.tap_planes ? plan.phases : plan.wide)
         << (pack_intrin ? ", packed by rows" : "") << ", epilogue at the register tile"
         << (plan.pixels_outer ? ", pixel tiles outer" : "");
    return text.str();
  }, accv);
  return out;
}

}  // namespace ops
}  // namespace agate
