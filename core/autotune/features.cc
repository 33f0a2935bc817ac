#include "core/autotune/features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/ir/functor.h"
#include "core/ir/stmt.h"

namespace agate {
namespace autotune {
namespace {

float Log2p(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

struct Loop {
  const ir::VarNode* var;
  double extent;
};

struct BufferTraffic {
  double bytes = 0;
  double reuse = 1;      // largest reuse trip count among its accesses
  bool contiguous = false;
};

// One walk over the body, with the stack of enclosing loops.
class Walker {
 public:
  void Stmt(const ir::Stmt& s) {
    if (!s.defined()) return;
    if (const auto* f = s.as<ir::For>()) {
      int64_t extent = 1;
      ir::is_const_int(f->extent, &extent);
      ++loops;
      if (f->for_kind == ir::ForKind::kParallel) {
        ++parallel_loops;
        if (parallel_extent == 0) parallel_extent = static_cast<double>(extent);
      }
      stack_.push_back({f->var.as<ir::VarNode>(), static_cast<double>(std::max<int64_t>(extent, 1))});
      max_depth = std::max<int>(max_depth, static_cast<int>(stack_.size()));
      int stores_before = stores_;
      int loops_before = loops;
      Stmt(f->body);
      if (loops == loops_before) {  // innermost
        ++innermost_loops;
        innermost_extent_sum += stack_.back().extent;
        innermost_stores += stores_ - stores_before;
      }
      stack_.pop_back();
    } else if (const auto* seq = s.as<ir::Seq>()) {
      for (const ir::Stmt& c : seq->stmts) Stmt(c);
    } else if (const auto* let = s.as<ir::LetStmt>()) {
      Stmt(let->body);
    } else if (const auto* attr = s.as<ir::AttrStmt>()) {
      Stmt(attr->body);
    } else if (const auto* branch = s.as<ir::IfThenElse>()) {
      Stmt(branch->then_case);
      Stmt(branch->else_case);
    } else if (const auto* alloc = s.as<ir::Allocate>()) {
      int64_t n = 1;
      double bytes = ir::is_const_int(alloc->NumElements(), &n) ? static_cast<double>(n) * alloc->buffer->dtype.bytes() : 0;
      (alloc->scope == ir::MemoryScope::kWorkspace ? workspace_bytes : local_bytes) += bytes;
      Stmt(alloc->body);
    } else if (const auto* store = s.as<ir::Store>()) {
      ++stores_;
      double trips = Trips();
      Access(store->buffer, store->index, store->value.dtype().lanes(), trips, &store_bytes);
      Expr(store->value, trips);
    } else if (const auto* eval = s.as<ir::Evaluate>()) {
      Expr(eval->value, Trips());
    }
  }

  int loops = 0, parallel_loops = 0, max_depth = 0, innermost_loops = 0;
  double parallel_extent = 0, innermost_extent_sum = 0, innermost_stores = 0;
  double flops = 0, vector_flops = 0, load_bytes = 0, store_bytes = 0, local_bytes = 0, workspace_bytes = 0;
  int max_lanes = 1;
  std::map<std::string, BufferTraffic> traffic;

 private:
  double Trips() const {
    double t = 1;
    for (const Loop& l : stack_) t *= l.extent;
    return t;
  }

  void Expr(const ir::Expr& e, double trips) {
    ir::PostOrderVisit(e, [&](const ir::Expr* x, const ir::Stmt*) {
      if (!x || !x->defined()) return;
      int lanes = x->dtype().lanes();
      max_lanes = std::max(max_lanes, lanes);
      switch (x->kind()) {
        case ir::ExprKind::kAdd: case ir::ExprKind::kSub: case ir::ExprKind::kMul: case ir::ExprKind::kDiv:
        case ir::ExprKind::kMin: case ir::ExprKind::kMax: case ir::ExprKind::kCall:
          if (x->dtype().is_float()) {
            flops += lanes * trips;
            if (lanes > 1) vector_flops += lanes * trips;
          }
          break;
        case ir::ExprKind::kLoad: {
          const auto* load = x->as<ir::Load>();
          Access(load->buffer, load->index, x->dtype().lanes(), trips, &load_bytes);
          break;
        }
        default:
          break;
      }
    });
  }

  void Access(const ir::Buffer& buffer, const ir::Expr& index, int lanes, double trips, double* total) {
    double bytes = static_cast<double>(lanes) * buffer->dtype.element_bytes() * trips;
    *total += bytes;
    max_lanes = std::max(max_lanes, lanes);
    std::set<const ir::VarNode*> used;
    ir::PostOrderVisit(index, [&](const ir::Expr* x, const ir::Stmt*) {
      if (x && x->defined())
        if (const auto* v = x->as<ir::VarNode>()) used.insert(v);
    });
    double reuse = 1;
    for (const Loop& l : stack_)
      if (!used.count(l.var)) reuse *= l.extent;
    BufferTraffic& t = traffic[buffer->name];
    t.bytes += bytes;
    t.reuse = std::max(t.reuse, reuse);
    bool vector = index.as<ir::Ramp>() != nullptr;
    bool inner_walk = !stack_.empty() && used.count(stack_.back().var);
    t.contiguous = t.contiguous || vector || (inner_walk && lanes == 1 && IsUnitStride(index, stack_.back().var));
  }

  // True when `index` is the innermost variable plus terms without it (a + v, v + a, v).
  static bool IsUnitStride(const ir::Expr& index, const ir::VarNode* v) {
    if (index.as<ir::VarNode>() == v) return true;
    if (const auto* add = index.as<ir::Add>()) {
      return (add->a.as<ir::VarNode>() == v && !Uses(add->b, v)) || (add->b.as<ir::VarNode>() == v && !Uses(add->a, v)) ||
             (IsUnitStride(add->a, v) && !Uses(add->b, v)) || (IsUnitStride(add->b, v) && !Uses(add->a, v));
    }
    return false;
  }
  static bool Uses(const ir::Expr& e, const ir::VarNode* v) {
    bool found = false;
    ir::PostOrderVisit(e, [&](const ir::Expr* x, const ir::Stmt*) {
      if (x && x->defined() && x->as<ir::VarNode>() == v) found = true;
    });
    return found;
  }

  std::vector<Loop> stack_;
  int stores_ = 0;
};

float CacheLevel(double bytes) {
  if (bytes <= 48.0 * 1024) return 1;
  if (bytes <= 1024.0 * 1024) return 2;
  if (bytes <= 32.0 * 1024 * 1024) return 3;
  return 4;
}

}  // namespace

std::vector<std::string> FeatureNames() {
  return {"flops", "load_bytes", "store_bytes", "intensity", "parallel_extent", "parallel_loops", "max_lanes",
          "vector_share", "stores_per_body", "loops", "max_depth", "inner_extent", "local_bytes", "workspace_bytes",
          "bytes_per_task", "cache_level", "buffer0_bytes", "buffer0_reuse", "buffer0_contiguous", "buffer1_bytes",
          "buffer1_reuse", "buffer1_contiguous"};
}

std::vector<float> ExtractFeatures(const ir::LoweredFunc& func) {
  Walker w;
  w.Stmt(func.body);
  std::vector<float> f(kNumFeatures, 0.0f);
  double bytes = w.load_bytes + w.store_bytes;
  f[kFlops] = Log2p(w.flops);
  f[kLoadBytes] = Log2p(w.load_bytes);
  f[kStoreBytes] = Log2p(w.store_bytes);
  f[kIntensity] = static_cast<float>(bytes > 0 ? w.flops / bytes : 0);
  f[kParallelExtent] = Log2p(w.parallel_extent);
  f[kParallelLoops] = static_cast<float>(w.parallel_loops);
  f[kMaxLanes] = static_cast<float>(w.max_lanes);
  f[kVectorShare] = static_cast<float>(w.flops > 0 ? w.vector_flops / w.flops : 0);
  f[kStoresPerBody] = static_cast<float>(w.innermost_loops ? w.innermost_stores / w.innermost_loops : 0);
  f[kLoops] = static_cast<float>(w.loops);
  f[kMaxDepth] = static_cast<float>(w.max_depth);
  f[kInnerExtent] = Log2p(w.innermost_loops ? w.innermost_extent_sum / w.innermost_loops : 0);
  f[kLocalBytes] = Log2p(w.local_bytes);
  f[kWorkspaceBytes] = Log2p(w.workspace_bytes);
  double per_task = bytes / std::max(1.0, w.parallel_extent);
  f[kBytesPerTask] = Log2p(per_task);
  f[kCacheLevel] = CacheLevel(per_task);
  std::vector<std::pair<double, std::string>> by_bytes;
  for (const auto& [name, t] : w.traffic) by_bytes.push_back({t.bytes, name});
  std::sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; i < 2 && i < by_bytes.size(); ++i) {
    const BufferTraffic& t = w.traffic[by_bytes[i].second];
    int base = i == 0 ? kBuffer0Bytes : kBuffer1Bytes;
    f[base] = Log2p(t.bytes);
    f[base + 1] = static_cast<float>(std::log2(t.reuse));
    f[base + 2] = t.contiguous ? 1.0f : 0.0f;
  }
  return f;
}

}  // namespace autotune
}  // namespace agate
