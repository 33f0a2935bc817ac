#include "core/lower/storage_flatten.h"

#include "core/ir/functor.h"
#include "core/ir/printer.h"
#include "core/lower/analyzer.h"
#include "core/support/error.h"

namespace agate {
namespace lower {

using namespace ir;  // NOLINT

namespace {

struct TensorStorage {
  Buffer buffer;
  std::vector<Expr> mins;  // region origin (empty: the whole tensor, origin 0)
};

class Flattener : public IRMutator {
 public:
  Flattener(const ArgBufferMap& args, const std::map<const te::OperationNode*, StageStorageInfo>& storage,
            const std::vector<TensorizeCall>& calls)
      : storage_info_(storage), calls_(calls) {
    for (const auto& [key, buf] : args) storage_[key] = {buf, {}};
  }

  Stmt VisitStmt_(const For* op, const Stmt& self) override {
    an_.Bind(op->var, op->min, op->extent);
    Stmt s = IRMutator::VisitStmt_(op, self);
    an_.Unbind(op->var);
    return s;
  }

  Stmt VisitStmt_(const Realize* op, const Stmt&) override {
    te::Tensor t = te::AsTensor(op->producer);
    auto key = std::make_pair(t.op().get(), t.value_index());
    AGATE_CHECK(!storage_.count(key)) << "tensor " << t.name() << " realized twice";
    std::vector<Expr> shape, mins;
    for (const Range& r : op->bounds) {
      mins.push_back(r.min);
      shape.push_back(AllocExtent(r.extent, t.name()));
    }
    std::vector<Expr> strides;
    auto info = storage_info_.find(t.op().get());
    if (info != storage_info_.end() && !info->second.storage_align.empty()) {
      strides = AlignedStrides(shape, info->second.storage_align);
    }
    Buffer buf = CreateBuffer(t.name(), t.dtype(), shape, op->scope, 64, strides);
    storage_[key] = {buf, mins};
    Stmt body = VisitStmt(op->body);
    storage_.erase(key);
    Expr size = strides.empty() ? buf->NumElements() : an_.Simplify(strides[0] * shape[0]);
    return Allocate::make(buf, {size}, 64, op->scope, body, op->scope == MemoryScope::kWorkspace ? 0 : -1);
  }

  Stmt VisitStmt_(const Provide* op, const Stmt&) override {
    const TensorStorage& st = Lookup(op->producer);
    Expr value = VisitExpr(op->value);
    std::vector<Expr> idx;
    for (const Expr& i : op->indices) idx.push_back(VisitExpr(i));
    return Store::make(st.buffer, value, FlatIndex(st, idx));
  }

  Stmt VisitStmt_(const AttrStmt* op, const Stmt& self) override {
    int64_t id;
    if (op->key != attr::kTensorize || !is_const_int(op->value, &id)) return IRMutator::VisitStmt_(op, self);
    AGATE_CHECK(id >= 0 && id < static_cast<int64_t>(calls_.size())) << "unknown tensorize marker " << id;
    const TensorizeCall& call = calls_[id];
    // The offsets as the marker holds them now: the passes since scheduling rewrote them.
    std::vector<Expr> block = TensorizeOffsetsOf(op->body, call);
    auto next = block.begin();
    auto take = [&](size_t n) {
      std::vector<Expr> part(next, next + static_cast<std::ptrdiff_t>(n));
      next += static_cast<std::ptrdiff_t>(n);
      return part;
    };
    std::vector<Buffer> inputs;
    std::vector<Expr> offsets;
    const auto& desc_inputs = call.intrin->desc.op()->InputTensors();
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      inputs.push_back(View(call.inputs[i], desc_inputs[i]));
      offsets.push_back(BlockOffset(call.inputs[i], take(call.input_offsets[i].size())));
    }
    Buffer out = View(call.output, call.intrin->desc);
    Expr out_offset = BlockOffset(call.output, take(call.output_offset.size()));
    Stmt body = call.intrin->lower(inputs, offsets, out, out_offset);
    AGATE_REQUIRE(body.defined(), kInvalidArgument) << "tensor intrinsic " << call.intrin->name << " lowered to nothing";
    return AttrStmt::make(attr::kTensorize, call.intrin->name, Expr(), body);
  }

  // A read inside a select arm (or the right side of && / ||) is only valid
  // when the condition selects it, e.g. select(inside, data(y - 1), 0) for
  // padding. Such a read gets the condition as its predicate unless its index
  // is provably inside the buffer, so no memory outside the buffer is touched.
  Expr VisitExpr_(const Select* op, const Expr&) override {
    Expr c = VisitExpr(op->condition);
    conds_.push_back(c);
    Expr t = VisitExpr(op->true_value);
    conds_.back() = Not::make(c);
    Expr f = VisitExpr(op->false_value);
    conds_.pop_back();
    return Select::make(c, t, f);
  }
  Expr VisitExpr_(const And* op, const Expr&) override {
    Expr a = VisitExpr(op->a);
    conds_.push_back(a);
    Expr b = VisitExpr(op->b);
    conds_.pop_back();
    return And::make(a, b);
  }
  Expr VisitExpr_(const Or* op, const Expr&) override {
    Expr a = VisitExpr(op->a);
    conds_.push_back(Not::make(a));
    Expr b = VisitExpr(op->b);
    conds_.pop_back();
    return Or::make(a, b);
  }

  Expr VisitExpr_(const TensorRead* op, const Expr&) override {
    const TensorStorage& st = Lookup(op->producer);
    std::vector<Expr> idx;
    for (const Expr& i : op->indices) idx.push_back(VisitExpr(i));
    Expr predicate;
    if (!conds_.empty() && !InBounds(st, idx)) {
      for (const Expr& c : conds_) predicate = predicate.defined() ? And::make(predicate, c) : c;
    }
    return Load::make(st.buffer, FlatIndex(st, idx), predicate);
  }

  bool InBounds(const TensorStorage& st, const std::vector<Expr>& idx) {
    for (size_t d = 0; d < idx.size(); ++d) {
      Expr rel = st.mins.empty() ? idx[d] : idx[d] - st.mins[d];
      if (!an_.CanProve(rel >= 0) || !an_.CanProve(rel < st.buffer->shape[d])) return false;
    }
    return true;
  }

 private:
  const TensorStorage& Lookup(const Producer& p) {
    te::Tensor t = te::AsTensor(p);
    auto it = storage_.find({t.op().get(), t.value_index()});
    AGATE_REQUIRE(it != storage_.end(), kInvalidArgument)
        << "tensor " << t.name() << " is used but is neither a kernel argument nor computed in this kernel "
        << "(pass every input placeholder and output to Lower)";
    return it->second;
  }

  // The real buffer of `t` seen with the intrinsic tensor's shape: same data and strides.
  Buffer View(const te::Tensor& t, const te::Tensor& shape_of) {
    const TensorStorage& st = Lookup(t.node_ptr());
    auto node = std::make_shared<BufferNode>(*st.buffer.get());
    node->shape = shape_of.shape();
    if (node->strides.empty()) {
      std::vector<Expr> strides(st.buffer->shape.size());
      Expr stride = IntImm::make(DType::Index(), 1);
      for (size_t d = strides.size(); d-- > 0;) {
        strides[d] = stride;
        stride = an_.Simplify(stride * st.buffer->shape[d]);
      }
      node->strides = strides;
    }
    AGATE_REQUIRE(node->shape.size() == node->strides.size(), kInvalidArgument)
        << "tensor intrinsic input " << shape_of.name() << " has rank " << node->shape.size() << " but " << t.name()
        << " has rank " << node->strides.size();
    return Buffer(node);
  }

  Expr BlockOffset(const te::Tensor& t, const std::vector<Expr>& origin) {
    return FlatIndex(Lookup(t.node_ptr()), origin);
  }

  Expr FlatIndex(const TensorStorage& st, const std::vector<Expr>& idx) {
    std::vector<Expr> rel;
    for (size_t d = 0; d < idx.size(); ++d) rel.push_back(st.mins.empty() ? idx[d] : idx[d] - st.mins[d]);
    return an_.Simplify(st.buffer->FlatIndex(rel));
  }

  // A constant upper bound of the extent when there is one (an edge tile may be smaller).
  Expr AllocExtent(const Expr& extent, const std::string& name) {
    Expr e = an_.Simplify(extent);
    if (is_const_int(e)) return e;
    ConstIntBound b = an_.ConstBound(e);
    if (b.max != ConstIntBound::kPosInf) return IntImm::make(DType::Index(), b.max);
    return e;
  }

  std::vector<Expr> AlignedStrides(const std::vector<Expr>& shape, const std::map<size_t, std::pair<int, int>>& align) {
    std::vector<Expr> strides(shape.size());
    Expr stride = IntImm::make(DType::Index(), 1);
    for (size_t d = shape.size(); d-- > 0;) {
      auto it = align.find(d);
      if (it != align.end()) {
        // smallest stride >= current with stride % factor == offset
        int64_t f = it->second.first, o = it->second.second;
        stride = an_.Simplify(stride + floormod(Expr(o) - floormod(stride, Expr(f)) + Expr(f), Expr(f)));
      }
      strides[d] = stride;
      stride = an_.Simplify(stride * shape[d]);
    }
    return strides;
  }

  const std::map<const te::OperationNode*, StageStorageInfo>& storage_info_;
  const std::vector<TensorizeCall>& calls_;
  std::vector<Expr> conds_;  // conditions under which the expression being visited is evaluated
  std::map<std::pair<const te::OperationNode*, int>, TensorStorage> storage_;
  Analyzer an_;
};

}  // namespace

Stmt StorageFlatten(const Stmt& stmt, const ArgBufferMap& args,
                    const std::map<const te::OperationNode*, StageStorageInfo>& storage,
                    const std::vector<TensorizeCall>& tensorize_calls) {
  Flattener f(args, storage, tensorize_calls);
  return f.VisitStmt(stmt);
}

}  // namespace lower
}  // namespace agate
