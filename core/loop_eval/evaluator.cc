#include "core/loop_eval/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/ir/float16.h"
#include "core/ir/functor.h"
#include "core/ir/gpu_launch.h"
#include "core/ir/printer.h"
#include "core/loop_eval/race_detector.h"
#include "core/support/error.h"

namespace agate {
namespace loop_eval {

using namespace ir;  // NOLINT

namespace {

// Lanes of a value: inline up to four (scalars and 16-byte vectors, nearly
// every value), so evaluating an expression allocates nothing.
template <typename T>
class Lanes {
 public:
  Lanes() = default;
  Lanes(const Lanes& o) { *this = o; }
  Lanes& operator=(const Lanes& o) {
    if (this == &o) return *this;
    resize(o.size_);
    std::copy(o.begin(), o.end(), begin());
    return *this;
  }
  void resize(size_t n) {
    if (n > kInline && n > heap_size_) {
      heap_.reset(new T[n]());
      heap_size_ = n;
    }
    size_ = n;
    if (n <= kInline) std::fill(inline_, inline_ + n, T());
  }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  static constexpr size_t kInline = 4;
  T* data() { return size_ <= kInline ? inline_ : heap_.get(); }
  const T* data() const { return size_ <= kInline ? inline_ : heap_.get(); }
  T inline_[kInline] = {};
  std::unique_ptr<T[]> heap_;
  size_t heap_size_ = 0;
  size_t size_ = 0;
};

// A scalar or vector value: integer/bool lanes in `i`, float lanes in `f`.
struct Value {
  DType dtype;
  Lanes<int64_t> i;
  Lanes<double> f;
  int lanes() const { return dtype.lanes(); }
  bool is_float() const { return dtype.is_float(); }
  double AsDouble(int lane) const { return is_float() ? f[lane] : static_cast<double>(i[lane]); }
};

int64_t Wrap(int64_t v, DType t) {
  if (t.is_bool()) return v != 0;
  if (t.bits() >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits()) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_int() && (u >> (t.bits() - 1))) u |= ~mask;
  return static_cast<int64_t>(u);
}

Value MakeValue(DType t) {
  Value v;
  v.dtype = t;
  if (t.is_float()) {
    v.f.resize(t.lanes());
  } else {
    v.i.resize(t.lanes());
  }
  return v;
}

int64_t FloorDivInt(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

// Rounds a computed value to what storing it in `t` keeps.
double RoundToType(double v, DType t) {
  if (t.code() == TypeCode::kBFloat) return BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v)));
  if (t.is_float() && t.bits() == 16) return HalfToFloat(FloatToHalf(static_cast<float>(v)));
  if (t.is_float() && t.bits() == 32) return static_cast<float>(v);
  return v;
}

struct Memory {
  uint8_t* base;
  size_t bytes;
  std::string name;
  MemoryScope scope = MemoryScope::kGlobal;
};

using Env = std::unordered_map<const VarNode*, Value>;

// True when a statement (or an expression in it) synchronizes the threads of a
// block or exchanges values between them: such code runs in lockstep.
bool HasGpuIntrinsic(const Stmt& s) {
  bool found = false;
  PostOrderVisit(s, [&](const Expr* e, const Stmt*) {
    if (e && e->as<Call>() && IsGpuIntrinsic(e->as<Call>()->op)) found = true;
  });
  return found;
}
bool HasGpuIntrinsic(const Expr& e) {
  bool found = false;
  PostOrderVisit(e, [&](const Expr* x, const Stmt*) {
    if (x && x->as<Call>() && IsGpuIntrinsic(x->as<Call>()->op)) found = true;
  });
  return found;
}

class Interpreter : public ExprFunctor<Value(const Expr&)>, public StmtFunctor<void(const Stmt&)> {
 public:
  Interpreter(const LoweredFunc& f, const std::vector<ArgBuffer>& args, const std::map<std::string, int64_t>& vars)
      : func_(f) {
    AGATE_REQUIRE(args.size() == f.params.size(), kInvalidArgument)
        << "kernel " << f.name << " takes " << f.params.size() << " buffers, got " << args.size();
    for (const auto& [name, value] : vars) shape_vars_[name] = value;
    for (size_t i = 0; i < args.size(); ++i) {
      const BufferNode* b = f.params[i].get();
      AGATE_REQUIRE(args[i].data != nullptr, kInvalidArgument) << "kernel " << f.name << ": argument " << b->name << " is null";
      int64_t need = ConstInt(b->NumElements(), "size of " + b->name) * b->dtype.element_bytes();
      AGATE_REQUIRE(static_cast<int64_t>(args[i].bytes) >= need, kInvalidArgument)
          << "kernel " << f.name << ": argument " << b->name << " has " << args[i].bytes << " bytes, needs " << need;
      memory_[b->data.get()] = {static_cast<uint8_t*>(args[i].data), args[i].bytes, b->name};
    }
    workspace_.assign(static_cast<size_t>(f.workspace_bytes), 0xFF);
    gpu_kernel_ = HasGpuLaunches(f.body);
  }

  int32_t Run() {
    try {
      VisitStmt(func_.body);
    } catch (const AssertFailed&) {
      return -1;
    }
    return 0;
  }

  // ---- expressions
  Value VisitExpr_(const IntImm* op, const Expr&) override {
    Value v = MakeValue(op->dtype);
    v.i[0] = op->value;
    return v;
  }
  Value VisitExpr_(const FloatImm* op, const Expr&) override {
    Value v = MakeValue(op->dtype);
    v.f[0] = RoundToType(op->value, op->dtype);
    return v;
  }
  Value VisitExpr_(const VarNode* op, const Expr& self) override {
    auto it = env().find(op);
    if (it != env().end()) return it->second;
    auto sv = shape_vars_.find(op->name);
    AGATE_REQUIRE(sv != shape_vars_.end() && op->dtype.is_integer(), kInvalidArgument)
        << "kernel " << func_.name << ": variable " << op->name << " has no value";
    Value v = MakeValue(op->dtype);
    v.i[0] = sv->second;
    return v;
  }

  template <typename FI, typename FF>
  Value Arith(const Expr& a_expr, const Expr& b_expr, DType t, FI fi, FF ff) {
    Value a = VisitExpr(a_expr), b = VisitExpr(b_expr);
    Value r = MakeValue(t);
    for (int l = 0; l < t.lanes(); ++l) {
      if (t.is_float()) {
        r.f[l] = RoundToType(ff(a.f[l], b.f[l]), t);
      } else {
        r.i[l] = Wrap(fi(a.i[l], b.i[l]), t);
      }
    }
    return r;
  }

  Value VisitExpr_(const Add* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [](int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)); },
                 [](double x, double y) { return x + y; });
  }
  Value VisitExpr_(const Sub* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [](int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)); },
                 [](double x, double y) { return x - y; });
  }
  Value VisitExpr_(const Mul* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [](int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); },
                 [](double x, double y) { return x * y; });
  }
  void CheckDivisor(int64_t y, const char* what) {
    AGATE_REQUIRE(y != 0, kInvalidArgument) << "kernel " << func_.name << ": integer " << what << " by zero";
  }
  Value VisitExpr_(const Div* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [&](int64_t x, int64_t y) { CheckDivisor(y, "division"); return x / y; },
                 [](double x, double y) { return x / y; });
  }
  Value VisitExpr_(const Mod* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [&](int64_t x, int64_t y) { CheckDivisor(y, "modulo"); return x % y; },
                 [](double x, double y) { return std::fmod(x, y); });
  }
  Value VisitExpr_(const FloorDiv* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [&](int64_t x, int64_t y) { CheckDivisor(y, "division"); return FloorDivInt(x, y); },
                 [](double x, double y) { return std::floor(x / y); });
  }
  Value VisitExpr_(const FloorMod* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [&](int64_t x, int64_t y) { CheckDivisor(y, "modulo"); return x - FloorDivInt(x, y) * y; },
                 [](double x, double y) { return x - std::floor(x / y) * y; });
  }
  Value VisitExpr_(const Min* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [](int64_t x, int64_t y) { return std::min(x, y); },
                 [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); });
  }
  Value VisitExpr_(const Max* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [](int64_t x, int64_t y) { return std::max(x, y); },
                 [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); });
  }
  Value VisitExpr_(const And* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [](int64_t x, int64_t y) { return int64_t{x && y}; },
                 [](double, double) { return 0.0; });
  }
  Value VisitExpr_(const Or* op, const Expr&) override {
    return Arith(op->a, op->b, op->dtype, [](int64_t x, int64_t y) { return int64_t{x || y}; },
                 [](double, double) { return 0.0; });
  }

  template <typename F>
  Value Compare(const Expr& a_expr, const Expr& b_expr, DType t, F cmp) {
    Value a = VisitExpr(a_expr), b = VisitExpr(b_expr);
    Value r = MakeValue(t);
    for (int l = 0; l < t.lanes(); ++l) {
      r.i[l] = a.is_float() ? cmp(a.f[l], b.f[l]) : cmp(a.i[l], b.i[l]);
    }
    return r;
  }
#define AGATE_EVAL_CMP(T, OP) \
  Value VisitExpr_(const T* op, const Expr&) override { \
    return Compare(op->a, op->b, op->dtype, [](auto x, auto y) { return x OP y; }); \
  }
  AGATE_EVAL_CMP(EQ, ==)
  AGATE_EVAL_CMP(NE, !=)
  AGATE_EVAL_CMP(LT, <)
  AGATE_EVAL_CMP(LE, <=)
  AGATE_EVAL_CMP(GT, >)
  AGATE_EVAL_CMP(GE, >=)
#undef AGATE_EVAL_CMP

  Value VisitExpr_(const Not* op, const Expr&) override {
    Value a = VisitExpr(op->a);
    for (auto& x : a.i) x = !x;
    return a;
  }
  Value VisitExpr_(const Select* op, const Expr&) override {
    Value c = VisitExpr(op->condition), t = VisitExpr(op->true_value), f = VisitExpr(op->false_value);
    Value r = MakeValue(op->dtype);
    for (int l = 0; l < op->dtype.lanes(); ++l) {
      bool take = c.i[c.lanes() == 1 ? 0 : l] != 0;
      if (r.is_float()) {
        r.f[l] = take ? t.f[l] : f.f[l];
      } else {
        r.i[l] = take ? t.i[l] : f.i[l];
      }
    }
    return r;
  }
  Value VisitExpr_(const Cast* op, const Expr&) override {
    Value v = VisitExpr(op->value);
    Value r = MakeValue(op->dtype);
    for (int l = 0; l < op->dtype.lanes(); ++l) {
      if (r.is_float()) {
        r.f[l] = RoundToType(v.AsDouble(l), op->dtype);
      } else if (op->dtype.is_bool()) {
        r.i[l] = v.AsDouble(l) != 0;
      } else if (v.is_float()) {
        double d = std::trunc(v.f[l]);
        r.i[l] = std::isfinite(d) && std::fabs(d) < 9.2e18 ? Wrap(static_cast<int64_t>(d), op->dtype) : 0;
      } else {
        r.i[l] = Wrap(v.i[l], op->dtype);
      }
    }
    return r;
  }
  Value VisitExpr_(const Call* op, const Expr& self) override {
    if (op->op == CallOp::kShuffleXor) {
      AGATE_REQUIRE(in_threads_, kInternal) << "kernel " << func_.name << ": " << self
                                            << " outside the thread loops of a GPU launch";
      auto it = shuffles_[cur_].find(op);
      AGATE_CHECK(it != shuffles_[cur_].end()) << "kernel " << func_.name << ": shuffle " << self << " not prepared";
      return it->second;
    }
    AGATE_REQUIRE(op->op != CallOp::kSyncThreads, kInternal)
        << "kernel " << func_.name << ": __syncthreads used as a value";
    std::vector<Value> args;
    for (const Expr& a : op->args) args.push_back(VisitExpr(a));
    Value r = MakeValue(op->dtype);
    if (int group = ir::DotGroup(op->op)) {
      // Exact: 64-bit products and sums, wrapped to int32 once at the end (as vpdpbusd;
      // pmaddwd's sums agree modulo 2^32).
      for (int l = 0; l < op->dtype.lanes(); ++l) {
        int64_t sum = args[0].i[l];
        int ga = args[1].lanes() == group ? 0 : group * l, gb = args[2].lanes() == group ? 0 : group * l;  // broadcasts
        for (int j = 0; j < group; ++j) sum += args[1].i[ga + j] * args[2].i[gb + j];
        r.i[l] = Wrap(sum, op->dtype);
      }
      return r;
    }
    for (int l = 0; l < op->dtype.lanes(); ++l) {
      if (op->op == CallOp::kReinterpret) {
        Reinterpret(args[0], l, &r);
        continue;
      }
      if (op->op == CallOp::kAbs && !r.is_float()) {
        r.i[l] = Wrap(std::llabs(args[0].i[l]), op->dtype);
        continue;
      }
      if (op->op == CallOp::kShiftLeft || op->op == CallOp::kShiftRight) {
        int bits = op->dtype.bits();
        uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
        uint64_t a = static_cast<uint64_t>(args[0].i[l]) & mask;
        uint64_t n = static_cast<uint64_t>(args[1].i[l]) & mask;
        uint64_t v = n >= static_cast<uint64_t>(bits) ? 0 : op->op == CallOp::kShiftLeft ? a << n : a >> n;
        r.i[l] = Wrap(static_cast<int64_t>(v & mask), op->dtype);
        continue;
      }
      if (IsBitwise(op->op)) {
        int64_t a = args[0].i[l], b = args.size() > 1 ? args[1].i[l] : 0;
        int64_t v = op->op == CallOp::kBitwiseAnd ? (a & b)
                    : op->op == CallOp::kBitwiseOr ? (a | b)
                    : op->op == CallOp::kBitwiseXor ? (a ^ b)
                                                     : ~a;
        r.i[l] = Wrap(v, op->dtype);
        continue;
      }
      double x = args[0].AsDouble(l);
      double y = args.size() > 1 ? args[1].AsDouble(l) : 0;
      double z = args.size() > 2 ? args[2].AsDouble(l) : 0;
      double v = 0;
      switch (op->op) {
        case CallOp::kExp: v = std::exp(x); break;
        case CallOp::kLog: v = std::log(x); break;
        case CallOp::kSqrt: v = std::sqrt(x); break;
        case CallOp::kRsqrt: v = 1.0 / std::sqrt(x); break;
        case CallOp::kTanh: v = std::tanh(x); break;
        case CallOp::kErf: v = std::erf(x); break;
        case CallOp::kSigmoid: v = 1.0 / (1.0 + std::exp(-x)); break;
        case CallOp::kPow: v = std::pow(x, y); break;
        case CallOp::kFloor: v = std::floor(x); break;
        case CallOp::kCeil: v = std::ceil(x); break;
        case CallOp::kAbs: v = std::fabs(x); break;
        case CallOp::kRound: v = std::nearbyint(x); break;
        case CallOp::kFma: v = std::fma(x, y, z); break;
        case CallOp::kTrunc: v = std::trunc(x); break;
        case CallOp::kSin: v = std::sin(x); break;
        case CallOp::kCos: v = std::cos(x); break;
        case CallOp::kReinterpret:
        case CallOp::kBitwiseAnd:
        case CallOp::kBitwiseOr:
        case CallOp::kBitwiseXor:
        case CallOp::kBitwiseNot:
        case CallOp::kShiftLeft:
        case CallOp::kShiftRight:
        case CallOp::kSyncThreads:
        case CallOp::kShuffleXor:
        case CallOp::kDot4U8S8:
        case CallOp::kDot4S8S8:
        case CallOp::kDot2I16: break;
      }
      r.f[l] = RoundToType(v, op->dtype);
    }
    return r;
  }
  // Lane `lane` of `out`: its bytes of the input's lanes laid end to end (little-endian, as
  // the targets store vectors), so a reinterpret may change the lane count (int32x8 as
  // int16x16: lane 2k the low half of input lane k, lane 2k + 1 its high half).
  void Reinterpret(const Value& in, int lane, Value* out) {
    const int in_bytes = in.dtype.element_of().element_bytes(), out_bytes = out->dtype.element_of().element_bytes();
    AGATE_REQUIRE(in.lanes() * in_bytes == out->lanes() * out_bytes && in.dtype.bits() % 8 == 0 &&
                      out->dtype.bits() % 8 == 0 && in_bytes <= 8 && out_bytes <= 8,
                  kUnsupported)
        << "evaluator: reinterpret between " << in.dtype << " and " << out->dtype;
    // window holds the input lanes that overlap the output lane, from the first one's start.
    uint8_t window[24] = {0};
    const int first = lane * out_bytes, start = first / in_bytes * in_bytes;
    for (int l = start / in_bytes; l * in_bytes < first + out_bytes; ++l) {
      WriteElement(window + (l * in_bytes - start), in.dtype.element_of(), in, l);
    }
    Value tmp = MakeValue(out->dtype.element_of());
    ReadElement(window + (first - start), out->dtype.element_of(), &tmp, 0);
    if (out->is_float()) {
      out->f[lane] = tmp.f[0];
    } else {
      out->i[lane] = tmp.i[0];
    }
  }
  Value VisitExpr_(const Ramp* op, const Expr&) override {
    Value base = VisitExpr(op->base), stride = VisitExpr(op->stride);
    Value r = MakeValue(op->dtype);
    for (int l = 0; l < op->lanes; ++l) {
      if (r.is_float()) {
        r.f[l] = base.f[0] + l * stride.f[0];
      } else {
        r.i[l] = Wrap(base.i[0] + l * stride.i[0], op->dtype);
      }
    }
    return r;
  }
  Value VisitExpr_(const Broadcast* op, const Expr&) override {
    Value v = VisitExpr(op->value);
    Value r = MakeValue(op->dtype);
    for (int l = 0; l < op->lanes; ++l) {
      if (r.is_float()) {
        r.f[l] = v.f[0];
      } else {
        r.i[l] = v.i[0];
      }
    }
    return r;
  }
  Value VisitExpr_(const Let* op, const Expr&) override {
    Value v = VisitExpr(op->value);
    env()[op->var.get()] = v;
    Value r = VisitExpr(op->body);
    env().erase(op->var.get());
    return r;
  }
  Value VisitExpr_(const Load* op, const Expr&) override {
    Value index = VisitExpr(op->index);
    Value pred;
    if (op->predicate.defined()) pred = VisitExpr(op->predicate);
    Value r = MakeValue(op->dtype);
    DType elem = op->dtype.element_of();
    for (int l = 0; l < op->dtype.lanes(); ++l) {
      if (op->predicate.defined() && !pred.i[l]) continue;
      uint8_t* p = Address(op->buffer, index.i[l], "load from");
      ReadElement(p, elem, &r, l);
    }
    return r;
  }
  Value VisitExpr_(const TensorRead* op, const Expr&) override {
    AGATE_THROW(kInvalidArgument) << "evaluator runs flattened loop IR; found a read of tensor "
                                  << op->producer->producer_name();
  }
  Value VisitExpr_(const Reduce*, const Expr& self) override {
    AGATE_THROW(kInvalidArgument) << "evaluator runs flattened loop IR; found " << self;
  }


  // ---- GPU launches (core/ir/gpu_launch.h)
  //
  // Blocks run one after another as the loops they are. Within a block, every
  // thread has its own variables and local buffers; code without barriers or
  // shuffles runs thread after thread, and code with them runs in lockstep: a
  // loop or branch around a barrier is entered by all threads together, each
  // barrier ends a phase for the whole block, and a shuffle reads the other
  // lane's operand as all lanes computed it at that point.

  void RunLaunch(const AttrStmt* op, const Stmt& self) {
    AGATE_REQUIRE(launch_ == nullptr, kInternal) << "kernel " << func_.name << ": launch " << op->node_name
                                                 << " inside launch " << launch_->name;
    std::vector<GpuLaunch> launches = CollectGpuLaunches(self);
    AGATE_CHECK(launches.size() == 1) << "launch " << op->node_name;
    GpuLaunch launch = launches[0];
    launch_ = &launch;
    tracked_.clear();
    PostOrderVisit(launch.code, [&](const Expr*, const Stmt* s) {
      if (s && s->as<Store>()) tracked_.insert(s->as<Store>()->buffer->data.get());
    });
    block_counter_ = 0;
    block_names_.clear();
    shared_region_.assign(static_cast<size_t>(launch.shared_bytes), 0xFF);
    races_.BeginLaunch(op->node_name, [this](int64_t block, int64_t thread) { return DescribeThread(block, thread); });
    VisitStmt(op->body);
    launch_ = nullptr;
  }

  std::string DescribeThread(int64_t block, int64_t thread) const {
    std::ostringstream os;
    auto it = block_names_.find(block);
    os << "block " << (it != block_names_.end() ? it->second : std::to_string(block));
    if (thread < 0) return os.str() + " (a thread)";
    const GpuLaunch& l = *launch_;
    os << " thread (" << thread % l.block[0] << "," << thread / l.block[0] % l.block[1] << ","
       << thread / (l.block[0] * l.block[1]) << ")";
    return os.str();
  }

  std::string ThreadContext() const {
    if (!in_threads_) return "";
    return " (launch " + launch_->name + ", " + DescribeThread(block_counter_ - 1, cur_) + ")";
  }

  // The thread loops of a block: every thread of the block, then the code in lockstep.
  void RunThreads(const Stmt& loops) {
    const GpuLaunch& l = *launch_;
    int64_t count = l.threads_per_block();
    AGATE_REQUIRE(count <= 4096, kInternal) << "launch " << l.name << ": " << count << " threads per block";
    int64_t block = block_counter_++;
    block_names_[block] = "(" + std::to_string(block_index_[0]) + "," + std::to_string(block_index_[1]) + "," +
                          std::to_string(block_index_[2]) + ")";
    races_.BeginBlock(block);
    Env outer = envs_[0];
    envs_.assign(static_cast<size_t>(count), outer);
    thread_memory_.assign(static_cast<size_t>(count), {});
    shuffles_.assign(static_cast<size_t>(count), {});
    for (int64_t t = 0; t < count; ++t) {
      int64_t index[3] = {t % l.block[0], t / l.block[0] % l.block[1], t / (l.block[0] * l.block[1])};
      for (int d = 0; d < 3; ++d) {
        if (!l.thread_vars[d].defined()) continue;
        Value v = MakeValue(l.thread_vars[d].dtype());
        v.i[0] = index[d];
        envs_[t][l.thread_vars[d].get()] = v;
      }
    }
    std::vector<int64_t> all(static_cast<size_t>(count));
    std::iota(all.begin(), all.end(), 0);
    in_threads_ = true;
    try {
      Lockstep(l.code, all);
    } catch (...) {
      LeaveThreads(outer);
      throw;
    }
    LeaveThreads(outer);
    (void)loops;
  }

  void LeaveThreads(const Env& outer) {
    in_threads_ = false;
    cur_ = 0;
    envs_.assign(1, outer);
    thread_memory_.clear();
    shuffles_.clear();
  }

  bool NeedsLockstep(const Stmt& s) {
    auto it = lockstep_.find(s.get());
    if (it != lockstep_.end()) return it->second;
    bool needs = HasGpuIntrinsic(s);
    lockstep_[s.get()] = needs;
    return needs;
  }

  void PerThread(const std::vector<int64_t>& active, const std::function<void()>& f) {
    for (int64_t t : active) {
      cur_ = t;
      f();
    }
    cur_ = 0;
  }

  // The one value every active thread computes for `e` (bounds of a loop that
  // holds a barrier); differing values are a divergent barrier.
  int64_t Uniform(const Expr& e, const std::vector<int64_t>& active, const std::string& what) {
    int64_t value = 0;
    bool first = true;
    PerThread(active, [&] {
      int64_t v = VisitExpr(e).i[0];
      AGATE_REQUIRE(first || v == value, kInternal)
          << "kernel " << func_.name << ": " << what << " differs between the threads of launch " << launch_->name
          << " around a __syncthreads or shuffle (" << value << " and " << v << ")" << ThreadContext();
      value = v;
      first = false;
    });
    return value;
  }

  void Lockstep(const Stmt& s, const std::vector<int64_t>& active) {
    if (active.empty()) return;
    if (!NeedsLockstep(s)) {
      PerThread(active, [&] { VisitStmt(s); });
      return;
    }
    switch (s.kind()) {
      case StmtKind::kSeq:
        for (const Stmt& x : s.as<Seq>()->stmts) Lockstep(x, active);
        return;
      case StmtKind::kAttrStmt: return Lockstep(s.as<AttrStmt>()->body, active);
      case StmtKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        PrepareShuffles({op->value}, active);
        PerThread(active, [&] { env()[op->var.get()] = VisitExpr(op->value); });
        Lockstep(op->body, active);
        PerThread(active, [&] { env().erase(op->var.get()); });
        return;
      }
      case StmtKind::kFor: {
        const For* op = s.as<For>();
        AGATE_REQUIRE(op->for_kind != ForKind::kThreadBinding, kInternal)
            << "kernel " << func_.name << ": loop " << op->var->name << " bound to " << op->thread_tag
            << " inside the thread loops of launch " << launch_->name;
        int64_t lo = Uniform(op->min, active, "the start of loop " + op->var->name);
        int64_t n = Uniform(op->extent, active, "the extent of loop " + op->var->name);
        for (int64_t k = 0; k < n; ++k) {
          PerThread(active, [&] {
            Value v = MakeValue(op->var.dtype());
            v.i[0] = lo + k;
            env()[op->var.get()] = v;
          });
          Lockstep(op->body, active);
        }
        PerThread(active, [&] { env().erase(op->var.get()); });
        return;
      }
      case StmtKind::kIfThenElse: {
        const IfThenElse* op = s.as<IfThenElse>();
        PrepareShuffles({op->condition}, active);
        std::vector<int64_t> then_threads, else_threads;
        for (int64_t t : active) {
          cur_ = t;
          (VisitExpr(op->condition).i[0] ? then_threads : else_threads).push_back(t);
        }
        cur_ = 0;
        Lockstep(op->then_case, then_threads);
        if (op->else_case.defined()) Lockstep(op->else_case, else_threads);
        return;
      }
      case StmtKind::kAllocate: {
        const Allocate* op = s.as<Allocate>();
        // Each thread's own copy, alive while the threads run the body in lockstep.
        AGATE_REQUIRE(op->scope == MemoryScope::kLocal, kInternal)
            << "kernel " << func_.name << ": " << MemoryScopeName(op->scope) << " buffer " << op->buffer->name
            << " allocated by the threads of launch " << launch_->name;
        int64_t elements = 1;
        for (const Expr& e : op->extents) elements *= Uniform(e, active, "the size of " + op->buffer->name);
        size_t bytes = static_cast<size_t>(elements) * op->buffer->dtype.element_bytes();
        std::vector<std::unique_ptr<uint8_t[]>> owned;
        const VarNode* data = op->buffer->data.get();
        for (int64_t t : active) {
          owned.emplace_back(new uint8_t[bytes == 0 ? 1 : bytes]);
          std::memset(owned.back().get(), 0xFF, bytes);
          thread_memory_[t][data] = {owned.back().get(), bytes, op->buffer->name, MemoryScope::kLocal};
        }
        Lockstep(op->body, active);
        for (int64_t t : active) thread_memory_[t].erase(data);
        return;
      }
      case StmtKind::kEvaluate: {
        const Call* call = s.as<Evaluate>()->value.as<Call>();
        if (call && call->op == CallOp::kSyncThreads) return Barrier(active);
        PrepareShuffles({s.as<Evaluate>()->value}, active);
        PerThread(active, [&] { VisitStmt(s); });
        return;
      }
      case StmtKind::kStore: {
        const Store* op = s.as<Store>();
        PrepareShuffles({op->value, op->index, op->predicate}, active);
        PerThread(active, [&] { VisitStmt(s); });
        return;
      }
      case StmtKind::kAssert:
        PrepareShuffles({s.as<AssertStmt>()->condition}, active);
        PerThread(active, [&] { VisitStmt(s); });
        return;
      default:
        AGATE_THROW(kInternal) << "kernel " << func_.name << ": " << StmtKindName(s.kind())
                               << " in the thread code of launch " << launch_->name;
    }
  }

  void Barrier(const std::vector<int64_t>& active) {
    int64_t count = launch_->threads_per_block();
    if (static_cast<int64_t>(active.size()) != count) {
      cur_ = active.front();
      AGATE_THROW(kInternal) << "kernel " << func_.name << ": __syncthreads reached by " << active.size() << " of the "
                             << count << " threads of the block (a barrier in divergent code)" << ThreadContext();
    }
    races_.Barrier();
  }

  // Computes every shuffle in `exprs` for all active threads, innermost first,
  // so that evaluating an expression per thread reads its shuffled values.
  void PrepareShuffles(const std::vector<Expr>& exprs, const std::vector<int64_t>& active) {
    for (const Expr& root : exprs) {
      if (!root.defined() || !HasGpuIntrinsic(root)) continue;
      PostOrderVisit(root, [&](const Expr* e, const Stmt*) {
        const Call* call = e ? e->as<Call>() : nullptr;
        if (!call || call->op != CallOp::kShuffleXor) return;
        int64_t mask = Uniform(call->args[1], active, "the lane mask of a shuffle");
        int64_t width = Uniform(call->args[2], active, "the width of a shuffle");
        AGATE_REQUIRE(width >= 1 && width <= 32 && (width & (width - 1)) == 0 && mask >= 0 && mask < width, kInternal)
            << "kernel " << func_.name << ": shuffle_xor with lane mask " << mask << " and width " << width;
        std::unordered_map<int64_t, Value> operand;
        for (int64_t t : active) {
          cur_ = t;
          operand[t] = VisitExpr(call->args[0]);
        }
        int64_t count = launch_->threads_per_block();
        for (int64_t t : active) {
          int64_t lane = t % 32, warp = t - lane;
          for (int64_t other = warp; other < std::min(warp + 32, count); ++other) {
            if (!operand.count(other)) {
              cur_ = t;
              AGATE_THROW(kInternal) << "kernel " << func_.name << ": a shuffle runs in only part of a warp (lane "
                                     << other - warp << " does not take part)" << ThreadContext();
            }
          }
          int64_t source = warp + (lane ^ mask);
          if (source >= count) source = t;
          shuffles_[t][call] = operand.at(source);
        }
        cur_ = 0;
      });
    }
  }

  // ---- statements
  struct AssertFailed {};

  void VisitStmt_(const LetStmt* op, const Stmt&) override {
    env()[op->var.get()] = VisitExpr(op->value);
    VisitStmt(op->body);
    env().erase(op->var.get());
  }
  void VisitStmt_(const AttrStmt* op, const Stmt& self) override {
    if (op->key == attr::kGpuLaunch) return RunLaunch(op, self);
    VisitStmt(op->body);
  }
  void VisitStmt_(const AssertStmt* op, const Stmt&) override {
    if (!VisitExpr(op->condition).i[0]) throw AssertFailed();
  }
  void VisitStmt_(const For* op, const Stmt& self) override {
    bool is_block = false;
    int dim = 0;
    bool bound = op->for_kind == ForKind::kThreadBinding && ParseThreadTag(op->thread_tag, &is_block, &dim);
    if (bound && launch_ != nullptr) {
      AGATE_REQUIRE(!in_threads_, kInternal) << "kernel " << func_.name << ": loop " << op->var->name << " bound to "
                                             << op->thread_tag << " inside the thread loops of launch " << launch_->name;
      if (!is_block) return RunThreads(self);
    }
    int64_t lo = VisitExpr(op->min).i[0];
    int64_t n = VisitExpr(op->extent).i[0];
    Value v = MakeValue(op->var.dtype());
    for (int64_t k = 0; k < n; ++k) {
      v.i[0] = lo + k;
      env()[op->var.get()] = v;
      if (bound && is_block && launch_ != nullptr) block_index_[dim] = lo + k;
      VisitStmt(op->body);
    }
    env().erase(op->var.get());
  }
  void VisitStmt_(const IfThenElse* op, const Stmt&) override {
    if (VisitExpr(op->condition).i[0]) {
      VisitStmt(op->then_case);
    } else if (op->else_case.defined()) {
      VisitStmt(op->else_case);
    }
  }
  void VisitStmt_(const Store* op, const Stmt&) override {
    Value value = VisitExpr(op->value);
    Value index = VisitExpr(op->index);
    Value pred;
    if (op->predicate.defined()) pred = VisitExpr(op->predicate);
    DType elem = op->buffer->dtype;
    for (int l = 0; l < index.lanes(); ++l) {
      if (op->predicate.defined() && !pred.i[l]) continue;
      uint8_t* p = Address(op->buffer, index.i[l], "store to");
      WriteElement(p, elem, value, l);
    }
  }
  void VisitStmt_(const Allocate* op, const Stmt&) override {
    int64_t elements = 1;
    for (const Expr& e : op->extents) elements *= VisitExpr(e).i[0];
    size_t bytes = static_cast<size_t>(elements) * op->buffer->dtype.element_bytes();
    const VarNode* data = op->buffer->data.get();
    AGATE_REQUIRE(!in_threads_ || op->scope == MemoryScope::kLocal, kInternal)
        << "kernel " << func_.name << ": " << MemoryScopeName(op->scope) << " buffer " << op->buffer->name
        << " allocated by the threads of launch " << (launch_ ? launch_->name : std::string("?"))
        << " (only local buffers may be; shared ones belong to the block)";
    std::unordered_map<const VarNode*, Memory>& memory = in_threads_ ? thread_memory_[cur_] : memory_;
    auto saved_it = memory.find(data);
    bool had = saved_it != memory.end();
    Memory saved = had ? saved_it->second : Memory{};
    std::unique_ptr<uint8_t[]> owned;
    if (op->scope == MemoryScope::kShared && launch_ != nullptr) {
      // The block's dynamic shared memory: buffers whose lifetimes did not overlap share bytes.
      AGATE_REQUIRE(op->workspace_offset >= 0 && op->workspace_offset + bytes <= shared_region_.size(), kInternal)
          << "shared buffer " << op->buffer->name << " at offset " << op->workspace_offset << " (" << bytes
          << " bytes) exceeds the " << shared_region_.size() << " bytes of launch " << launch_->name;
      uint8_t* base = shared_region_.data() + op->workspace_offset;
      std::memset(base, 0xFF, bytes);
      memory[data] = {base, bytes, op->buffer->name, MemoryScope::kShared};
    } else if (op->scope == MemoryScope::kWorkspace) {
      AGATE_REQUIRE(op->workspace_offset >= 0 && op->workspace_offset + bytes <= workspace_.size(), kInternal)
          << "workspace buffer " << op->buffer->name << " at offset " << op->workspace_offset << " (" << bytes
          << " bytes) exceeds the kernel's workspace of " << workspace_.size() << " bytes";
      uint8_t* base = workspace_.data() + op->workspace_offset;
      // Within one GPU kernel, launches pass workspace buffers on: only the first touch is fresh.
      if (!gpu_kernel_) std::memset(base, 0xFF, bytes);
      memory[data] = {base, bytes, op->buffer->name, MemoryScope::kGlobal};
    } else {
      owned.reset(new uint8_t[bytes == 0 ? 1 : bytes]);
      std::memset(owned.get(), 0xFF, bytes);
      memory[data] = {owned.get(), bytes, op->buffer->name, op->scope};
    }
    VisitStmt(op->body);
    std::unordered_map<const VarNode*, Memory>& after = in_threads_ ? thread_memory_[cur_] : memory_;
    after.erase(data);
    if (had) after[data] = saved;
  }
  void VisitStmt_(const Seq* op, const Stmt&) override {
    for (const Stmt& s : op->stmts) VisitStmt(s);
  }
  void VisitStmt_(const Evaluate* op, const Stmt&) override {
    const Call* call = op->value.as<Call>();
    AGATE_REQUIRE(!call || call->op != CallOp::kSyncThreads, kInternal)
        << "kernel " << func_.name << ": __syncthreads outside the thread loops of a GPU launch";
    VisitExpr(op->value);
  }
  void VisitStmt_(const Provide* op, const Stmt&) override {
    AGATE_THROW(kInvalidArgument) << "evaluator runs flattened loop IR; found a provide of "
                                  << op->producer->producer_name();
  }
  void VisitStmt_(const Realize* op, const Stmt&) override {
    AGATE_THROW(kInvalidArgument) << "evaluator runs flattened loop IR; found a realize of "
                                  << op->producer->producer_name();
  }

 private:
  int64_t ConstInt(const Expr& e, const std::string& what) {
    Value v = VisitExpr(e);
    AGATE_CHECK(!v.is_float()) << what << " is not an integer";
    return v.i[0];
  }

  const Memory* FindMemory(const VarNode* data) const {
    if (in_threads_) {
      auto t = thread_memory_[cur_].find(data);
      if (t != thread_memory_[cur_].end()) return &t->second;
    }
    auto it = memory_.find(data);
    return it == memory_.end() ? nullptr : &it->second;
  }

  uint8_t* Address(const Buffer& buf, int64_t index, const char* what) {
    const Memory* m = FindMemory(buf->data.get());
    AGATE_REQUIRE(m != nullptr, kInternal)
        << "kernel " << func_.name << ": " << what << " buffer " << buf->name << " outside its allocation";
    size_t eb = buf->dtype.element_bytes();
    AGATE_REQUIRE(index >= 0 && static_cast<size_t>(index + 1) * eb <= m->bytes, kOutOfRange)
        << "kernel " << func_.name << ": " << what << " " << buf->name << "[" << index << "] is outside its "
        << m->bytes / eb << " elements" << ThreadContext();
    uint8_t* p = m->base + index * eb;
    if (in_threads_ && m->scope != MemoryScope::kLocal) {
      bool write = std::strcmp(what, "store to") == 0;
      bool shared = m->scope == MemoryScope::kShared;
      if (shared || tracked_.count(buf->data.get())) races_.Access(p, shared, write, cur_, m->name, index);
    }
    return p;
  }

  static void ReadElement(const uint8_t* p, DType t, Value* out, int lane) {
    switch (t.code()) {
      case TypeCode::kBFloat: {
        uint16_t b;
        std::memcpy(&b, p, 2);
        out->f[lane] = BFloat16ToFloat(b);
        return;
      }
      case TypeCode::kFloat:
        if (t.bits() == 16) {
          uint16_t h;
          std::memcpy(&h, p, 2);
          out->f[lane] = HalfToFloat(h);
        } else if (t.bits() == 32) {
          float v;
          std::memcpy(&v, p, 4);
          out->f[lane] = v;
        } else if (t.bits() == 64) {
          double v;
          std::memcpy(&v, p, 8);
          out->f[lane] = v;
        } else {
          AGATE_THROW(kUnsupported) << "evaluator: element type " << t;
        }
        return;
      case TypeCode::kInt:
      case TypeCode::kUInt:
      case TypeCode::kBool: {
        uint64_t u = 0;
        std::memcpy(&u, p, t.element_bytes());
        out->i[lane] = Wrap(static_cast<int64_t>(u), t);
        return;
      }
      default: AGATE_THROW(kUnsupported) << "evaluator: element type " << t;
    }
  }

  static void WriteElement(uint8_t* p, DType t, const Value& v, int lane) {
    switch (t.code()) {
      case TypeCode::kBFloat: {
        uint16_t b = FloatToBFloat16(static_cast<float>(v.AsDouble(lane)));
        std::memcpy(p, &b, 2);
        return;
      }
      case TypeCode::kFloat:
        if (t.bits() == 16) {
          uint16_t h = FloatToHalf(static_cast<float>(v.AsDouble(lane)));
          std::memcpy(p, &h, 2);
        } else if (t.bits() == 32) {
          float x = static_cast<float>(v.AsDouble(lane));
          std::memcpy(p, &x, 4);
        } else if (t.bits() == 64) {
          double x = v.AsDouble(lane);
          std::memcpy(p, &x, 8);
        } else {
          AGATE_THROW(kUnsupported) << "evaluator: element type " << t;
        }
        return;
      case TypeCode::kInt:
      case TypeCode::kUInt:
      case TypeCode::kBool: {
        uint64_t u = static_cast<uint64_t>(v.is_float() ? static_cast<int64_t>(v.f[lane]) : v.i[lane]);
        std::memcpy(p, &u, t.element_bytes());
        return;
      }
      default: AGATE_THROW(kUnsupported) << "evaluator: element type " << t;
    }
  }

  const LoweredFunc& func_;
  Env& env() { return envs_[cur_]; }

  std::vector<Env> envs_ = std::vector<Env>(1);  // per thread of a block inside a launch, else one
  size_t cur_ = 0;                               // whose variables and local buffers are visible
  std::unordered_map<const VarNode*, Memory> memory_;
  std::vector<std::unordered_map<const VarNode*, Memory>> thread_memory_;
  std::vector<std::unordered_map<const Call*, Value>> shuffles_;
  std::unordered_map<const StmtNode*, bool> lockstep_;
  bool gpu_kernel_ = false;
  const GpuLaunch* launch_ = nullptr;
  bool in_threads_ = false;
  int64_t block_counter_ = 0;
  int64_t block_index_[3] = {0, 0, 0};
  std::map<int64_t, std::string> block_names_;
  std::unordered_set<const VarNode*> tracked_;
  std::vector<uint8_t> shared_region_;  // the current block's dynamic shared memory
  RaceDetector races_;
  std::map<std::string, int64_t> shape_vars_;
  std::vector<uint8_t> workspace_;
};

}  // namespace

int32_t Run(const LoweredFunc& func, const std::vector<ArgBuffer>& args, const std::map<std::string, int64_t>& shape_vars) {
  Interpreter interp(func, args, shape_vars);
  return interp.Run();
}

int32_t RunFloat(const LoweredFunc& func, const std::vector<std::vector<float>*>& args,
                 const std::map<std::string, int64_t>& shape_vars) {
  std::vector<ArgBuffer> bufs;
  for (std::vector<float>* a : args) {
    AGATE_REQUIRE(a != nullptr, kInvalidArgument) << "RunFloat: null argument";
    bufs.push_back({a->data(), a->size() * sizeof(float)});
  }
  return Run(func, bufs, shape_vars);
}

}  // namespace loop_eval
}  // namespace agate
