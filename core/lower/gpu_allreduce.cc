#include "core/lower/gpu_allreduce.h"

#include <vector>

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/ir/substitute.h"
#include "core/lower/gpu_bind.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

// The combine step with its shuffles' lane mask and width filled in.
class ShuffleFiller : public IRMutator {
 public:
  ShuffleFiller(int64_t mask, int64_t width) : mask_(mask), width_(width) {}
  Expr VisitExpr_(const Call* op, const Expr& self) override {
    if (op->op != CallOp::kShuffleXor) return IRMutator::VisitExpr_(op, self);
    return Call::make(op->dtype, op->op,
                      {VisitExpr(op->args[0]), Expr(static_cast<int>(mask_)), Expr(static_cast<int>(width_))});
  }

 private:
  int64_t mask_, width_;
};

// The accumulators a combine step shuffles: the buffers of `shuffle_xor(acc[0], ...)`.
std::vector<Buffer> Accumulators(const Stmt& step) {
  std::vector<Buffer> out;
  PostOrderVisit(step, [&](const Expr* e, const Stmt*) {
    const Call* call = e ? e->as<Call>() : nullptr;
    if (!call || call->op != CallOp::kShuffleXor) return;
    const Load* load = call->args[0].as<Load>();
    AGATE_CHECK(load && is_zero(load->index)) << "thread_allreduce shuffles " << call->args[0]
                                              << ", not an accumulator";
    for (const Buffer& b : out)
      if (b->data.same_as(load->buffer->data)) return;
    out.push_back(load->buffer);
  });
  return out;
}

class Expander : public IRMutator {
 public:
  Expander(LaunchParts* parts, int warp) : parts_(parts), warp_(warp) {}

  Stmt VisitStmt_(const AttrStmt* op, const Stmt& self) override {
    if (op->key != attr::kThreadAllReduce) return IRMutator::VisitStmt_(op, self);
    int64_t n = 0;
    AGATE_CHECK(is_const_int(op->value, &n) && op->node_name == "threadIdx.x") << "thread_allreduce marker " << self;
    AGATE_REQUIRE(n >= 1 && (n & (n - 1)) == 0 && n <= 1024, kIllegalSchedule)
        << "kernel " << parts_->name << ": a reduction across " << n << " threads; it needs a power of two up to 1024";
    AGATE_REQUIRE(n == parts_->block[0], kIllegalSchedule)
        << "kernel " << parts_->name << ": a reduction across " << n << " threads of threadIdx.x in a launch of "
        << parts_->block[0] << " threads along x; give every stage of the kernel the same threadIdx.x extent";
    const Stmt& step = op->body;
    std::vector<Stmt> out;
    int64_t width = std::min<int64_t>(n, warp_);
    Butterfly(step, width, &out);
    if (n > warp_) SecondStage(step, n, &out);
    return Seq::make(out);
  }

 private:
  void Butterfly(const Stmt& step, int64_t width, std::vector<Stmt>* out) {
    for (int64_t mask = width / 2; mask >= 1; mask /= 2) out->push_back(ShuffleFiller(mask, width).VisitStmt(step));
  }

  // Lane 0 of every warp publishes its warp's result; each thread reads back the
  // partials of its reduction (one per warp, repeated across its lanes) and
  // combines them with a butterfly over the warps.
  void SecondStage(const Stmt& step, int64_t n, std::vector<Stmt>* out) {
    int64_t warps = n / warp_;
    int64_t groups = parts_->threads_per_block() / n;
    Expr tx = parts_->thread_vars[0];
    Expr group = Expr(int64_t{0});
    if (parts_->thread_vars[1].defined()) group = group + parts_->thread_vars[1];
    if (parts_->thread_vars[2].defined()) group = group + parts_->thread_vars[2] * Expr(parts_->block[1]);
    Expr base = group * Expr(warps);
    std::vector<Stmt> publish, read;
    for (const Buffer& acc : Accumulators(step)) {
      Buffer partials = CreateBuffer(acc->name + ".warps", acc->dtype, {Expr(groups * warps)}, MemoryScope::kShared);
      parts_->shared.push_back({partials, groups * warps, -1});
      Expr own = Load::make(acc, Expr(int64_t{0}));
      publish.push_back(Store::make(partials, own, base + floordiv(tx, Expr(int64_t{warp_}))));
      read.push_back(Store::make(acc, Load::make(partials, base + floormod(tx, Expr(warps))), Expr(int64_t{0})));
    }
    out->push_back(IfThenElse::make(floormod(tx, Expr(int64_t{warp_})) == Expr(int64_t{0}), Seq::make(publish)));
    out->push_back(Seq::make(read));
    Butterfly(step, warps, out);
  }

  LaunchParts* parts_;
  int64_t warp_;
};

}  // namespace

Stmt LowerThreadAllReduce(const Stmt& body, int warp_size) {
  return MapLaunches(body, [&](LaunchParts* parts) { parts->code = Expander(parts, warp_size).VisitStmt(parts->code); });
}

}  // namespace lower
}  // namespace agate
