#include "core/lower/lower.h"

#include <set>

#include "core/ir/printer.h"
#include "core/lower/analyzer.h"
#include "core/lower/gpu_allreduce.h"
#include "core/lower/gpu_bind.h"
#include "core/lower/gpu_sync.h"
#include "core/lower/gpu_vectorize.h"
#include "core/lower/gpu_verify.h"
#include "core/lower/index_math.h"
#include "core/lower/loop_partition.h"
#include "core/lower/kernel_memory_plan.h"
#include "core/lower/schedule_ops.h"
#include "core/lower/storage_flatten.h"
#include "core/lower/unique_defs.h"
#include "core/lower/unroll.h"
#include "core/lower/vectorize.h"
#include "core/lower/verify.h"
#include "core/ir/substitute.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

ArgBufferMap MakeArgBuffers(const te::Schedule& sch, const std::vector<te::Tensor>& args, const VarMap& bindings,
                            std::vector<Buffer>* params, std::set<const te::OperationNode*>* arg_ops) {
  ArgBufferMap map;
  for (const te::Tensor& t : args) {
    AGATE_REQUIRE(t.defined(), kInvalidArgument) << "Lower: undefined argument tensor";
    auto key = std::make_pair(t.op().get(), t.value_index());
    AGATE_REQUIRE(!map.count(key), kInvalidArgument) << "Lower: tensor " << t.name() << " is listed twice";
    te::Stage st = sch.StageOf(t.op().get());
    // A placeholder the schedule does not read may still be a parameter: an operand only the
    // kernel's run-time checks read (core/ops LowerGroup passes those too).
    AGATE_REQUIRE(st.defined() || t.op()->kind == te::OpKind::kPlaceholder, kInvalidArgument)
        << "Lower: argument " << t.name() << " is not part of the schedule";
    std::vector<Expr> shape;
    for (const Expr& e : t.shape()) shape.push_back(Simplify(Substitute(e, bindings)));
    Buffer b = CreateBuffer(t.name(), t.dtype(), shape);
    map[key] = b;
    params->push_back(b);
    arg_ops->insert(t.op().get());
  }
  for (const te::Tensor& out : sch->outputs) {
    AGATE_REQUIRE(map.count({out.op().get(), out.value_index()}), kInvalidArgument)
        << "Lower: output " << out.name() << " is not among the arguments";
  }
  for (const te::Stage& st : sch->stages) {
    if (st->op->kind != te::OpKind::kPlaceholder) continue;
    AGATE_REQUIRE(arg_ops->count(st->op.get()), kInvalidArgument)
        << "Lower: input " << st->op->name << " is read but not among the arguments";
  }
  return map;
}

class Pipeline {
 public:
  Pipeline(LoweredFunc* f, const LowerOptions& opt) : f_(f), opt_(opt) {}
  void After(const std::string& pass, const VerifyOptions& v) {
    if (opt_.verify) VerifyLoweredFunc(*f_, pass, v);
    if (opt_.dump) opt_.dump(pass, ToString(*f_));
  }

 private:
  LoweredFunc* f_;
  const LowerOptions& opt_;
};

}  // namespace

LoweredFunc Lower(const te::Schedule& sch, const std::vector<te::Tensor>& args, const std::string& name,
                  const LowerOptions& options) {
  AGATE_REQUIRE(sch.get() != nullptr, kInvalidArgument) << "Lower: undefined schedule";
  AGATE_REQUIRE(!name.empty(), kInvalidArgument) << "Lower: empty function name";
  LoweredFunc f;
  f.name = name;
  std::set<const te::OperationNode*> arg_ops;
  VarMap bindings;
  for (const auto& [var, value] : options.shape_bindings) {
    AGATE_REQUIRE(value.defined() && value.dtype().is_integer(), kInvalidArgument)
        << "Lower: shape variable " << var.name() << " must be bound to an integer";
    bindings[var.get()] = cast(var.dtype(), value);
  }
  ArgBufferMap arg_buffers = MakeArgBuffers(sch, args, bindings, &f.params, &arg_ops);
  Pipeline p(&f, options);
  VerifyOptions tensor_level{false, false};
  VerifyOptions flat{true, false};

  ScheduleOpsResult ops = ScheduleOps(sch, arg_ops);
  f.body = Substitute(ops.body, bindings);
  p.After("schedule_ops", tensor_level);
  if (options.simplify) {
    f.body = Simplify(f.body);
    p.After("simplify", tensor_level);
  }
  f.body = StorageFlatten(f.body, arg_buffers, ops.storage, ops.tensorize_calls);
  p.After("storage_flatten", flat);
  if (options.simplify) {
    f.body = Simplify(f.body);
    p.After("simplify_flat", flat);
  }
  if (options.partition_loops) {
    f.body = PartitionLoops(f.body);
    p.After("loop_partition", flat);
  }
  if (options.gpu) {
    f.body = PrepareGpuVectorize(f.body, options.gpu_limits.max_vector_bytes);
    p.After("gpu_vectorize", flat);
  }
  f.body = VectorizeLoops(f.body, options.max_vector_lanes);
  p.After("vectorize", flat);
  f.body = UnrollLoops(f.body, options.max_unroll_extent);
  p.After("unroll", flat);
  KernelMemoryPlan plan = PlanKernelMemory(f.body, options.max_local_bytes, options.gpu);
  f.body = plan.body;
  f.workspace_bytes = plan.workspace_bytes;
  p.After("kernel_memory_plan", flat);
  f.body = UniqueDefs(f.body);
  p.After("unique_defs", VerifyOptions{true, true});
  if (options.gpu) {
    VerifyGpuBinding(f.body, f.name);
    f.body = BindThreads(f.body, f.name);
    p.After("gpu_bind", VerifyOptions{true, true});
    f.body = UniqueDefs(LowerThreadAllReduce(f.body, options.gpu_limits.warp_size));
    p.After("gpu_allreduce", VerifyOptions{true, true});
    f.body = InsertSyncThreads(f.body);
    p.After("gpu_sync", VerifyOptions{true, true});
    f.body = NarrowIndexMath(f.body);
    p.After("index_math", VerifyOptions{true, true});
    CheckGpuLaunches(f.body, options.gpu_limits);
  } else if (options.narrow_index_math) {
    NarrowOptions narrow;
    narrow.loop_variables = true;
    f.body = NarrowIndexMath(f.body, narrow);
    p.After("index_math", VerifyOptions{true, true});
  }
  return f;
}

std::vector<std::pair<std::string, std::string>> LowerWithDump(const te::Schedule& sch,
                                                                const std::vector<te::Tensor>& args,
                                                                const std::string& name, LoweredFunc* out) {
  std::vector<std::pair<std::string, std::string>> dumps;
  LowerOptions opt;
  opt.dump = [&](const std::string& pass, const std::string& text) { dumps.emplace_back(pass, text); };
  LoweredFunc f = Lower(sch, args, name, opt);
  if (out) *out = f;
  return dumps;
}

}  // namespace lower
}  // namespace agate
