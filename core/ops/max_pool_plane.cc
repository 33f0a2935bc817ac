#include "core/ops/max_pool_plane.h"

#include <algorithm>
#include <vector>

#include "core/support/error.h"

namespace agate {
namespace ops {

namespace {

using namespace ir;  // NOLINT

// One spatial axis of the window: which taps of output position o read inside the input.
struct WindowAxis {
  int64_t in = 0, out = 0, kernel = 0, stride = 1, dilation = 1, pad = 0;

  bool Inside(int64_t o, int64_t k) const {
    int64_t i = o * stride + k * dilation - pad;
    return i >= 0 && i < in;
  }
  std::vector<int64_t> TapsInside(int64_t o) const {
    std::vector<int64_t> taps;
    for (int64_t k = 0; k < kernel; ++k)
      if (Inside(o, k)) taps.push_back(k);
    return taps;
  }
  std::vector<int64_t> AllTaps() const {
    std::vector<int64_t> taps(kernel);
    for (int64_t k = 0; k < kernel; ++k) taps[k] = k;
    return taps;
  }
  bool Interior(int64_t o) const { return Inside(o, 0) && Inside(o, kernel - 1); }
  // The positions whose every tap reads inside: [first, last), contiguous since both tests are
  // monotone in o (empty: first == last).
  std::pair<int64_t, int64_t> InteriorRange() const {
    int64_t first = 0;
    while (first < out && !Interior(first)) ++first;
    int64_t last = first;
    while (last < out && Interior(last)) ++last;
    return {first, last};
  }
  int64_t BorderPositions() const {
    auto [first, last] = InteriorRange();
    return out - (last - first);
  }
};

WindowAxis Axis(const graph::WindowGeometry& g, size_t d) {
  return WindowAxis{g.in[d], g.out[d], g.kernel[d], g.strides[d], g.dilations[d], g.pad_begin[d]};
}

Expr Index(int64_t v) { return Expr(v); }

class PlaneEmitter {
 public:
  PlaneEmitter(const graph::WindowGeometry& g, const Buffer& x, const Expr& x_offset, const Buffer& out,
               const Expr& out_offset, const Expr& empty, int max_lanes)
      : rows_(Axis(g, 0)), cols_(Axis(g, 1)), x_(x), x_offset_(cast(DType::Index(), x_offset)), out_(out),
        out_offset_(cast(DType::Index(), out_offset)), empty_(empty), max_lanes_(std::max(max_lanes, 1)) {}

  Stmt Plane() {
    auto [first, last] = rows_.InteriorRange();
    std::vector<Stmt> body;
    for (int64_t oh = 0; oh < first; ++oh) body.push_back(Row(Index(oh), rows_.TapsInside(oh)));
    if (last > first) {
      Var oh("oh", DType::Index());
      body.push_back(For::make(oh, Index(first), Index(last - first), ForKind::kSerial, Row(oh, rows_.AllTaps())));
    }
    for (int64_t oh = std::max(first, last); oh < rows_.out; ++oh) body.push_back(Row(Index(oh), rows_.TapsInside(oh)));
    return Seq::make(body);
  }

 private:
  // Output row `oh` (its window rows `row_taps` inside the input): border columns one at a
  // time with their inside taps, the interior columns as whole vectors.
  Stmt Row(const Expr& oh, const std::vector<int64_t>& row_taps) {
    auto [first, last] = cols_.InteriorRange();
    std::vector<Stmt> row;
    for (int64_t ow = 0; ow < first; ++ow) row.push_back(Piece(oh, row_taps, Index(ow), 1, cols_.TapsInside(ow)));
    if (last > first) {
      const std::vector<int64_t> all = cols_.AllTaps();
      int64_t span = last - first, lanes = 1;
      while (lanes * 2 <= std::min<int64_t>(span, max_lanes_)) lanes *= 2;
      int64_t whole = span / lanes;
      if (whole == 1) {
        row.push_back(Piece(oh, row_taps, Index(first), lanes, all));
      } else {
        Var j("ow_vector", DType::Index());
        row.push_back(For::make(j, Index(0), Index(whole), ForKind::kSerial,
                                Piece(oh, row_taps, Index(first) + j * Index(lanes), lanes, all)));
      }
      // The rest as one more vector ending at the last interior column, overlapping the one
      // before it: its outputs are written twice with the same values.
      if (span % lanes != 0) row.push_back(Piece(oh, row_taps, Index(last - lanes), lanes, all));
    }
    for (int64_t ow = std::max(first, last); ow < cols_.out; ++ow)
      row.push_back(Piece(oh, row_taps, Index(ow), 1, cols_.TapsInside(ow)));
    return Seq::make(row);
  }

  // `lanes` outputs of row oh from column ow on: the max over the given taps.
  Stmt Piece(const Expr& oh, const std::vector<int64_t>& row_taps, const Expr& ow, int64_t lanes,
             const std::vector<int64_t>& col_taps) {
    Expr acc;
    for (int64_t kh : row_taps) {
      Expr row = oh * Index(rows_.stride) + Index(kh * rows_.dilation - rows_.pad);
      for (int64_t kw : col_taps) {
        Expr col = ow * Index(cols_.stride) + Index(kw * cols_.dilation - cols_.pad);
        Expr index = x_offset_ + row * Index(cols_.in) + col;
        Expr v = Load::make(x_, lanes == 1 ? index : Ramp::make(index, Index(cols_.stride), static_cast<int>(lanes)));
        acc = acc.defined() ? max(acc, v) : v;
      }
    }
    if (!acc.defined()) acc = lanes == 1 ? empty_ : Broadcast::make(empty_, static_cast<int>(lanes));
    Expr at = out_offset_ + oh * Index(cols_.out) + ow;
    return Store::make(out_, acc, lanes == 1 ? at : Ramp::make(at, Index(1), static_cast<int>(lanes)));
  }

  WindowAxis rows_, cols_;
  Buffer x_;
  Expr x_offset_;
  Buffer out_;
  Expr out_offset_;
  Expr empty_;
  int max_lanes_;
};

}  // namespace

bool MaxPoolPlaneApplies(const graph::WindowGeometry& g) {
  if (g.kernel.size() != 2 || g.kernel[0] * g.kernel[1] > kMaxPoolPlaneTaps) return false;
  return Axis(g, 0).BorderPositions() <= kMaxPoolPlaneBorder && Axis(g, 1).BorderPositions() <= kMaxPoolPlaneBorder;
}

Stmt LowerMaxPoolPlane(const graph::WindowGeometry& g, const Buffer& x, const Expr& x_offset, const Buffer& out,
                       const Expr& out_offset, const Expr& empty, int max_lanes) {
  AGATE_CHECK(MaxPoolPlaneApplies(g)) << "LowerMaxPoolPlane: not a 2-D window with few border positions";
  return PlaneEmitter(g, x, x_offset, out, out_offset, empty, max_lanes).Plane();
}

}  // namespace ops
}  // namespace agate
