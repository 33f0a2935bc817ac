#include "core/codegen/llvm/codegen_llvm.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>
#include <unordered_map>
#include <unordered_set>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsARM.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/MDBuilder.h>

#include "core/codegen/llvm/math_functions.h"
#include "core/codegen/llvm/target_machine.h"
#include "core/ir/equality.h"
#include "core/ir/float16.h"
#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/support/error.h"

namespace agate {
namespace codegen {
namespace {

using ir::DType;
using ir::Expr;
using ir::Stmt;
using llvm::Value;

// What is known about an integer expression's value: value = coeff * k + base for
// some integer k (coeff 0: the value is exactly base). Enough to prove that a
// vector access starts on an aligned address.
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;
};

int64_t Gcd(int64_t a, int64_t b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

ModularSet Normalize(ModularSet m) {
  if (m.coeff != 0) {
    m.base %= m.coeff;
    if (m.base < 0) m.base += m.coeff;
  }
  return m;
}

// Variables that the body of a parallel loop reads from its enclosing function.
class FreeVarCollector : public ir::IRVisitor {
 public:
  std::vector<const ir::VarNode*> vars;

  void VisitExpr_(const ir::VarNode* op, const Expr& self) override { Add(op); }
  void VisitExpr_(const ir::Load* op, const Expr& self) override {
    Add(op->buffer->data.get());
    IRVisitor::VisitExpr_(op, self);
  }
  void VisitStmt_(const ir::Store* op, const Stmt& self) override {
    Add(op->buffer->data.get());
    IRVisitor::VisitStmt_(op, self);
  }
  void VisitStmt_(const ir::Allocate* op, const Stmt& self) override {
    for (const Expr& e : op->extents) VisitExpr(e);
    VisitStmt(op->body);
  }

 private:
  void Add(const ir::VarNode* var) {
    if (seen_.insert(var).second) vars.push_back(var);
  }
  std::unordered_set<const ir::VarNode*> seen_;
};

// Lanes [offset, offset + lanes) of a vector expression, rebuilt as an expression
// of `lanes` lanes (a scalar when lanes == 1); undefined when `e` contains
// something that cannot be sliced lane-wise (a vector variable, a Let).
Expr SliceLanes(const Expr& e, int offset, int lanes) {
  if (!e.defined() || e.dtype().lanes() == 1) return e;
  auto slice = [&](const Expr& x) { return SliceLanes(x, offset, lanes); };
  switch (e.kind()) {
    case ir::ExprKind::kRamp: {
      const auto* op = e.as<ir::Ramp>();
      Expr base = op->base + op->stride * ir::make_const(op->stride.dtype(), offset);
      return lanes == 1 ? base : ir::Ramp::make(base, op->stride, lanes);
    }
    case ir::ExprKind::kBroadcast: {
      const auto* op = e.as<ir::Broadcast>();
      return lanes == 1 ? op->value : ir::Broadcast::make(op->value, lanes);
    }
    case ir::ExprKind::kLoad: {
      const auto* op = e.as<ir::Load>();
      Expr index = slice(op->index);
      Expr predicate = op->predicate.defined() ? slice(op->predicate) : Expr();
      if (!index.defined() || (op->predicate.defined() && !predicate.defined())) return Expr();
      return ir::Load::make(op->buffer, index, predicate);
    }
#define AGATE_SLICE_BINARY(Node)                         \
  case Node::kKind: {                                    \
    const auto* op = e.as<Node>();                       \
    Expr a = slice(op->a), b = slice(op->b);             \
    return a.defined() && b.defined() ? Node::make(a, b) : Expr(); \
  }
      AGATE_SLICE_BINARY(ir::Add)
      AGATE_SLICE_BINARY(ir::Sub)
      AGATE_SLICE_BINARY(ir::Mul)
      AGATE_SLICE_BINARY(ir::Div)
      AGATE_SLICE_BINARY(ir::Mod)
      AGATE_SLICE_BINARY(ir::FloorDiv)
      AGATE_SLICE_BINARY(ir::FloorMod)
      AGATE_SLICE_BINARY(ir::Min)
      AGATE_SLICE_BINARY(ir::Max)
      AGATE_SLICE_BINARY(ir::EQ)
      AGATE_SLICE_BINARY(ir::NE)
      AGATE_SLICE_BINARY(ir::LT)
      AGATE_SLICE_BINARY(ir::LE)
      AGATE_SLICE_BINARY(ir::GT)
      AGATE_SLICE_BINARY(ir::GE)
      AGATE_SLICE_BINARY(ir::And)
      AGATE_SLICE_BINARY(ir::Or)
#undef AGATE_SLICE_BINARY
    case ir::ExprKind::kNot: {
      Expr a = slice(e.as<ir::Not>()->a);
      return a.defined() ? ir::Not::make(a) : Expr();
    }
    case ir::ExprKind::kSelect: {
      const auto* op = e.as<ir::Select>();
      Expr c = slice(op->condition), t = slice(op->true_value), f = slice(op->false_value);
      return c.defined() && t.defined() && f.defined() ? ir::Select::make(c, t, f) : Expr();
    }
    case ir::ExprKind::kCast: {
      const auto* op = e.as<ir::Cast>();
      Expr v = slice(op->value);
      return v.defined() ? ir::Cast::make(op->dtype.with_lanes(lanes), v) : Expr();
    }
    case ir::ExprKind::kCall: {
      const auto* op = e.as<ir::Call>();
      if (op->op == ir::CallOp::kReinterpret || ir::DotGroup(op->op) != 0) return Expr();
      std::vector<Expr> args;
      for (const Expr& a : op->args) {
        args.push_back(slice(a));
        if (!args.back().defined()) return Expr();
      }
      return ir::Call::make(op->dtype.with_lanes(lanes), op->op, args);
    }
    default: return Expr();
  }
}

// True when every Load of `data` inside `e` uses exactly `index`: then writing
// some lanes of a store before computing the others cannot change what is read.
bool ReadsOnlyAt(const Expr& e, const ir::VarNode* data, const Expr& index) {
  bool ok = true;
  ir::PostOrderVisit(e, [&](const Expr* x, const Stmt*) {
    if (x == nullptr) return;
    if (const auto* load = x->as<ir::Load>()) {
      if (load->buffer->data.get() == data && !ir::StructuralEqual(load->index, index)) ok = false;
    }
  });
  return ok;
}

// `e` as (what varies, constant): x + c and x - c split off their integer constant,
// a constant is (undefined, c), anything else (e, 0).
std::pair<Expr, int64_t> SplitConstant(const Expr& e) {
  int64_t c = 0;
  if (ir::is_const_int(e, &c)) return {Expr(), c};
  if (const auto* add = e.as<ir::Add>()) {
    if (ir::is_const_int(add->b, &c)) return {add->a, c};
  }
  if (const auto* sub = e.as<ir::Sub>()) {
    if (ir::is_const_int(sub->b, &c)) return {sub->a, -c};
  }
  return {e, 0};
}

// How many statements from stmts[first] form an interleaved store group: `stride`
// unpredicated stores of one buffer, each of the same power-of-two number of lanes
// at Ramp(base + k, stride) for k = 0, 1, ..., stride - 1, whose values read
// nothing of that buffer; together they write stride * lanes consecutive elements.
// 1 when there is no such group. (A template that packs channels into groups, e.g.
// the int8 conv's four channels per vpdpbusd lane, writes one channel per store.)
size_t InterleavedStoreGroup(const std::vector<Stmt>& stmts, size_t first) {
  const auto* s0 = stmts[first].as<ir::Store>();
  if (s0 == nullptr || s0->predicate.defined()) return 1;
  const auto* r0 = s0->index.as<ir::Ramp>();
  int64_t stride = 0;
  DType t = s0->value.dtype();
  const int lanes = t.lanes();
  if (r0 == nullptr || !ir::is_const_int(r0->stride, &stride) || stride < 2 || stride > 16 ||
      (stride & (stride - 1)) != 0 || (lanes & (lanes - 1)) != 0 || t.is_bool() ||
      first + static_cast<size_t>(stride) > stmts.size()) {
    return 1;
  }
  const ir::VarNode* data = s0->buffer->data.get();
  const auto [varying, c0] = SplitConstant(r0->base);
  for (int64_t k = 0; k < stride; ++k) {
    const auto* s = stmts[first + k].as<ir::Store>();
    if (s == nullptr || s->predicate.defined() || s->buffer->data.get() != data || s->value.dtype() != t) return 1;
    const auto* r = s->index.as<ir::Ramp>();
    int64_t sk = 0;
    if (r == nullptr || !ir::is_const_int(r->stride, &sk) || sk != stride) return 1;
    auto [v, c] = SplitConstant(r->base);
    bool same = v.defined() ? varying.defined() && ir::StructuralEqual(v, varying) : !varying.defined();
    if (!same || c != c0 + k) return 1;
    bool reads = false;
    ir::PostOrderVisit(s->value, [&](const Expr* x, const Stmt*) {
      if (x == nullptr) return;
      if (const auto* load = x->as<ir::Load>()) reads = reads || load->buffer->data.get() == data;
    });
    if (reads) return 1;
  }
  return static_cast<size_t>(stride);
}

class CodeGenLLVM : public ir::ExprFunctor<Value*(const Expr&)>, public ir::StmtFunctor<void(const Stmt&)> {
 public:
  CodeGenLLVM(const target::Target& target, llvm::LLVMContext* context)
      : target_(target), context_(*context), builder_(*context) {
    machine_ = CreateTargetMachine(target);
    module_ = std::make_unique<llvm::Module>("agate", context_);
    module_->setTargetTriple(machine_->getTargetTriple().str());
    module_->setDataLayout(machine_->createDataLayout());
    llvm::FastMathFlags flags;
    if (target.fast_math()) {
      flags.setFast();
    } else {
      flags.setAllowContract(true);  // a*b+c may become one FMA, as C's -ffp-contract=fast
    }
    builder_.setFastMathFlags(flags);
    alias_domain_ = llvm::MDBuilder(context_).createAnonymousAliasScopeDomain("agate");
    InitContextType();
  }

  void AddFunction(const ir::LoweredFunc& func) {
    AGATE_REQUIRE(!func.name.empty(), kInvalidArgument) << "a LoweredFunc has no name";
    AGATE_REQUIRE(module_->getFunction(func.name) == nullptr, kInvalidArgument)
        << "two kernels are named '" << func.name << "'";
    AGATE_CHECK(func.body.defined()) << "kernel " << func.name << " has no body";
    kernel_name_ = func.name;
    parallel_count_ = 0;
    CollectAliasScopes(func);

    llvm::Type* args_type = llvm::PointerType::getUnqual(I8Ptr());
    auto* type = llvm::FunctionType::get(builder_.getInt32Ty(), {args_type, llvm::PointerType::getUnqual(ctx_type_)}, false);
    llvm::Function* function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, func.name, *module_);
    function->addParamAttr(0, llvm::Attribute::NoAlias);
    function->addParamAttr(0, llvm::Attribute::ReadOnly);
    function->addParamAttr(1, llvm::Attribute::NoAlias);
    function->addParamAttr(1, llvm::Attribute::ReadOnly);
    function->addFnAttr(llvm::Attribute::NoUnwind);
    function->getArg(0)->setName("args");
    function->getArg(1)->setName("ctx");

    FunctionState state;
    state.function = function;
    state.ctx = function->getArg(1);
    BeginFunction(&state);
    for (size_t i = 0; i < func.params.size(); ++i) {
      const ir::Buffer& buffer = func.params[i];
      Value* slot = builder_.CreateConstInBoundsGEP1_64(I8Ptr(), function->getArg(0), i);
      Value* data = builder_.CreateAlignedLoad(I8Ptr(), slot, PointerAlign(), buffer->name);
      if (buffer->alignment > 1) {
        builder_.CreateAlignmentAssumption(module_->getDataLayout(), data, buffer->alignment);
      }
      Bind(buffer->data.get(), data);
      buffer_alignment_[buffer->data.get()] = static_cast<uint64_t>(std::max(buffer->alignment, 1));
    }
    VisitStmt(func.body);
    EndFunction();
  }

  std::unique_ptr<llvm::Module> Finish() { return std::move(module_); }

 private:
  // Per generated LLVM function (a kernel or an outlined parallel task).
  struct FunctionState {
    llvm::Function* function = nullptr;
    Value* ctx = nullptr;
    llvm::BasicBlock* entry = nullptr;      // allocas go here
    int asserts = 0;                        // AssertStmts emitted so far: the next one returns kKernelAssertFailed - asserts
    std::unordered_map<const ir::VarNode*, Value*> vars;
    std::unordered_map<const ir::VarNode*, ModularSet> modular;
    int parallel_depth = 0;
  };

  // ------------------------------------------------------------------ types

  void InitContextType() {
    llvm::Type* i32 = builder_.getInt32Ty();
    task_type_ = llvm::FunctionType::get(i32, {i32, i32, I8Ptr()}, false);
    auto* parallel_for = llvm::FunctionType::get(
        i32, {I8Ptr(), llvm::PointerType::getUnqual(task_type_), I8Ptr(), i32}, false);
    // Field for field agate_kernel_ctx: abi_version, parallel_for, pool, num_threads, workspace, workspace_bytes.
    ctx_type_ = llvm::StructType::create(context_,
                                         {i32, llvm::PointerType::getUnqual(parallel_for), I8Ptr(), i32, I8Ptr(),
                                          builder_.getInt64Ty()},
                                         "agate_kernel_ctx");
    parallel_for_type_ = parallel_for;
  }

  llvm::Type* I8Ptr() { return builder_.getInt8PtrTy(); }
  llvm::Align PointerAlign() { return module_->getDataLayout().getPointerABIAlignment(0); }

  // The type of a value in registers; bool is i1.
  llvm::Type* LLVMType(DType t) {
    llvm::Type* element = nullptr;
    switch (t.code()) {
      case ir::TypeCode::kInt:
      case ir::TypeCode::kUInt: element = builder_.getIntNTy(t.bits()); break;
      case ir::TypeCode::kBool: element = builder_.getInt1Ty(); break;
      case ir::TypeCode::kFloat:
        element = t.bits() == 16 ? builder_.getHalfTy() : t.bits() == 32 ? builder_.getFloatTy() : builder_.getDoubleTy();
        break;
      case ir::TypeCode::kBFloat: element = builder_.getInt16Ty(); break;  // bits only; arithmetic goes through float32
      case ir::TypeCode::kHandle: element = I8Ptr(); break;
    }
    AGATE_REQUIRE(!t.is_void(), kUnsupported) << "the LLVM backend has no value of type void";
    return t.lanes() == 1 ? element : llvm::FixedVectorType::get(element, t.lanes());
  }

  // The type of an element in memory; bool takes a byte.
  llvm::Type* MemoryType(DType t) {
    if (t.is_bool()) return t.lanes() == 1 ? static_cast<llvm::Type*>(builder_.getInt8Ty())
                                           : llvm::FixedVectorType::get(builder_.getInt8Ty(), t.lanes());
    return LLVMType(t);
  }

  // ------------------------------------------------------------------ functions

  void BeginFunction(FunctionState* state) {
    state->entry = llvm::BasicBlock::Create(context_, "entry", state->function);
    builder_.SetInsertPoint(state->entry);
    // Allocas are inserted before this marker's position: the entry block ends in a
    // branch to the body, so static allocas are all in the entry block.
    llvm::BasicBlock* body = llvm::BasicBlock::Create(context_, "body", state->function);
    builder_.CreateBr(body);
    builder_.SetInsertPoint(body);
    state_ = state;
  }

  void EndFunction() {
    builder_.CreateRet(builder_.getInt32(0));
    state_ = nullptr;
  }

  // A block returning the next assert's status (kKernelAssertFailed - its ordinal).
  llvm::BasicBlock* FailBlock() {
    llvm::IRBuilderBase::InsertPointGuard guard(builder_);
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(context_, "assert_failed", state_->function);
    builder_.SetInsertPoint(fail);
    builder_.CreateRet(builder_.getInt32(kKernelAssertFailed - state_->asserts++));
    return fail;
  }

  llvm::AllocaInst* EntryAlloca(llvm::Type* type, uint64_t count, uint64_t alignment, const std::string& name) {
    llvm::IRBuilderBase::InsertPointGuard guard(builder_);
    builder_.SetInsertPoint(state_->entry->getTerminator());
    llvm::AllocaInst* alloca = builder_.CreateAlloca(type, builder_.getInt64(count), name);
    alloca->setAlignment(llvm::Align(std::max<uint64_t>(alignment, 1)));
    return alloca;
  }

  void Bind(const ir::VarNode* var, Value* value) { state_->vars[var] = value; }
  void Unbind(const ir::VarNode* var) {
    state_->vars.erase(var);
    state_->modular.erase(var);
  }

  Value* LookupVar(const ir::VarNode* var) {
    auto it = state_->vars.find(var);
    AGATE_REQUIRE(it != state_->vars.end(), kInternal)
        << "kernel " << kernel_name_ << ": variable '" << var->name << "' is used outside the scope that defines it";
    return it->second;
  }

  // ------------------------------------------------------------------ alias scopes

  void CollectAliasScopes(const ir::LoweredFunc& func) {
    scopes_.clear();
    std::vector<std::pair<const ir::VarNode*, std::string>> buffers;
    for (const ir::Buffer& b : func.params) buffers.push_back({b->data.get(), b->name});
    ir::PostOrderVisit(func.body, [&](const Expr*, const Stmt* s) {
      if (s != nullptr) {
        if (const auto* alloc = s->as<ir::Allocate>()) buffers.push_back({alloc->buffer->data.get(), alloc->buffer->name});
      }
    });
    llvm::MDBuilder md(context_);
    std::vector<llvm::Metadata*> all;
    for (const auto& [data, name] : buffers) {
      if (scopes_.count(data)) continue;
      llvm::MDNode* scope = md.createAnonymousAliasScope(alias_domain_, kernel_name_ + "." + name);
      scopes_[data].scope = llvm::MDNode::get(context_, {scope});
      all.push_back(scope);
    }
    for (auto& [data, info] : scopes_) {
      std::vector<llvm::Metadata*> others;
      llvm::Metadata* own = info.scope->getOperand(0);
      for (llvm::Metadata* s : all) {
        if (s != own) others.push_back(s);
      }
      info.noalias = llvm::MDNode::get(context_, others);
    }
  }

  void AnnotateAccess(llvm::Instruction* access, const ir::VarNode* data) {
    auto it = scopes_.find(data);
    if (it == scopes_.end()) return;
    access->setMetadata(llvm::LLVMContext::MD_alias_scope, it->second.scope);
    access->setMetadata(llvm::LLVMContext::MD_noalias, it->second.noalias);
  }

  // ------------------------------------------------------------------ alignment

  ModularSet Modular(const Expr& e) {
    if (const auto* imm = e.as<ir::IntImm>()) return {0, imm->value};
    if (const auto* var = e.as<ir::VarNode>()) {
      auto it = state_->modular.find(var);
      return it == state_->modular.end() ? ModularSet{1, 0} : it->second;
    }
    if (const auto* add = e.as<ir::Add>()) {
      ModularSet a = Modular(add->a), b = Modular(add->b);
      return Normalize({Gcd(a.coeff, b.coeff), a.base + b.base});
    }
    if (const auto* sub = e.as<ir::Sub>()) {
      ModularSet a = Modular(sub->a), b = Modular(sub->b);
      return Normalize({Gcd(a.coeff, b.coeff), a.base - b.base});
    }
    if (const auto* mul = e.as<ir::Mul>()) {
      ModularSet a = Modular(mul->a), b = Modular(mul->b);
      int64_t coeff = Gcd(Gcd(a.coeff * b.coeff, a.coeff * b.base), a.base * b.coeff);
      return Normalize({coeff, a.base * b.base});
    }
    if (const auto* cast = e.as<ir::Cast>()) {
      if (cast->value.dtype().is_integer()) return Modular(cast->value);
    }
    return {1, 0};
  }

  // Bytes of alignment provable for &buffer[index] (the first lane for a Ramp).
  uint64_t AccessAlignment(const ir::Buffer& buffer, const Expr& first_index, DType element) {
    uint64_t bytes = static_cast<uint64_t>(element.element_bytes());
    ModularSet m = Modular(first_index);
    // What this function knows about the base address: the parameter's declared
    // alignment or the allocation's actual one.
    auto known = buffer_alignment_.find(buffer->data.get());
    uint64_t base_align = known != buffer_alignment_.end() ? known->second
                                                           : static_cast<uint64_t>(std::max(buffer->alignment, 1));
    uint64_t g = static_cast<uint64_t>(Gcd(m.coeff * static_cast<int64_t>(bytes), m.base * static_cast<int64_t>(bytes)));
    uint64_t align = g == 0 ? base_align : (g & (~g + 1));  // largest power of two dividing g
    align = std::min(align, base_align);
    return std::max<uint64_t>(align, 1);
  }

  // ------------------------------------------------------------------ memory access

  // The address of buffer[index] as a pointer to `value_type`.
  Value* ElementPointer(const ir::Buffer& buffer, Value* index, llvm::Type* element_type) {
    Value* base = builder_.CreateBitCast(LookupVar(buffer->data.get()), llvm::PointerType::getUnqual(element_type));
    return builder_.CreateInBoundsGEP(element_type, base, index);
  }

  Value* LoadFromMemory(const ir::Load* op) {
    DType t = op->dtype;
    DType element = t.element_of();
    llvm::Type* element_type = MemoryType(element);
    llvm::Type* value_type = MemoryType(t);
    Value* mask = op->predicate.defined() ? VisitExpr(op->predicate) : nullptr;
    llvm::Instruction* access = nullptr;
    const ir::Ramp* ramp = op->index.as<ir::Ramp>();
    int64_t stride = 0;
    if (t.is_scalar()) {
      Value* index = VisitExpr(op->index);
      llvm::Align align(AccessAlignment(op->buffer, op->index, element));
      Value* ptr = ElementPointer(op->buffer, index, element_type);
      if (mask != nullptr) {
        // A scalar predicated load: read only when the predicate holds, else zero.
        Value* loaded = LoadScalarGuarded(ptr, element_type, align, mask, op->buffer->data.get());
        return FromMemory(loaded, t);
      }
      access = builder_.CreateAlignedLoad(element_type, ptr, align);
    } else if (ramp != nullptr && ir::is_const_int(ramp->stride, &stride) && stride == 1) {
      Value* base = VisitExpr(ramp->base);
      llvm::Align align(AccessAlignment(op->buffer, ramp->base, element));
      Value* ptr = builder_.CreateBitCast(ElementPointer(op->buffer, base, element_type),
                                          llvm::PointerType::getUnqual(value_type));
      if (mask) {
        access = builder_.CreateMaskedLoad(value_type, ptr, align, mask, llvm::Constant::getNullValue(value_type));
      } else {
        access = builder_.CreateAlignedLoad(value_type, ptr, align);
      }
    } else if (ramp != nullptr && mask == nullptr && ir::is_const_int(ramp->stride, &stride) &&
               UsesStridedMaskedLoad(element, stride, t.lanes())) {
      return FromMemory(StridedLoad(op->buffer, ramp->base, element, static_cast<int>(stride), t.lanes()), t);
    } else if (ramp != nullptr && mask == nullptr && ir::is_const_int(ramp->stride, &stride) &&
               UsesStridedSpanLoad(element, stride, t.lanes())) {
      return FromMemory(StridedSpanLoad(op->buffer, ramp->base, element, static_cast<int>(stride), t.lanes()), t);
    } else if (const auto* broadcast = op->index.as<ir::Broadcast>(); broadcast != nullptr && mask == nullptr) {
      Value* index = VisitExpr(broadcast->value);
      llvm::Align align(AccessAlignment(op->buffer, broadcast->value, element));
      access = builder_.CreateAlignedLoad(element_type, ElementPointer(op->buffer, index, element_type), align);
      AnnotateAccess(access, op->buffer->data.get());
      return FromMemory(builder_.CreateVectorSplat(t.lanes(), access), t);
    } else {
      Value* ptrs = ElementPointer(op->buffer, LaneIndices(op->buffer, op->index), element_type);
      llvm::Align align(element.element_bytes());
      access = builder_.CreateMaskedGather(value_type, ptrs, align, mask, llvm::Constant::getNullValue(value_type));
    }
    AnnotateAccess(access, op->buffer->data.get());
    return FromMemory(access, t);
  }

  // A vector load with a small constant stride on AVX-512: x86 has no gather for 8- and
  // 16-bit elements (LLVM extracts and inserts lane by lane: the int8 depthwise conv's
  // stride-2 packing ran at a fifth of its stride-1 speed) and its 32-bit gathers run about a
  // lane per cycle (a float32 NCHW 3x3/2 max pool of 64x112x112: 0.9 ms gathered), so the span
  // is read with one masked load (lanes past the last element masked off: they never fault)
  // and every stride-th lane picked by a shuffle (AVX-512BW for 8/16-bit lanes, F for 32-bit).
  bool UsesStridedMaskedLoad(DType element, int64_t stride, int lanes) const {
    int bytes = element.element_bytes();
    if (element.is_bool() || stride < 2 || stride > 4 || stride * lanes * bytes > 256) return false;
    if (bytes <= 2) return target_.HasFeature("avx512bw");
    return bytes == 4 && target_.HasFeature("avx512f");
  }
  Value* StridedLoad(const ir::Buffer& buffer, const Expr& first, DType element, int stride, int lanes) {
    const int span = stride * lanes;
    llvm::Type* element_type = MemoryType(element);
    auto* span_type = llvm::FixedVectorType::get(element_type, span);
    std::vector<llvm::Constant*> active;
    for (int j = 0; j < span; ++j) active.push_back(builder_.getInt1(j <= stride * (lanes - 1)));
    Value* ptr = builder_.CreateBitCast(ElementPointer(buffer, VisitExpr(first), element_type),
                                        llvm::PointerType::getUnqual(span_type));
    llvm::Align align(AccessAlignment(buffer, first, element));
    llvm::Instruction* loaded = builder_.CreateMaskedLoad(span_type, ptr, align, llvm::ConstantVector::get(active),
                                                          llvm::Constant::getNullValue(span_type));
    AnnotateAccess(loaded, buffer->data.get());
    std::vector<int> pick(lanes);
    for (int j = 0; j < lanes; ++j) pick[j] = j * stride;
    return builder_.CreateShuffleVector(loaded, pick);
  }

  // The same small constant stride where x86 has AVX2 but no masked 8/16-bit loads (AVX-512BW)
  // or no fast 32-bit gathers (AVX-512F): LLVM would insert byte lanes one by one (the
  // uint8 3x3/2 stem pool of ResNet-18 int8: 900 vpinsrb per plane, 1.49 ms against ONNX
  // Runtime's 0.15). Every element from the first lane's to the last lane's lies in the buffer
  // (they lie between two elements the load reads), so that span is read with whole native
  // vectors, the last one ending exactly at the last lane (overlapping the one before it), and
  // the lanes are picked from them by one shuffle: no masks, nothing read past the span.
  bool UsesStridedSpanLoad(DType element, int64_t stride, int lanes) const {
    int bytes = element.element_bytes();
    if (element.is_bool() || stride < 2 || stride > 4 || lanes < 2 || bytes > 4) return false;
    if (!target_.HasFeature("avx2")) return false;
    int64_t span = stride * (lanes - 1) + 1;
    int64_t chunk = SpanChunk(element, span);
    return chunk >= 4 && span <= 8 * chunk;
  }
  // Elements per load of a span: a native vector, or the largest power of two within a
  // shorter span (16 bytes for 16 bytes at stride 2: a span of 31).
  int SpanChunk(DType element, int64_t span) const {
    int chunk = target_.vector_width_bits() / 8 / element.element_bytes();
    while (chunk > span) chunk /= 2;
    return chunk;
  }
  Value* StridedSpanLoad(const ir::Buffer& buffer, const Expr& first, DType element, int stride, int lanes) {
    const int span = stride * (lanes - 1) + 1;
    const int chunk = SpanChunk(element, span);
    llvm::Type* element_type = MemoryType(element);
    auto* chunk_type = llvm::FixedVectorType::get(element_type, chunk);
    Value* base = VisitExpr(first);
    // Chunk c covers elements [offsets[c], offsets[c] + chunk) of the span.
    std::vector<int> offsets;
    for (int offset = 0; offset + chunk < span; offset += chunk) offsets.push_back(offset);
    offsets.push_back(span - chunk);
    std::vector<Value*> chunks;
    for (size_t c = 0; c < offsets.size(); ++c) {
      Value* index = builder_.CreateAdd(base, llvm::ConstantInt::get(base->getType(), offsets[c]));
      Value* ptr = builder_.CreateBitCast(ElementPointer(buffer, index, element_type),
                                          llvm::PointerType::getUnqual(chunk_type));
      llvm::Align align(c == 0 ? AccessAlignment(buffer, first, element) : element.element_bytes());
      llvm::Instruction* loaded = builder_.CreateAlignedLoad(chunk_type, ptr, align);
      AnnotateAccess(loaded, buffer->data.get());
      chunks.push_back(loaded);
    }
    // Concatenate the chunks (padded with undefined chunks to a power of two) pairwise, then
    // pick each lane from the first chunk that holds its element.
    while (chunks.size() & (chunks.size() - 1)) chunks.push_back(llvm::UndefValue::get(chunk_type));
    int width = chunk;
    while (chunks.size() > 1) {
      std::vector<int> both(2 * width);
      for (int j = 0; j < 2 * width; ++j) both[j] = j;
      std::vector<Value*> next;
      for (size_t c = 0; c < chunks.size(); c += 2) next.push_back(builder_.CreateShuffleVector(chunks[c], chunks[c + 1], both));
      chunks = next;
      width *= 2;
    }
    std::vector<int> pick(lanes);
    for (int j = 0; j < lanes; ++j) {
      int element_index = j * stride;
      size_t c = 0;
      while (element_index >= offsets[c] + chunk) ++c;
      pick[j] = static_cast<int>(c) * chunk + (element_index - offsets[c]);
    }
    return builder_.CreateShuffleVector(chunks[0], pick);
  }

  // The lane indices of a gather or scatter: 32-bit when every element of the
  // buffer is reachable with one (the indices of active lanes are in bounds), so
  // x86 gathers take 16 float lanes per instruction instead of 8 with 64-bit
  // indices (GEP sign-extends them back). A transposed operand packed by a GEMM
  // is read this way.
  Value* LaneIndices(const ir::Buffer& buffer, const Expr& index) {
    Value* indices = VisitExpr(index);
    int64_t elements = 1;
    for (const Expr& extent : buffer->shape) {
      int64_t e = 0;
      if (!ir::is_const_int(extent, &e) || e <= 0 || elements > (int64_t{1} << 31) / e) return indices;
      elements *= e;
    }
    if (elements >= (int64_t{1} << 31)) return indices;
    auto* type = llvm::cast<llvm::VectorType>(indices->getType());
    return builder_.CreateTrunc(indices, llvm::VectorType::get(builder_.getInt32Ty(), type->getElementCount()));
  }

  Value* LoadScalarGuarded(Value* ptr, llvm::Type* type, llvm::Align align, Value* condition, const ir::VarNode* data) {
    llvm::BasicBlock* before = builder_.GetInsertBlock();
    llvm::BasicBlock* then_block = llvm::BasicBlock::Create(context_, "pred_load", state_->function);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(context_, "pred_done", state_->function);
    builder_.CreateCondBr(condition, then_block, done);
    builder_.SetInsertPoint(then_block);
    llvm::Instruction* loaded = builder_.CreateAlignedLoad(type, ptr, align);
    AnnotateAccess(loaded, data);
    builder_.CreateBr(done);
    builder_.SetInsertPoint(done);
    llvm::PHINode* phi = builder_.CreatePHI(type, 2);
    phi->addIncoming(loaded, then_block);
    phi->addIncoming(llvm::Constant::getNullValue(type), before);
    return phi;
  }

  Value* FromMemory(Value* v, DType t) {
    if (!t.is_bool()) return v;
    return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  Value* ToMemory(Value* v, DType t) { return t.is_bool() ? builder_.CreateZExt(v, MemoryType(t)) : v; }

  void StoreToMemory(const ir::Store* op) {
    DType t = op->value.dtype();
    DType element = t.element_of();
    AGATE_REQUIRE(element == op->buffer->dtype || (element.is_bool() && op->buffer->dtype.is_bool()), kInternal)
        << "kernel " << kernel_name_ << ": store of " << t << " into buffer " << op->buffer->name << " of "
        << op->buffer->dtype;
    llvm::Type* element_type = MemoryType(element);
    Value* value = ToMemory(VisitExpr(op->value), t);
    Value* mask = op->predicate.defined() ? VisitExpr(op->predicate) : nullptr;
    AGATE_REQUIRE(op->index.dtype().lanes() == t.lanes(), kInternal)
        << "kernel " << kernel_name_ << ": store to " << op->buffer->name << " has a " << op->index.dtype()
        << " index for a " << t << " value";
    llvm::Instruction* access = nullptr;
    const ir::Ramp* ramp = op->index.as<ir::Ramp>();
    int64_t stride = 0;
    if (t.is_scalar()) {
      Value* index = VisitExpr(op->index);
      llvm::Align align(AccessAlignment(op->buffer, op->index, element));
      Value* ptr = ElementPointer(op->buffer, index, element_type);
      if (mask != nullptr) {
        llvm::BasicBlock* then_block = llvm::BasicBlock::Create(context_, "pred_store", state_->function);
        llvm::BasicBlock* done = llvm::BasicBlock::Create(context_, "pred_store_done", state_->function);
        builder_.CreateCondBr(mask, then_block, done);
        builder_.SetInsertPoint(then_block);
        AnnotateAccess(builder_.CreateAlignedStore(value, ptr, align), op->buffer->data.get());
        builder_.CreateBr(done);
        builder_.SetInsertPoint(done);
        return;
      }
      access = builder_.CreateAlignedStore(value, ptr, align);
    } else if (ramp != nullptr && ir::is_const_int(ramp->stride, &stride) && stride == 1) {
      Value* base = VisitExpr(ramp->base);
      llvm::Align align(AccessAlignment(op->buffer, ramp->base, element));
      Value* ptr = builder_.CreateBitCast(ElementPointer(op->buffer, base, element_type),
                                          llvm::PointerType::getUnqual(value->getType()));
      if (mask) {
        access = builder_.CreateMaskedStore(value, ptr, align, mask);
      } else {
        access = builder_.CreateAlignedStore(value, ptr, align);
      }
    } else {
      Value* ptrs = ElementPointer(op->buffer, LaneIndices(op->buffer, op->index), element_type);
      access = builder_.CreateMaskedScatter(value, ptrs, llvm::Align(element.element_bytes()), mask);
    }
    AnnotateAccess(access, op->buffer->data.get());
  }

  // ------------------------------------------------------------------ expressions

  Value* VisitExpr_(const ir::IntImm* op, const Expr&) override {
    return llvm::ConstantInt::get(LLVMType(op->dtype), static_cast<uint64_t>(op->value), /*isSigned=*/true);
  }
  Value* VisitExpr_(const ir::FloatImm* op, const Expr&) override {
    if (op->dtype.code() == ir::TypeCode::kBFloat) return builder_.getInt16(ir::FloatToBFloat16(static_cast<float>(op->value)));
    return llvm::ConstantFP::get(LLVMType(op->dtype), op->value);
  }
  Value* VisitExpr_(const ir::VarNode* op, const Expr&) override { return LookupVar(op); }

  void RequireArithmetic(DType t, const char* what) {
    AGATE_REQUIRE(t.code() != ir::TypeCode::kBFloat, kUnsupported)
        << "kernel " << kernel_name_ << ": " << what << " on bfloat16 values; cast them to float32 first";
  }

  Value* VisitExpr_(const ir::Add* op, const Expr&) override {
    RequireArithmetic(op->dtype, "Add");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    return op->dtype.is_float() ? builder_.CreateFAdd(a, b) : builder_.CreateAdd(a, b);
  }
  Value* VisitExpr_(const ir::Sub* op, const Expr&) override {
    RequireArithmetic(op->dtype, "Sub");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    return op->dtype.is_float() ? builder_.CreateFSub(a, b) : builder_.CreateSub(a, b);
  }
  Value* VisitExpr_(const ir::Mul* op, const Expr&) override {
    RequireArithmetic(op->dtype, "Mul");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    return op->dtype.is_float() ? builder_.CreateFMul(a, b) : builder_.CreateMul(a, b);
  }
  Value* VisitExpr_(const ir::Div* op, const Expr&) override {
    RequireArithmetic(op->dtype, "Div");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    if (op->dtype.is_float()) return builder_.CreateFDiv(a, b);
    return op->dtype.is_uint() ? builder_.CreateUDiv(a, b) : builder_.CreateSDiv(a, b);
  }
  Value* VisitExpr_(const ir::Mod* op, const Expr&) override {
    RequireArithmetic(op->dtype, "Mod");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    if (op->dtype.is_float()) return builder_.CreateFRem(a, b);
    return op->dtype.is_uint() ? builder_.CreateURem(a, b) : builder_.CreateSRem(a, b);
  }
  Value* VisitExpr_(const ir::FloorDiv* op, const Expr&) override {
    RequireArithmetic(op->dtype, "FloorDiv");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    if (op->dtype.is_float()) {
      return builder_.CreateIntrinsic(llvm::Intrinsic::floor, {a->getType()}, {builder_.CreateFDiv(a, b)});
    }
    if (op->dtype.is_uint()) return builder_.CreateUDiv(a, b);
    // Truncating quotient, one less when the remainder is non-zero with the sign opposite to b's.
    Value* q = builder_.CreateSDiv(a, b);
    Value* r = builder_.CreateSRem(a, b);
    Value* adjust = RemainderNeedsAdjust(r, b);
    return builder_.CreateSub(q, builder_.CreateZExt(adjust, q->getType()));
  }
  Value* VisitExpr_(const ir::FloorMod* op, const Expr&) override {
    RequireArithmetic(op->dtype, "FloorMod");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    if (op->dtype.is_float()) {
      Value* q = builder_.CreateIntrinsic(llvm::Intrinsic::floor, {a->getType()}, {builder_.CreateFDiv(a, b)});
      return builder_.CreateFSub(a, builder_.CreateFMul(q, b));
    }
    if (op->dtype.is_uint()) return builder_.CreateURem(a, b);
    Value* r = builder_.CreateSRem(a, b);
    return builder_.CreateSelect(RemainderNeedsAdjust(r, b), builder_.CreateAdd(r, b), r);
  }
  Value* RemainderNeedsAdjust(Value* r, Value* b) {
    Value* zero = llvm::Constant::getNullValue(r->getType());
    Value* nonzero = builder_.CreateICmpNE(r, zero);
    Value* signs_differ = builder_.CreateICmpNE(builder_.CreateICmpSLT(r, zero), builder_.CreateICmpSLT(b, zero));
    return builder_.CreateAnd(nonzero, signs_differ);
  }

  Value* VisitExpr_(const ir::Min* op, const Expr&) override { return MinMax(op->a, op->b, /*is_min=*/true); }
  Value* VisitExpr_(const ir::Max* op, const Expr&) override { return MinMax(op->a, op->b, /*is_min=*/false); }
  Value* MinMax(const Expr& ea, const Expr& eb, bool is_min) {
    DType t = ea.dtype();
    RequireArithmetic(t, is_min ? "Min" : "Max");
    Value *a = VisitExpr(ea), *b = VisitExpr(eb);
    Value* a_first;
    if (t.is_float()) {
      a_first = is_min ? builder_.CreateFCmpOLT(a, b) : builder_.CreateFCmpOGT(a, b);
    } else if (t.is_uint() || t.is_bool()) {
      a_first = is_min ? builder_.CreateICmpULT(a, b) : builder_.CreateICmpUGT(a, b);
    } else {
      a_first = is_min ? builder_.CreateICmpSLT(a, b) : builder_.CreateICmpSGT(a, b);
    }
    return builder_.CreateSelect(a_first, a, b);
  }

  template <typename T>
  Value* Compare(const T* op, llvm::CmpInst::Predicate fp, llvm::CmpInst::Predicate sp, llvm::CmpInst::Predicate up) {
    DType t = op->a.dtype();
    RequireArithmetic(t, "a comparison");
    Value *a = VisitExpr(op->a), *b = VisitExpr(op->b);
    if (t.is_float()) return builder_.CreateFCmp(fp, a, b);
    return builder_.CreateICmp(t.is_uint() || t.is_bool() || t.is_handle() ? up : sp, a, b);
  }
  Value* VisitExpr_(const ir::EQ* op, const Expr&) override {
    return Compare(op, llvm::CmpInst::FCMP_OEQ, llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_EQ);
  }
  Value* VisitExpr_(const ir::NE* op, const Expr&) override {
    return Compare(op, llvm::CmpInst::FCMP_UNE, llvm::CmpInst::ICMP_NE, llvm::CmpInst::ICMP_NE);
  }
  Value* VisitExpr_(const ir::LT* op, const Expr&) override {
    return Compare(op, llvm::CmpInst::FCMP_OLT, llvm::CmpInst::ICMP_SLT, llvm::CmpInst::ICMP_ULT);
  }
  Value* VisitExpr_(const ir::LE* op, const Expr&) override {
    return Compare(op, llvm::CmpInst::FCMP_OLE, llvm::CmpInst::ICMP_SLE, llvm::CmpInst::ICMP_ULE);
  }
  Value* VisitExpr_(const ir::GT* op, const Expr&) override {
    return Compare(op, llvm::CmpInst::FCMP_OGT, llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_UGT);
  }
  Value* VisitExpr_(const ir::GE* op, const Expr&) override {
    return Compare(op, llvm::CmpInst::FCMP_OGE, llvm::CmpInst::ICMP_SGE, llvm::CmpInst::ICMP_UGE);
  }
  Value* VisitExpr_(const ir::And* op, const Expr&) override {
    return builder_.CreateAnd(VisitExpr(op->a), VisitExpr(op->b));
  }
  Value* VisitExpr_(const ir::Or* op, const Expr&) override { return builder_.CreateOr(VisitExpr(op->a), VisitExpr(op->b)); }
  Value* VisitExpr_(const ir::Not* op, const Expr&) override { return builder_.CreateNot(VisitExpr(op->a)); }

  Value* VisitExpr_(const ir::Select* op, const Expr&) override {
    Value* condition = VisitExpr(op->condition);
    Value* t = VisitExpr(op->true_value);
    Value* f = VisitExpr(op->false_value);
    return builder_.CreateSelect(condition, t, f);
  }

  Value* VisitExpr_(const ir::Cast* op, const Expr&) override { return CastValue(VisitExpr(op->value), op->value.dtype(), op->dtype); }

  Value* BFloat16ToFloat(Value* bits, int lanes) {
    llvm::Type* i32 = LLVMType(DType::Int(32, lanes));
    Value* wide = builder_.CreateShl(builder_.CreateZExt(bits, i32), 16);
    return builder_.CreateBitCast(wide, LLVMType(DType::Float(32, lanes)));
  }

  Value* FloatToBFloat16(Value* f, int lanes) {
    llvm::Type* i32 = LLVMType(DType::Int(32, lanes));
    Value* bits = builder_.CreateBitCast(f, i32);
    Value* lsb = builder_.CreateAnd(builder_.CreateLShr(bits, 16), 1);
    Value* rounded = builder_.CreateAdd(bits, builder_.CreateAdd(lsb, llvm::ConstantInt::get(i32, 0x7fff)));
    Value* is_nan = builder_.CreateFCmpUNO(f, f);
    Value* quiet = builder_.CreateOr(bits, llvm::ConstantInt::get(i32, 0x00400000));
    Value* chosen = builder_.CreateSelect(is_nan, quiet, rounded);
    return builder_.CreateTrunc(builder_.CreateLShr(chosen, 16), LLVMType(DType::Int(16, lanes)));
  }

  Value* CastValue(Value* v, DType from, DType to) {
    int lanes = to.lanes();
    if (from.lanes() == 1 && lanes > 1) {
      v = builder_.CreateVectorSplat(lanes, v);
      from = from.with_lanes(lanes);
    }
    if (from == to) return v;
    if (from.code() == ir::TypeCode::kBFloat) {
      return CastValue(BFloat16ToFloat(v, lanes), DType::Float(32, lanes), to);
    }
    if (to.code() == ir::TypeCode::kBFloat) {
      return FloatToBFloat16(CastValue(v, from, DType::Float(32, lanes)), lanes);
    }
    llvm::Type* type = LLVMType(to);
    if (to.is_bool()) {
      if (from.is_float()) return builder_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
      return builder_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    if (from.is_bool()) {
      return to.is_float() ? builder_.CreateUIToFP(v, type) : builder_.CreateZExt(v, type);
    }
    if (from.is_float() && from.bits() == 64 && to.is_float() && to.bits() == 16) {
      // x86 has no f64->f16 instruction and LLVM 14 would call __truncdfhf2, whose libgcc and
      // compiler-rt versions disagree on the return register; go through float32 (F16C).
      return CastValue(CastValue(v, from, DType::Float(32, lanes)), DType::Float(32, lanes), to);
    }
    if (from.is_float() && to.is_float()) return builder_.CreateFPCast(v, type);
    if (from.is_float()) return to.is_uint() ? builder_.CreateFPToUI(v, type) : builder_.CreateFPToSI(v, type);
    if (to.is_float()) return from.is_uint() ? builder_.CreateUIToFP(v, type) : builder_.CreateSIToFP(v, type);
    if (from.is_handle() || to.is_handle()) {
      AGATE_THROW(kUnsupported) << "kernel " << kernel_name_ << ": cast from " << from << " to " << to;
    }
    return builder_.CreateIntCast(v, type, from.is_int());
  }

  Value* VisitExpr_(const ir::Call* op, const Expr&) override {
    DType t = op->dtype;
    AGATE_REQUIRE(!ir::IsGpuIntrinsic(op->op), kUnsupported)
        << "kernel " << kernel_name_ << ": the GPU intrinsic " << ir::CallOpName(op->op)
        << " has no meaning on a CPU; the LLVM CPU backend cannot run it (use a cuda target)";
    std::vector<Value*> args;
    for (const Expr& a : op->args) args.push_back(VisitExpr(a));
    if (op->op == ir::CallOp::kReinterpret) {
      AGATE_REQUIRE(!t.is_bool() && !op->args[0].dtype().is_bool(), kUnsupported)
          << "kernel " << kernel_name_ << ": reinterpret of bool values";
      return builder_.CreateBitCast(args[0], LLVMType(t));
    }
    if (op->op == ir::CallOp::kDot4U8S8 || op->op == ir::CallOp::kDot4S8S8) return EmitDot4(op, args);
    if (op->op == ir::CallOp::kDot2I16) return EmitDot2(op, args);
    if (t.code() == ir::TypeCode::kBFloat) {
      // Compute in float32 and round back.
      std::vector<Value*> wide;
      for (Value* a : args) wide.push_back(BFloat16ToFloat(a, t.lanes()));
      return FloatToBFloat16(EmitCall(op->op, DType::Float(32, t.lanes()), wide), t.lanes());
    }
    return EmitCall(op->op, t, args);
  }

  // dot4_u8s8 (core/ir/expr.h): vpdpbusd where the target has VNNI for this width
  // (512 bits: avx512vnni; 256/128: avx512vnni with avx512vl, or avxvnni), usdot on AArch64
  // with i8mm; dot4_s8s8: sdot on AArch64 with dotprod (128 or 64 bits). Elsewhere an
  // exact widening sequence (extend to i32, multiply, add the four products of each lane;
  // no pmaddubsw, whose 16-bit sums saturate).
  Value* EmitDot4(const ir::Call* op, std::vector<Value*> args) {
    int n = op->dtype.lanes();
    for (int i : {1, 2}) {
      if (op->args[i].dtype().lanes() == 4 && n > 1) args[i] = BroadcastGroup(args[i], n);
    }
    const bool signed_a = op->op == ir::CallOp::kDot4S8S8;
    if (target_.arch() == target::Arch::kAArch64 && (n == 4 || n == 2)) {
      llvm::Intrinsic::ID arm = llvm::Intrinsic::not_intrinsic;
      if (signed_a && target_.HasFeature("dotprod")) arm = llvm::Intrinsic::aarch64_neon_sdot;
      if (!signed_a && target_.HasFeature("i8mm")) arm = llvm::Intrinsic::aarch64_neon_usdot;
      if (arm != llvm::Intrinsic::not_intrinsic) {
        return builder_.CreateIntrinsic(arm, {args[0]->getType(), args[1]->getType()}, {args[0], args[1], args[2]});
      }
    }
    llvm::Type* wide = LLVMType(DType::Int(32, 4 * n));
    if (signed_a) {
      Value* products = builder_.CreateMul(builder_.CreateSExt(args[1], wide), builder_.CreateSExt(args[2], wide));
      return AddGroupProducts(args[0], products, n, 4);
    }
    bool x86 = target_.HasFeature("avx512vnni") || target_.HasFeature("avxvnni");
    bool vl = target_.HasFeature("avx512vnni") && target_.HasFeature("avx512vl");
    llvm::Intrinsic::ID id = llvm::Intrinsic::not_intrinsic;
    if (n == 16 && target_.HasFeature("avx512vnni")) id = llvm::Intrinsic::x86_avx512_vpdpbusd_512;
    if (n == 8 && (vl || target_.HasFeature("avxvnni"))) id = llvm::Intrinsic::x86_avx512_vpdpbusd_256;
    if (n == 4 && (vl || target_.HasFeature("avxvnni"))) id = llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    if (x86 && id != llvm::Intrinsic::not_intrinsic) {
      llvm::Type* words = LLVMType(DType::Int(32, n));
      return builder_.CreateIntrinsic(id, {}, {args[0], builder_.CreateBitCast(args[1], words),
                                               builder_.CreateBitCast(args[2], words)});
    }
    return AddGroupProducts(args[0], builder_.CreateMul(builder_.CreateZExt(args[1], wide), builder_.CreateSExt(args[2], wide)),
                            n, 4);
  }
  // acc (n int32 lanes) plus, per lane i, the `group` products[group * i + j]: the exact
  // fallback of the dot-product intrinsics (products already widened to int32).
  Value* AddGroupProducts(Value* acc, Value* products, int n, int group) {
    Value* sum = acc;
    for (int j = 0; j < group; ++j) {
      Value* part;
      if (n == 1) {
        part = builder_.CreateExtractElement(products, static_cast<uint64_t>(j));
      } else {
        std::vector<int> mask;
        for (int i = 0; i < n; ++i) mask.push_back(group * i + j);
        part = builder_.CreateShuffleVector(products, mask);
      }
      sum = builder_.CreateAdd(sum, part);
    }
    return sum;
  }
  // dot2_i16 (core/ir/expr.h): pmaddwd plus an add where the target has it for this width
  // (128 bits: SSE2, 256: AVX2, 512: AVX512BW), SMLAD for one lane on Arm with the DSP
  // extension (Cortex-M4, M7, M33, M55: both pairs as 32-bit words, the accumulator its
  // third operand), else sign-extend, multiply and add the even and odd products (which
  // LLVM's x86 backend may still match to pmaddwd).
  Value* EmitDot2(const ir::Call* op, std::vector<Value*> args) {
    int n = op->dtype.lanes();
    if (n == 1 && target_.arch() == target::Arch::kARM && target_.HasFeature("dsp")) {
      llvm::Type* word = builder_.getInt32Ty();
      Value* pairs[2];
      for (int i : {1, 2}) {
        pairs[i - 1] = StridedBytePair(op->args[i]);
        if (pairs[i - 1] == nullptr) pairs[i - 1] = builder_.CreateBitCast(args[i], word);
      }
      return builder_.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {}, {pairs[0], pairs[1], args[0]});
    }
    for (int i : {1, 2}) {
      if (op->args[i].dtype().lanes() == 2 && n > 1) args[i] = BroadcastGroup(args[i], n);
    }
    llvm::Intrinsic::ID id = llvm::Intrinsic::not_intrinsic;
    if (target_.HasFeature("sse2") && n == 4) id = llvm::Intrinsic::x86_sse2_pmadd_wd;
    if (target_.HasFeature("avx2") && n == 8) id = llvm::Intrinsic::x86_avx2_pmadd_wd;
    if (target_.HasFeature("avx512bw") && n == 16) id = llvm::Intrinsic::x86_avx512_pmaddw_d_512;
    if (id != llvm::Intrinsic::not_intrinsic) {
      return builder_.CreateAdd(args[0], builder_.CreateIntrinsic(id, {}, {args[1], args[2]}));
    }
    llvm::Type* wide = LLVMType(DType::Int(32, 2 * n));
    return AddGroupProducts(args[0], builder_.CreateMul(builder_.CreateSExt(args[1], wide), builder_.CreateSExt(args[2], wide)),
                            n, 2);
  }
  // int16x2(B[ramp(i, 2, 2)]) of int8 B (the Cortex-M template's packed int8 weights) as SMLAD's
  // 32-bit operand: bytes 0 and 2, or 1 and 3, of the word that starts at B[i - i % 4],
  // sign-extended by one SXTB16 (the odd bytes rotated down first, which SXTB16's rotation
  // operand absorbs). Only where that word provably lies inside the buffer (i % 4 known to be 0
  // or 1, a buffer of whole words); nullptr elsewhere (the generic strided load is used).
  Value* StridedBytePair(const Expr& pair) {
    const ir::Load* load = ir::AsStridedBytePair(pair);
    if (load == nullptr) return nullptr;
    const auto* ramp = load->index.as<ir::Ramp>();
    ModularSet m = Modular(ramp->base);
    int64_t in_word = ((m.base % 4) + 4) % 4;
    if (m.coeff % 4 != 0 || in_word > 1) return nullptr;
    Expr start = in_word == 0 ? ramp->base : ramp->base - ir::make_const(ramp->base.dtype(), in_word);
    llvm::Type* word_type = builder_.getInt32Ty();
    Value* ptr = builder_.CreateBitCast(ElementPointer(load->buffer, VisitExpr(start), builder_.getInt8Ty()),
                                        llvm::PointerType::getUnqual(word_type));
    uint64_t align = std::min<uint64_t>(AccessAlignment(load->buffer, start, DType::Int(8)), 4);
    llvm::Instruction* word = builder_.CreateAlignedLoad(word_type, ptr, llvm::Align(align));
    AnnotateAccess(word, load->buffer->data.get());
    Value* bytes = word;
    if (in_word != 0) {
      bytes = builder_.CreateIntrinsic(llvm::Intrinsic::fshr, {word_type}, {word, word, builder_.getInt32(8)});
    }
    return builder_.CreateIntrinsic(llvm::Intrinsic::arm_sxtb16, {}, {bytes});
  }

  // A group of four bytes (or a pair of int16) repeated for n lanes: <4 x i8> -> i32 -> splat -> <4n x i8>.
  Value* BroadcastGroup(Value* group, int n) {
    llvm::Type* element = group->getType()->getScalarType();
    unsigned per_word = 32 / element->getScalarSizeInBits();
    Value* word = builder_.CreateBitCast(group, builder_.getInt32Ty());
    return builder_.CreateBitCast(builder_.CreateVectorSplat(n, word), llvm::FixedVectorType::get(element, per_word * n));
  }

  // 32-bit Arm with a single-precision FPU but no VRINT (Cortex-M4's FPv4): llvm.nearbyint becomes
  // a call to nearbyintf, dozens of instructions per element; float32 rounding is inline there.
  // (Without an FPU the inline form's two float additions are library calls too: not there.)
  bool NeedsInlineRound(DType t) const {
    bool fpu = target_.HasFeature("vfp2sp") || target_.HasFeature("vfp4d16sp");
    return t.is_float() && t.bits() == 32 && target_.arch() == target::Arch::kARM && fpu &&
           !target_.HasFeature("fp-armv8d16sp");
  }
  // Round half to even, exact: for |x| < 2^23, |x| + 2^23 lies in [2^23, 2^24) where floats are the
  // integers, so the addition rounds |x| to the nearest one (ties to even) and the subtraction is
  // exact; larger floats, infinities and NaN are returned as they are; the sign is x's (-0.3 -> -0).
  Value* EmitInlineRound(Value* x, DType t) {
    llvm::Type* type = LLVMType(t);
    llvm::IRBuilderBase::FastMathFlagGuard strict(builder_);  // -fast-math would fold (a + c) - c to a
    builder_.setFastMathFlags(llvm::FastMathFlags());
    Value* magnitude = builder_.CreateIntrinsic(llvm::Intrinsic::fabs, {type}, {x});
    Value* two23 = llvm::ConstantFP::get(type, 8388608.0);
    Value* rounded = builder_.CreateFSub(builder_.CreateFAdd(magnitude, two23), two23);
    Value* signed_rounded = builder_.CreateIntrinsic(llvm::Intrinsic::copysign, {type}, {rounded, x});
    return builder_.CreateSelect(builder_.CreateFCmpOLT(magnitude, two23), signed_rounded, x);
  }

  Value* EmitCall(ir::CallOp call, DType t, const std::vector<Value*>& args) {
    llvm::Type* type = LLVMType(t);
    switch (call) {
      case ir::CallOp::kAbs:
        if (t.is_float()) return builder_.CreateIntrinsic(llvm::Intrinsic::fabs, {type}, args);
        if (t.is_uint() || t.is_bool()) return args[0];
        return builder_.CreateSelect(builder_.CreateICmpSLT(args[0], llvm::Constant::getNullValue(type)),
                                     builder_.CreateNeg(args[0]), args[0]);
      case ir::CallOp::kRound:
        if (NeedsInlineRound(t)) return EmitInlineRound(args[0], t);
        return builder_.CreateIntrinsic(llvm::Intrinsic::nearbyint, {type}, args);
      case ir::CallOp::kBitwiseAnd: return builder_.CreateAnd(args[0], args[1]);
      case ir::CallOp::kBitwiseOr: return builder_.CreateOr(args[0], args[1]);
      case ir::CallOp::kBitwiseXor: return builder_.CreateXor(args[0], args[1]);
      case ir::CallOp::kBitwiseNot: return builder_.CreateNot(args[0]);
      case ir::CallOp::kShiftLeft:
      case ir::CallOp::kShiftRight: {
        // shl/lshr are poison for amounts >= the bit width: those give 0 (CallOp::kShiftLeft).
        Value* too_far = builder_.CreateICmpUGE(args[1], llvm::ConstantInt::get(type, t.bits()));
        Value* shifted = call == ir::CallOp::kShiftLeft ? builder_.CreateShl(args[0], args[1])
                                                        : builder_.CreateLShr(args[0], args[1]);
        return builder_.CreateSelect(too_far, llvm::Constant::getNullValue(type), builder_.CreateFreeze(shifted));
      }
      case ir::CallOp::kFma: return builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type}, args);
      default: break;
    }
    std::string name = ir::CallOpName(call);
    return EmitMathFunction(builder_, name, args);
  }

  Value* VisitExpr_(const ir::Ramp* op, const Expr&) override {
    Value* base = VisitExpr(op->base);
    Value* stride = VisitExpr(op->stride);
    std::vector<llvm::Constant*> steps;
    for (int i = 0; i < op->lanes; ++i) steps.push_back(llvm::ConstantInt::get(base->getType(), i));
    Value* lanes = llvm::ConstantVector::get(steps);
    Value* splat_base = builder_.CreateVectorSplat(op->lanes, base);
    Value* splat_stride = builder_.CreateVectorSplat(op->lanes, stride);
    return builder_.CreateAdd(splat_base, builder_.CreateMul(splat_stride, lanes));
  }
  Value* VisitExpr_(const ir::Broadcast* op, const Expr&) override {
    return builder_.CreateVectorSplat(op->lanes, VisitExpr(op->value));
  }
  Value* VisitExpr_(const ir::Let* op, const Expr&) override {
    Value* value = VisitExpr(op->value);
    Bind(op->var.get(), value);
    if (op->value.dtype().is_integer() && op->value.dtype().is_scalar()) state_->modular[op->var.get()] = Modular(op->value);
    Value* body = VisitExpr(op->body);
    Unbind(op->var.get());
    return body;
  }
  Value* VisitExpr_(const ir::Load* op, const Expr&) override { return LoadFromMemory(op); }
  Value* VisitExpr_(const ir::TensorRead* op, const Expr&) override {
    AGATE_THROW(kInternal) << "kernel " << kernel_name_ << ": TensorRead of " << op->producer->producer_name()
                           << " reached code generation; storage flattening must replace it by a Load";
  }
  Value* VisitExpr_(const ir::Reduce*, const Expr& self) override {
    AGATE_THROW(kInternal) << "kernel " << kernel_name_ << ": Reduce reached code generation (" << ir::ToString(self)
                           << "); lowering must turn it into loops";
  }

  // ------------------------------------------------------------------ statements

  void VisitStmt_(const ir::LetStmt* op, const Stmt&) override {
    Value* value = VisitExpr(op->value);
    value->setName(op->var->name);
    Bind(op->var.get(), value);
    if (op->value.dtype().is_integer() && op->value.dtype().is_scalar()) state_->modular[op->var.get()] = Modular(op->value);
    VisitStmt(op->body);
    Unbind(op->var.get());
  }

  void VisitStmt_(const ir::AttrStmt* op, const Stmt&) override { VisitStmt(op->body); }

  void VisitStmt_(const ir::AssertStmt* op, const Stmt&) override {
    Value* condition = VisitExpr(op->condition);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(context_, "assert_ok", state_->function);
    llvm::MDBuilder md(context_);
    builder_.CreateCondBr(condition, ok, FailBlock(), md.createBranchWeights(1 << 20, 1));
    builder_.SetInsertPoint(ok);
  }

  void VisitStmt_(const ir::For* op, const Stmt& self) override {
    if (op->for_kind == ir::ForKind::kParallel && state_->parallel_depth == 0) {
      EmitParallelFor(op);
      return;
    }
    AGATE_REQUIRE(op->for_kind != ir::ForKind::kThreadBinding, kUnsupported)
        << "kernel " << kernel_name_ << ": loop " << op->var->name << " is bound to GPU thread " << op->thread_tag
        << "; the LLVM CPU backend cannot run it (use a cuda target)";
    Value* min = VisitExpr(op->min);
    Value* extent = VisitExpr(op->extent);
    EmitSerialLoop(op->var.get(), min, builder_.CreateAdd(min, extent), op->body, op->for_kind);
  }

  // for (var = begin; var < end; ++var) body, with loop metadata for the kind.
  void EmitSerialLoop(const ir::VarNode* var, Value* begin, Value* end, const Stmt& body, ir::ForKind kind) {
    llvm::Function* function = state_->function;
    llvm::BasicBlock* preheader = builder_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(context_, "for_" + var->name, function);
    llvm::BasicBlock* body_block = llvm::BasicBlock::Create(context_, "for_body_" + var->name, function);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(context_, "for_end_" + var->name, function);
    builder_.CreateBr(header);
    builder_.SetInsertPoint(header);
    llvm::PHINode* index = builder_.CreatePHI(begin->getType(), 2, var->name);
    index->addIncoming(begin, preheader);
    builder_.CreateCondBr(builder_.CreateICmpSLT(index, end), body_block, exit);
    builder_.SetInsertPoint(body_block);
    Bind(var, index);
    VisitStmt(body);
    Unbind(var);
    Value* next = builder_.CreateAdd(index, llvm::ConstantInt::get(index->getType(), 1), "", /*HasNUW=*/true,
                                     /*HasNSW=*/true);
    llvm::BranchInst* back = builder_.CreateBr(header);
    index->addIncoming(next, builder_.GetInsertBlock());
    AddLoopMetadata(back, kind);
    builder_.SetInsertPoint(exit);
  }

  void AddLoopMetadata(llvm::BranchInst* back_edge, ir::ForKind kind) {
    const char* hint = kind == ir::ForKind::kVectorized ? "llvm.loop.vectorize.enable"
                       : kind == ir::ForKind::kUnrolled ? "llvm.loop.unroll.enable"
                                                        : nullptr;
    if (hint == nullptr) return;
    llvm::Metadata* option[] = {llvm::MDString::get(context_, hint),
                                llvm::ConstantAsMetadata::get(builder_.getTrue())};
    llvm::MDNode* option_node = llvm::MDNode::get(context_, option);
    llvm::Metadata* fields[] = {nullptr, option_node};
    llvm::MDNode* loop_id = llvm::MDNode::getDistinct(context_, fields);
    loop_id->replaceOperandWith(0, loop_id);
    back_edge->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  }

  // Outlines `op` into `int32_t task(int32_t task_id, int32_t num_tasks, void* closure)`:
  // the closure is a struct of the values the body uses from this function; task t
  // runs iterations [t * chunk, min((t + 1) * chunk, extent)), chunk = ceil(extent / num_tasks).
  void EmitParallelFor(const ir::For* op) {
    Value* min = VisitExpr(op->min);
    Value* extent = VisitExpr(op->extent);
    llvm::Type* index_type = extent->getType();

    FreeVarCollector collector;
    collector.VisitStmt(op->body);
    std::vector<const ir::VarNode*> captured;
    for (const ir::VarNode* var : collector.vars) {
      if (var != op->var.get() && state_->vars.count(var)) captured.push_back(var);
    }
    std::vector<llvm::Type*> fields = {llvm::PointerType::getUnqual(ctx_type_), index_type, index_type};
    for (const ir::VarNode* var : captured) fields.push_back(state_->vars[var]->getType());
    llvm::StructType* closure_type = llvm::StructType::create(context_, fields, "closure");

    // The closure, filled in the kernel.
    llvm::AllocaInst* closure = EntryAlloca(closure_type, 1, 8, "closure");
    std::vector<Value*> values = {state_->ctx, min, extent};
    for (const ir::VarNode* var : captured) values.push_back(state_->vars[var]);
    for (size_t i = 0; i < values.size(); ++i) builder_.CreateStore(values[i], builder_.CreateStructGEP(closure_type, closure, i));

    // The task function.
    std::string task_name = kernel_name_ + "_parallel_" + std::to_string(parallel_count_++);
    llvm::Function* task = llvm::Function::Create(task_type_, llvm::Function::InternalLinkage, task_name, *module_);
    task->addFnAttr(llvm::Attribute::NoUnwind);
    task->addParamAttr(2, llvm::Attribute::NoAlias);
    FunctionState* outer = state_;
    llvm::IRBuilderBase::InsertPoint outer_point = builder_.saveIP();
    FunctionState task_state;
    task_state.function = task;
    task_state.parallel_depth = outer->parallel_depth + 1;
    BeginFunction(&task_state);
    Value* task_closure = builder_.CreateBitCast(task->getArg(2), llvm::PointerType::getUnqual(closure_type));
    auto field = [&](size_t i) {
      return builder_.CreateLoad(fields[i], builder_.CreateStructGEP(closure_type, task_closure, i));
    };
    task_state.ctx = field(0);
    Value* task_min = field(1);
    Value* task_extent = field(2);
    for (size_t i = 0; i < captured.size(); ++i) {
      Value* v = field(3 + i);
      v->setName(captured[i]->name);
      Bind(captured[i], v);
      auto modular = outer->modular.find(captured[i]);
      if (modular != outer->modular.end()) task_state.modular[captured[i]] = modular->second;
    }
    // Buffers keep their alignment knowledge in the task.
    for (const ir::VarNode* var : captured) {
      if (var->dtype.is_handle()) AssumeAlignedLike(var);
    }
    Value* task_id = builder_.CreateSExt(task->getArg(0), index_type);
    Value* num_tasks = builder_.CreateSExt(task->getArg(1), index_type);
    Value* one = llvm::ConstantInt::get(index_type, 1);
    Value* chunk = builder_.CreateSDiv(builder_.CreateSub(builder_.CreateAdd(task_extent, num_tasks), one), num_tasks);
    Value* begin = builder_.CreateMul(task_id, chunk);
    Value* end = builder_.CreateAdd(begin, chunk);
    Value* end_clamped = builder_.CreateSelect(builder_.CreateICmpSLT(end, task_extent), end, task_extent);
    EmitSerialLoop(op->var.get(), builder_.CreateAdd(task_min, begin), builder_.CreateAdd(task_min, end_clamped),
                   op->body, ir::ForKind::kSerial);
    EndFunction();

    // Back in the kernel: num_tasks = clamp(ctx->num_threads, 1, extent); status = parallel_for(...).
    state_ = outer;
    builder_.restoreIP(outer_point);
    Value* threads_field = builder_.CreateStructGEP(ctx_type_, state_->ctx, 3);
    Value* threads = builder_.CreateSExt(builder_.CreateLoad(builder_.getInt32Ty(), threads_field), index_type);
    threads = builder_.CreateSelect(builder_.CreateICmpSLT(threads, one), one, threads);
    if (target_.num_threads() > 0) {
      Value* cap = llvm::ConstantInt::get(index_type, target_.num_threads());
      threads = builder_.CreateSelect(builder_.CreateICmpSGT(threads, cap), cap, threads);
    }
    Value* tasks = builder_.CreateSelect(builder_.CreateICmpSLT(extent, threads), extent, threads);
    Value* tasks32 = builder_.CreateTrunc(tasks, builder_.getInt32Ty());
    llvm::BasicBlock* launch = llvm::BasicBlock::Create(context_, "parallel_launch", state_->function);
    llvm::BasicBlock* after = llvm::BasicBlock::Create(context_, "parallel_done", state_->function);
    builder_.CreateCondBr(builder_.CreateICmpSGT(tasks, llvm::ConstantInt::get(index_type, 0)), launch, after);
    builder_.SetInsertPoint(launch);
    Value* parallel_for =
        builder_.CreateLoad(llvm::PointerType::getUnqual(parallel_for_type_), builder_.CreateStructGEP(ctx_type_, state_->ctx, 1));
    Value* pool = builder_.CreateLoad(I8Ptr(), builder_.CreateStructGEP(ctx_type_, state_->ctx, 2));
    Value* status = builder_.CreateCall(parallel_for_type_, parallel_for,
                                        {pool, task, builder_.CreateBitCast(closure, I8Ptr()), tasks32});
    // A failed task (assert) fails the kernel with the task's status.
    llvm::BasicBlock* failed = llvm::BasicBlock::Create(context_, "parallel_failed", state_->function);
    builder_.CreateCondBr(builder_.CreateICmpEQ(status, builder_.getInt32(0)), after, failed);
    builder_.SetInsertPoint(failed);
    builder_.CreateRet(status);
    builder_.SetInsertPoint(after);
  }

  void AssumeAlignedLike(const ir::VarNode* data) {
    auto it = buffer_alignment_.find(data);
    if (it != buffer_alignment_.end() && it->second > 1) {
      builder_.CreateAlignmentAssumption(module_->getDataLayout(), state_->vars[data], it->second);
    }
  }

  void VisitStmt_(const ir::IfThenElse* op, const Stmt&) override {
    Value* condition = VisitExpr(op->condition);
    llvm::BasicBlock* then_block = llvm::BasicBlock::Create(context_, "if_then", state_->function);
    llvm::BasicBlock* else_block = op->else_case.defined() ? llvm::BasicBlock::Create(context_, "if_else", state_->function)
                                                           : nullptr;
    llvm::BasicBlock* done = llvm::BasicBlock::Create(context_, "if_end", state_->function);
    builder_.CreateCondBr(condition, then_block, else_block ? else_block : done);
    builder_.SetInsertPoint(then_block);
    VisitStmt(op->then_case);
    builder_.CreateBr(done);
    if (else_block) {
      builder_.SetInsertPoint(else_block);
      VisitStmt(op->else_case);
      builder_.CreateBr(done);
    }
    builder_.SetInsertPoint(done);
  }

  void VisitStmt_(const ir::Store* op, const Stmt&) override {
    if (!SplitStore(op) && !StoreWholeWhenInRange(op)) StoreToMemory(op);
  }

  // A contiguous store predicated on `ramp(b, s, n) < L` (the last, partial vector of a row
  // or of a buffer that bound inference sized to what its consumer reads) where the target
  // has no masked store for the element type (8- and 16-bit lanes on x86 without AVX-512BW,
  // any lane on Arm): LLVM stores such a vector lane by lane, each behind a branch, on every
  // iteration, though the predicate almost always holds for the whole vector (MobileNetV2
  // int8's depthwise tiles spent as long in those branches as in their products). So the
  // predicate is tested once, as `b + s * (n - 1) < L`: when it holds, the vector and the
  // loads of its value predicated the same way are whole; otherwise the masked store as before.
  bool StoreWholeWhenInRange(const ir::Store* op) {
    const int lanes = op->value.dtype().lanes();
    const ir::Ramp* ramp = op->index.as<ir::Ramp>();
    int64_t stride = 0;
    if (lanes <= 1 || !op->predicate.defined() || ramp == nullptr || !ir::is_const_int(ramp->stride, &stride) ||
        stride != 1 || HasNativeMaskedStore(op->value.dtype().element_of())) {
      return false;
    }
    Expr last_in_range = LastLaneOfRangeTest(op->predicate);
    if (!last_in_range.defined()) return false;
    llvm::BasicBlock* whole = llvm::BasicBlock::Create(context_, "whole_store", state_->function);
    llvm::BasicBlock* masked = llvm::BasicBlock::Create(context_, "masked_store", state_->function);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(context_, "store_done", state_->function);
    builder_.CreateCondBr(VisitExpr(last_in_range), whole, masked);
    builder_.SetInsertPoint(whole);
    Expr value = WithoutPredicate(op->value, op->predicate);
    StoreToMemory(ir::Store::make(op->buffer, value, op->index).as<ir::Store>());
    builder_.CreateBr(done);
    builder_.SetInsertPoint(masked);
    StoreToMemory(op);
    builder_.CreateBr(done);
    builder_.SetInsertPoint(done);
    return true;
  }
  bool HasNativeMaskedStore(DType element) const {
    if (target_.arch() != target::Arch::kX86_64) return false;
    return element.element_bytes() >= 4 ? target_.HasFeature("avx") : target_.HasFeature("avx512bw");
  }
  // For `ramp(b, s, n) < broadcast(L)` (or <=) with a positive constant s: the scalar test of
  // its last lane, which holds exactly when every lane's does; undefined for other predicates.
  static Expr LastLaneOfRangeTest(const Expr& predicate) {
    const Expr* a = nullptr;
    const Expr* b = nullptr;
    bool less_equal = false;
    if (const auto* lt = predicate.as<ir::LT>()) {
      a = &lt->a, b = &lt->b;
    } else if (const auto* le = predicate.as<ir::LE>()) {
      a = &le->a, b = &le->b, less_equal = true;
    } else {
      return Expr();
    }
    const ir::Ramp* ramp = a->as<ir::Ramp>();
    const ir::Broadcast* limit = b->as<ir::Broadcast>();
    int64_t stride = 0;
    if (ramp == nullptr || limit == nullptr || !ir::is_const_int(ramp->stride, &stride) || stride <= 0) return Expr();
    Expr last = ramp->base + ramp->stride * ir::make_const(ramp->stride.dtype(), ramp->lanes - 1);
    return less_equal ? ir::LE::make(last, limit->value) : ir::LT::make(last, limit->value);
  }
  // `value` with the predicate of every load predicated exactly by `predicate` dropped.
  static Expr WithoutPredicate(const Expr& value, const Expr& predicate) {
    class Strip : public ir::IRMutator {
     public:
      explicit Strip(const Expr& predicate) : predicate_(predicate) {}
      Expr VisitExpr_(const ir::Load* op, const Expr& self) override {
        Expr e = ir::IRMutator::VisitExpr_(op, self);
        const auto* load = e.as<ir::Load>();
        if (load->predicate.defined() && ir::StructuralEqual(load->predicate, predicate_)) {
          return ir::Load::make(load->buffer, load->index);
        }
        return e;
      }

     private:
      const Expr& predicate_;
    };
    return Strip(predicate).VisitExpr(value);
  }

  // LLVM widens vectors of a non-power-of-two length to the next power of two
  // (a 40-lane accumulator takes 4 zmm registers instead of 2.5, and register
  // tiles spill). Such stores are emitted as power-of-two pieces instead: 40 ->
  // 32 + 8 lanes, each a sliced copy of the value expression.
  bool SplitStore(const ir::Store* op) {
    int lanes = op->value.dtype().lanes();
    if (lanes <= 1 || (lanes & (lanes - 1)) == 0) return false;
    if (!ReadsOnlyAt(op->value, op->buffer->data.get(), op->index)) return false;
    std::vector<std::pair<Expr, std::pair<Expr, Expr>>> pieces;  // value, (index, predicate)
    for (int offset = 0; offset < lanes;) {
      int piece = 1;
      while (piece * 2 <= lanes - offset) piece *= 2;
      Expr value = SliceLanes(op->value, offset, piece);
      Expr index = SliceLanes(op->index, offset, piece);
      Expr predicate = op->predicate.defined() ? SliceLanes(op->predicate, offset, piece) : Expr();
      if (!value.defined() || !index.defined() || (op->predicate.defined() && !predicate.defined())) return false;
      pieces.push_back({value, {index, predicate}});
      offset += piece;
    }
    for (const auto& [value, where] : pieces) {
      StoreToMemory(ir::Store::make(op->buffer, value, where.first, where.second).as<ir::Store>());
    }
    return true;
  }

  uint64_t StackLimitBytes() const { return target_.is_bare_metal() ? (64u << 10) : (4u << 20); }

  void VisitStmt_(const ir::Allocate* op, const Stmt&) override {
    const ir::Buffer& buffer = op->buffer;
    DType element = buffer->dtype;
    llvm::Type* element_type = MemoryType(element.element_of());
    Value* data = nullptr;
    // Stack buffers get the larger of the Allocate's and the Buffer's alignment.
    uint64_t alignment = static_cast<uint64_t>(std::max({op->alignment, buffer->alignment, 1}));
    if (op->scope == ir::MemoryScope::kWorkspace) {
      AGATE_REQUIRE(op->workspace_offset >= 0, kInternal)
          << "kernel " << kernel_name_ << ": workspace buffer " << buffer->name << " has no workspace offset";
      AGATE_REQUIRE(state_->parallel_depth == 0, kInternal)
          << "kernel " << kernel_name_ << ": workspace buffer " << buffer->name
          << " is allocated inside a parallel loop; each task needs its own (scope local)";
      Value* workspace = builder_.CreateLoad(I8Ptr(), builder_.CreateStructGEP(ctx_type_, state_->ctx, 4));
      data = builder_.CreateInBoundsGEP(builder_.getInt8Ty(), workspace, builder_.getInt64(op->workspace_offset),
                                        buffer->name);
      uint64_t offset = static_cast<uint64_t>(op->workspace_offset);
      uint64_t offset_align = offset == 0 ? 64 : (offset & (~offset + 1));
      alignment = std::min<uint64_t>(64, offset_align);
    } else {
      AGATE_REQUIRE(op->scope == ir::MemoryScope::kLocal || op->scope == ir::MemoryScope::kShared, kUnsupported)
          << "kernel " << kernel_name_ << ": buffer " << buffer->name << " allocated in scope "
          << ir::MemoryScopeName(op->scope);
      int64_t count = 0;
      Expr elements = op->NumElements();
      if (ir::is_const_int(elements, &count)) {
        uint64_t bytes = static_cast<uint64_t>(count) * static_cast<uint64_t>(element.element_bytes());
        AGATE_REQUIRE(bytes <= StackLimitBytes(), kResourceExhausted)
            << "kernel " << kernel_name_ << ": local buffer " << buffer->name << " needs " << bytes
            << " bytes of stack, more than the " << StackLimitBytes() << " allowed on " << target_.triple()
            << "; schedule it into the workspace instead";
        data = EntryAlloca(element_type, static_cast<uint64_t>(std::max<int64_t>(count, 1)), alignment, buffer->name);
      } else {
        AGATE_THROW(kUnsupported) << "kernel " << kernel_name_ << ": local buffer " << buffer->name
                                  << " has a size known only at run time (" << ir::ToString(elements)
                                  << "); stack buffers need a constant size";
      }
      data = builder_.CreateBitCast(data, I8Ptr());
    }
    buffer_alignment_[buffer->data.get()] = alignment;
    Bind(buffer->data.get(), data);
    VisitStmt(op->body);
    Unbind(buffer->data.get());
  }

  void VisitStmt_(const ir::Seq* op, const Stmt&) override {
    for (size_t i = 0; i < op->stmts.size();) {
      size_t group = InterleavedStoreGroup(op->stmts, i);
      if (group > 1) {
        EmitInterleavedStores(op->stmts, i, group);
      } else {
        VisitStmt(op->stmts[i]);
      }
      i += group;
    }
  }

  // An interleaved store group (InterleavedStoreGroup) as one contiguous vector store
  // of its values interleaved lane by lane (shufflevector): x86 has no byte scatter, so
  // the stores one by one write an element at a time (a 16-lane uint8 store with
  // stride 4 is 16 extracts and byte stores; this is four loads' worth of shuffles
  // and one 64-byte store).
  void EmitInterleavedStores(const std::vector<Stmt>& stmts, size_t first, size_t count) {
    const auto* s0 = stmts[first].as<ir::Store>();
    DType t = s0->value.dtype();
    const int lanes = t.lanes();
    std::vector<Value*> parts;
    for (size_t k = 0; k < count; ++k) parts.push_back(VisitExpr(stmts[first + k].as<ir::Store>()->value));
    for (int n = lanes; parts.size() > 1; n *= 2) {  // concatenate pairwise (count is a power of two)
      std::vector<int> concat(2 * n);
      std::iota(concat.begin(), concat.end(), 0);
      std::vector<Value*> next;
      for (size_t j = 0; j < parts.size(); j += 2) next.push_back(builder_.CreateShuffleVector(parts[j], parts[j + 1], concat));
      parts.swap(next);
    }
    std::vector<int> interleave(lanes * count);
    for (int j = 0; j < lanes; ++j) {
      for (size_t k = 0; k < count; ++k) interleave[j * count + k] = static_cast<int>(k) * lanes + j;
    }
    Value* value = builder_.CreateShuffleVector(parts[0], interleave);
    const auto* ramp = s0->index.as<ir::Ramp>();
    DType element = t.element_of();
    Value* base = VisitExpr(ramp->base);
    llvm::Align align(AccessAlignment(s0->buffer, ramp->base, element));
    Value* ptr = builder_.CreateBitCast(ElementPointer(s0->buffer, base, MemoryType(element)),
                                        llvm::PointerType::getUnqual(value->getType()));
    AnnotateAccess(builder_.CreateAlignedStore(value, ptr, align), s0->buffer->data.get());
  }
  void VisitStmt_(const ir::Evaluate* op, const Stmt&) override { VisitExpr(op->value); }
  void VisitStmt_(const ir::Provide* op, const Stmt&) override {
    AGATE_THROW(kInternal) << "kernel " << kernel_name_ << ": Provide to " << op->producer->producer_name()
                           << " reached code generation; storage flattening must replace it by a Store";
  }
  void VisitStmt_(const ir::Realize* op, const Stmt&) override {
    AGATE_THROW(kInternal) << "kernel " << kernel_name_ << ": Realize of " << op->producer->producer_name()
                           << " reached code generation; storage flattening must replace it by an Allocate";
  }

  struct AliasInfo {
    llvm::MDNode* scope = nullptr;
    llvm::MDNode* noalias = nullptr;
  };

  const target::Target& target_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> builder_;
  std::unique_ptr<llvm::TargetMachine> machine_;
  std::unique_ptr<llvm::Module> module_;
  llvm::StructType* ctx_type_ = nullptr;
  llvm::FunctionType* task_type_ = nullptr;
  llvm::FunctionType* parallel_for_type_ = nullptr;
  llvm::MDNode* alias_domain_ = nullptr;
  std::unordered_map<const ir::VarNode*, AliasInfo> scopes_;
  std::unordered_map<const ir::VarNode*, uint64_t> buffer_alignment_;
  FunctionState* state_ = nullptr;
  std::string kernel_name_;
  int parallel_count_ = 0;
};

}  // namespace

std::unique_ptr<llvm::Module> GenerateLLVM(const std::vector<ir::LoweredFunc>& funcs, const target::Target& target,
                                           llvm::LLVMContext* context) {
  CodeGenLLVM codegen(target, context);
  for (const ir::LoweredFunc& func : funcs) codegen.AddFunction(func);
  return codegen.Finish();
}

}  // namespace codegen
}  // namespace agate
