// Statements of agate's loop IR.
//
// Why this set: it is the smallest vocabulary that every backend (LLVM, C,
// CUDA) can generate directly and that the reference evaluator (core/loop_eval) can
// interpret: loops with an execution kind, conditionals, flat Load/Store on
// Buffers, scoped allocation, lets, asserts and attributes. Two statements only
// exist before storage flattening (core/lower/storage_flatten.h): Provide (a
// multi-dimensional write of a tensor) and Realize (the region of a tensor a
// subtree produces, which flattening turns into an Allocate).
#ifndef AGATE_CORE_IR_STMT_H_
#define AGATE_CORE_IR_STMT_H_

#include <memory>
#include <string>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/expr.h"

namespace agate {
namespace ir {

enum class StmtKind : uint8_t {
  kLetStmt,
  kAttrStmt,
  kAssert,
  kFor,
  kIfThenElse,
  kStore,
  kAllocate,
  kSeq,
  kEvaluate,
  kProvide,  // TE level
  kRealize,  // TE level
};
const char* StmtKindName(StmtKind kind);

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  StmtNode(const StmtNode&) = delete;
  StmtNode& operator=(const StmtNode&) = delete;
  const StmtKind kind;
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  StmtKind kind() const { return node_->kind; }
  bool same_as(const Stmt& other) const { return node_ == other.node_; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

// let var = value; body (var is visible in body only).
struct LetStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kLetStmt;
  LetStmt(Var v, Expr val, Stmt b) : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  static Stmt make(Var var, Expr value, Stmt body);
  const Var var;
  const Expr value;
  const Stmt body;
};

// Attribute keys of AttrStmt.
namespace attr {
// Prefix of a user pragma (schedule.pragma(axis, "name", value)): key "pragma_<name>".
constexpr const char* kPragmaPrefix = "pragma_";
// Marks a region computed by a tensorize intrinsic; value is unused, node_name is the intrinsic.
constexpr const char* kTensorize = "tensorize";
// Storage alignment hint for an allocation of node_name: value = alignment bytes.
constexpr const char* kStorageAlignment = "storage_alignment";
// GPU kernels: one launch of a CUDA kernel (core/ir/gpu_launch.h has the form of
// its body). node_name is the kernel's entry name, value the bytes of dynamic
// shared memory per block.
constexpr const char* kGpuLaunch = "gpu_launch";
// A reduction across the threads of a reduce axis bound to threadIdx.x, left by
// schedule_ops for core/lower/gpu_allreduce.h (which documents its body); value
// is the number of threads that reduce.
constexpr const char* kThreadAllReduce = "thread_allreduce";
}  // namespace attr

// An annotation of `body`: key, an optional value and the name of what it is about.
// Codegen may ignore any attribute it does not know.
struct AttrStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAttrStmt;
  AttrStmt(std::string k, std::string n, Expr v, Stmt b)
      : StmtNode(kKind), key(std::move(k)), node_name(std::move(n)), value(std::move(v)), body(std::move(b)) {}
  static Stmt make(std::string key, std::string node_name, Expr value, Stmt body);
  const std::string key;
  const std::string node_name;
  const Expr value;
  const Stmt body;
};

// A run-time check: when condition is false the kernel returns non-zero and the
// runtime reports `message` (codegen emits `if (!cond) return -1;`-like code).
struct AssertStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAssert;
  AssertStmt(Expr c, std::string m) : StmtNode(kKind), condition(std::move(c)), message(std::move(m)) {}
  static Stmt make(Expr condition, std::string message);
  const Expr condition;
  const std::string message;
};

// How a loop runs.
enum class ForKind : uint8_t {
  kSerial,
  kParallel,       // iterations may run on different threads: codegen outlines into ctx->parallel_for
  kVectorized,     // a loop the vectorize pass could not turn into vector code: runs serially
  kUnrolled,       // a loop the unroll pass left (variable extent): runs serially
  kThreadBinding,  // a GPU grid/block axis, thread_tag says which ("blockIdx.x", "threadIdx.x"):
                   // its iterations run on the blocks or threads of that axis, so two nested
                   // loops bound to the same threadIdx axis take the same value (the thread's
                   // index), not every pair (core/ir/gpu_launch.h)
};
const char* ForKindName(ForKind kind);

// for (var = min; var < min + extent; ++var) body.
struct For : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kFor;
  For(Var v, Expr m, Expr e, ForKind k, Stmt b, std::string tag)
      : StmtNode(kKind), var(std::move(v)), min(std::move(m)), extent(std::move(e)), for_kind(k), body(std::move(b)),
        thread_tag(std::move(tag)) {}
  static Stmt make(Var var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "");
  const Var var;
  const Expr min;
  const Expr extent;
  const ForKind for_kind;
  const Stmt body;
  const std::string thread_tag;
};

struct IfThenElse : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kIfThenElse;
  IfThenElse(Expr c, Stmt t, Stmt e) : StmtNode(kKind), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
  const Expr condition;
  const Stmt then_case;
  const Stmt else_case;  // may be undefined
};

// buffer.data[index] = value. A vector index (Ramp) stores every lane; the
// optional predicate masks lanes.
struct Store : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kStore;
  Store(Buffer buf, Expr v, Expr i, Expr p)
      : StmtNode(kKind), buffer(std::move(buf)), value(std::move(v)), index(std::move(i)), predicate(std::move(p)) {}
  static Stmt make(Buffer buffer, Expr value, Expr index, Expr predicate = Expr());
  const Buffer buffer;
  const Expr value;
  const Expr index;
  const Expr predicate;
};

// Allocates `buffer` (binding buffer->data) for the duration of body.
// extents are the flattened allocation sizes in elements (product = size).
// Contract with codegen by scope:
//   kLocal/kShared: storage private to the enclosing thread or task (a stack or
//     register array; shared memory on GPUs). Allocations inside a parallel For
//     are always kLocal, so each task of the outlined loop has its own. Inside a
//     GPU launch (attr::kGpuLaunch) a kShared buffer is one per thread block, at
//     workspace_offset bytes into the block's dynamic shared memory.
//   kWorkspace: data = (char*)ctx->workspace + workspace_offset; lowering lays out
//     all workspace allocations of a function and records the total in
//     LoweredFunc::workspace_bytes. Never inside a parallel For.
struct Allocate : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kAllocate;
  Allocate(Buffer buf, std::vector<Expr> ext, int align, MemoryScope s, int64_t off, Stmt b)
      : StmtNode(kKind), buffer(std::move(buf)), extents(std::move(ext)), alignment(align), scope(s),
        workspace_offset(off), body(std::move(b)) {}
  static Stmt make(Buffer buffer, std::vector<Expr> extents, int alignment, MemoryScope scope, Stmt body,
                   int64_t workspace_offset = -1);
  // Product of the extents.
  Expr NumElements() const;
  const Buffer buffer;
  const std::vector<Expr> extents;
  const int alignment;
  const MemoryScope scope;
  const int64_t workspace_offset;  // bytes into ctx->workspace for kWorkspace (into dynamic shared
                                   // memory for kShared in a GPU launch), else -1
  const Stmt body;
};

// Statements in order.
struct Seq : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kSeq;
  explicit Seq(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
  // Flattens nested Seqs, drops undefined statements; a single statement is returned as is.
  static Stmt make(std::vector<Stmt> stmts);
  const std::vector<Stmt> stmts;
};

// Evaluates an expression for its effect (none today; kept for intrinsics with side effects).
struct Evaluate : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kEvaluate;
  explicit Evaluate(Expr v) : StmtNode(kKind), value(std::move(v)) {}
  static Stmt make(Expr value);
  const Expr value;
};

// TE level: producer(indices...) = value.
struct Provide : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kProvide;
  Provide(Producer p, Expr v, std::vector<Expr> i) : StmtNode(kKind), producer(std::move(p)), value(std::move(v)), indices(std::move(i)) {}
  static Stmt make(Producer producer, Expr value, std::vector<Expr> indices);
  const Producer producer;
  const Expr value;
  const std::vector<Expr> indices;
};

// TE level: body produces the region `bounds` of producer, which must be stored
// somewhere for the duration of body. Storage flattening turns it into an
// Allocate (or nothing, for a kernel argument).
struct Realize : StmtNode {
  static constexpr StmtKind kKind = StmtKind::kRealize;
  Realize(Producer p, std::vector<Range> b, MemoryScope s, Stmt bd)
      : StmtNode(kKind), producer(std::move(p)), bounds(std::move(b)), scope(s), body(std::move(bd)) {}
  static Stmt make(Producer producer, std::vector<Range> bounds, MemoryScope scope, Stmt body);
  const Producer producer;
  const std::vector<Range> bounds;
  const MemoryScope scope;
  const Stmt body;
};

}  // namespace ir
}  // namespace agate

#endif  // AGATE_CORE_IR_STMT_H_
