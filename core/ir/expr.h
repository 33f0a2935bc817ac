// Expressions of agate's tensor-expression language and loop IR.
//
// Why one expression language for both layers: tensor expressions (core/te) are
// written with the same arithmetic that the lowered loop IR (core/lower) computes
// with, so lowering is a sequence of rewrites of one tree type instead of a
// translation between languages. Two node kinds only live before lowering:
// TensorRead (a read of a tensor by multi-dimensional index, replaced by Load on a
// flattened Buffer during storage flattening) and Reduce (a commutative reduction,
// replaced by an init store plus an update loop during loop-nest generation).
//
// Nodes are immutable and shared: every node is held by std::shared_ptr<const
// node> behind a small handle (Expr, Var, IterVar, Buffer). A pass that changes a
// tree builds new nodes and shares the unchanged subtrees. Identity (same_as) is
// pointer identity; structural comparison lives in core/ir/equality.h.
//
// Node structs are named after what they compute (Add, Load, Ramp...) and are
// built with their static make(); handles downcast with expr.as<Add>().
#ifndef AGATE_CORE_IR_EXPR_H_
#define AGATE_CORE_IR_EXPR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/dtype.h"

namespace agate {
namespace ir {

enum class ExprKind : uint8_t {
  kIntImm,
  kFloatImm,
  kVar,
  kAdd,
  kSub,
  kMul,
  kDiv,       // float division; for integers C division (truncates toward zero)
  kMod,       // integer remainder with the sign of the dividend (C %)
  kFloorDiv,  // integer division rounding toward minus infinity
  kFloorMod,  // remainder of FloorDiv: result has the sign of the divisor
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr,
  kNot,
  kSelect,
  kCast,
  kCall,
  kRamp,
  kBroadcast,
  kLet,
  kLoad,
  kTensorRead,  // TE level: read of a tensor by multi-dimensional index
  kReduce,      // TE level: commutative reduction over reduce axes
};

// Name of a kind, e.g. "Add"; used in error messages.
const char* ExprKindName(ExprKind kind);

struct ExprNode {
  ExprNode(ExprKind kind, DType dtype) : kind(kind), dtype(dtype) {}
  virtual ~ExprNode() = default;
  ExprNode(const ExprNode&) = delete;
  ExprNode& operator=(const ExprNode&) = delete;

  const ExprKind kind;
  const DType dtype;
};

// A handle to an immutable expression node. Default-constructed handles are
// "undefined" (used for optional fields such as a Load's predicate).
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  // Literals: an int becomes an int32 IntImm, an int64_t an int64 IntImm, a float
  // a float32 FloatImm and a double a float64 FloatImm. Binary operators adapt a
  // literal operand to the type of the other operand (see operator+).
  Expr(int value);      // NOLINT(runtime/explicit): literals read like numbers
  Expr(int64_t value);  // NOLINT
  Expr(float value);    // NOLINT
  Expr(double value);   // NOLINT

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  const std::shared_ptr<const ExprNode>& node_ptr() const { return node_; }
  DType dtype() const { return node_->dtype; }
  ExprKind kind() const { return node_->kind; }
  bool same_as(const Expr& other) const { return node_ == other.node_; }

  // Downcast: nullptr unless this is a T (T::kKind names the node kind).
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const ExprNode> node_;
};

// Hash/equality on node identity, for unordered containers keyed by Expr.
struct ExprPtrHash {
  size_t operator()(const Expr& e) const { return std::hash<const void*>()(e.get()); }
};
struct ExprPtrEqual {
  bool operator()(const Expr& a, const Expr& b) const { return a.same_as(b); }
};

// ---------------------------------------------------------------- leaves

struct IntImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kIntImm;
  IntImm(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  // `dtype` must be a scalar integer, uint or bool type.
  static Expr make(DType dtype, int64_t value);
  const int64_t value;
};

struct FloatImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kFloatImm;
  FloatImm(DType t, double v) : ExprNode(kKind, t), value(v) {}
  static Expr make(DType dtype, double value);
  const double value;
};

// A variable: a loop index, a let-bound name, a shape symbol, or (with handle
// dtype) the base address of a buffer. Two Vars are the same variable only when
// they are the same node; names are for printing and need not be unique.
struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kVar;
  VarNode(std::string n, DType t) : ExprNode(kKind, t), name(std::move(n)) {}
  const std::string name;
};

class Var : public Expr {
 public:
  // A fresh variable; index variables are int64 (DType::Index()).
  explicit Var(const std::string& name = "v", DType dtype = DType::Index());
  explicit Var(std::shared_ptr<const VarNode> node) : Expr(std::move(node)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
  // A new variable with the same dtype and a derived name, e.g. "i.outer".
  Var copy_with_suffix(const std::string& suffix) const { return Var(name() + suffix, dtype()); }
};

// The Var of an Expr that is a variable; throws kInternal otherwise.
Var AsVar(const Expr& e);

struct VarPtrHash {
  size_t operator()(const Var& v) const { return std::hash<const void*>()(v.get()); }
};
struct VarPtrEqual {
  bool operator()(const Var& a, const Var& b) const { return a.same_as(b); }
};

// ---------------------------------------------------------------- arithmetic

// Binary arithmetic (Add..Max) and logic (And, Or): operands have equal dtypes.
template <ExprKind K>
struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = K;
  BinaryNode(DType t, Expr a_, Expr b_) : ExprNode(K, t), a(std::move(a_)), b(std::move(b_)) {}
  // Throws kInvalidArgument when the operand dtypes differ (use the operators
  // below for implicit promotion).
  static Expr make(Expr a, Expr b);
  const Expr a;
  const Expr b;
};
using Add = BinaryNode<ExprKind::kAdd>;
using Sub = BinaryNode<ExprKind::kSub>;
using Mul = BinaryNode<ExprKind::kMul>;
using Div = BinaryNode<ExprKind::kDiv>;
using Mod = BinaryNode<ExprKind::kMod>;
using FloorDiv = BinaryNode<ExprKind::kFloorDiv>;
using FloorMod = BinaryNode<ExprKind::kFloorMod>;
using Min = BinaryNode<ExprKind::kMin>;
using Max = BinaryNode<ExprKind::kMax>;
using And = BinaryNode<ExprKind::kAnd>;
using Or = BinaryNode<ExprKind::kOr>;

// Comparisons: operands of equal dtype, result bool with the operands' lanes.
template <ExprKind K>
struct CmpNode : ExprNode {
  static constexpr ExprKind kKind = K;
  CmpNode(DType t, Expr a_, Expr b_) : ExprNode(K, t), a(std::move(a_)), b(std::move(b_)) {}
  static Expr make(Expr a, Expr b);
  const Expr a;
  const Expr b;
};
using EQ = CmpNode<ExprKind::kEQ>;
using NE = CmpNode<ExprKind::kNE>;
using LT = CmpNode<ExprKind::kLT>;
using LE = CmpNode<ExprKind::kLE>;
using GT = CmpNode<ExprKind::kGT>;
using GE = CmpNode<ExprKind::kGE>;

struct Not : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kNot;
  Not(DType t, Expr a_) : ExprNode(kKind, t), a(std::move(a_)) {}
  static Expr make(Expr a);
  const Expr a;
};

// condition ? true_value : false_value; lanes of condition match the arms or
// are 1. Expressions have no side effects, so code generators may evaluate both
// arms: lowering gives every load inside an arm that could fall outside its
// buffer the arm's condition as predicate (a masked load reads 0 and touches no
// memory), so select(inside, data(y - 1), 0) is safe for padding. The same
// holds for the right operand of && and ||.
struct Select : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kSelect;
  Select(DType t, Expr c, Expr tv, Expr fv)
      : ExprNode(kKind, t), condition(std::move(c)), true_value(std::move(tv)), false_value(std::move(fv)) {}
  static Expr make(Expr condition, Expr true_value, Expr false_value);
  const Expr condition;
  const Expr true_value;
  const Expr false_value;
};

// Numeric conversion to `dtype` (C semantics: float->int truncates; int->bool is != 0).
struct Cast : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCast;
  Cast(DType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  static Expr make(DType dtype, Expr value);
  const Expr value;
};

// Pure math intrinsics. Codegen maps each to an instruction or libm call; the
// evaluator computes them with <cmath>.
enum class CallOp : uint8_t {
  kExp,
  kLog,
  kSqrt,
  kRsqrt,    // 1 / sqrt(x)
  kTanh,
  kErf,
  kSigmoid,  // 1 / (1 + exp(-x))
  kPow,      // pow(x, y)
  kFloor,
  kCeil,
  kAbs,      // also for integers
  kRound,    // round half to even (nearbyint), as ONNX Round
  kFma,      // fma(a, b, c) = a * b + c
  kReinterpret,  // bit cast of the single argument to the call's dtype (same total bits)
  kTrunc,
  kSin,
  kCos,
  // Bitwise operations on integers (two's complement for signed types): ONNX BitwiseAnd/Or/Xor/Not.
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kBitwiseNot,
  // Logical shifts of the type's bits (ONNX BitShift, on unsigned types): shift_left(a, n),
  // shift_right(a, n). A shift amount (read as unsigned) of at least the bit width gives 0, as
  // numpy's left_shift/right_shift (ONNX's reference) and core/graph_eval do; LLVM's shl/lshr
  // and C's << and >> leave that case undefined, so code generators test for it.
  kShiftLeft,
  kShiftRight,
  // GPU intrinsics (CUDA kernels only; CPU code generators refuse them). They are
  // not pure: their value depends on other threads, so passes must neither move
  // nor duplicate them across a thread's control flow.
  kSyncThreads,  // __syncthreads(): no arguments, int32 result, only as Evaluate(call)
  kShuffleXor,   // shuffle_xor(value, lane_mask, width): `value` of the lane lane ^ lane_mask
                 // within aligned groups of `width` lanes of the warp (int32 mask and width)
  // dot4_u8s8(acc, a, b): the 4-way 8-bit dot product of x86's vpdpbusd (AVX512-VNNI,
  // AVX-VNNI). acc is int32 with N lanes, a uint8 and b int8 with 4N lanes; lane i of
  // the int32 result is
  //   acc[i] + sum_{j<4} int32(a[4i+j]) * int32(b[4i+j])   (wrapping modulo 2^32)
  // a or b may instead have 4 lanes, one group of four used for every lane i (a[j] for
  // a[4i+j]): vpdpbusd's broadcast operand, what a GEMM micro-kernel multiplies a column
  // of packed weights with. Exact: no saturation (the 4 products lie in [-130560, 129540] and cannot overflow
  // an int32; only the final addition to acc wraps, as vpdpbusd does). Code generators
  // emit vpdpbusd where the target has VNNI and an exact widening sequence elsewhere.
  // The vectorizer never widens it (its lanes are already the hardware's); schedules
  // build it directly (core/ops/qlinear_vnni.h).
  kDot4U8S8,
  // dot4_s8s8(acc, a, b): the same 4-way dot product with a signed too, as AArch64's sdot
  // (the dotprod extension, Armv8.2-A: 16 s8 x s8 products into 4 int32 lanes per 128-bit
  // instruction). acc int32 with N lanes, a and b int8 with 4N lanes (or 4, broadcast);
  // exact (the 4 products lie in [-65024, 65536]), only the final addition wraps. Code
  // generators emit sdot where the target has dotprod, the widening sequence elsewhere.
  kDot4S8S8,
  // dot2_i16(acc, a, b): the 2-way 16-bit dot product of x86's pmaddwd (SSE2, AVX2,
  // AVX-512BW) added to acc: acc is int32 with N lanes, a and b int16 with 2N lanes (or 2
  // lanes, one pair used for every lane, as dot4_u8s8's groups); lane i of the result is
  //   acc[i] + int32(a[2i]) * int32(b[2i]) + int32(a[2i+1]) * int32(b[2i+1])   (modulo 2^32)
  // Exact modulo 2^32 (pmaddwd's pair sum wraps only for two products of -32768 * -32768,
  // and that wrap agrees modulo 2^32). The int8 templates' path where the target has no
  // VNNI (AVX2): operands minus their zero points lie in [-255, 255] as int16, so the
  // products of 8-bit values are exact without vpmaddubsw's 16-bit saturation. Never
  // widened by the vectorizer, like dot4_u8s8.
  kDot2I16,
};
const char* CallOpName(CallOp op);
// True for the GPU intrinsics above.
bool IsGpuIntrinsic(CallOp op);
// True for kBitwiseAnd/Or/Xor/Not and the shifts (integer operands, unlike the math functions).
bool IsBitwise(CallOp op);
// The number of arguments the intrinsic takes.
int CallOpArity(CallOp op);

struct Call : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCall;
  Call(DType t, CallOp o, std::vector<Expr> a) : ExprNode(kKind, t), op(o), args(std::move(a)) {}
  // Checks the arity; the result dtype is `dtype` (for math ops the argument dtype).
  static Expr make(DType dtype, CallOp op, std::vector<Expr> args);
  const CallOp op;
  const std::vector<Expr> args;
};

// ---------------------------------------------------------------- vectors

// The vector [base, base + stride, ..., base + (lanes-1)*stride]; base and stride scalar.
struct Ramp : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kRamp;
  Ramp(DType t, Expr b, Expr s, int l) : ExprNode(kKind, t), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  static Expr make(Expr base, Expr stride, int lanes);
  const Expr base;
  const Expr stride;
  const int lanes;
};

// A scalar value repeated in every lane.
struct Broadcast : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBroadcast;
  Broadcast(DType t, Expr v, int l) : ExprNode(kKind, t), value(std::move(v)), lanes(l) {}
  static Expr make(Expr value, int lanes);
  const Expr value;
  const int lanes;
};

// let var = value in body.
struct Let : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kLet;
  Let(DType t, Var v, Expr val, Expr b) : ExprNode(kKind, t), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  static Expr make(Var var, Expr value, Expr body);
  const Var var;
  const Expr value;
  const Expr body;
};

// ---------------------------------------------------------------- memory

struct BufferNode;  // core/ir/buffer.h

// A handle to a buffer description (core/ir/buffer.h has the fields and Create).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<const BufferNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const BufferNode* get() const { return node_.get(); }
  const BufferNode* operator->() const { return node_.get(); }
  bool same_as(const Buffer& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const BufferNode> node_;
};

// Read of a flattened buffer: buffer.data[index], in units of the buffer's
// element type. A vector index (Ramp) reads a vector; the optional predicate
// (bool with the index's lanes) masks lanes, masked lanes read as zero.
struct Load : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kLoad;
  Load(DType t, Buffer buf, Expr i, Expr p) : ExprNode(kKind, t), buffer(std::move(buf)), index(std::move(i)), predicate(std::move(p)) {}
  static Expr make(Buffer buffer, Expr index, Expr predicate = Expr());
  const Buffer buffer;
  const Expr index;
  const Expr predicate;  // undefined: all lanes
};

// ---------------------------------------------------------------- TE level

// Something that TensorRead/Provide/Realize name before storage flattening: in
// practice a te::Tensor (core/te/tensor.h). Declared here so the IR does not
// depend on the TE layer; identity is by pointer.
class ProducerNode {
 public:
  virtual ~ProducerNode() = default;
  virtual std::string producer_name() const = 0;
  virtual const std::vector<Expr>& producer_shape() const = 0;
  virtual DType producer_dtype() const = 0;
};
using Producer = std::shared_ptr<const ProducerNode>;

// producer(indices...): one element of a tensor before flattening.
struct TensorRead : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kTensorRead;
  TensorRead(DType t, Producer p, std::vector<Expr> i) : ExprNode(kKind, t), producer(std::move(p)), indices(std::move(i)) {}
  static Expr make(Producer producer, std::vector<Expr> indices);
  const Producer producer;
  const std::vector<Expr> indices;
};

// [min, min + extent).
struct Range {
  Range() = default;
  Range(Expr min_, Expr extent_) : min(std::move(min_)), extent(std::move(extent_)) {}
  // [begin, end)
  static Range FromMinMax(Expr begin, Expr end);
  Expr min;
  Expr extent;
};

// What an iteration variable iterates for: a data-parallel output axis, a
// reduction axis, an axis whose order matters (scan), or an axis bound to a GPU
// thread index.
enum class IterVarKind : uint8_t { kDataPar, kCommReduce, kOrdered, kThreadIndex, kOpaque };
const char* IterVarKindName(IterVarKind kind);

struct IterVarNode {
  IterVarNode(Var v, Range d, IterVarKind k, std::string tag)
      : var(std::move(v)), dom(std::move(d)), kind(k), thread_tag(std::move(tag)) {}
  const Var var;
  const Range dom;  // may have undefined min/extent for axes whose range bound inference decides
  const IterVarKind kind;
  const std::string thread_tag;  // "blockIdx.x", "threadIdx.y"... for kThreadIndex
};

// An axis of an iteration domain: a Var plus its range and kind. Identity by pointer.
class IterVar {
 public:
  IterVar() = default;
  IterVar(Range dom, Var var, IterVarKind kind, std::string thread_tag = "");
  bool defined() const { return node_ != nullptr; }
  const IterVarNode* get() const { return node_.get(); }
  const IterVarNode* operator->() const { return node_.get(); }
  bool same_as(const IterVar& other) const { return node_ == other.node_; }
  const Var& var() const { return node_->var; }
  const Range& dom() const { return node_->dom; }
  IterVarKind kind() const { return node_->kind; }
  const std::string& name() const { return node_->var.name(); }
  // An axis reads as its variable in expressions: A(i, k) with IterVar k.
  operator Expr() const { return node_->var; }  // NOLINT(runtime/explicit)

 private:
  std::shared_ptr<const IterVarNode> node_;
};
struct IterVarPtrHash {
  size_t operator()(const IterVar& v) const { return std::hash<const void*>()(v.get()); }
};
struct IterVarPtrEqual {
  bool operator()(const IterVar& a, const IterVar& b) const { return a.same_as(b); }
};

// A commutative, associative combiner over tuples: result_i(lhs, rhs) with
// identity_element_i. Sum is lhs + rhs with identity 0; argmax combines
// (index, value) pairs. Every reduction is expressed with one.
struct CommReducer {
  std::vector<Var> lhs;
  std::vector<Var> rhs;
  std::vector<Expr> result;
  std::vector<Expr> identity_element;
  // Applies the combiner to concrete operands (substitutes lhs/rhs).
  std::vector<Expr> Combine(const std::vector<Expr>& a, const std::vector<Expr>& b) const;
  size_t size() const { return result.size(); }
};

// reduce(combiner, source) over the iteration domain `axis`, counting only points
// where `condition` holds, starting from `init` (defaults to the identity).
// value_index selects which element of a tuple reduction this expression is.
struct Reduce : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kReduce;
  Reduce(DType t, CommReducer c, std::vector<Expr> s, std::vector<IterVar> ax, Expr cond, int vi, std::vector<Expr> in)
      : ExprNode(kKind, t), combiner(std::move(c)), source(std::move(s)), axis(std::move(ax)),
        condition(std::move(cond)), value_index(vi), init(std::move(in)) {}
  static Expr make(CommReducer combiner, std::vector<Expr> source, std::vector<IterVar> axis, Expr condition,
                   int value_index, std::vector<Expr> init = {});
  const CommReducer combiner;
  const std::vector<Expr> source;
  const std::vector<IterVar> axis;
  const Expr condition;  // bool; defined (true when unconditional)
  const int value_index;
  const std::vector<Expr> init;  // empty: start from the identity elements
};

// ---------------------------------------------------------------- building

// Constant of `dtype` (any scalar or vector type) equal to `value`.
Expr make_const(DType dtype, double value);
Expr make_zero(DType dtype);
// The largest / smallest finite value of a dtype (for max/min reduction identities).
Expr max_value(DType dtype);
Expr min_value(DType dtype);

// Constant inspection: true and the value when `e` is an IntImm (or a Broadcast of one).
bool is_const_int(const Expr& e, int64_t* value = nullptr);
bool is_zero(const Expr& e);
bool is_one(const Expr& e);
bool is_const_number(const Expr& e);  // IntImm or FloatImm

// Arithmetic with numpy-like promotion: a literal operand (IntImm/FloatImm) takes
// the dtype of the other operand; int with float gives the float; narrower with
// wider gives the wider; a scalar with a vector is broadcast. Integer constant
// operands are folded (2 + 3 is 5).
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // Div: true division for floats, truncating for ints
Expr operator%(Expr a, Expr b);  // Mod (truncating)
Expr operator-(Expr a);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);  // builds an EQ node; use same_as for identity
Expr operator!=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr truncdiv(Expr a, Expr b);
Expr truncmod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr condition, Expr true_value, Expr false_value);
Expr cast(DType dtype, Expr value);  // no node when already that dtype
Expr reinterpret(DType dtype, Expr value);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr rsqrt(Expr x);
Expr tanh(Expr x);
Expr erf(Expr x);
Expr sigmoid(Expr x);
Expr pow(Expr x, Expr y);
Expr floor(Expr x);
Expr ceil(Expr x);
Expr abs(Expr x);
Expr round(Expr x);
Expr trunc(Expr x);
Expr sin(Expr x);
Expr cos(Expr x);
Expr fma(Expr a, Expr b, Expr c);
// Integer-only (kInvalidArgument for float, bool or handle operands).
Expr bitwise_and(Expr a, Expr b);
Expr bitwise_or(Expr a, Expr b);
Expr bitwise_xor(Expr a, Expr b);
Expr bitwise_not(Expr x);
Expr shift_left(Expr a, Expr n);   // logical; n >= bit width gives 0 (CallOp::kShiftLeft)
Expr shift_right(Expr a, Expr n);  // logical; n >= bit width gives 0 (CallOp::kShiftRight)
// dot4_u8s8(acc, a, b) (CallOp::kDot4U8S8): acc int32xN, a uint8x4N (or x4), b int8x4N
// (or x4); kInvalidArgument naming the dtypes otherwise.
Expr dot4_u8s8(Expr acc, Expr a, Expr b);
// dot4_s8s8(acc, a, b) (CallOp::kDot4S8S8): acc int32xN, a and b int8x4N (or x4).
Expr dot4_s8s8(Expr acc, Expr a, Expr b);
// dot2_i16(acc, a, b) (CallOp::kDot2I16): acc int32xN, a and b int16x2N (or x2).
Expr dot2_i16(Expr acc, Expr a, Expr b);
// The Cortex-M int8 templates' strided byte pair int16x2(B[ramp(i, 2, 2)]) of int8 B (no
// predicate), whose B has a constant size of whole 32-bit words: its Load, else nullptr. Code
// generators emit it as one word load and Arm's SXTB16 where they prove i % 4 is 0 or 1 (the
// word starting at B[i - i % 4] then lies inside B).
const Load* AsStridedBytePair(const Expr& pair);
// The operands' group (products per int32 lane) of a dot-product intrinsic: 4 for
// dot4_u8s8 and dot4_s8s8, 2 for dot2_i16; 0 for every other call.
int DotGroup(CallOp op);

// Promotes a and b to a common dtype in place (the rule above); throws
// kInvalidArgument naming both dtypes when there is none (e.g. handle + int).
void BinaryOpMatchTypes(Expr* a, Expr* b);

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_EXPR_H_
