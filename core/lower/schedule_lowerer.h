// The state of ScheduleOps (schedule_ops.h) while it lowers one schedule: one StageState per
// stage, and the class whose methods the pass's steps are.
//
// Why a header: the pass is one walk over shared state, but its steps are separate concerns,
// each in its own file: collecting stages, inlining and validating them (schedule_stages.cc),
// bound inference (bound_inference.cc), loop-nest construction (loop_nest.cc) and tensorized
// blocks (tensorize_nest.cc); schedule_ops.cc runs them in order. Internal to core/lower.
#ifndef AGATE_CORE_LOWER_SCHEDULE_LOWERER_H_
#define AGATE_CORE_LOWER_SCHEDULE_LOWERER_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/expr.h"
#include "core/ir/stmt.h"
#include "core/ir/substitute.h"
#include "core/lower/analyzer.h"
#include "core/lower/schedule_ops.h"
#include "core/schedule/schedule.h"

namespace agate {
namespace lower {
namespace schedule_ops_detail {

using ir::Expr;
using ir::IterVar;
using ir::IterVarNode;
using ir::Range;
using ir::Stmt;
using ir::VarMap;
using te::ComputeOpNode;
using te::IterVarAttr;
using te::OperationNode;
using te::Tensor;

struct Guard {
  Expr condition;
  int level;          // index of the innermost own leaf it uses; -1 for none
  bool uses_reduce;   // involves a reduction leaf (not valid in the init nest)
};

struct StageState {
  te::Stage stage;
  const ComputeOpNode* op = nullptr;
  std::vector<Expr> body;  // after inlining
  bool is_arg = false;
  bool processed = false;
  std::vector<Range> region;
  std::unordered_map<const IterVarNode*, Expr> extent;
  std::unordered_map<const IterVarNode*, Expr> offset;
  VarMap root_value;
  std::vector<Guard> guards;
  std::vector<const IterVarNode*> attach_prefix;
  std::vector<const IterVarNode*> path;
  std::vector<StageState*> consumers;
  std::string name() const { return stage.name(); }
  const std::vector<IterVar>& leaves() const { return stage->leaf_iter_vars; }
};

class ScheduleLowerer {
 public:
  ScheduleLowerer(const te::Schedule& sch, const std::set<const OperationNode*>& arg_ops)
      : sch_(sch), arg_ops_(arg_ops) {}
  ScheduleOpsResult Run();

 private:
  // ---- stages, inlining and validation (schedule_stages.cc)
  void CollectStages();
  // A compute body may use its own axes, its reduction axes and symbolic shape
  // variables; anything else (a reduce_axis used outside its reduction, an axis
  // of another compute) has no value in the loop nest.
  void CheckFreeVariables();
  const IterVarAttr* AttrOf(const StageState* s, const IterVar& iv) const;
  int LeafIndex(const StageState* s, const IterVar& iv) const;
  void Validate();

  // ---- bound inference (bound_inference.cc)
  void InferBounds();
  bool Ready(const StageState* s) const;
  std::vector<Range> FullDomain(const StageState* s) const;
  void InferStage(StageState* s);
  std::vector<Range> InferRegion(StageState* s);
  // Narrows `set` to `dom` where that is provable, keeping a superset otherwise.
  IntervalSet Tighten(IntervalSet set, const Range& dom);
  void CheckCovers(const StageState* s, const StageState* consumer);
  void PassDown(StageState* s);
  void PassUp(StageState* s);
  // Adds a guard unless it is provably true or already present; true when added.
  bool AddGuard(StageState* s, const Expr& cond);

  // ---- loop nests (loop_nest.cc)
  std::vector<Tensor> Outputs(const StageState* s) const;
  std::vector<Expr> OutputIndex(const StageState* s) const;
  Expr Bind(const StageState* s, const Expr& e);
  Stmt MakeCompute(const StageState* s);
  Stmt MakeInit(const StageState* s);
  Stmt MakeUpdate(const StageState* s);
  Stmt WrapLevel(StageState* s, int level, Stmt body, bool init_nest);
  Stmt AttachChildren(StageState* s, int level, Stmt body);
  Stmt RealizeStage(StageState* s, Stmt body);
  Stmt MakeNest(StageState* s);

  // ---- reductions across the threads of a GPU block (cross_thread_reduction.cc)
  // The index of the reduce leaf bound to threadIdx.x, or -1.
  int CrossThreadLeaf(const StageState* s) const;
  Stmt MakeCrossThreadReduction(StageState* s);
  bool HasChildren(StageState* s, int level) const;

  // ---- tensorized blocks (tensorize_nest.cc)
  [[noreturn]] void TensorizeError(const StageState* s, int level, const std::string& why);
  Stmt MakeTensorizedNest(StageState* s, int level, const std::shared_ptr<const te::TensorIntrin>& intrin);
  static std::vector<Expr> Children(const Expr& e);

  std::vector<TensorizeCall> tensorize_calls_;
  te::Schedule sch_;
  std::set<const OperationNode*> arg_ops_;
  std::vector<std::unique_ptr<StageState>> states_;
  std::map<const te::StageNode*, StageState*> by_stage_;
  std::map<const OperationNode*, StageState*> by_origin_;
  std::unordered_map<const IterVarNode*, Expr> leaf_extent_;
  std::unordered_map<const IterVarNode*, std::string> thread_tag_;  // every axis bound to a GPU index
  Analyzer an_;
};

}  // namespace schedule_ops_detail
}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_SCHEDULE_LOWERER_H_
