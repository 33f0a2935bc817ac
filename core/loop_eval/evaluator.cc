#include "core/loop_eval/evaluator.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/ir/float16.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace loop_eval {

using namespace ir;  // NOLINT

namespace {

// A scalar or vector value: integer/bool lanes in `i`, float lanes in `f`.
struct Value {
  DType dtype;
  std::vector<int64_t> i;
  std::vector<double> f;
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
};

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
    auto it = env_.find(op);
    if (it != env_.end()) return it->second;
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
  Value VisitExpr_(const Call* op, const Expr&) override {
    std::vector<Value> args;
    for (const Expr& a : op->args) args.push_back(VisitExpr(a));
    Value r = MakeValue(op->dtype);
    for (int l = 0; l < op->dtype.lanes(); ++l) {
      if (op->op == CallOp::kReinterpret) {
        Reinterpret(args[0], l, &r);
        continue;
      }
      if (op->op == CallOp::kAbs && !r.is_float()) {
        r.i[l] = Wrap(std::llabs(args[0].i[l]), op->dtype);
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
        case CallOp::kReinterpret: break;
      }
      r.f[l] = RoundToType(v, op->dtype);
    }
    return r;
  }
  void Reinterpret(const Value& in, int lane, Value* out) {
    AGATE_REQUIRE(in.lanes() == out->lanes() && in.dtype.bits() == out->dtype.bits(), kUnsupported)
        << "evaluator: reinterpret between " << in.dtype << " and " << out->dtype;
    uint8_t bytes[8] = {0};
    WriteElement(bytes, in.dtype.element_of(), in, lane);
    Value tmp = MakeValue(out->dtype.element_of());
    ReadElement(bytes, out->dtype.element_of(), &tmp, 0);
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
    env_[op->var.get()] = v;
    Value r = VisitExpr(op->body);
    env_.erase(op->var.get());
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

  // ---- statements
  struct AssertFailed {};

  void VisitStmt_(const LetStmt* op, const Stmt&) override {
    env_[op->var.get()] = VisitExpr(op->value);
    VisitStmt(op->body);
    env_.erase(op->var.get());
  }
  void VisitStmt_(const AttrStmt* op, const Stmt&) override { VisitStmt(op->body); }
  void VisitStmt_(const AssertStmt* op, const Stmt&) override {
    if (!VisitExpr(op->condition).i[0]) throw AssertFailed();
  }
  void VisitStmt_(const For* op, const Stmt&) override {
    int64_t lo = VisitExpr(op->min).i[0];
    int64_t n = VisitExpr(op->extent).i[0];
    Value v = MakeValue(op->var.dtype());
    for (int64_t k = 0; k < n; ++k) {
      v.i[0] = lo + k;
      env_[op->var.get()] = v;
      VisitStmt(op->body);
    }
    env_.erase(op->var.get());
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
    auto saved = memory_.find(data);
    std::unique_ptr<uint8_t[]> owned;
    if (op->scope == MemoryScope::kWorkspace) {
      AGATE_REQUIRE(op->workspace_offset >= 0 && op->workspace_offset + bytes <= workspace_.size(), kInternal)
          << "workspace buffer " << op->buffer->name << " at offset " << op->workspace_offset << " (" << bytes
          << " bytes) exceeds the kernel's workspace of " << workspace_.size() << " bytes";
      uint8_t* base = workspace_.data() + op->workspace_offset;
      std::memset(base, 0xFF, bytes);
      memory_[data] = {base, bytes, op->buffer->name};
    } else {
      owned.reset(new uint8_t[bytes == 0 ? 1 : bytes]);
      std::memset(owned.get(), 0xFF, bytes);
      memory_[data] = {owned.get(), bytes, op->buffer->name};
    }
    VisitStmt(op->body);
    memory_.erase(data);
    if (saved != memory_.end()) memory_[data] = saved->second;
  }
  void VisitStmt_(const Seq* op, const Stmt&) override {
    for (const Stmt& s : op->stmts) VisitStmt(s);
  }
  void VisitStmt_(const Evaluate* op, const Stmt&) override { VisitExpr(op->value); }
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

  uint8_t* Address(const Buffer& buf, int64_t index, const char* what) {
    auto it = memory_.find(buf->data.get());
    AGATE_REQUIRE(it != memory_.end(), kInternal)
        << "kernel " << func_.name << ": " << what << " buffer " << buf->name << " outside its allocation";
    size_t eb = buf->dtype.element_bytes();
    AGATE_REQUIRE(index >= 0 && static_cast<size_t>(index + 1) * eb <= it->second.bytes, kOutOfRange)
        << "kernel " << func_.name << ": " << what << " " << buf->name << "[" << index << "] is outside its "
        << it->second.bytes / eb << " elements";
    return it->second.base + index * eb;
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
  std::unordered_map<const VarNode*, Value> env_;
  std::unordered_map<const VarNode*, Memory> memory_;
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
