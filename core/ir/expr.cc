#include "core/ir/expr.h"

#include <cmath>
#include <limits>

#include "core/ir/buffer.h"
#include "core/ir/printer.h"
#include "core/ir/substitute.h"
#include "core/support/error.h"

namespace agate {
namespace ir {

const char* ExprKindName(ExprKind kind) {
  switch (kind) {
    case ExprKind::kIntImm: return "IntImm";
    case ExprKind::kFloatImm: return "FloatImm";
    case ExprKind::kVar: return "Var";
    case ExprKind::kAdd: return "Add";
    case ExprKind::kSub: return "Sub";
    case ExprKind::kMul: return "Mul";
    case ExprKind::kDiv: return "Div";
    case ExprKind::kMod: return "Mod";
    case ExprKind::kFloorDiv: return "FloorDiv";
    case ExprKind::kFloorMod: return "FloorMod";
    case ExprKind::kMin: return "Min";
    case ExprKind::kMax: return "Max";
    case ExprKind::kEQ: return "EQ";
    case ExprKind::kNE: return "NE";
    case ExprKind::kLT: return "LT";
    case ExprKind::kLE: return "LE";
    case ExprKind::kGT: return "GT";
    case ExprKind::kGE: return "GE";
    case ExprKind::kAnd: return "And";
    case ExprKind::kOr: return "Or";
    case ExprKind::kNot: return "Not";
    case ExprKind::kSelect: return "Select";
    case ExprKind::kCast: return "Cast";
    case ExprKind::kCall: return "Call";
    case ExprKind::kRamp: return "Ramp";
    case ExprKind::kBroadcast: return "Broadcast";
    case ExprKind::kLet: return "Let";
    case ExprKind::kLoad: return "Load";
    case ExprKind::kTensorRead: return "TensorRead";
    case ExprKind::kReduce: return "Reduce";
  }
  return "?";
}

const char* CallOpName(CallOp op) {
  switch (op) {
    case CallOp::kExp: return "exp";
    case CallOp::kLog: return "log";
    case CallOp::kSqrt: return "sqrt";
    case CallOp::kRsqrt: return "rsqrt";
    case CallOp::kTanh: return "tanh";
    case CallOp::kErf: return "erf";
    case CallOp::kSigmoid: return "sigmoid";
    case CallOp::kPow: return "pow";
    case CallOp::kFloor: return "floor";
    case CallOp::kCeil: return "ceil";
    case CallOp::kAbs: return "abs";
    case CallOp::kRound: return "round";
    case CallOp::kFma: return "fma";
    case CallOp::kReinterpret: return "reinterpret";
    case CallOp::kTrunc: return "trunc";
    case CallOp::kSin: return "sin";
    case CallOp::kCos: return "cos";
    case CallOp::kBitwiseAnd: return "bitwise_and";
    case CallOp::kBitwiseOr: return "bitwise_or";
    case CallOp::kBitwiseXor: return "bitwise_xor";
    case CallOp::kBitwiseNot: return "bitwise_not";
    case CallOp::kShiftLeft: return "shift_left";
    case CallOp::kShiftRight: return "shift_right";
    case CallOp::kSyncThreads: return "sync_threads";
    case CallOp::kShuffleXor: return "shuffle_xor";
    case CallOp::kDot4U8S8: return "dot4_u8s8";
    case CallOp::kDot4S8S8: return "dot4_s8s8";
    case CallOp::kDot2I16: return "dot2_i16";
  }
  return "?";
}

bool IsBitwise(CallOp op) {
  return op == CallOp::kBitwiseAnd || op == CallOp::kBitwiseOr || op == CallOp::kBitwiseXor ||
         op == CallOp::kBitwiseNot || op == CallOp::kShiftLeft || op == CallOp::kShiftRight;
}

bool IsGpuIntrinsic(CallOp op) { return op == CallOp::kSyncThreads || op == CallOp::kShuffleXor; }

int CallOpArity(CallOp op) {
  switch (op) {
    case CallOp::kSyncThreads: return 0;
    case CallOp::kPow: return 2;
    case CallOp::kBitwiseAnd: return 2;
    case CallOp::kBitwiseOr: return 2;
    case CallOp::kBitwiseXor: return 2;
    case CallOp::kShiftLeft: return 2;
    case CallOp::kShiftRight: return 2;
    case CallOp::kFma: return 3;
    case CallOp::kShuffleXor: return 3;
    case CallOp::kDot4U8S8: return 3;
    case CallOp::kDot4S8S8: return 3;
    case CallOp::kDot2I16: return 3;
    default: return 1;
  }
}

const char* IterVarKindName(IterVarKind kind) {
  switch (kind) {
    case IterVarKind::kDataPar: return "data_par";
    case IterVarKind::kCommReduce: return "reduce";
    case IterVarKind::kOrdered: return "ordered";
    case IterVarKind::kThreadIndex: return "thread_index";
    case IterVarKind::kOpaque: return "opaque";
  }
  return "?";
}

Expr::Expr(int value) : Expr(IntImm::make(DType::Int(32), value)) {}
Expr::Expr(int64_t value) : Expr(IntImm::make(DType::Int(64), value)) {}
Expr::Expr(float value) : Expr(FloatImm::make(DType::Float(32), value)) {}
Expr::Expr(double value) : Expr(FloatImm::make(DType::Float(64), value)) {}

Var::Var(const std::string& name, DType dtype) : Expr(std::make_shared<VarNode>(name, dtype)) {}

Var AsVar(const Expr& e) {
  AGATE_CHECK(e.as<VarNode>() != nullptr) << "expected a variable, got " << e;
  return Var(std::static_pointer_cast<const VarNode>(e.node_ptr()));
}

// ---------------------------------------------------------------- make

namespace {

template <typename T, typename... Args>
Expr MakeNode(Args&&... args) {
  return Expr(std::make_shared<T>(std::forward<Args>(args)...));
}

void RequireDefined(const Expr& e, const char* what, const char* node) {
  AGATE_REQUIRE(e.defined(), kInvalidArgument) << node << ": " << what << " is undefined";
}

void RequireSameType(const Expr& a, const Expr& b, const char* node) {
  RequireDefined(a, "first operand", node);
  RequireDefined(b, "second operand", node);
  AGATE_REQUIRE(a.dtype() == b.dtype(), kInvalidArgument)
      << node << ": operand dtypes differ (" << a.dtype() << " vs " << b.dtype() << ") in " << a << " and " << b;
}

}  // namespace

Expr IntImm::make(DType dtype, int64_t value) {
  AGATE_REQUIRE(dtype.is_scalar() && (dtype.is_integer() || dtype.is_bool()), kInvalidArgument)
      << "IntImm: dtype " << dtype << " is not a scalar integer type";
  if (dtype.is_bool()) {
    value = value != 0;
  } else if (dtype.bits() < 64) {
    // Keep the value representable: wrap like a C conversion to the narrower type.
    uint64_t mask = (uint64_t{1} << dtype.bits()) - 1;
    uint64_t u = static_cast<uint64_t>(value) & mask;
    if (dtype.is_int() && (u >> (dtype.bits() - 1))) u |= ~mask;
    value = static_cast<int64_t>(u);
  }
  return MakeNode<IntImm>(dtype, value);
}

Expr FloatImm::make(DType dtype, double value) {
  AGATE_REQUIRE(dtype.is_scalar() && dtype.is_float(), kInvalidArgument)
      << "FloatImm: dtype " << dtype << " is not a scalar float type";
  return MakeNode<FloatImm>(dtype, value);
}

template <ExprKind K>
Expr BinaryNode<K>::make(Expr a, Expr b) {
  RequireSameType(a, b, ExprKindName(K));
  if (K == ExprKind::kAnd || K == ExprKind::kOr) {
    AGATE_REQUIRE(a.dtype().is_bool(), kInvalidArgument)
        << ExprKindName(K) << ": operands must be bool, got " << a.dtype();
  } else {
    AGATE_REQUIRE(!a.dtype().is_handle(), kInvalidArgument)
        << ExprKindName(K) << ": arithmetic on a handle " << a;
  }
  if (K == ExprKind::kMod || K == ExprKind::kFloorDiv || K == ExprKind::kFloorMod) {
    AGATE_REQUIRE(!a.dtype().is_float() || K == ExprKind::kMod, kInvalidArgument)
        << ExprKindName(K) << ": needs integer operands, got " << a.dtype();
  }
  DType t = a.dtype();
  return MakeNode<BinaryNode<K>>(t, std::move(a), std::move(b));
}
template struct BinaryNode<ExprKind::kAdd>;
template struct BinaryNode<ExprKind::kSub>;
template struct BinaryNode<ExprKind::kMul>;
template struct BinaryNode<ExprKind::kDiv>;
template struct BinaryNode<ExprKind::kMod>;
template struct BinaryNode<ExprKind::kFloorDiv>;
template struct BinaryNode<ExprKind::kFloorMod>;
template struct BinaryNode<ExprKind::kMin>;
template struct BinaryNode<ExprKind::kMax>;
template struct BinaryNode<ExprKind::kAnd>;
template struct BinaryNode<ExprKind::kOr>;

template <ExprKind K>
Expr CmpNode<K>::make(Expr a, Expr b) {
  RequireSameType(a, b, ExprKindName(K));
  DType t = DType::Bool(a.dtype().lanes());
  return MakeNode<CmpNode<K>>(t, std::move(a), std::move(b));
}
template struct CmpNode<ExprKind::kEQ>;
template struct CmpNode<ExprKind::kNE>;
template struct CmpNode<ExprKind::kLT>;
template struct CmpNode<ExprKind::kLE>;
template struct CmpNode<ExprKind::kGT>;
template struct CmpNode<ExprKind::kGE>;

Expr Not::make(Expr a) {
  RequireDefined(a, "operand", "Not");
  AGATE_REQUIRE(a.dtype().is_bool(), kInvalidArgument) << "Not: operand must be bool, got " << a.dtype();
  DType t = a.dtype();
  return MakeNode<Not>(t, std::move(a));
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
  RequireDefined(condition, "condition", "Select");
  RequireSameType(true_value, false_value, "Select");
  AGATE_REQUIRE(condition.dtype().is_bool(), kInvalidArgument)
      << "Select: condition must be bool, got " << condition.dtype() << " in " << condition;
  AGATE_REQUIRE(condition.dtype().lanes() == 1 || condition.dtype().lanes() == true_value.dtype().lanes(),
                kInvalidArgument)
      << "Select: condition lanes " << condition.dtype().lanes() << " do not match value lanes "
      << true_value.dtype().lanes();
  DType t = true_value.dtype();
  return MakeNode<Select>(t, std::move(condition), std::move(true_value), std::move(false_value));
}

Expr Cast::make(DType dtype, Expr value) {
  RequireDefined(value, "value", "Cast");
  AGATE_REQUIRE(dtype.lanes() == value.dtype().lanes(), kInvalidArgument)
      << "Cast: lanes differ (" << value.dtype() << " to " << dtype << ")";
  return MakeNode<Cast>(dtype, std::move(value));
}

Expr Call::make(DType dtype, CallOp op, std::vector<Expr> args) {
  AGATE_REQUIRE(static_cast<int>(args.size()) == CallOpArity(op), kInvalidArgument)
      << "Call " << CallOpName(op) << ": takes " << CallOpArity(op) << " argument(s), got " << args.size();
  for (const Expr& a : args) RequireDefined(a, "argument", CallOpName(op));
  if (op == CallOp::kReinterpret) {
    AGATE_REQUIRE(dtype.bits() * dtype.lanes() == args[0].dtype().bits() * args[0].dtype().lanes(), kInvalidArgument)
        << "reinterpret: " << args[0].dtype() << " and " << dtype << " differ in size";
  } else if (op == CallOp::kSyncThreads) {
    AGATE_REQUIRE(dtype == DType::Int(32), kInvalidArgument) << "sync_threads: the result is int32, not " << dtype;
  } else if (op == CallOp::kShuffleXor) {
    AGATE_REQUIRE(args[0].dtype() == dtype && dtype.is_scalar() && !dtype.is_handle(), kInvalidArgument)
        << "shuffle_xor: shuffles a scalar of the result type " << dtype << ", got " << args[0].dtype();
    for (size_t i = 1; i < args.size(); ++i) {
      AGATE_REQUIRE(args[i].dtype() == DType::Int(32), kInvalidArgument)
          << "shuffle_xor: lane mask and width are int32, got " << args[i].dtype();
    }
  } else if (op == CallOp::kDot4U8S8) {
    int n = dtype.lanes();
    AGATE_REQUIRE(dtype.is_int() && dtype.bits() == 32 && args[0].dtype() == dtype &&
                      (args[1].dtype() == DType::UInt(8, 4 * n) || args[1].dtype() == DType::UInt(8, 4)) &&
                      (args[2].dtype() == DType::Int(8, 4 * n) || args[2].dtype() == DType::Int(8, 4)),
                  kInvalidArgument)
        << "dot4_u8s8: takes (int32x" << n << ", uint8x" << 4 * n << " or x4, int8x" << 4 * n
        << " or x4) for an int32x" << n
        << " result " << dtype << ", got (" << args[0].dtype() << ", " << args[1].dtype() << ", " << args[2].dtype()
        << ")";
  } else if (op == CallOp::kDot4S8S8) {
    int n = dtype.lanes();
    auto groups = [&](const DType& t) { return t == DType::Int(8, 4 * n) || t == DType::Int(8, 4); };
    AGATE_REQUIRE(dtype.is_int() && dtype.bits() == 32 && args[0].dtype() == dtype && groups(args[1].dtype()) &&
                      groups(args[2].dtype()),
                  kInvalidArgument)
        << "dot4_s8s8: takes (int32x" << n << ", int8x" << 4 * n << " or x4, int8x" << 4 * n << " or x4) for an int32x"
        << n << " result " << dtype << ", got (" << args[0].dtype() << ", " << args[1].dtype() << ", "
        << args[2].dtype() << ")";
  } else if (op == CallOp::kDot2I16) {
    int n = dtype.lanes();
    auto pairs = [&](const DType& t) { return t == DType::Int(16, 2 * n) || t == DType::Int(16, 2); };
    AGATE_REQUIRE(dtype.is_int() && dtype.bits() == 32 && args[0].dtype() == dtype && pairs(args[1].dtype()) &&
                      pairs(args[2].dtype()),
                  kInvalidArgument)
        << "dot2_i16: takes (int32x" << n << ", int16x" << 2 * n << " or x2, int16x" << 2 * n << " or x2) for an int32x"
        << n << " result " << dtype << ", got (" << args[0].dtype() << ", " << args[1].dtype() << ", "
        << args[2].dtype() << ")";
  } else {
    for (const Expr& a : args) {
      AGATE_REQUIRE(a.dtype() == dtype, kInvalidArgument)
          << "Call " << CallOpName(op) << ": argument dtype " << a.dtype() << " differs from result " << dtype;
    }
    if (IsBitwise(op)) {
      AGATE_REQUIRE(dtype.is_int() || dtype.is_uint(), kInvalidArgument)
          << "Call " << CallOpName(op) << ": needs an integer argument, got " << dtype;
    } else if (op != CallOp::kAbs) {
      AGATE_REQUIRE(dtype.is_float(), kInvalidArgument)
          << "Call " << CallOpName(op) << ": needs a float argument, got " << dtype;
    }
  }
  return MakeNode<Call>(dtype, op, std::move(args));
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
  RequireSameType(base, stride, "Ramp");
  AGATE_REQUIRE(base.dtype().is_scalar() && lanes > 1, kInvalidArgument)
      << "Ramp: needs a scalar base and lanes > 1, got " << base.dtype() << " x " << lanes;
  DType t = base.dtype().with_lanes(lanes);
  return MakeNode<Ramp>(t, std::move(base), std::move(stride), lanes);
}

Expr Broadcast::make(Expr value, int lanes) {
  RequireDefined(value, "value", "Broadcast");
  AGATE_REQUIRE(value.dtype().is_scalar() && lanes > 1, kInvalidArgument)
      << "Broadcast: needs a scalar value and lanes > 1, got " << value.dtype() << " x " << lanes;
  DType t = value.dtype().with_lanes(lanes);
  return MakeNode<Broadcast>(t, std::move(value), lanes);
}

Expr Let::make(Var var, Expr value, Expr body) {
  RequireDefined(value, "value", "Let");
  RequireDefined(body, "body", "Let");
  AGATE_REQUIRE(var.dtype() == value.dtype(), kInvalidArgument)
      << "Let " << var.name() << ": variable dtype " << var.dtype() << " differs from value dtype " << value.dtype();
  DType t = body.dtype();
  return MakeNode<Let>(t, std::move(var), std::move(value), std::move(body));
}

Expr Load::make(Buffer buffer, Expr index, Expr predicate) {
  AGATE_REQUIRE(buffer.defined(), kInvalidArgument) << "Load: undefined buffer";
  RequireDefined(index, "index", "Load");
  AGATE_REQUIRE(index.dtype().is_integer(), kInvalidArgument)
      << "Load from " << buffer->name << ": index must be an integer, got " << index.dtype();
  if (predicate.defined()) {
    AGATE_REQUIRE(predicate.dtype() == DType::Bool(index.dtype().lanes()), kInvalidArgument)
        << "Load from " << buffer->name << ": predicate " << predicate.dtype() << " does not match index lanes";
  }
  DType t = buffer->dtype.with_lanes(index.dtype().lanes());
  return MakeNode<Load>(t, std::move(buffer), std::move(index), std::move(predicate));
}

Expr TensorRead::make(Producer producer, std::vector<Expr> indices) {
  AGATE_REQUIRE(producer != nullptr, kInvalidArgument) << "TensorRead: undefined tensor";
  AGATE_REQUIRE(indices.size() == producer->producer_shape().size(), kInvalidArgument)
      << "tensor " << producer->producer_name() << " has " << producer->producer_shape().size()
      << " dimension(s) but is indexed with " << indices.size();
  for (const Expr& i : indices) {
    RequireDefined(i, "index", "TensorRead");
    AGATE_REQUIRE(i.dtype().is_integer() && i.dtype().is_scalar(), kInvalidArgument)
        << "tensor " << producer->producer_name() << ": index " << i << " is " << i.dtype()
        << ", not a scalar integer";
  }
  DType t = producer->producer_dtype();
  return MakeNode<TensorRead>(t, std::move(producer), std::move(indices));
}

Range Range::FromMinMax(Expr begin, Expr end) { return Range(begin, end - begin); }

IterVar::IterVar(Range dom, Var var, IterVarKind kind, std::string thread_tag)
    : node_(std::make_shared<IterVarNode>(std::move(var), std::move(dom), kind, std::move(thread_tag))) {}

std::vector<Expr> CommReducer::Combine(const std::vector<Expr>& a, const std::vector<Expr>& b) const {
  AGATE_CHECK(a.size() == lhs.size() && b.size() == rhs.size()) << "combiner arity mismatch";
  VarMap map;
  for (size_t i = 0; i < lhs.size(); ++i) {
    map[lhs[i].get()] = a[i];
    map[rhs[i].get()] = b[i];
  }
  std::vector<Expr> out;
  for (const Expr& r : result) out.push_back(Substitute(r, map));
  return out;
}

Expr Reduce::make(CommReducer combiner, std::vector<Expr> source, std::vector<IterVar> axis, Expr condition,
                  int value_index, std::vector<Expr> init) {
  AGATE_REQUIRE(!source.empty() && source.size() == combiner.size(), kInvalidArgument)
      << "Reduce: " << source.size() << " source value(s) for a combiner of " << combiner.size();
  AGATE_REQUIRE(combiner.lhs.size() == combiner.size() && combiner.rhs.size() == combiner.size() &&
                    combiner.identity_element.size() == combiner.size(),
                kInvalidArgument)
      << "Reduce: combiner lhs/rhs/identity sizes differ from its result size";
  AGATE_REQUIRE(value_index >= 0 && value_index < static_cast<int>(source.size()), kInvalidArgument)
      << "Reduce: value_index " << value_index << " out of range";
  AGATE_REQUIRE(init.empty() || init.size() == source.size(), kInvalidArgument)
      << "Reduce: " << init.size() << " init value(s) for " << source.size() << " source value(s)";
  for (size_t i = 0; i < source.size(); ++i) {
    RequireDefined(source[i], "source", "Reduce");
    AGATE_REQUIRE(source[i].dtype() == combiner.result[i].dtype(), kInvalidArgument)
        << "Reduce: source " << source[i] << " is " << source[i].dtype() << " but the combiner yields "
        << combiner.result[i].dtype();
  }
  for (const IterVar& iv : axis) {
    AGATE_REQUIRE(iv.defined() && iv.kind() == IterVarKind::kCommReduce, kInvalidArgument)
        << "Reduce: axis " << (iv.defined() ? iv.name() : "<undefined>") << " is not a reduce_axis";
  }
  if (!condition.defined()) condition = IntImm::make(DType::Bool(), 1);
  AGATE_REQUIRE(condition.dtype() == DType::Bool(), kInvalidArgument)
      << "Reduce: condition must be a scalar bool, got " << condition.dtype();
  DType t = source[value_index].dtype();
  return MakeNode<Reduce>(t, std::move(combiner), std::move(source), std::move(axis), std::move(condition), value_index,
                          std::move(init));
}

// ---------------------------------------------------------------- constants

Expr make_const(DType dtype, double value) {
  DType scalar = dtype.element_of();
  Expr c = scalar.is_float() ? FloatImm::make(scalar, value) : IntImm::make(scalar, static_cast<int64_t>(value));
  return dtype.lanes() > 1 ? Broadcast::make(c, dtype.lanes()) : c;
}

Expr make_zero(DType dtype) { return make_const(dtype, 0); }

Expr max_value(DType dtype) {
  DType s = dtype.element_of();
  Expr v;
  if (s.is_int()) {
    v = IntImm::make(s, s.bits() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (s.bits() - 1)) - 1);
  } else if (s.is_uint()) {
    // IntImm stores int64; uint64 max is not representable, the largest int64 stands in.
    v = IntImm::make(s, s.bits() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << s.bits()) - 1);
  } else if (s.is_bool()) {
    v = IntImm::make(s, 1);
  } else if (s.is_float()) {
    double m = s.bits() == 64 ? std::numeric_limits<double>::max()
                              : s.bits() == 32 ? std::numeric_limits<float>::max() : 65504.0;
    if (s.code() == TypeCode::kBFloat) m = 3.38953139e38;
    v = FloatImm::make(s, m);
  } else {
    AGATE_THROW(kInvalidArgument) << "no maximum value for dtype " << dtype;
  }
  return dtype.lanes() > 1 ? Broadcast::make(v, dtype.lanes()) : v;
}

Expr min_value(DType dtype) {
  DType s = dtype.element_of();
  Expr v;
  if (s.is_int()) {
    v = IntImm::make(s, s.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (s.bits() - 1)));
  } else if (s.is_uint() || s.is_bool()) {
    v = IntImm::make(s, 0);
  } else if (s.is_float()) {
    Expr m = max_value(s);
    v = FloatImm::make(s, -m.as<FloatImm>()->value);
  } else {
    AGATE_THROW(kInvalidArgument) << "no minimum value for dtype " << dtype;
  }
  return dtype.lanes() > 1 ? Broadcast::make(v, dtype.lanes()) : v;
}

bool is_const_int(const Expr& e, int64_t* value) {
  if (!e.defined()) return false;
  if (const IntImm* imm = e.as<IntImm>()) {
    if (value) *value = imm->value;
    return true;
  }
  if (const Broadcast* b = e.as<Broadcast>()) return is_const_int(b->value, value);
  return false;
}

bool is_zero(const Expr& e) {
  int64_t v;
  if (is_const_int(e, &v)) return v == 0;
  if (const FloatImm* f = e.as<FloatImm>()) return f->value == 0;
  if (const Broadcast* b = e.as<Broadcast>()) return is_zero(b->value);
  return false;
}

bool is_one(const Expr& e) {
  int64_t v;
  if (is_const_int(e, &v)) return v == 1;
  if (const FloatImm* f = e.as<FloatImm>()) return f->value == 1;
  if (const Broadcast* b = e.as<Broadcast>()) return is_one(b->value);
  return false;
}

bool is_const_number(const Expr& e) { return e.as<IntImm>() != nullptr || e.as<FloatImm>() != nullptr; }

// ---------------------------------------------------------------- promotion

namespace {

// Converts a literal to `dtype` (keeping it a literal).
Expr ConvertLiteral(const Expr& lit, DType dtype) {
  double v = lit.as<IntImm>() ? static_cast<double>(lit.as<IntImm>()->value) : lit.as<FloatImm>()->value;
  if (dtype.element_of().is_integer() || dtype.element_of().is_bool()) {
    if (const IntImm* i = lit.as<IntImm>()) {
      Expr c = IntImm::make(dtype.element_of(), i->value);
      return dtype.lanes() > 1 ? Broadcast::make(c, dtype.lanes()) : c;
    }
  }
  return make_const(dtype, v);
}

DType PromoteScalar(DType a, DType b) {
  if (a == b) return a;
  if (a.is_float() != b.is_float()) return a.is_float() ? a : b;
  if (a.is_bool()) return b;
  if (b.is_bool()) return a;
  if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
  // same width, int vs uint: signed wins (index arithmetic is signed)
  return a.is_int() ? a : b;
}

}  // namespace

void BinaryOpMatchTypes(Expr* a, Expr* b) {
  AGATE_REQUIRE(a->defined() && b->defined(), kInvalidArgument) << "arithmetic on an undefined expression";
  DType ta = a->dtype(), tb = b->dtype();
  if (ta == tb) return;
  AGATE_REQUIRE(!ta.is_handle() && !tb.is_handle() && !ta.is_void() && !tb.is_void(), kInvalidArgument)
      << "no arithmetic between " << ta << " and " << tb << " (" << *a << ", " << *b << ")";
  // Lanes: broadcast a scalar to the other's lanes.
  if (ta.lanes() != tb.lanes()) {
    AGATE_REQUIRE(ta.lanes() == 1 || tb.lanes() == 1, kInvalidArgument)
        << "lanes differ: " << ta << " and " << tb << " (" << *a << ", " << *b << ")";
  }
  int lanes = std::max(ta.lanes(), tb.lanes());
  bool lit_a = is_const_number(*a), lit_b = is_const_number(*b);
  DType target;
  if (lit_a && !lit_b && !(a->as<FloatImm>() && !tb.is_float())) {
    target = tb.element_of();
  } else if (lit_b && !lit_a && !(b->as<FloatImm>() && !ta.is_float())) {
    target = ta.element_of();
  } else {
    target = PromoteScalar(ta.element_of(), tb.element_of());
  }
  auto convert = [&](Expr* e) {
    if (e->dtype().element_of() != target) {
      *e = is_const_number(*e) ? ConvertLiteral(*e, target) : Cast::make(target.with_lanes(e->dtype().lanes()), *e);
    }
    if (e->dtype().lanes() != lanes) *e = Broadcast::make(*e, lanes);
  };
  convert(a);
  convert(b);
}

namespace {

bool BothInt(const Expr& a, const Expr& b, int64_t* x, int64_t* y) {
  return a.as<IntImm>() && b.as<IntImm>() && (*x = a.as<IntImm>()->value, *y = b.as<IntImm>()->value, true);
}

int64_t FloorDivInt(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

}  // namespace

Expr operator+(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y)) return IntImm::make(a.dtype(), x + y);
  if (is_const_int(b, &y) && y == 0) return a;
  if (is_const_int(a, &x) && x == 0) return b;
  return Add::make(a, b);
}

Expr operator-(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y)) return IntImm::make(a.dtype(), x - y);
  if (is_const_int(b, &y) && y == 0) return a;
  return Sub::make(a, b);
}

Expr operator*(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y)) return IntImm::make(a.dtype(), x * y);
  if (is_const_int(b, &y) && y == 1) return a;
  if (is_const_int(a, &x) && x == 1) return b;
  return Mul::make(a, b);
}

Expr operator/(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y) && y != 0) return IntImm::make(a.dtype(), x / y);
  return Div::make(a, b);
}

Expr operator%(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y) && y != 0) return IntImm::make(a.dtype(), x % y);
  return Mod::make(a, b);
}

Expr operator-(Expr a) {
  AGATE_REQUIRE(a.defined(), kInvalidArgument) << "negation of an undefined expression";
  if (const IntImm* i = a.as<IntImm>()) return IntImm::make(a.dtype(), -i->value);
  if (const FloatImm* f = a.as<FloatImm>()) return FloatImm::make(a.dtype(), -f->value);
  return make_zero(a.dtype()) - a;
}

#define AGATE_CMP_OPERATOR(OP, NODE)  \
  Expr operator OP(Expr a, Expr b) {  \
    BinaryOpMatchTypes(&a, &b);       \
    return NODE::make(a, b);          \
  }
AGATE_CMP_OPERATOR(<, LT)
AGATE_CMP_OPERATOR(<=, LE)
AGATE_CMP_OPERATOR(>, GT)
AGATE_CMP_OPERATOR(>=, GE)
AGATE_CMP_OPERATOR(==, EQ)
AGATE_CMP_OPERATOR(!=, NE)
#undef AGATE_CMP_OPERATOR

Expr operator&&(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  return And::make(a, b);
}
Expr operator||(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  return Or::make(a, b);
}
Expr operator!(Expr a) { return Not::make(a); }

Expr floordiv(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y) && y != 0) return IntImm::make(a.dtype(), FloorDivInt(x, y));
  if (is_const_int(b, &y) && y == 1) return a;
  return FloorDiv::make(a, b);
}

Expr floormod(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y) && y != 0) return IntImm::make(a.dtype(), x - FloorDivInt(x, y) * y);
  if (is_const_int(b, &y) && y == 1) return make_zero(a.dtype());
  return FloorMod::make(a, b);
}

Expr truncdiv(Expr a, Expr b) {
  AGATE_REQUIRE(a.defined() && b.defined() && !a.dtype().is_float() && !b.dtype().is_float(), kInvalidArgument)
      << "truncdiv needs integer operands";
  return a / b;
}
Expr truncmod(Expr a, Expr b) { return a % b; }

Expr min(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y)) return IntImm::make(a.dtype(), std::min(x, y));
  return Min::make(a, b);
}

Expr max(Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  int64_t x, y;
  if (BothInt(a, b, &x, &y)) return IntImm::make(a.dtype(), std::max(x, y));
  return Max::make(a, b);
}

Expr select(Expr condition, Expr true_value, Expr false_value) {
  BinaryOpMatchTypes(&true_value, &false_value);
  return Select::make(condition, true_value, false_value);
}

Expr cast(DType dtype, Expr value) {
  AGATE_REQUIRE(value.defined(), kInvalidArgument) << "cast of an undefined expression";
  if (value.dtype() == dtype) return value;
  if (is_const_number(value) && dtype.is_scalar() && !dtype.is_handle()) return ConvertLiteral(value, dtype);
  if (dtype.lanes() > 1 && value.dtype().lanes() == 1) {
    return Broadcast::make(cast(dtype.element_of(), value), dtype.lanes());
  }
  return Cast::make(dtype, value);
}

Expr reinterpret(DType dtype, Expr value) { return Call::make(dtype, CallOp::kReinterpret, {value}); }

namespace {
Expr FloatCall(CallOp op, Expr x) {
  AGATE_REQUIRE(x.defined(), kInvalidArgument) << CallOpName(op) << " of an undefined expression";
  if (!x.dtype().is_float()) x = cast(DType::Float(32, x.dtype().lanes()), x);
  DType t = x.dtype();
  return Call::make(t, op, {x});
}
}  // namespace

Expr exp(Expr x) { return FloatCall(CallOp::kExp, x); }
Expr log(Expr x) { return FloatCall(CallOp::kLog, x); }
Expr sqrt(Expr x) { return FloatCall(CallOp::kSqrt, x); }
Expr rsqrt(Expr x) { return FloatCall(CallOp::kRsqrt, x); }
Expr tanh(Expr x) { return FloatCall(CallOp::kTanh, x); }
Expr erf(Expr x) { return FloatCall(CallOp::kErf, x); }
Expr sigmoid(Expr x) { return FloatCall(CallOp::kSigmoid, x); }
Expr floor(Expr x) { return FloatCall(CallOp::kFloor, x); }
Expr ceil(Expr x) { return FloatCall(CallOp::kCeil, x); }
Expr round(Expr x) { return FloatCall(CallOp::kRound, x); }
Expr trunc(Expr x) { return FloatCall(CallOp::kTrunc, x); }
Expr sin(Expr x) { return FloatCall(CallOp::kSin, x); }
Expr cos(Expr x) { return FloatCall(CallOp::kCos, x); }
Expr abs(Expr x) {
  AGATE_REQUIRE(x.defined(), kInvalidArgument) << "abs of an undefined expression";
  DType t = x.dtype();
  return Call::make(t, CallOp::kAbs, {x});
}
Expr pow(Expr x, Expr y) {
  BinaryOpMatchTypes(&x, &y);
  if (!x.dtype().is_float()) {
    x = cast(DType::Float(32, x.dtype().lanes()), x);
    y = cast(x.dtype(), y);
  }
  DType t = x.dtype();
  return Call::make(t, CallOp::kPow, {x, y});
}
namespace {
Expr BitwiseCall(CallOp op, Expr a, Expr b) {
  BinaryOpMatchTypes(&a, &b);
  DType t = a.dtype();
  return Call::make(t, op, {a, b});
}
}  // namespace
Expr bitwise_and(Expr a, Expr b) { return BitwiseCall(CallOp::kBitwiseAnd, a, b); }
Expr bitwise_or(Expr a, Expr b) { return BitwiseCall(CallOp::kBitwiseOr, a, b); }
Expr bitwise_xor(Expr a, Expr b) { return BitwiseCall(CallOp::kBitwiseXor, a, b); }
Expr shift_left(Expr a, Expr n) { return BitwiseCall(CallOp::kShiftLeft, a, n); }
Expr shift_right(Expr a, Expr n) { return BitwiseCall(CallOp::kShiftRight, a, n); }
Expr bitwise_not(Expr x) {
  AGATE_REQUIRE(x.defined(), kInvalidArgument) << "bitwise_not of an undefined expression";
  DType t = x.dtype();
  return Call::make(t, CallOp::kBitwiseNot, {x});
}
Expr dot4_u8s8(Expr acc, Expr a, Expr b) {
  AGATE_REQUIRE(acc.defined() && a.defined() && b.defined(), kInvalidArgument) << "dot4_u8s8 of an undefined expression";
  DType t = acc.dtype();
  return Call::make(t, CallOp::kDot4U8S8, {acc, a, b});
}
Expr dot4_s8s8(Expr acc, Expr a, Expr b) {
  AGATE_REQUIRE(acc.defined() && a.defined() && b.defined(), kInvalidArgument) << "dot4_s8s8 of an undefined expression";
  DType t = acc.dtype();
  return Call::make(t, CallOp::kDot4S8S8, {acc, a, b});
}
Expr dot2_i16(Expr acc, Expr a, Expr b) {
  AGATE_REQUIRE(acc.defined() && a.defined() && b.defined(), kInvalidArgument) << "dot2_i16 of an undefined expression";
  DType t = acc.dtype();
  return Call::make(t, CallOp::kDot2I16, {acc, a, b});
}
const Load* AsStridedBytePair(const Expr& pair) {
  const Cast* cast = pair.as<Cast>();
  const Load* load = cast && cast->dtype == DType::Int(16, 2) ? cast->value.as<Load>() : nullptr;
  const Ramp* ramp = load ? load->index.as<Ramp>() : nullptr;
  int64_t stride = 0, elements = 1;
  if (ramp == nullptr || load->dtype != DType::Int(8, 2) || load->predicate.defined() ||
      !is_const_int(ramp->stride, &stride) || stride != 2) {
    return nullptr;
  }
  for (const Expr& extent : load->buffer->shape) {
    int64_t e = 0;
    if (!is_const_int(extent, &e)) return nullptr;
    elements *= e;
  }
  return elements % 4 == 0 ? load : nullptr;
}
int DotGroup(CallOp op) {
  if (op == CallOp::kDot4U8S8 || op == CallOp::kDot4S8S8) return 4;
  if (op == CallOp::kDot2I16) return 2;
  return 0;
}
Expr fma(Expr a, Expr b, Expr c) {
  BinaryOpMatchTypes(&a, &b);
  BinaryOpMatchTypes(&a, &c);
  BinaryOpMatchTypes(&b, &c);
  DType t = a.dtype();
  return Call::make(t, CallOp::kFma, {a, b, c});
}

}  // namespace ir
}  // namespace agate
