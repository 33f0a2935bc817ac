#include "core/schedule/schedule.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/ir/substitute.h"
#include "core/support/error.h"

namespace agate {
namespace te {

using ir::IterVarKind;

namespace {

const ComputeOpNode* AsCompute(const Operation& op) {
  return op && op->kind == OpKind::kCompute ? static_cast<const ComputeOpNode*>(op.get()) : nullptr;
}

Stage MakeStage(const Operation& op, const std::shared_ptr<ScheduleNode>& sch) {
  auto node = std::make_shared<StageNode>();
  node->op = op;
  node->origin_op = op;
  if (const ComputeOpNode* c = AsCompute(op)) node->root_iter_vars = c->root_iter_vars();
  node->all_iter_vars = node->root_iter_vars;
  node->leaf_iter_vars = node->root_iter_vars;
  node->schedule = sch;
  return Stage(node);
}

std::string AxisName(const IterVar& iv) { return iv.defined() ? iv.name() : "<undefined axis>"; }

}  // namespace

std::vector<Operation> PostDFSOrder(const std::vector<Tensor>& outputs,
                                    const std::function<std::vector<Tensor>(const Operation&)>& inputs_of) {
  std::vector<Operation> order;
  std::set<const OperationNode*> visited, on_stack;
  std::function<void(const Operation&)> visit = [&](const Operation& op) {
    if (visited.count(op.get())) return;
    AGATE_REQUIRE(!on_stack.count(op.get()), kInvalidArgument) << "operation " << op->name << " depends on itself";
    on_stack.insert(op.get());
    for (const Tensor& t : inputs_of(op)) visit(t.op());
    on_stack.erase(op.get());
    visited.insert(op.get());
    order.push_back(op);
  };
  for (const Tensor& t : outputs) visit(t.op());
  return order;
}

Schedule create_schedule(const std::vector<Tensor>& outputs) {
  AGATE_REQUIRE(!outputs.empty(), kInvalidArgument) << "create_schedule: no output tensors";
  auto node = std::make_shared<ScheduleNode>();
  node->outputs = outputs;
  for (const Tensor& t : outputs) AGATE_REQUIRE(t.defined(), kInvalidArgument) << "create_schedule: undefined output";
  for (const Operation& op : PostDFSOrder(outputs, [](const Operation& o) { return o->InputTensors(); })) {
    Stage s = MakeStage(op, node);
    node->stages.push_back(s);
    node->stage_map[op.get()] = s;
  }
  for (const Tensor& t : outputs) {
    AGATE_REQUIRE(t.op()->kind == OpKind::kCompute, kInvalidArgument)
        << "create_schedule: output " << t.name() << " is a placeholder, not a computation";
    node->stage_map[t.op().get()]->is_output = true;
  }
  return Schedule(node);
}

Stage Schedule::operator[](const Tensor& tensor) const {
  AGATE_REQUIRE(tensor.defined(), kInvalidArgument) << "schedule lookup of an undefined tensor";
  return (*this)[tensor.op()];
}

Stage Schedule::operator[](const Operation& op) const {
  Stage s = StageOf(op.get());
  AGATE_REQUIRE(s.defined(), kInvalidArgument) << "tensor " << op->name << " is not part of this schedule";
  return s;
}

Stage Schedule::StageOf(const OperationNode* origin_op) const {
  auto it = node_->stage_map.find(origin_op);
  return it == node_->stage_map.end() ? Stage() : it->second;
}

// ---------------------------------------------------------------- Stage primitives

std::string Stage::name() const { return node_->origin_op->name; }

IterVar Stage::axis(size_t i) const {
  const ComputeOpNode* c = AsCompute(node_->op);
  AGATE_REQUIRE(c && i < c->axis.size(), kInvalidArgument)
      << "stage " << name() << " has no axis " << i;
  return node_->root_iter_vars[i];
}

IterVar Stage::reduce_axis(size_t i) const {
  const ComputeOpNode* c = AsCompute(node_->op);
  AGATE_REQUIRE(c && i < c->reduce_axis.size(), kInvalidArgument)
      << "stage " << name() << " has no reduce axis " << i;
  return node_->root_iter_vars[c->axis.size() + i];
}

const std::vector<IterVar>& Stage::leaf_iter_vars() const { return node_->leaf_iter_vars; }

namespace {

size_t LeafIndex(const StageNode* s, const IterVar& iv, const char* primitive) {
  AGATE_REQUIRE(iv.defined(), kInvalidArgument) << primitive << " on stage " << s->origin_op->name << ": undefined axis";
  for (size_t i = 0; i < s->leaf_iter_vars.size(); ++i)
    if (s->leaf_iter_vars[i].same_as(iv)) return i;
  bool known = std::any_of(s->all_iter_vars.begin(), s->all_iter_vars.end(),
                           [&](const IterVar& v) { return v.same_as(iv); });
  AGATE_THROW(kIllegalSchedule) << primitive << " on stage " << s->origin_op->name << ": axis " << iv.name()
                                << (known ? " was already split or fused (it is no longer a loop)"
                                          : " does not belong to this stage");
}

void RequireOwnAxis(const StageNode* s, const IterVar& iv, const char* primitive) {
  AGATE_REQUIRE(iv.defined(), kInvalidArgument) << primitive << " on stage " << s->origin_op->name << ": undefined axis";
  bool known = std::any_of(s->all_iter_vars.begin(), s->all_iter_vars.end(),
                           [&](const IterVar& v) { return v.same_as(iv); });
  AGATE_REQUIRE(known, kIllegalSchedule) << primitive << " on stage " << s->origin_op->name << ": axis " << iv.name()
                                         << " does not belong to this stage";
}

void RequireCompute(const StageNode* s, const char* primitive) {
  AGATE_REQUIRE(s->op->kind == OpKind::kCompute, kIllegalSchedule)
      << primitive << ": stage " << s->origin_op->name << " is a placeholder (an input), there is nothing to schedule";
}

void RequirePositiveFactor(const StageNode* s, const IterVar& iv, const Expr& factor, const char* primitive) {
  AGATE_REQUIRE(factor.defined() && factor.dtype().is_integer() && factor.dtype().is_scalar(), kInvalidArgument)
      << primitive << " of axis " << iv.name() << " in stage " << s->origin_op->name << ": factor must be an integer";
  int64_t v;
  if (ir::is_const_int(factor, &v)) {
    AGATE_REQUIRE(v > 0, kIllegalSchedule) << primitive << " of axis " << iv.name() << " in stage "
                                           << s->origin_op->name << ": factor " << v << " must be positive";
  }
}

std::pair<IterVar, IterVar> DoSplit(StageNode* s, const IterVar& parent, const Expr& factor, const Expr& nparts) {
  size_t pos = LeafIndex(s, parent, "split");
  IterVar outer(Range(), parent.var().copy_with_suffix(".outer"), parent.kind());
  IterVar inner(Range(), parent.var().copy_with_suffix(".inner"), parent.kind());
  IterVarRelation rel;
  rel.kind = IterVarRelation::kSplit;
  rel.parent = parent;
  rel.outer = outer;
  rel.inner = inner;
  if (factor.defined()) rel.factor = ir::cast(DType::Index(), factor);
  if (nparts.defined()) rel.nparts = ir::cast(DType::Index(), nparts);
  s->relations.push_back(rel);
  s->all_iter_vars.push_back(outer);
  s->all_iter_vars.push_back(inner);
  s->leaf_iter_vars[pos] = outer;
  s->leaf_iter_vars.insert(s->leaf_iter_vars.begin() + pos + 1, inner);
  return {outer, inner};
}

IterVarAttr& AttrOf(StageNode* s, const IterVar& iv) { return s->iter_var_attrs[iv.get()]; }

void SetForKind(StageNode* s, const IterVar& iv, ir::ForKind kind, const char* primitive, const std::string& tag = "") {
  RequireCompute(s, primitive);
  RequireOwnAxis(s, iv, primitive);
  // A reduce axis may be unrolled, or bound to threadIdx.x: schedule_ops then gives
  // every thread its own accumulator and combines them across the threads
  // (a cross-thread reduction, lowered to warp shuffles by core/lower/gpu_allreduce.h).
  bool cross_thread = kind == ir::ForKind::kThreadBinding && tag == "threadIdx.x";
  if (kind != ir::ForKind::kUnrolled && !cross_thread) {
    AGATE_REQUIRE(iv.kind() != IterVarKind::kCommReduce, kIllegalSchedule)
        << primitive << " on stage " << s->origin_op->name << ": axis " << iv.name()
        << " is (derived from) a reduction axis; running its iterations at the same time would race on the "
           "accumulator";
  }
  IterVarAttr& attr = AttrOf(s, iv);
  AGATE_REQUIRE(attr.for_kind == ir::ForKind::kSerial || attr.for_kind == kind, kIllegalSchedule)
      << primitive << " on stage " << s->origin_op->name << ": axis " << iv.name() << " is already "
      << ir::ForKindName(attr.for_kind);
  attr.for_kind = kind;
  attr.thread_tag = tag;
}

}  // namespace

std::pair<IterVar, IterVar> Stage::split(const IterVar& parent, const Expr& factor) {
  RequireCompute(get(), "split");
  RequirePositiveFactor(get(), parent, factor, "split");
  return DoSplit(get(), parent, factor, Expr());
}

std::pair<IterVar, IterVar> Stage::split_by_nparts(const IterVar& parent, const Expr& nparts) {
  RequireCompute(get(), "split_by_nparts");
  RequirePositiveFactor(get(), parent, nparts, "split_by_nparts");
  return DoSplit(get(), parent, Expr(), nparts);
}

std::array<IterVar, 4> Stage::tile(const IterVar& x, const IterVar& y, const Expr& x_factor, const Expr& y_factor) {
  auto [xo, xi] = split(x, x_factor);
  auto [yo, yi] = split(y, y_factor);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  StageNode* s = get();
  RequireCompute(s, "fuse");
  size_t po = LeafIndex(s, outer, "fuse");
  size_t pi = LeafIndex(s, inner, "fuse");
  AGATE_REQUIRE(pi == po + 1, kIllegalSchedule)
      << "fuse on stage " << name() << ": axis " << outer.name() << " must directly enclose " << inner.name();
  AGATE_REQUIRE(outer.kind() == inner.kind(), kIllegalSchedule)
      << "fuse on stage " << name() << ": cannot fuse " << IterVarKindName(outer.kind()) << " axis " << outer.name()
      << " with " << IterVarKindName(inner.kind()) << " axis " << inner.name();
  IterVar fused(Range(), Var(outer.name() + "." + inner.name() + ".fused"), outer.kind());
  IterVarRelation rel;
  rel.kind = IterVarRelation::kFuse;
  rel.outer = outer;
  rel.inner = inner;
  rel.fused = fused;
  s->relations.push_back(rel);
  s->all_iter_vars.push_back(fused);
  s->leaf_iter_vars[po] = fused;
  s->leaf_iter_vars.erase(s->leaf_iter_vars.begin() + pi);
  return fused;
}

Stage& Stage::reorder(const std::vector<IterVar>& order) {
  StageNode* s = get();
  RequireCompute(s, "reorder");
  std::vector<size_t> positions;
  for (const IterVar& iv : order) {
    size_t p = LeafIndex(s, iv, "reorder");
    AGATE_REQUIRE(std::find(positions.begin(), positions.end(), p) == positions.end(), kIllegalSchedule)
        << "reorder on stage " << name() << ": axis " << iv.name() << " appears twice";
    positions.push_back(p);
  }
  std::vector<size_t> sorted = positions;
  std::sort(sorted.begin(), sorted.end());
  std::vector<IterVar> leaves = s->leaf_iter_vars;
  for (size_t i = 0; i < order.size(); ++i) leaves[sorted[i]] = order[i];
  s->leaf_iter_vars = leaves;
  return *this;
}

Stage& Stage::vectorize(const IterVar& iv) {
  SetForKind(get(), iv, ir::ForKind::kVectorized, "vectorize");
  return *this;
}
Stage& Stage::parallel(const IterVar& iv) {
  SetForKind(get(), iv, ir::ForKind::kParallel, "parallel");
  return *this;
}
Stage& Stage::unroll(const IterVar& iv) {
  SetForKind(get(), iv, ir::ForKind::kUnrolled, "unroll");
  return *this;
}
Stage& Stage::bind(const IterVar& iv, const std::string& thread_tag) {
  static const std::set<std::string> kTags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                              "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  AGATE_REQUIRE(kTags.count(thread_tag), kInvalidArgument)
      << "bind on stage " << name() << ": '" << thread_tag << "' is not blockIdx.x|y|z or threadIdx.x|y|z";
  for (const auto& [node, attr] : get()->iter_var_attrs) {
    AGATE_REQUIRE(attr.thread_tag != thread_tag || node == iv.get(), kIllegalSchedule)
        << "bind on stage " << name() << ": " << thread_tag << " is already bound to another axis";
  }
  SetForKind(get(), iv, ir::ForKind::kThreadBinding, "bind", thread_tag);
  return *this;
}
Stage& Stage::pragma(const IterVar& iv, const std::string& key, const Expr& value) {
  RequireCompute(get(), "pragma");
  RequireOwnAxis(get(), iv, "pragma");
  AGATE_REQUIRE(!key.empty(), kInvalidArgument) << "pragma on stage " << name() << ": empty key";
  AttrOf(get(), iv).pragmas.emplace_back(key, value);
  return *this;
}
Stage& Stage::tensorize(const IterVar& iv, const TensorIntrin& intrin) {
  RequireCompute(get(), "tensorize");
  RequireOwnAxis(get(), iv, "tensorize");
  AGATE_REQUIRE(intrin.desc.defined() && intrin.lower, kInvalidArgument)
      << "tensorize on stage " << name() << ": intrinsic " << intrin.name << " needs a description and a lowering";
  AttrOf(get(), iv).tensor_intrin = std::make_shared<TensorIntrin>(intrin);
  return *this;
}

Stage& Stage::compute_at(const Stage& parent, const IterVar& scope) {
  StageNode* s = get();
  RequireCompute(s, "compute_at");
  AGATE_REQUIRE(parent.defined(), kInvalidArgument) << "compute_at on stage " << name() << ": undefined parent stage";
  AGATE_REQUIRE(!parent.same_as(*this), kIllegalSchedule)
      << "compute_at on stage " << name() << ": a stage cannot be computed inside its own loop";
  AGATE_REQUIRE(!s->is_output, kIllegalSchedule)
      << "compute_at on stage " << name() << ": it is an output of the schedule; compute it at the root";
  RequireOwnAxis(parent.get(), scope, "compute_at");
  s->attach_type = AttachType::kScope;
  s->attach_stage = parent;
  s->attach_ivar = scope;
  return *this;
}

Stage& Stage::compute_inline() {
  StageNode* s = get();
  RequireCompute(s, "compute_inline");
  const ComputeOpNode* c = AsCompute(s->op);
  AGATE_REQUIRE(!c->is_reduction(), kIllegalSchedule)
      << "compute_inline on stage " << name() << ": a reduction cannot be inlined into its consumers";
  AGATE_REQUIRE(!s->is_output, kIllegalSchedule)
      << "compute_inline on stage " << name() << ": it is an output of the schedule";
  s->attach_type = AttachType::kInline;
  s->attach_stage = Stage();
  s->attach_ivar = IterVar();
  return *this;
}

Stage& Stage::compute_root() {
  RequireCompute(get(), "compute_root");
  get()->attach_type = AttachType::kRoot;
  get()->attach_stage = Stage();
  get()->attach_ivar = IterVar();
  return *this;
}

Stage& Stage::storage_align(size_t axis, int factor, int offset) {
  StageNode* s = get();
  RequireCompute(s, "storage_align");
  AGATE_REQUIRE(axis < s->op->output_shape(0).size(), kInvalidArgument)
      << "storage_align on stage " << name() << ": no dimension " << axis;
  AGATE_REQUIRE(factor > 0 && offset >= 0 && offset < factor, kInvalidArgument)
      << "storage_align on stage " << name() << ": needs factor > 0 and 0 <= offset < factor";
  s->storage_align[axis] = {factor, offset};
  return *this;
}

Stage& Stage::set_scope(ir::MemoryScope scope) {
  get()->scope = scope;
  return *this;
}

// ---------------------------------------------------------------- caching

namespace {

// Replaces reads of `from` (by origin op and output index) with reads of `to`.
class ReadReplacer : public ir::IRMutator {
 public:
  ReadReplacer(const Tensor& from, const Tensor& to) : from_(from), to_(to) {}
  Expr VisitExpr_(const ir::TensorRead* op, const Expr& self) override {
    Expr e = IRMutator::VisitExpr_(op, self);
    const ir::TensorRead* r = e.as<ir::TensorRead>();
    if (AsTensor(r->producer).same_as(from_)) return ir::TensorRead::make(to_.node_ptr(), r->indices);
    return e;
  }
  bool changed = false;

 private:
  Tensor from_, to_;
};

// New data-parallel axes over `shape`, named after `names` when given (else ax0, ax1...).
std::vector<IterVar> FreshAxis(const std::vector<Expr>& shape, const std::vector<IterVar>& names = {}) {
  std::vector<IterVar> axis;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string name = d < names.size() ? names[d].name() : "ax" + std::to_string(d);
    axis.emplace_back(Range(ir::make_zero(DType::Index()), shape[d]), Var(name), IterVarKind::kDataPar);
  }
  return axis;
}

void InsertStageAfter(ScheduleNode* sch, const Stage& after, const Stage& stage) {
  auto it = std::find_if(sch->stages.begin(), sch->stages.end(), [&](const Stage& s) { return s.same_as(after); });
  AGATE_CHECK(it != sch->stages.end()) << "stage not in schedule";
  sch->stages.insert(it + 1, stage);
  sch->stage_map[stage->origin_op.get()] = stage;
}

void InsertStageBefore(ScheduleNode* sch, const Stage& before, const Stage& stage) {
  auto it = std::find_if(sch->stages.begin(), sch->stages.end(), [&](const Stage& s) { return s.same_as(before); });
  AGATE_CHECK(it != sch->stages.end()) << "stage not in schedule";
  sch->stages.insert(it, stage);
  sch->stage_map[stage->origin_op.get()] = stage;
}

}  // namespace

Tensor Schedule::cache_read(const Tensor& tensor, ir::MemoryScope scope, const std::vector<Tensor>& readers) {
  Stage producer = (*this)[tensor];
  AGATE_REQUIRE(!readers.empty(), kInvalidArgument) << "cache_read of " << tensor.name() << ": no readers given";
  std::vector<IterVar> axis = FreshAxis(tensor.shape());
  std::vector<Expr> idx;
  for (const IterVar& iv : axis) idx.push_back(iv.var());
  std::string cache_name = tensor.name() + "." + ir::MemoryScopeName(scope);
  Operation cache_op = std::make_shared<ComputeOpNode>(cache_name, "cache_read", axis, std::vector<IterVar>{},
                                                       std::vector<Expr>{tensor(idx)});
  Tensor cache = cache_op->output(0);
  for (const Tensor& reader : readers) {
    Stage rs = (*this)[reader];
    const ComputeOpNode* c = AsCompute(rs->op);
    AGATE_REQUIRE(c != nullptr, kInvalidArgument) << "cache_read: reader " << reader.name() << " is a placeholder";
    ReadReplacer replace(tensor, cache);
    std::vector<Expr> body;
    bool reads = false;
    for (const Expr& b : c->body) {
      body.push_back(replace.VisitExpr(b));
      if (!body.back().same_as(b)) reads = true;
    }
    AGATE_REQUIRE(reads, kInvalidArgument) << "cache_read: " << reader.name() << " does not read " << tensor.name();
    rs->op = std::make_shared<ComputeOpNode>(c->name, c->tag, c->axis, c->reduce_axis, body);
  }
  Stage cache_stage = MakeStage(cache_op, node_);
  cache_stage->scope = scope;
  InsertStageAfter(node_.get(), producer, cache_stage);
  return cache;
}

Tensor Schedule::cache_write(const Tensor& tensor, ir::MemoryScope scope) {
  Stage stage = (*this)[tensor];
  const ComputeOpNode* c = AsCompute(stage->op);
  AGATE_REQUIRE(c != nullptr, kInvalidArgument) << "cache_write of " << tensor.name() << ": it is a placeholder";
  AGATE_REQUIRE(c->num_outputs() == 1, kUnsupported)
      << "cache_write of " << tensor.name() << ": operations with several outputs are not supported";
  AGATE_REQUIRE(stage->relations.empty() && stage->iter_var_attrs.empty() && stage->attach_type == AttachType::kRoot,
                kIllegalSchedule)
      << "cache_write of " << tensor.name() << ": must be applied before other primitives on stage " << stage.name();
  std::string cache_name = c->name + "." + ir::MemoryScopeName(scope);
  // The cache computes the original body over the original axes, so the
  // user's IterVar handles (axis and reduce axes) now belong to the cache stage.
  Operation cache_op = std::make_shared<ComputeOpNode>(cache_name, c->tag, c->axis, c->reduce_axis, c->body);
  Tensor cache = cache_op->output(0);
  std::vector<IterVar> axis = FreshAxis(c->shape, c->axis);
  std::vector<Expr> idx;
  for (const IterVar& iv : axis) idx.push_back(iv.var());
  stage->op = std::make_shared<ComputeOpNode>(c->name, "cache_write", axis, std::vector<IterVar>{},
                                              std::vector<Expr>{cache(idx)});
  stage->root_iter_vars = axis;
  stage->all_iter_vars = axis;
  stage->leaf_iter_vars = axis;
  Stage cache_stage = MakeStage(cache_op, node_);
  cache_stage->scope = scope;
  InsertStageBefore(node_.get(), stage, cache_stage);
  return cache;
}

Tensor Schedule::rfactor(const Tensor& tensor, const IterVar& axis) {
  Stage stage = (*this)[tensor];
  const ComputeOpNode* c = AsCompute(stage->op);
  AGATE_REQUIRE(c && c->is_reduction() && c->num_outputs() == 1, kIllegalSchedule)
      << "rfactor on stage " << stage.name() << ": only single-output reductions can be factored";
  AGATE_REQUIRE(axis.defined() && axis.kind() == IterVarKind::kCommReduce, kIllegalSchedule)
      << "rfactor on stage " << stage.name() << ": axis " << (axis.defined() ? axis.name() : "<undefined>")
      << " is not a reduction axis";
  // Find the one split of a reduction axis that produced `axis`.
  const IterVarRelation* split = nullptr;
  for (const IterVarRelation& rel : stage->relations) {
    bool on_reduce = (rel.kind == IterVarRelation::kSplit ? rel.parent : rel.outer).kind() == IterVarKind::kCommReduce;
    if (!on_reduce) continue;
    AGATE_REQUIRE(split == nullptr && rel.kind == IterVarRelation::kSplit, kIllegalSchedule)
        << "rfactor on stage " << stage.name() << ": only one split of one reduction axis is supported";
    split = &rel;
  }
  AGATE_REQUIRE(split && (split->outer.same_as(axis) || split->inner.same_as(axis)), kIllegalSchedule)
      << "rfactor on stage " << stage.name() << ": axis " << axis.name()
      << " must be the outer or inner half of a split reduction axis";
  const ir::Reduce* red = c->body[0].as<ir::Reduce>();
  AGATE_REQUIRE(red->init.empty(), kUnsupported)
      << "rfactor on stage " << stage.name() << ": reductions with an explicit init are not supported";
  AGATE_REQUIRE(split->factor.defined() || split->nparts.defined(), kInternal) << "split without factor";
  const IterVar& k = split->parent;
  Expr extent = k.dom().extent;
  Expr factor = split->factor.defined() ? split->factor : floordiv(extent + split->nparts - 1, split->nparts);
  Expr outer_extent = split->factor.defined() ? floordiv(extent + split->factor - 1, split->factor) : split->nparts;
  bool rf_is_inner = split->inner.same_as(axis);
  Expr rf_extent = rf_is_inner ? factor : outer_extent;
  Expr kept_extent = rf_is_inner ? outer_extent : factor;

  // RF's axes: the factored axis first, then fresh copies of the data axes.
  IterVar rf_axis(Range(ir::make_zero(DType::Index()), rf_extent), Var(axis.name()), IterVarKind::kDataPar);
  std::vector<IterVar> rf_axes = {rf_axis};
  ir::VarMap data_map;
  for (const IterVar& iv : c->axis) {
    IterVar fresh(iv.dom(), Var(iv.name()), IterVarKind::kDataPar);
    data_map[iv.var().get()] = fresh.var();
    rf_axes.push_back(fresh);
  }
  IterVar kept(Range(ir::make_zero(DType::Index()), kept_extent), Var(rf_is_inner ? split->outer.name() : split->inner.name()),
               IterVarKind::kCommReduce);
  Expr outer_v = rf_is_inner ? kept.var() : rf_axis.var();
  Expr inner_v = rf_is_inner ? rf_axis.var() : kept.var();
  Expr k_value = outer_v * factor + inner_v;
  ir::VarMap body_map = data_map;
  body_map[k.var().get()] = k.dom().min + k_value;
  std::vector<IterVar> rf_reduce = {kept};
  for (const IterVar& r : red->axis)
    if (!r.same_as(k)) rf_reduce.push_back(r);
  std::vector<Expr> source;
  for (const Expr& src : red->source) source.push_back(ir::Substitute(src, body_map));
  Expr cond = ir::Substitute(red->condition, body_map);
  cond = cond && (k_value < extent);
  Expr rf_body = ir::Reduce::make(red->combiner, source, rf_reduce, cond, red->value_index);
  Operation rf_op = std::make_shared<ComputeOpNode>(c->name + ".rf", c->tag, rf_axes, rf_reduce, std::vector<Expr>{rf_body});
  Tensor rf = rf_op->output(0);

  // The original stage now reduces RF over the factored axis.
  IterVar final_axis(Range(ir::make_zero(DType::Index()), rf_extent), Var(axis.name() + ".v"), IterVarKind::kCommReduce);
  std::vector<Expr> idx = {final_axis.var()};
  for (const IterVar& iv : c->axis) idx.push_back(iv.var());
  Expr final_body = ir::Reduce::make(red->combiner, {rf(idx)}, {final_axis}, Expr(), 0);
  stage->op = std::make_shared<ComputeOpNode>(c->name, c->tag, c->axis, std::vector<IterVar>{final_axis},
                                              std::vector<Expr>{final_body});
  stage->root_iter_vars = c->axis;
  stage->root_iter_vars.push_back(final_axis);
  stage->all_iter_vars = stage->root_iter_vars;
  stage->leaf_iter_vars = stage->root_iter_vars;
  stage->relations.clear();
  stage->iter_var_attrs.clear();
  Stage rf_stage = MakeStage(rf_op, node_);
  InsertStageBefore(node_.get(), stage, rf_stage);
  return rf;
}

std::string Schedule::ToString() const {
  std::ostringstream os;
  for (const Stage& s : node_->stages) {
    if (s->op->kind == OpKind::kPlaceholder) continue;
    os << "stage " << s.name();
    switch (s->attach_type) {
      case AttachType::kRoot: os << " root"; break;
      case AttachType::kInline: os << " inline"; break;
      case AttachType::kScope: os << " at " << s->attach_stage.name() << "." << AxisName(s->attach_ivar); break;
    }
    os << ":";
    for (const IterVar& iv : s->leaf_iter_vars) {
      os << " " << iv.name();
      auto it = s->iter_var_attrs.find(iv.get());
      if (it != s->iter_var_attrs.end() && it->second.for_kind != ir::ForKind::kSerial)
        os << "(" << ir::ForKindName(it->second.for_kind) << ")";
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace te
}  // namespace agate
