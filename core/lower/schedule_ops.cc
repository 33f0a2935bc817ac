#include "core/lower/schedule_ops.h"

#include "core/lower/schedule_lowerer.h"

namespace agate {
namespace lower {
namespace schedule_ops_detail {

using namespace ir;  // NOLINT
using te::AttachType;

ScheduleOpsResult ScheduleLowerer::Run() {
  CollectStages();
  Validate();
  InferBounds();
  ScheduleOpsResult result;
  std::vector<StageState*> roots;
  for (auto& s : states_)
    if (s->stage->attach_type == AttachType::kRoot) roots.push_back(s.get());
  std::vector<Stmt> nests;
  for (StageState* s : roots) nests.push_back(MakeNest(s));
  Stmt body = Seq::make(nests);
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) body = RealizeStage(*it, body);
  result.body = body;
  result.tensorize_calls = tensorize_calls_;
  for (auto& s : states_) {
    StageStorageInfo info;
    info.scope = s->stage->scope;
    info.storage_align = s->stage->storage_align;
    result.storage[s->stage->origin_op.get()] = info;
  }
  return result;
}

}  // namespace schedule_ops_detail

ScheduleOpsResult ScheduleOps(const te::Schedule& sch, const std::set<const te::OperationNode*>& arg_ops) {
  schedule_ops_detail::ScheduleLowerer lowerer(sch, arg_ops);
  return lowerer.Run();
}

}  // namespace lower
}  // namespace agate
