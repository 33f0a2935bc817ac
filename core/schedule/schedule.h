// Schedules: the "how" half of agate's algorithm/schedule split.
//
// Why: one tensor expression has many correct loop nests; which one is fast
// depends on the target (cache sizes, vector width, cores, GPU threads). A
// Schedule records, per operation (a Stage), how its iteration domain is cut
// (split, fuse, tile), ordered (reorder), executed (parallel, vectorize,
// unroll, GPU binding, tensorize) and where it is computed relative to its
// consumers (compute_at / compute_inline / compute_root), plus where
// intermediates live (cache_read, cache_write, storage_align). A schedule
// never changes the result; primitives that would are rejected with
// kIllegalSchedule naming the stage and axis.
//
//   Schedule s = create_schedule({C});
//   auto [io, ii] = s[C].split(C.axis(0), 8);   // see Stage::axis
//   s[C].parallel(io).vectorize(s[C].axis(1));
//
// Schedules are values with reference semantics: copies share their stages.
#ifndef AGATE_CORE_SCHEDULE_SCHEDULE_H_
#define AGATE_CORE_SCHEDULE_SCHEDULE_H_

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/expr.h"
#include "core/ir/stmt.h"
#include "core/te/tensor.h"

namespace agate {
namespace te {

// How a split/fuse relates iteration variables: parent = outer * factor + inner,
// fused = outer * extent(inner) + inner.
struct IterVarRelation {
  enum Kind { kSplit, kFuse } kind;
  // kSplit: parent -> (outer, inner) with factor (or nparts).
  IterVar parent, outer, inner;
  Expr factor;  // defined for split by factor
  Expr nparts;  // defined for split by number of parts
  // kFuse: (outer, inner) -> fused
  IterVar fused;
};

enum class AttachType : uint8_t {
  kRoot,    // its own loop nest at the top level of the kernel
  kInline,  // substituted into its consumers
  kScope,   // computed inside attach_stage's loop attach_ivar
};

// A declared tensor intrinsic: a hardware (or library) routine that computes
// the same thing as `desc` for a fixed-size block. When a stage's loops from
// an axis inward compute exactly desc (same expression up to variable renaming,
// every read at a constant block offset from the intrinsic's), tensorize
// replaces them by `lower(inputs, offsets, output, offset)`. The loops inside
// map in order onto desc's data axes then its reduce axes, with equal extents;
// for reductions all reduce loops must be inside, and the intrinsic computes
// the whole block result including its initialization. Each Buffer handed to
// `lower` is a view of the real storage (same data Var and strides, desc's
// shape); the offsets are flat element offsets of the block within it.
struct TensorIntrin {
  std::string name;
  Tensor desc;  // a compute over placeholders describing the semantics
  // Builds the replacement statement. `inputs[i]` and `output` are buffers with
  // the intrinsic's shapes; `input_offsets[i]`/`output_offset` are the flat element
  // offsets of the block inside the real buffers (their data vars are the real ones).
  std::function<ir::Stmt(const std::vector<ir::Buffer>& inputs, const std::vector<Expr>& input_offsets,
                         const ir::Buffer& output, const Expr& output_offset)>
      lower;
};

// Per-axis execution attributes.
struct IterVarAttr {
  ir::ForKind for_kind = ir::ForKind::kSerial;
  std::string thread_tag;                                // for kThreadBinding
  std::vector<std::pair<std::string, Expr>> pragmas;     // pragma(key, value)
  std::shared_ptr<const TensorIntrin> tensor_intrin;     // tensorize at this axis
};

struct StageNode;
class Schedule;

class Stage {
 public:
  Stage() = default;
  explicit Stage(std::shared_ptr<StageNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  StageNode* get() const { return node_.get(); }
  StageNode* operator->() const { return node_.get(); }
  bool same_as(const Stage& other) const { return node_ == other.node_; }

  // Root axes of the stage's operation (data-parallel then reduction).
  IterVar axis(size_t i) const;
  IterVar reduce_axis(size_t i) const;
  // Current loop order, outermost first.
  const std::vector<IterVar>& leaf_iter_vars() const;

  // parent -> (outer, inner) with inner extent `factor`. A factor that does not
  // divide leaves a guard that lowering keeps (and removes when it divides).
  std::pair<IterVar, IterVar> split(const IterVar& parent, const Expr& factor);
  // parent -> (outer, inner) with outer extent `nparts`.
  std::pair<IterVar, IterVar> split_by_nparts(const IterVar& parent, const Expr& nparts);
  // Splits x and y and orders (x.outer, y.outer, x.inner, y.inner).
  std::array<IterVar, 4> tile(const IterVar& x, const IterVar& y, const Expr& x_factor, const Expr& y_factor);
  // Fuses two adjacent loops (outer immediately enclosing inner) into one.
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  // Reorders the given leaves among the positions they occupy.
  Stage& reorder(const std::vector<IterVar>& order);

  Stage& vectorize(const IterVar& iv);
  Stage& parallel(const IterVar& iv);
  Stage& unroll(const IterVar& iv);
  // GPU: bind a loop to "blockIdx.x|y|z" or "threadIdx.x|y|z". A reduction axis
  // may be bound to threadIdx.x (a cross-thread reduction: each thread reduces
  // its share, then the threads combine their results).
  Stage& bind(const IterVar& iv, const std::string& thread_tag);
  // Attaches AttrStmt "pragma_<key>" around the loop of iv.
  Stage& pragma(const IterVar& iv, const std::string& key, const Expr& value = Expr());
  // Replaces the loops from iv inward with the intrinsic.
  Stage& tensorize(const IterVar& iv, const TensorIntrin& intrin);

  // Compute this stage inside `parent`'s loop `scope` (only the region the
  // loops inside scope need).
  Stage& compute_at(const Stage& parent, const IterVar& scope);
  Stage& compute_inline();
  Stage& compute_root();
  // Pads the stride of dimension `axis` of this stage's buffer so that
  // stride % factor == offset (avoids cache-set and bank conflicts).
  Stage& storage_align(size_t axis, int factor, int offset);
  // Where the stage's intermediate buffer lives.
  Stage& set_scope(ir::MemoryScope scope);

  std::string name() const;

 private:
  std::shared_ptr<StageNode> node_;
};

struct StageNode {
  Operation op;         // what the stage computes now (cache_read may rewrite it)
  Operation origin_op;  // the operation the user's Tensor refers to (identity of the stage)
  std::vector<IterVar> all_iter_vars;   // root and derived axes
  std::vector<IterVar> leaf_iter_vars;  // loop order
  std::vector<IterVarRelation> relations;
  std::map<const ir::IterVarNode*, IterVarAttr> iter_var_attrs;
  AttachType attach_type = AttachType::kRoot;
  Stage attach_stage;
  IterVar attach_ivar;
  ir::MemoryScope scope = ir::MemoryScope::kGlobal;  // for intermediates: where the buffer lives
  bool is_output = false;
  // storage_align: dim -> (factor, offset)
  std::map<size_t, std::pair<int, int>> storage_align;
  // Root axes of `op` (axis then reduce_axis) as the schedule sees them.
  std::vector<IterVar> root_iter_vars;
  std::weak_ptr<struct ScheduleNode> schedule;
};

struct ScheduleNode {
  std::vector<Tensor> outputs;
  std::vector<Stage> stages;  // producers before consumers
  // origin operation -> stage
  std::map<const OperationNode*, Stage> stage_map;
};

class Schedule {
 public:
  Schedule() = default;
  explicit Schedule(std::shared_ptr<ScheduleNode> node) : node_(std::move(node)) {}
  ScheduleNode* get() const { return node_.get(); }
  ScheduleNode* operator->() const { return node_.get(); }

  // The stage of a tensor (of its operation). kInvalidArgument if the tensor is not in the schedule.
  Stage operator[](const Tensor& tensor) const;
  Stage operator[](const Operation& op) const;
  // Stage of the operation that produces `producer` (a TensorRead target), or undefined.
  Stage StageOf(const OperationNode* origin_op) const;

  // A stage that reads `tensor` into `scope` and makes every reader in
  // `readers` read the copy instead. Returns the copy.
  Tensor cache_read(const Tensor& tensor, ir::MemoryScope scope, const std::vector<Tensor>& readers);
  // Computes `tensor`'s stage into a new buffer in `scope` and makes the
  // original stage copy from it (accumulate in registers/cache, write once).
  // Must come before other primitives on that stage. Returns the cache tensor.
  Tensor cache_write(const Tensor& tensor, ir::MemoryScope scope);
  // Factors a reduction so that its partial results can be computed in
  // parallel or in vector lanes. `axis` is one of the two halves of a split of
  // a reduction axis k = outer*factor + inner (the only split on reduction
  // axes so far). Returns RF with shape [extent(axis)] + tensor's shape:
  //   RF(a, i...) = reduce over the other half (and the other reduce axes) of
  //                 body with k = outer*factor + inner   (guarded by k < extent)
  //   tensor(i...) = reduce over a of RF(a, i...)
  // The original stage is reset to its root loops (data axes keep their IterVars).
  Tensor rfactor(const Tensor& tensor, const IterVar& axis);

  std::string ToString() const;

 private:
  std::shared_ptr<ScheduleNode> node_;
};

// A schedule for computing `outputs` with every stage at the root in default order.
Schedule create_schedule(const std::vector<Tensor>& outputs);

// Stages in producer-before-consumer order reachable from `outputs` (inputs included).
std::vector<Operation> PostDFSOrder(const std::vector<Tensor>& outputs,
                                    const std::function<std::vector<Tensor>(const Operation&)>& inputs_of);

}  // namespace te
}  // namespace agate

#endif  // AGATE_CORE_SCHEDULE_SCHEDULE_H_
