#include "core/lower/schedule_ops.h"

#include "core/lower/schedule_lowerer.h"
#include "core/support/error.h"

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

namespace {
size_t NumOffsets(const TensorizeCall& call) {
  size_t n = call.output_offset.size();
  for (const auto& offsets : call.input_offsets) n += offsets.size();
  return n;
}
}  // namespace

ir::Stmt TensorizeOffsetsStmt(const TensorizeCall& call) {
  std::vector<ir::Stmt> offsets;
  for (const auto& input : call.input_offsets)
    for (const ir::Expr& e : input) offsets.push_back(ir::Evaluate::make(e));
  for (const ir::Expr& e : call.output_offset) offsets.push_back(ir::Evaluate::make(e));
  if (offsets.empty()) return ir::Evaluate::make(ir::Expr(0));
  return offsets.size() == 1 ? offsets[0] : ir::Seq::make(offsets);
}

std::vector<ir::Expr> TensorizeOffsetsOf(const ir::Stmt& marker_body, const TensorizeCall& call) {
  std::vector<ir::Expr> offsets;
  auto take = [&](const ir::Stmt& s) {
    const ir::Evaluate* e = s.as<ir::Evaluate>();
    AGATE_CHECK(e) << "tensorize marker of " << call.intrin->name << " holds a statement that is not an offset";
    offsets.push_back(e->value);
  };
  if (const ir::Seq* seq = marker_body.as<ir::Seq>()) {
    for (const ir::Stmt& s : seq->stmts) take(s);
  } else {
    take(marker_body);
  }
  size_t expected = NumOffsets(call);
  if (expected == 0 && offsets.size() == 1) offsets.clear();  // the Evaluate(0) of no offsets
  AGATE_CHECK(offsets.size() == expected) << "tensorize marker of " << call.intrin->name << " holds "
                                          << offsets.size() << " offsets, expected " << expected;
  return offsets;
}

}  // namespace lower
}  // namespace agate
