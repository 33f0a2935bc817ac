#include "core/codegen/cuda/codegen_cuda.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/c/shared_exprs.h"
#include "core/codegen/c/source_text.h"
#include "core/ir/divisor.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

using ir::DType;
using ir::Expr;
using ir::Stmt;

// Device functions every kernel may use; written once at the top of the source.
const char* kPrelude = R"(// float16 and bfloat16 are stored as 16-bit integers and computed in float32.
__device__ __forceinline__ float agate_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short agate_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float agate_rf16(float f) { return agate_h2f(agate_f2h(f)); }
__device__ __forceinline__ float agate_bf2f(unsigned short b) { return __uint_as_float(((unsigned int)b) << 16); }
__device__ __forceinline__ unsigned short agate_f2bf(float f) {
  unsigned int x = __float_as_uint(f);
  if (f != f) return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
}
__device__ __forceinline__ float agate_rbf16(float f) { return agate_bf2f(agate_f2bf(f)); }
// NaN-propagating min/max, as the evaluator computes them.
__device__ __forceinline__ float agate_minf(float a, float b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ float agate_maxf(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ double agate_mind(double a, double b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ double agate_maxd(double a, double b) { return (a > b || a != a) ? a : b; }
// The lanes of this thread's warp that exist (the last warp of a block may be partial).
__device__ __forceinline__ unsigned agate_warp_mask() {
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned linear = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned left = threads - (linear & ~31u);
  return left >= 32u ? 0xffffffffu : ((1u << left) - 1u);
}
)";

const std::set<std::string>& ReservedNames() {
  static const std::set<std::string> names = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
      "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
      "true", "false", "class", "namespace", "template", "this", "new", "delete", "operator", "private", "public",
      "protected", "friend", "virtual", "using", "asm", "min", "max", "abs", "blockIdx", "threadIdx", "blockDim",
      "gridDim", "warpSize", "half", "float2", "float4", "int2", "int4", "uint2", "uint4", "main", "lane",
      // The rest of C++'s keywords and its alternative operator names (a tensor named "and" or "not").
      "alignas", "alignof", "and", "and_eq", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t",
      "compl", "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await", "co_return",
      "co_yield", "decltype", "dynamic_cast", "explicit", "export", "mutable", "noexcept", "not", "not_eq",
      "nullptr", "or", "or_eq", "reinterpret_cast", "requires", "static_assert", "static_cast", "thread_local",
      "throw", "try", "typeid", "typename", "wchar_t", "xor", "xor_eq", "__global__", "__device__",
      "__shared__", "__restrict__"};
  return names;
}

bool IsHalf(DType t) { return t.code() == ir::TypeCode::kFloat && t.bits() == 16; }
bool IsBFloat(DType t) { return t.code() == ir::TypeCode::kBFloat; }
bool IsNarrowFloat(DType t) { return IsHalf(t) || IsBFloat(t); }

bool IsSync(const Stmt& s) {
  const ir::Evaluate* e = s.as<ir::Evaluate>();
  const ir::Call* c = e ? e->value.as<ir::Call>() : nullptr;
  return c && c->op == ir::CallOp::kSyncThreads;
}

// The buffers a statement stores to.
std::unordered_set<const ir::VarNode*> StoredBuffers(const Stmt& s) {
  std::unordered_set<const ir::VarNode*> out;
  ir::PostOrderVisit(s, [&](const Expr*, const Stmt* x) {
    if (x && x->as<ir::Store>()) out.insert(x->as<ir::Store>()->buffer->data.get());
  });
  return out;
}

class CodeGenCuda {
 public:
  explicit CodeGenCuda(const target::Target& target) : target_(target) {
    AGATE_REQUIRE(target.kind() == target::TargetKind::kCUDA, kInvalidArgument)
        << "target '" << target << "' is not a CUDA target: the CUDA code generator needs 'cuda -arch=sm_NN'";
  }

  void AddFunction(const ir::LoweredFunc& func) {
    AGATE_CHECK(func.body.defined()) << "kernel " << func.name << " has no body";
    AGATE_REQUIRE(ir::HasGpuLaunches(func.body), kIllegalSchedule)
        << "kernel " << func.name << " was not lowered for a GPU (it has no launches); lower it with "
        << "LowerOptions::gpu";
    func_ = &func;
    root_.clear();
    EmitRoot(func.body);
  }

  CudaSource Finish() {
    std::ostringstream out;
    out << "// Generated by agate for target '" << target_ << "': " << source_.kernels.size()
        << " kernel(s). Compiled with NVRTC; needs no header.\n\n"
        << kPrelude << "\n";
    for (const std::string& f : functions_) out << f << "\n";
    source_.code = out.str();
    return source_;
  }

 private:
  // ------------------------------------------------------------------ root

  // A statement outside the launches that the launches inside it depend on.
  struct RootContext {
    const ir::Allocate* workspace = nullptr;
    const ir::LetStmt* let = nullptr;
  };

  void EmitRoot(const Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kSeq:
        for (const Stmt& x : s.as<ir::Seq>()->stmts) EmitRoot(x);
        return;
      case ir::StmtKind::kAllocate: {
        const ir::Allocate* a = s.as<ir::Allocate>();
        AGATE_CHECK(a->scope == ir::MemoryScope::kWorkspace && a->workspace_offset >= 0)
            << "kernel " << func_->name << ": buffer " << a->buffer->name << " allocated outside the launches";
        root_.push_back({a, nullptr});
        EmitRoot(a->body);
        root_.pop_back();
        return;
      }
      case ir::StmtKind::kLetStmt:
        root_.push_back({nullptr, s.as<ir::LetStmt>()});
        EmitRoot(s.as<ir::LetStmt>()->body);
        root_.pop_back();
        return;
      case ir::StmtKind::kAttrStmt: {
        const ir::AttrStmt* a = s.as<ir::AttrStmt>();
        if (a->key == ir::attr::kGpuLaunch) return EmitLaunch(s);
        return EmitRoot(a->body);
      }
      default:
        AGATE_THROW(kInternal) << "kernel " << func_->name << ": " << ir::StmtKindName(s.kind())
                               << " outside the launches";
    }
  }

  // ------------------------------------------------------------------ one __global__ function

  void EmitLaunch(const Stmt& attr) {
    ir::GpuLaunch launch = ir::CollectGpuLaunches(attr).at(0);
    AGATE_REQUIRE(kernel_names_.insert(launch.name).second, kInvalidArgument)
        << "two CUDA kernels are named '" << launch.name << "'";
    AGATE_REQUIRE(SanitizeIdentifier(launch.name) == launch.name && !ReservedNames().count(launch.name), kInvalidArgument)
        << "kernel name '" << launch.name << "' is not a C identifier";
    kernel_ = launch.name;
    std::set<std::string> reserved = ReservedNames();
    reserved.insert(kernel_names_.begin(), kernel_names_.end());
    names_.Reset(launch.name, reserved);
    vector_vars_.clear();
    alignment_.clear();
    wide_loads_.clear();
    temp_count_ = 0;
    BeginStatement({});

    std::unordered_set<const ir::VarNode*> stored = StoredBuffers(launch.code);
    IndentedText text;
    current_ = &text;
    CudaKernelSource info;
    info.name = launch.name;
    info.launch = launch;
    info.workspace_bytes = func_->workspace_bytes;
    info.num_params = func_->params.size();

    Line("// " + launch.name + ": grid (" + std::to_string(launch.grid[0]) + ", " + std::to_string(launch.grid[1]) +
         ", " + std::to_string(launch.grid[2]) + "), block (" + std::to_string(launch.block[0]) + ", " +
         std::to_string(launch.block[1]) + ", " + std::to_string(launch.block[2]) + "), " +
         std::to_string(launch.shared_bytes) + " bytes of dynamic shared memory.");
    std::string params;
    for (size_t i = 0; i < func_->params.size(); ++i) {
      const ir::Buffer& b = func_->params[i];
      std::string name = Define(b->data.get(), b->name);
      alignment_[b->data.get()] = b->alignment;
      bool read_only = !stored.count(b->data.get());
      params += std::string(i ? ", " : "") + (read_only ? "const " : "") + MemoryType(b->dtype) + "* __restrict__ " +
                name;
    }
    if (func_->workspace_bytes > 0) {
      names_.Reserve("agate_workspace");
      params += std::string(params.empty() ? "" : ", ") + "unsigned char* __restrict__ agate_workspace";
    }
    Open("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(launch.threads_per_block()) + ") " +
         launch.name + "(" + params + ") {");
    for (const RootContext& r : root_) {
      if (r.let) {
        BeginStatement({{r.let->value}});
        DeclareScalar(r.let->var, r.let->value);
      } else {
        const ir::Buffer& b = r.workspace->buffer;
        std::string type = MemoryType(b->dtype);
        std::string name = Define(b->data.get(), b->name);
        alignment_[b->data.get()] = 64;
        Line(type + "* __restrict__ " + name + " = reinterpret_cast<" + type + "*>(agate_workspace + " +
             std::to_string(r.workspace->workspace_offset) + ");");
      }
    }
    if (launch.shared_bytes > 0) Line("extern __shared__ __align__(16) unsigned char agate_shared[];");
    for (const Stmt& s : launch.shared) {
      const ir::Allocate* a = s.as<ir::Allocate>();
      const ir::Buffer& b = a->buffer;
      std::string type = MemoryType(b->dtype);
      std::string name = Define(b->data.get(), b->name);
      alignment_[b->data.get()] = (a->workspace_offset % 16 == 0) ? 16 : static_cast<int>(b->dtype.element_bytes());
      Line(type + "* " + name + " = reinterpret_cast<" + type + "*>(agate_shared + " +
           std::to_string(a->workspace_offset) + ");  // " + std::to_string(ConstElements(a)) + " elements");
    }
    const char* axis = "xyz";
    for (int d = 0; d < 3; ++d) {
      if (launch.block_vars[d].defined()) {
        Line("const long long " + Define(launch.block_vars[d].get(), launch.block_vars[d]->name) + " = blockIdx." +
             axis[d] + ";");
      }
    }
    for (int d = 0; d < 3; ++d) {
      if (launch.thread_vars[d].defined()) {
        Line("const long long " + Define(launch.thread_vars[d].get(), launch.thread_vars[d]->name) +
             " = threadIdx." + axis[d] + ";");
      }
    }
    EmitStmt(launch.code);
    Close();
    functions_.push_back(text.str());
    source_.kernels.push_back(info);
    current_ = nullptr;
  }

  int64_t ConstElements(const ir::Allocate* a) {
    int64_t n = 0;
    AGATE_CHECK(ir::is_const_int(a->NumElements(), &n)) << "kernel " << kernel_ << ": buffer " << a->buffer->name
                                                        << " has a size known only at run time";
    return n;
  }

  // ------------------------------------------------------------------ text

  void Line(const std::string& text) { current_->Line(text); }
  void Open(const std::string& text) { current_->Open(text); }
  void Close(const std::string& text = "}") { current_->Close(text); }
  std::string Fresh(const std::string& base) { return names_.Fresh(base); }
  std::string Define(const ir::VarNode* var, const std::string& hint) { return names_.Define(var, hint); }
  std::string NameOf(const ir::VarNode* var) { return names_.NameOf(var); }

  // ------------------------------------------------------------------ types

  // The C type a value of `t` is computed in (float16/bfloat16 in float).
  std::string ValueType(DType t) {
    t = t.element_of();
    switch (t.code()) {
      case ir::TypeCode::kInt:
        switch (t.bits()) {
          case 8: return "signed char";
          case 16: return "short";
          case 32: return "int";
          case 64: return "long long";
        }
        break;
      case ir::TypeCode::kUInt:
        switch (t.bits()) {
          case 8: return "unsigned char";
          case 16: return "unsigned short";
          case 32: return "unsigned int";
          case 64: return "unsigned long long";
        }
        break;
      case ir::TypeCode::kBool: return "bool";
      case ir::TypeCode::kFloat:
        if (t.bits() == 16 || t.bits() == 32) return "float";
        if (t.bits() == 64) return "double";
        break;
      case ir::TypeCode::kBFloat:
        if (t.bits() == 16) return "float";
        break;
      case ir::TypeCode::kHandle: break;
    }
    AGATE_THROW(kUnsupported) << "kernel " << kernel_ << ": the CUDA backend has no type for " << t;
  }
  // How an element is stored: bool in a byte, float16/bfloat16 as their 16 bits.
  std::string MemoryType(DType t) {
    if (t.is_bool()) return "unsigned char";
    if (IsNarrowFloat(t)) return "unsigned short";
    return ValueType(t);
  }

  // ------------------------------------------------------------------ expressions

  std::string FloatLiteral(double v, DType t) {
    bool single = t.bits() != 64;
    if (IsHalf(t)) v = RoundedHalf(v);
    if (std::isnan(v)) return single ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
    if (std::isinf(v)) {
      std::string inf = single ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
      return v < 0 ? "(-" + inf + ")" : inf;
    }
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), single ? "%.9g" : "%.17g", v);
    std::string text = buffer;
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    if (single) text += "f";
    return v < 0 ? "(" + text + ")" : text;
  }
  static double RoundedHalf(double v) {
    // Literals of float16 hold float16 values: round once at compile time (rintf-like via float).
    if (!std::isfinite(v)) return v;
    float f = static_cast<float>(v);
    int e;
    std::frexp(f, &e);
    int shift = std::max(e - 11, -24);
    double unit = std::ldexp(1.0, shift);
    double r = std::nearbyint(f / unit) * unit;
    return std::fabs(r) >= 65520.0 ? (r < 0 ? -INFINITY : INFINITY) : r;
  }

  std::string IntLiteral(int64_t v, DType t) {
    if (t.is_bool()) return v ? "true" : "false";
    if (t.bits() == 64) {
      if (t.is_uint()) return std::to_string(static_cast<uint64_t>(v)) + "ULL";
      if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
      return v < 0 ? "(" + std::to_string(v) + "LL)" : std::to_string(v) + "LL";
    }
    if (t.is_int() && t.bits() == 32) {
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
    }
    if (t.is_uint() && t.bits() == 32) return std::to_string(static_cast<uint32_t>(v)) + "u";
    return "((" + ValueType(t) + ")" + std::to_string(v) + ")";
  }

  // Rounds a float computation to the narrow float type it stands for.
  std::string Narrow(DType t, const std::string& value) {
    if (IsHalf(t)) return "agate_rf16(" + value + ")";
    if (IsBFloat(t)) return "agate_rbf16(" + value + ")";
    return value;
  }

  // The expressions of the statement about to be printed: their shared subexpressions
  // (core/codegen/c/shared_exprs.h) are declared once, as they are first printed.
  void BeginStatement(const std::vector<SharedExprs::Root>& roots) {
    shared_.Analyze(roots);
    shared_names_.clear();
  }

  // The C text of lane `lane` of `e` (-1 for a scalar): a temporary's name when `e` is shared,
  // the temporary declared (before the statement) at its first use.
  std::string Print(const Expr& e, int lane) {
    if (!shared_.IsShared(e.get())) return PrintNode(e, lane);
    const std::pair<int64_t, int> key{shared_.ClassOf(e.get()), lane};
    auto it = shared_names_.find(key);
    if (it != shared_names_.end()) return it->second;
    std::string text = PrintNode(e, lane);
    std::string name = Fresh("cse");
    Line("const " + ValueType(e.dtype()) + " " + name + " = " + text + ";");
    shared_names_[key] = name;
    return name;
  }

  std::string PrintNode(const Expr& e, int lane) {
    DType t = e.dtype();
    AGATE_REQUIRE(t.is_scalar() || lane >= 0, kInternal)
        << "kernel " << kernel_ << ": vector expression " << ir::ToString(e) << " outside a lane";
    switch (e.kind()) {
      case ir::ExprKind::kIntImm: return IntLiteral(e.as<ir::IntImm>()->value, t);
      case ir::ExprKind::kFloatImm: return FloatLiteral(e.as<ir::FloatImm>()->value, t);
      case ir::ExprKind::kVar: {
        const auto* v = e.as<ir::VarNode>();
        return vector_vars_.count(v) ? NameOf(v) + "[" + std::to_string(lane) + "]" : NameOf(v);
      }
      case ir::ExprKind::kAdd: return Arith(e, e.as<ir::Add>()->a, e.as<ir::Add>()->b, "+", lane);
      case ir::ExprKind::kSub: return Arith(e, e.as<ir::Sub>()->a, e.as<ir::Sub>()->b, "-", lane);
      case ir::ExprKind::kMul: return Arith(e, e.as<ir::Mul>()->a, e.as<ir::Mul>()->b, "*", lane);
      case ir::ExprKind::kDiv: return Arith(e, e.as<ir::Div>()->a, e.as<ir::Div>()->b, "/", lane);
      case ir::ExprKind::kMod: {
        const auto* op = e.as<ir::Mod>();
        if (t.is_float()) return Narrow(t, Call(t.bits() == 64 ? "fmod" : "fmodf", {op->a, op->b}, lane));
        return Binary(op->a, op->b, "%", lane);
      }
      case ir::ExprKind::kFloorDiv: {
        const auto* op = e.as<ir::FloorDiv>();
        if (t.is_float()) {
          return Narrow(t, std::string(t.bits() == 64 ? "floor" : "floorf") + Binary(op->a, op->b, "/", lane));
        }
        if (t.is_uint()) return Binary(op->a, op->b, "/", lane);
        std::string a = Print(op->a, lane), b = Print(op->b, lane);
        // q = a / b rounded toward minus infinity.
        return "((" + a + ") / (" + b + ") - ((((" + a + ") % (" + b + ")) != 0) && (((" + a + ") < 0) != ((" + b +
               ") < 0))))";
      }
      case ir::ExprKind::kFloorMod: {
        const auto* op = e.as<ir::FloorMod>();
        std::string a = Print(op->a, lane), b = Print(op->b, lane);
        if (t.is_float()) {
          return Narrow(t, "(" + a + " - " + (t.bits() == 64 ? "floor(" : "floorf(") + a + " / " + b + ") * " + b + ")");
        }
        if (t.is_uint()) return "(" + a + " % " + b + ")";
        return "((((" + a + ") % (" + b + ")) + (" + b + ")) % (" + b + "))";
      }
      case ir::ExprKind::kMin: return MinMax(e, e.as<ir::Min>()->a, e.as<ir::Min>()->b, true, lane);
      case ir::ExprKind::kMax: return MinMax(e, e.as<ir::Max>()->a, e.as<ir::Max>()->b, false, lane);
      case ir::ExprKind::kEQ: return Binary(e.as<ir::EQ>()->a, e.as<ir::EQ>()->b, "==", lane);
      case ir::ExprKind::kNE: return Binary(e.as<ir::NE>()->a, e.as<ir::NE>()->b, "!=", lane);
      case ir::ExprKind::kLT: return Binary(e.as<ir::LT>()->a, e.as<ir::LT>()->b, "<", lane);
      case ir::ExprKind::kLE: return Binary(e.as<ir::LE>()->a, e.as<ir::LE>()->b, "<=", lane);
      case ir::ExprKind::kGT: return Binary(e.as<ir::GT>()->a, e.as<ir::GT>()->b, ">", lane);
      case ir::ExprKind::kGE: return Binary(e.as<ir::GE>()->a, e.as<ir::GE>()->b, ">=", lane);
      case ir::ExprKind::kAnd: return Binary(e.as<ir::And>()->a, e.as<ir::And>()->b, "&&", lane);
      case ir::ExprKind::kOr: return Binary(e.as<ir::Or>()->a, e.as<ir::Or>()->b, "||", lane);
      case ir::ExprKind::kNot: return "(!" + Print(e.as<ir::Not>()->a, lane) + ")";
      case ir::ExprKind::kSelect: {
        const auto* op = e.as<ir::Select>();
        int cond_lane = op->condition.dtype().is_scalar() ? -1 : lane;
        return "(" + Print(op->condition, cond_lane) + " ? " + Print(op->true_value, lane) + " : " +
               Print(op->false_value, lane) + ")";
      }
      case ir::ExprKind::kCast: return PrintCast(e.as<ir::Cast>(), lane);
      case ir::ExprKind::kCall: return PrintCall(e.as<ir::Call>(), lane);
      case ir::ExprKind::kRamp: {
        const auto* op = e.as<ir::Ramp>();
        std::string base = Print(op->base, -1);
        if (lane == 0) return base;
        return "(" + base + " + " + Print(op->stride, -1) + " * " + IntLiteral(lane, op->base.dtype()) + ")";
      }
      case ir::ExprKind::kBroadcast: return Print(e.as<ir::Broadcast>()->value, -1);
      case ir::ExprKind::kLet: {
        const auto* op = e.as<ir::Let>();
        if (!names_.IsDefined(op->var.get())) DeclareLet(op->var, op->value);
        return Print(op->body, lane);
      }
      case ir::ExprKind::kLoad: return PrintLoad(e.as<ir::Load>(), lane);
      case ir::ExprKind::kTensorRead:
      case ir::ExprKind::kReduce:
        AGATE_THROW(kInternal) << "kernel " << kernel_ << ": " << ir::ExprKindName(e.kind())
                               << " reached code generation";
    }
    AGATE_THROW(kInternal) << "kernel " << kernel_ << ": unknown expression kind";
  }

  std::string Binary(const Expr& a, const Expr& b, const char* symbol, int lane) {
    return "(" + Print(a, lane) + " " + symbol + " " + Print(b, lane) + ")";
  }
  std::string Arith(const Expr& e, const Expr& a, const Expr& b, const char* symbol, int lane) {
    return Narrow(e.dtype(), Binary(a, b, symbol, lane));
  }
  std::string MinMax(const Expr& e, const Expr& a, const Expr& b, bool is_min, int lane) {
    DType t = e.dtype();
    std::string x = Print(a, lane), y = Print(b, lane);
    if (t.is_float()) {
      std::string f = std::string(is_min ? "agate_min" : "agate_max") + (t.bits() == 64 ? "d" : "f");
      return f + "(" + x + ", " + y + ")";  // exact for float16/bfloat16 values too
    }
    return "((" + x + ") " + (is_min ? "<" : ">") + " (" + y + ") ? (" + x + ") : (" + y + "))";
  }
  std::string Call(const std::string& function, const std::vector<Expr>& args, int lane) {
    std::string out = function + "(";
    for (size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + Print(args[i], lane);
    return out + ")";
  }

  std::string PrintCast(const ir::Cast* op, int lane) {
    DType to = op->dtype, from = op->value.dtype();
    std::string v = Print(op->value, from.is_scalar() ? -1 : lane);
    if (to.is_bool()) return "(" + v + " != 0)";
    if (IsNarrowFloat(to)) return Narrow(to, "((float)" + v + ")");
    if (to.is_float() && IsNarrowFloat(from) && to.bits() == 32) return v;
    return "((" + ValueType(to) + ")" + v + ")";
  }

  std::string PrintCall(const ir::Call* op, int lane) {
    DType t = op->dtype;
    switch (op->op) {
      case ir::CallOp::kSyncThreads:
        AGATE_THROW(kInternal) << "kernel " << kernel_ << ": __syncthreads used as a value";
      case ir::CallOp::kShuffleXor: return PrintShuffle(op, lane);
      case ir::CallOp::kReinterpret: return PrintReinterpret(op, lane);
      case ir::CallOp::kShiftLeft:
      case ir::CallOp::kShiftRight: {
        // Logical, on the type's bits; an amount >= the bit width gives 0 (undefined in C++).
        DType e = t.element_of();
        std::string wide = e.bits() > 32 ? "unsigned long long" : "unsigned int";
        std::string u = "(" + wide + ")(" + ValueType(DType::UInt(e.bits())) + ")";
        std::string a = u + "(" + Print(op->args[0], lane) + ")", n = u + "(" + Print(op->args[1], lane) + ")";
        std::string shift = op->op == ir::CallOp::kShiftLeft ? " << " : " >> ";
        return "((" + ValueType(e) + ")(" + n + " >= " + std::to_string(e.bits()) + "u ? 0 : (" + a + shift + n +
               ")))";
      }
      case ir::CallOp::kDot4U8S8:
      case ir::CallOp::kDot4S8S8:
      case ir::CallOp::kDot2I16: {
        // Lane by lane (each product fits an int; the sums wrap through unsigned).
        const int group = ir::DotGroup(op->op);
        int l = lane < 0 ? 0 : lane;
        std::string sum;
        for (int j = 0; j < group; ++j) {
          int ka = op->args[1].dtype().lanes() == group ? j : group * l + j;
          int kb = op->args[2].dtype().lanes() == group ? j : group * l + j;
          sum += (j ? " + " : "") + std::string("(unsigned)((int)") + Print(op->args[1], ka) + " * (int)" +
                 Print(op->args[2], kb) + ")";
        }
        return "((int)((unsigned)(" + Print(op->args[0], lane) + ") + " + sum + "))";
      }
      case ir::CallOp::kBitwiseAnd:
      case ir::CallOp::kBitwiseOr:
      case ir::CallOp::kBitwiseXor:
      case ir::CallOp::kBitwiseNot: {
        // Integer operands; C++ promotes narrow ones to int, so the result is cast back.
        std::string a = Print(op->args[0], lane);
        std::string body = op->op == ir::CallOp::kBitwiseNot ? "~(" + a + ")"
                           : "(" + a + ")" +
                                 (op->op == ir::CallOp::kBitwiseAnd  ? " & "
                                  : op->op == ir::CallOp::kBitwiseOr ? " | "
                                                                     : " ^ ") +
                                 "(" + Print(op->args[1], lane) + ")";
        return "((" + ValueType(t.element_of()) + ")(" + body + "))";
      }
      case ir::CallOp::kAbs:
        if (!t.is_float()) {
          if (t.is_uint() || t.is_bool()) return Print(op->args[0], lane);
          std::string x = Print(op->args[0], lane);
          return "((" + x + ") < 0 ? -(" + x + ") : (" + x + "))";
        }
        break;
      default: break;
    }
    bool d = t.bits() == 64;
    bool fast = target_.fast_math() && !d;
    std::string f = d ? "" : "f";
    std::string one = d ? "1.0" : "1.0f";
    std::string out;
    switch (op->op) {
      case ir::CallOp::kExp: out = Call(fast ? "__expf" : "exp" + f, op->args, lane); break;
      case ir::CallOp::kLog: out = Call(fast ? "__logf" : "log" + f, op->args, lane); break;
      case ir::CallOp::kSqrt: out = Call("sqrt" + f, op->args, lane); break;
      case ir::CallOp::kRsqrt: out = Call("rsqrt" + f, op->args, lane); break;
      case ir::CallOp::kTanh: out = Call("tanh" + f, op->args, lane); break;
      case ir::CallOp::kErf: out = Call("erf" + f, op->args, lane); break;
      case ir::CallOp::kSigmoid:
        out = "(" + one + " / (" + one + " + " + (fast ? "__expf" : "exp" + f) + "(-" + Print(op->args[0], lane) + ")))";
        break;
      case ir::CallOp::kPow: out = Call(fast ? "__powf" : "pow" + f, op->args, lane); break;
      case ir::CallOp::kFloor: out = Call("floor" + f, op->args, lane); break;
      case ir::CallOp::kCeil: out = Call("ceil" + f, op->args, lane); break;
      case ir::CallOp::kAbs: out = Call("fabs" + f, op->args, lane); break;
      case ir::CallOp::kRound: out = Call("rint" + f, op->args, lane); break;
      case ir::CallOp::kFma: out = Call("fma" + f, op->args, lane); break;
      case ir::CallOp::kTrunc: out = Call("trunc" + f, op->args, lane); break;
      case ir::CallOp::kSin: out = Call(fast ? "__sinf" : "sin" + f, op->args, lane); break;
      case ir::CallOp::kCos: out = Call(fast ? "__cosf" : "cos" + f, op->args, lane); break;
      default: AGATE_THROW(kInternal) << "kernel " << kernel_ << ": unknown call " << ir::CallOpName(op->op);
    }
    return Narrow(t, out);
  }

  std::string PrintShuffle(const ir::Call* op, int lane) {
    DType t = op->dtype;
    std::string v = Print(op->args[0], lane);
    std::string mask = Print(op->args[1], -1), width = Print(op->args[2], -1);
    std::string type = ValueType(t);
    bool promote = t.is_bool() || (!t.is_float() && t.bits() < 32);
    if (promote) return "((" + type + ")__shfl_xor_sync(agate_warp_mask(), (int)(" + v + "), " + mask + ", " + width + "))";
    return "__shfl_xor_sync(agate_warp_mask(), " + v + ", " + mask + ", " + width + ")";
  }

  std::string PrintReinterpret(const ir::Call* op, int lane) {
    DType to = op->dtype, from = op->args[0].dtype();
    AGATE_REQUIRE(to.bits() == from.bits() && !to.is_bool() && !from.is_bool(), kUnsupported)
        << "kernel " << kernel_ << ": reinterpret between " << from << " and " << to;
    std::string v = Print(op->args[0], lane);
    auto bits_of = [&](DType t, const std::string& x) -> std::string {
      if (IsHalf(t)) return "(unsigned short)agate_f2h(" + x + ")";
      if (IsBFloat(t)) return "(unsigned short)agate_f2bf(" + x + ")";
      if (t.is_float() && t.bits() == 32) return "__float_as_uint(" + x + ")";
      if (t.is_float() && t.bits() == 64) return "(unsigned long long)__double_as_longlong(" + x + ")";
      return "(" + std::string(t.bits() == 64 ? "unsigned long long" : t.bits() == 32 ? "unsigned int"
                                                                      : t.bits() == 16 ? "unsigned short"
                                                                                       : "unsigned char") +
             ")(" + x + ")";
    };
    std::string bits = bits_of(from, v);
    if (IsHalf(to)) return "agate_h2f(" + bits + ")";
    if (IsBFloat(to)) return "agate_bf2f(" + bits + ")";
    if (to.is_float() && to.bits() == 32) return "__uint_as_float(" + bits + ")";
    if (to.is_float() && to.bits() == 64) return "__longlong_as_double((long long)" + bits + ")";
    return "((" + ValueType(to) + ")" + bits + ")";
  }

  // An element as a value: narrow floats widened, bools compared.
  std::string FromMemory(DType t, const std::string& element) {
    if (IsHalf(t)) return "agate_h2f(" + element + ")";
    if (IsBFloat(t)) return "agate_bf2f(" + element + ")";
    if (t.is_bool()) return "(" + element + " != 0)";
    return element;
  }
  std::string ToMemory(DType t, const std::string& value) {
    if (IsHalf(t)) return "agate_f2h(" + value + ")";
    if (IsBFloat(t)) return "agate_f2bf(" + value + ")";
    if (t.is_bool()) return "(unsigned char)(" + value + ")";
    return value;
  }

  // A vector access that one 8- or 16-byte instruction can do: stride 1, no
  // mask, first element aligned to the access width.
  bool Wide(const ir::Buffer& b, const Expr& index, const Expr& predicate) {
    const ir::Ramp* ramp = index.as<ir::Ramp>();
    if (!ramp || predicate.defined() || !ir::is_one(ramp->stride)) return false;
    int64_t elem = b->dtype.element_bytes();
    int64_t bytes = elem * ramp->lanes;
    if (bytes != 8 && bytes != 16) return false;
    auto it = alignment_.find(b->data.get());
    int64_t align = it == alignment_.end() ? elem : it->second;
    return align >= bytes && (ir::KnownDivisor(ramp->base) * elem) % bytes == 0;
  }
  static const char* WideType(int64_t bytes) { return bytes == 16 ? "uint4" : "uint2"; }

  std::string PrintLoad(const ir::Load* op, int lane) {
    const ir::Buffer& b = op->buffer;
    std::string name = NameOf(b->data.get());
    if (lane >= 0 && Wide(b, op->index, op->predicate)) {
      auto it = wide_loads_.find(op);
      std::string temp;
      if (it == wide_loads_.end()) {
        const ir::Ramp* ramp = op->index.as<ir::Ramp>();
        int64_t bytes = b->dtype.element_bytes() * ramp->lanes;
        temp = Fresh("agate_wide" + std::to_string(temp_count_++));
        Line(std::string("const ") + WideType(bytes) + " " + temp + " = *reinterpret_cast<const " + WideType(bytes) +
             "*>(" + name + " + " + Print(ramp->base, -1) + ");");
        wide_loads_[op] = temp;
      } else {
        temp = it->second;
      }
      return FromMemory(b->dtype, "reinterpret_cast<const " + MemoryType(b->dtype) + "*>(&" + temp + ")[" +
                                      std::to_string(lane) + "]");
    }
    std::string index = Print(op->index, op->index.dtype().is_scalar() ? -1 : lane);
    std::string access = FromMemory(b->dtype, name + "[" + index + "]");
    if (!op->predicate.defined()) return access;
    std::string pred = Print(op->predicate, op->predicate.dtype().is_scalar() ? -1 : lane);
    return "(" + pred + " ? " + access + " : (" + ValueType(op->dtype) + ")0)";
  }

  void DeclareScalar(const ir::Var& var, const Expr& value) {
    std::string v = Print(value, -1);
    std::string name = Define(var.get(), var->name);
    Line("const " + ValueType(value.dtype()) + " " + name + " = " + v + ";");
  }

  void DeclareLet(const ir::Var& var, const Expr& value) {
    DType t = value.dtype();
    if (t.is_scalar()) return DeclareScalar(var, value);
    std::vector<std::string> lanes;
    for (int l = 0; l < t.lanes(); ++l) lanes.push_back(Print(value, l));
    std::string name = Define(var.get(), var->name);
    vector_vars_.insert(var.get());
    std::string init;
    for (size_t l = 0; l < lanes.size(); ++l) init += (l ? ", " : "") + lanes[l];
    Line(ValueType(t) + " " + name + "[" + std::to_string(t.lanes()) + "] = {" + init + "};");
  }

  // ------------------------------------------------------------------ statements

  void EmitStmt(const Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kLetStmt: {
        const auto* op = s.as<ir::LetStmt>();
        BeginStatement({{op->value}});
        DeclareLet(op->var, op->value);
        EmitStmt(op->body);
        return;
      }
      case ir::StmtKind::kAttrStmt: {
        const auto* op = s.as<ir::AttrStmt>();
        Line("// " + op->key + (op->node_name.empty() ? "" : " " + SanitizeIdentifier(op->node_name)));
        EmitStmt(op->body);
        return;
      }
      case ir::StmtKind::kAssert: {
        const auto* op = s.as<ir::AssertStmt>();
        std::string message;
        for (char c : op->message) message += (c == '\n') ? ' ' : c;
        BeginStatement({{op->condition}});
        Line("if (!" + Print(op->condition, -1) + ") __trap();  // " + message);
        return;
      }
      case ir::StmtKind::kFor: return EmitFor(s.as<ir::For>());
      case ir::StmtKind::kIfThenElse: {
        const auto* op = s.as<ir::IfThenElse>();
        BeginStatement({{op->condition}});
        Open("if (" + Print(op->condition, -1) + ") {");
        Scoped(op->then_case);
        if (op->else_case.defined()) {
          Close("} else {");
          current_->Indent();
          Scoped(op->else_case);
        }
        Close();
        return;
      }
      case ir::StmtKind::kStore: return EmitStore(s.as<ir::Store>());
      case ir::StmtKind::kAllocate: return EmitAllocate(s.as<ir::Allocate>());
      case ir::StmtKind::kSeq:
        for (const Stmt& x : s.as<ir::Seq>()->stmts) EmitStmt(x);
        return;
      case ir::StmtKind::kEvaluate: {
        if (IsSync(s)) return Line("__syncthreads();");
        const Expr& value = s.as<ir::Evaluate>()->value;
        BeginStatement({{value}});
        if (value.dtype().is_scalar()) Line("(void)" + Print(value, -1) + ";");
        return;
      }
      case ir::StmtKind::kProvide:
      case ir::StmtKind::kRealize:
        AGATE_THROW(kInternal) << "kernel " << kernel_ << ": " << ir::StmtKindName(s.kind())
                               << " reached code generation";
    }
  }

  // A statement in its own C block (its declarations end with it).
  void Scoped(const Stmt& s) { EmitStmt(s); }

  void EmitStore(const ir::Store* op) {
    DType t = op->value.dtype();
    const ir::Buffer& b = op->buffer;
    std::string target = NameOf(b->data.get());
    // A scalar store runs only where its predicate holds; a vector store computes every lane first.
    const bool guarded = op->predicate.defined();
    BeginStatement({{op->index, guarded}, {op->value, guarded && t.is_scalar()}, {op->predicate}});
    if (t.is_scalar()) {
      std::string value = ToMemory(b->dtype, Print(op->value, -1));
      std::string line = target + "[" + Print(op->index, -1) + "] = " + value + ";";
      if (op->predicate.defined()) line = "if (" + Print(op->predicate, -1) + ") " + line;
      Line(line);
      return;
    }
    // A vector store: every lane computed (reading before writing), then one wide
    // store or one store per lane.
    Open("{");
    int lanes = t.lanes();
    std::vector<std::string> values;
    for (int l = 0; l < lanes; ++l) values.push_back(ToMemory(b->dtype, Print(op->value, l)));
    std::string temp = Fresh("agate_lanes");
    std::string init;
    for (int l = 0; l < lanes; ++l) init += (l ? ", " : "") + values[l];
    Line("__align__(16) " + MemoryType(b->dtype) + " " + temp + "[" + std::to_string(lanes) + "] = {" + init + "};");
    if (Wide(b, op->index, op->predicate)) {
      const ir::Ramp* ramp = op->index.as<ir::Ramp>();
      int64_t bytes = b->dtype.element_bytes() * lanes;
      Line(std::string("*reinterpret_cast<") + WideType(bytes) + "*>(" + target + " + " + Print(ramp->base, -1) +
           ") = *reinterpret_cast<const " + WideType(bytes) + "*>(" + temp + ");");
    } else {
      for (int l = 0; l < lanes; ++l) {
        std::string line = target + "[" + Print(op->index, op->index.dtype().is_scalar() ? -1 : l) + "] = " + temp +
                           "[" + std::to_string(l) + "];";
        if (op->predicate.defined()) {
          line = "if (" + Print(op->predicate, op->predicate.dtype().is_scalar() ? -1 : l) + ") " + line;
        }
        Line(line);
      }
    }
    Close();
  }

  void EmitAllocate(const ir::Allocate* op) {
    AGATE_REQUIRE(op->scope == ir::MemoryScope::kLocal, kInternal)
        << "kernel " << kernel_ << ": " << ir::MemoryScopeName(op->scope) << " buffer " << op->buffer->name
        << " allocated in the thread code (the launch form allows local buffers only)";
    const ir::Buffer& b = op->buffer;
    int64_t count = ConstElements(op);
    Open("{");
    std::string name = Define(b->data.get(), b->name);
    alignment_[b->data.get()] = 16;
    Line("__align__(16) " + MemoryType(b->dtype) + " " + name + "[" + std::to_string(std::max<int64_t>(count, 1)) +
         "];");
    EmitStmt(op->body);
    Close();
  }

  void EmitFor(const ir::For* op) {
    AGATE_REQUIRE(op->for_kind != ir::ForKind::kThreadBinding && op->for_kind != ir::ForKind::kParallel, kInternal)
        << "kernel " << kernel_ << ": loop " << op->var->name << " (" << ir::ForKindName(op->for_kind)
        << ") inside the thread code of a launch";
    std::string type = ValueType(op->var.dtype());
    BeginStatement({{op->min}, {op->extent}});
    std::string min = Print(op->min, -1), extent = Print(op->extent, -1);
    std::string name = Define(op->var.get(), op->var->name);
    if (op->for_kind == ir::ForKind::kUnrolled || op->for_kind == ir::ForKind::kVectorized) Line("#pragma unroll");
    if (ir::is_zero(op->min)) {
      Open("for (" + type + " " + name + " = 0; " + name + " < " + extent + "; ++" + name + ") {");
    } else {
      std::string end = Fresh(name + "_end");
      Open("for (" + type + " " + name + " = " + min + ", " + end + " = " + min + " + " + extent + "; " + name + " < " +
           end + "; ++" + name + ") {");
    }
    EmitStmt(op->body);
    Close();
  }

  const target::Target& target_;
  const ir::LoweredFunc* func_ = nullptr;
  std::vector<RootContext> root_;
  std::set<std::string> kernel_names_;
  std::vector<std::string> functions_;
  CudaSource source_;
  IndentedText* current_ = nullptr;
  std::string kernel_;
  int temp_count_ = 0;
  KernelNames names_;
  std::unordered_set<const ir::VarNode*> vector_vars_;
  std::unordered_map<const ir::VarNode*, int64_t> alignment_;
  std::unordered_map<const ir::Load*, std::string> wide_loads_;
  SharedExprs shared_;
  std::map<std::pair<int64_t, int>, std::string> shared_names_;  // (class, lane) -> temporary
};

}  // namespace

CudaSource GenerateCuda(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target) {
  CodeGenCuda codegen(target);
  for (const ir::LoweredFunc& func : funcs) codegen.AddFunction(func);
  return codegen.Finish();
}

}  // namespace codegen
}  // namespace agate
