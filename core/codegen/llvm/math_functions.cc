#include "core/codegen/llvm/math_functions.h"

#include <cmath>
#include <set>

#include <llvm/IR/Intrinsics.h>

#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

using Builder = llvm::IRBuilder<>;
using llvm::Value;

// Polynomial expansions of one float32 function over scalar or vector values.
class Float32Math {
 public:
  explicit Float32Math(Builder& b, llvm::Type* type) : b_(b), type_(type) {
    int lanes = 1;
    if (auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(type)) lanes = vector->getNumElements();
    int_type_ = lanes == 1 ? static_cast<llvm::Type*>(b.getInt32Ty())
                           : llvm::FixedVectorType::get(b.getInt32Ty(), lanes);
  }

  Value* Exp(Value* x) {
    // exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n ln2 in [-ln2/2, ln2/2].
    Value* clamped = Max(Min(x, F(88.72283935546875)), F(-103.972084045410));
    Value* n = Intrinsic(llvm::Intrinsic::floor, {b_.CreateFAdd(b_.CreateFMul(clamped, F(1.44269504088896341)), F(0.5))});
    // Cody-Waite: ln2 split into a part exact in float and a small remainder.
    Value* r = FMA(n, F(-0.693359375), clamped);
    r = FMA(n, F(2.12194440054690583e-4), r);
    return FinishExp(x, n, r, 88.72283935546875, -103.972084045410);
  }

  Value* Exp2(Value* x) {
    // 2^x = 2^n * exp((x - n) ln2): the reduction x - n is exact, unlike x * ln2.
    Value* clamped = Max(Min(x, F(128.0)), F(-150.0));
    Value* n = Intrinsic(llvm::Intrinsic::floor, {b_.CreateFAdd(clamped, F(0.5))});
    Value* r = b_.CreateFMul(b_.CreateFSub(clamped, n), F(0.693147180559945309));
    return FinishExp(x, n, r, 128.0, -150.0);
  }

  Value* Log(Value* x) {
    // Scale denormals into the normal range first, remembering the 2^23 factor.
    Value* denormal = b_.CreateFCmpOLT(x, F(1.17549435e-38));
    Value* scaled = b_.CreateSelect(denormal, b_.CreateFMul(x, F(8388608.0)), x);
    Value* bits = b_.CreateBitCast(scaled, int_type_);
    Value* exponent = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, I(23)), I(0xff)), I(127));
    exponent = b_.CreateSub(exponent, b_.CreateSelect(denormal, I(23), I(0)));
    // Mantissa m in [1, 2), moved to [sqrt(1/2), sqrt(2)) so that |(m-1)/(m+1)| <= 0.172.
    Value* m = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, I(0x007fffff)), I(0x3f800000)), type_);
    Value* big = b_.CreateFCmpOGT(m, F(1.41421356237309505));
    m = b_.CreateSelect(big, b_.CreateFMul(m, F(0.5)), m);
    exponent = b_.CreateAdd(exponent, b_.CreateSelect(big, I(1), I(0)));
    // log(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = (m-1)/(m+1).
    Value* s = b_.CreateFDiv(b_.CreateFSub(m, F(1.0)), b_.CreateFAdd(m, F(1.0)));
    Value* s2 = b_.CreateFMul(s, s);
    static const double kCoefficients[] = {2.0 / 11, 2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3, 2.0};
    Value* log_m = b_.CreateFMul(s, Horner(s2, kCoefficients, 6));
    Value* result = FMA(b_.CreateSIToFP(exponent, type_), F(0.693147180559945309), log_m);
    result = b_.CreateSelect(b_.CreateFCmpOEQ(x, F(0.0)), F(-INFINITY), result);
    result = b_.CreateSelect(b_.CreateFCmpOLT(x, F(0.0)), F(NAN), result);
    result = b_.CreateSelect(b_.CreateFCmpOEQ(x, F(INFINITY)), F(INFINITY), result);
    return PropagateNaN(x, result);
  }

  Value* Tanh(Value* x) {
    // Large |x|: tanh = 1 - 2 / (exp(2|x|) + 1), exact to rounding away from 0.
    Value* ax = Intrinsic(llvm::Intrinsic::fabs, {x});
    Value* e = Exp(b_.CreateFMul(ax, F(2.0)));
    Value* large = b_.CreateFSub(F(1.0), b_.CreateFDiv(F(2.0), b_.CreateFAdd(e, F(1.0))));
    large = Intrinsic(llvm::Intrinsic::copysign, {large, x});
    // Small |x| (< 0.3): the Taylor series, which keeps the relative accuracy the formula above loses.
    Value* x2 = b_.CreateFMul(x, x);
    static const double kCoefficients[] = {62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3, 1.0};
    Value* small = b_.CreateFMul(x, Horner(x2, kCoefficients, 5));
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, F(0.3)), small, large);
  }

  Value* Sigmoid(Value* x) { return b_.CreateFDiv(F(1.0), b_.CreateFAdd(F(1.0), Exp(b_.CreateFNeg(x)))); }

  Value* Erf(Value* x) {
    // erf(x) = x P(x^2) / Q(x^2) on |x| <= 3.92 (beyond, erf rounds to +-1 in float):
    // a rational fit of degrees 6 and 4 (least squares on absolute error, reweighted
    // towards minimax; max |error| 3.6e-7, relative 2.4e-7 near 0). One division and
    // 12 multiply-adds: GELU's erf is the epilogue of every transformer MLP's first
    // product, where the former two-branch form (a series, and Abramowitz & Stegun
    // 7.1.26 with an exp and a division, both computed per vector) cost ~77 vector
    // instructions per 16 values: 25% of a 197x768x3072 product's time on Zen 5.
    Value* clamped = Max(Min(x, F(3.92)), F(-3.92));
    Value* t = b_.CreateFMul(clamped, clamped);
    static const double kP[] = {2.0241084724981206e-08, -1.987926675505597e-06, 1.4441195410015923e-04,
                                3.766441265696293e-03,  5.074022370463138e-02,  2.011640368840585e-01,
                                1.128378894309646};
    static const double kQ[] = {9.752666919008268e-04, 1.446761039960351e-02, 1.1551670727492279e-01,
                                5.116068758644303e-01, 1.0};
    Value* p = b_.CreateFMul(clamped, Horner(t, kP, 7));
    return PropagateNaN(x, FastDivide(p, Horner(t, kQ, 5)));
  }

 private:
  // a / b for finite a and b (a polynomial's value on a clamped argument): with `arcp` and
  // `ninf`, LLVM divides x86 vectors by a reciprocal estimate refined by one Newton step
  // (relative error ~1e-7) instead of a division whose throughput is several times lower;
  // AArch64 and scalars keep the division.
  Value* FastDivide(Value* a, Value* b) {
    Value* q = b_.CreateFDiv(a, b);
    if (auto* division = llvm::dyn_cast<llvm::Instruction>(q)) {
      division->setHasAllowReciprocal(true);
      division->setHasNoInfs(true);
    }
    return q;
  }
  Value* F(double v) { return llvm::ConstantFP::get(type_, v); }
  Value* I(int64_t v) { return llvm::ConstantInt::get(int_type_, v, /*isSigned=*/true); }
  Value* Intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args) {
    return b_.CreateIntrinsic(id, {type_}, args);
  }
  Value* FMA(Value* a, Value* b, Value* c) { return Intrinsic(llvm::Intrinsic::fmuladd, {a, b, c}); }
  // min(a, bound) and max(a, bound) for a constant, non-NaN bound; a NaN `a` gives the bound, as
  // minnum/maxnum do. Written as compare + select because that is x86's minps/maxps (one
  // instruction), where minnum's NaN rules cost a compare and a blend more on every vector.
  Value* Min(Value* a, Value* bound) { return b_.CreateSelect(b_.CreateFCmpOLT(a, bound), a, bound); }
  Value* Max(Value* a, Value* bound) { return b_.CreateSelect(b_.CreateFCmpOGT(a, bound), a, bound); }
  // 2^n * exp(r) for |r| <= ln2/2, with overflow to inf above `high`, 0 below `low`, NaN kept.
  Value* FinishExp(Value* x, Value* n, Value* r, double high, double low) {
    // Taylor series of exp(r) to r^7: the remainder r^8/8! < 6e-9 for |r| < 0.35.
    static const double kCoefficients[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0};
    Value* p = Horner(r, kCoefficients, 8);
    // 2^n in two halves so that n = 128 (x near 88.7) and n = -150 (denormal results) stay representable.
    Value* n_int = b_.CreateFPToSI(n, int_type_);
    Value* half = b_.CreateAShr(n_int, I(1));
    Value* rest = b_.CreateSub(n_int, half);
    Value* result = b_.CreateFMul(b_.CreateFMul(p, Pow2(half)), Pow2(rest));
    result = b_.CreateSelect(b_.CreateFCmpOGT(x, F(high)), F(INFINITY), result);
    result = b_.CreateSelect(b_.CreateFCmpOLT(x, F(low)), F(0.0), result);
    return PropagateNaN(x, result);
  }
  // sum c[i] v^(n-1-i), highest power first.
  Value* Horner(Value* v, const double* c, int n) {
    Value* acc = F(c[0]);
    for (int i = 1; i < n; ++i) acc = FMA(acc, v, F(c[i]));
    return acc;
  }
  // 2^k for integer k in [-126, 127], built in the exponent field.
  Value* Pow2(Value* k) { return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, I(127)), I(23)), type_); }
  Value* PropagateNaN(Value* x, Value* result) { return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, result); }

  Builder& b_;
  llvm::Type* type_;
  llvm::Type* int_type_;
};

llvm::Type* ElementType(llvm::Type* type) { return type->getScalarType(); }

llvm::Type* WithElement(llvm::Type* type, llvm::Type* element) {
  if (auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(type)) {
    return llvm::FixedVectorType::get(element, vector->getNumElements());
  }
  return element;
}

const std::set<std::string>& SimpleIntrinsicNames() {
  static const std::set<std::string> names = {"sqrt", "fabs", "floor", "ceil", "round", "trunc",
                                              "pow",  "fmin", "fmax",  "sin",  "cos",   "exp2", "log2", "log10"};
  return names;
}

llvm::Intrinsic::ID IntrinsicFor(const std::string& name) {
  if (name == "sqrt") return llvm::Intrinsic::sqrt;
  if (name == "fabs") return llvm::Intrinsic::fabs;
  if (name == "floor") return llvm::Intrinsic::floor;
  if (name == "ceil") return llvm::Intrinsic::ceil;
  if (name == "round") return llvm::Intrinsic::round;
  if (name == "trunc") return llvm::Intrinsic::trunc;
  if (name == "pow") return llvm::Intrinsic::pow;
  if (name == "fmin") return llvm::Intrinsic::minnum;
  if (name == "fmax") return llvm::Intrinsic::maxnum;
  if (name == "sin") return llvm::Intrinsic::sin;
  if (name == "cos") return llvm::Intrinsic::cos;
  if (name == "exp") return llvm::Intrinsic::exp;
  if (name == "log") return llvm::Intrinsic::log;
  if (name == "exp2") return llvm::Intrinsic::exp2;
  if (name == "log2") return llvm::Intrinsic::log2;
  if (name == "log10") return llvm::Intrinsic::log10;
  return llvm::Intrinsic::not_intrinsic;
}

int Arity(const std::string& name) { return name == "pow" || name == "fmin" || name == "fmax" ? 2 : 1; }

Value* EmitFloat32(Builder& b, const std::string& name, const std::vector<Value*>& args) {
  Float32Math math(b, args[0]->getType());
  if (name == "exp") return math.Exp(args[0]);
  if (name == "log") return math.Log(args[0]);
  if (name == "tanh") return math.Tanh(args[0]);
  if (name == "sigmoid") return math.Sigmoid(args[0]);
  if (name == "erf") return math.Erf(args[0]);
  llvm::Type* type = args[0]->getType();
  auto constant = [&](double v) { return llvm::ConstantFP::get(type, v); };
  // Inline forms that vectorize instead of LLVM's libm-bound intrinsics.
  if (name == "exp2") return math.Exp2(args[0]);
  if (name == "log2") return b.CreateFMul(math.Log(args[0]), constant(1.44269504088896341));
  if (name == "log10") return b.CreateFMul(math.Log(args[0]), constant(0.434294481903251828));
  if (name == "rsqrt") return b.CreateFDiv(constant(1.0), b.CreateIntrinsic(llvm::Intrinsic::sqrt, {type}, {args[0]}));
  return nullptr;
}

}  // namespace

bool IsMathFunction(const std::string& name) {
  static const std::set<std::string> inline_names = {"exp", "log", "tanh", "sigmoid", "erf", "rsqrt"};
  return inline_names.count(name) != 0 || SimpleIntrinsicNames().count(name) != 0;
}

Value* EmitMathFunction(Builder& b, const std::string& name, const std::vector<Value*>& args) {
  AGATE_REQUIRE(IsMathFunction(name), kUnsupported) << "math function '" << name << "' is not known to the LLVM backend";
  AGATE_REQUIRE(static_cast<int>(args.size()) == Arity(name), kInvalidArgument)
      << "math function '" << name << "' takes " << Arity(name) << " argument(s), got " << args.size();
  llvm::Type* type = args[0]->getType();
  llvm::Type* element = ElementType(type);
  AGATE_REQUIRE(element->isFloatingPointTy(), kUnsupported)
      << "math function '" << name << "' needs float arguments in the LLVM backend";
  // Half-precision inputs are computed in float32 and rounded back.
  if (element->isHalfTy() || element->isBFloatTy()) {
    llvm::Type* wide = WithElement(type, b.getFloatTy());
    std::vector<Value*> wide_args;
    for (Value* arg : args) wide_args.push_back(b.CreateFPExt(arg, wide));
    return b.CreateFPTrunc(EmitMathFunction(b, name, wide_args), type);
  }
  if (element->isFloatTy()) {
    if (Value* inline_value = EmitFloat32(b, name, args)) return inline_value;
  }
  if (element->isDoubleTy() && name == "sigmoid") {
    Value* one = llvm::ConstantFP::get(type, 1.0);
    Value* e = b.CreateIntrinsic(llvm::Intrinsic::exp, {type}, {b.CreateFNeg(args[0])});
    return b.CreateFDiv(one, b.CreateFAdd(one, e));
  }
  if (element->isDoubleTy() && name == "rsqrt") {
    return b.CreateFDiv(llvm::ConstantFP::get(type, 1.0), b.CreateIntrinsic(llvm::Intrinsic::sqrt, {type}, {args[0]}));
  }
  llvm::Intrinsic::ID id = IntrinsicFor(name);
  AGATE_REQUIRE(id != llvm::Intrinsic::not_intrinsic, kUnsupported)
      << "math function '" << name << "' is only implemented for float32 (and float16/bfloat16) in the LLVM backend";
  return b.CreateIntrinsic(id, {type}, args);
}

}  // namespace codegen
}  // namespace agate
