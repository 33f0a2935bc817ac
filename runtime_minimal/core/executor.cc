#include "runtime_minimal/core/executor.h"

#include <string.h>

#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {
namespace {

size_t AlignUp(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

void* ArgAddress(const agate_executor& e, const fb::Module& m, const fb::Arg& arg) {
  switch (arg.kind()) {
    case fb::ArgKind::Input: return nullptr;  // bound by set_input
    case fb::ArgKind::Output: return e.outputs[arg.index()];
    case fb::ArgKind::Arena: return e.arena + arg.offset();
    case fb::ArgKind::Constant:
      return const_cast<uint8_t*>(m.constants()->Get(arg.index())->data()->data());
  }
  return nullptr;
}

// Starts "<role> <index> '<name>'": the prefix every tensor mismatch shares
// (one call site instead of seven keeps microcontroller builds small).
Message TensorFail(const char* role, uint32_t index, const char* name, SourceLine where = SourceLine::Current()) {
  Message m = Fail(AGATE_INVALID_ARGUMENT, where);
  m << role << " " << index << " '" << name << "'";
  return m;
}

// DLDataType is four bytes (code, bits, lanes) without padding: compared as one word, which
// is also the shortest code on a microcontroller.
static_assert(sizeof(DLDataType) == 4, "DLDataType is code (8), bits (8), lanes (16)");
bool SameDType(DLDataType a, DLDataType b) {
  uint32_t x, y;
  memcpy(&x, &a, sizeof(x));
  memcpy(&y, &b, sizeof(y));
  return x == y;
}

// The message of the run-time check a kernel reports failed (it returned -1 - i for check i;
// module.fbs Kernel.check_messages), or null when `rc` names none: the input was wrong, not agate.
const char* FailedCheck(const fb::Kernel* kernel, int32_t rc) {
  const flatbuffers::String* messages = kernel->check_messages();
  if (messages == nullptr || rc >= 0) return nullptr;
  // Each message ends with a NUL byte; the verifier saw the string's own NUL after the last.
  const char* message = messages->c_str();
  const char* const end = message + messages->size();
  for (int64_t skip = -static_cast<int64_t>(rc) - 1; skip > 0 && message < end; --skip) message += strlen(message) + 1;
  return message < end ? message : nullptr;
}

}  // namespace

size_t ExecutorTablesBytes(const agate_module& module) {
  const fb::Module& m = *module.fb;
  size_t bytes = AlignUp(sizeof(agate_executor), 8);
  bytes += sizeof(CallRecord) * module.facts.num_calls;
  bytes += sizeof(void*) * module.facts.total_args;
  bytes += sizeof(void*) * m.inputs()->size();
  bytes += 2 * sizeof(uint8_t*) * m.outputs()->size();  // outputs, own_outputs
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  if (module.facts.dynamic != nullptr) {
    const uint32_t num_symbols = NumSymbols(module.facts);
    bytes += sizeof(int64_t) * ((m.inputs()->size() + m.outputs()->size()) * num_symbols + module.facts.output_dims);
    bytes += sizeof(void*) * module.facts.max_variant_args;
  }
#endif
  bytes += m.inputs()->size();  // input_on_device
  return AlignUp(bytes, 64);
}

size_t ExecutorInPlaceBytes(const agate_module& module) {
  const fb::Module& m = *module.fb;
  const size_t arena_slack = m.arena_alignment() > 64 ? m.arena_alignment() - 64 : 0;
  return ExecutorTablesBytes(module) + static_cast<size_t>(module.facts.outputs_bytes) + arena_slack +
         AlignUp(static_cast<size_t>(m.arena_bytes()), 64) + static_cast<size_t>(m.workspace_bytes());
}

agate_executor* InitExecutor(const agate_module& module, void* tables, uint8_t* arena, uint8_t* workspace,
                             uint8_t* outputs_block) {
  const fb::Module& m = *module.fb;
  uint8_t* p = static_cast<uint8_t*>(tables);
  agate_executor* e = reinterpret_cast<agate_executor*>(p);
  memset(e, 0, sizeof(*e));
  p += AlignUp(sizeof(agate_executor), 8);
  e->calls = reinterpret_cast<CallRecord*>(p);
  p += sizeof(CallRecord) * module.facts.num_calls;
  e->args = reinterpret_cast<void**>(p);
  p += sizeof(void*) * module.facts.total_args;
  e->inputs = reinterpret_cast<void**>(p);
  p += sizeof(void*) * m.inputs()->size();
  e->outputs = reinterpret_cast<uint8_t**>(p);
  p += sizeof(uint8_t*) * m.outputs()->size();
  e->own_outputs = reinterpret_cast<uint8_t**>(p);
  p += sizeof(uint8_t*) * m.outputs()->size();
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  if (module.facts.dynamic != nullptr) {
    const uint32_t num_symbols = NumSymbols(module.facts);
    e->input_rows = reinterpret_cast<int64_t*>(p);
    p += sizeof(int64_t) * m.inputs()->size() * num_symbols;
    e->output_rows = reinterpret_cast<int64_t*>(p);
    p += sizeof(int64_t) * m.outputs()->size() * num_symbols;
    e->output_shapes = reinterpret_cast<int64_t*>(p);
    p += sizeof(int64_t) * module.facts.output_dims;
    e->chunk_args = reinterpret_cast<void**>(p);
    p += sizeof(void*) * module.facts.max_variant_args;
    for (uint32_t i = 0; i < m.inputs()->size() * num_symbols; ++i) e->input_rows[i] = 0;
    for (uint32_t o = 0; o < m.outputs()->size() * num_symbols; ++o) e->output_rows[o] = 0;
    int64_t* shape = e->output_shapes;
    for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
      for (int64_t extent : *m.outputs()->Get(o)->shape()) *shape++ = extent;
    }
  }
#endif
  e->input_on_device = p;

  e->module = &module;
  e->arena = arena;
  e->arena_bytes = m.arena_bytes();
  e->workspace = m.workspace_bytes() != 0 ? workspace : nullptr;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    e->inputs[i] = nullptr;
    e->input_on_device[i] = 0;
  }
  uint8_t* out = outputs_block;
  for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
    e->outputs[o] = out;
    e->own_outputs[o] = out;
    out += AlignUp(static_cast<size_t>(TensorBytes(*m.outputs()->Get(o))), 64);
  }
  void** slot = e->args;
  for (uint32_t c = 0; c < module.facts.num_calls; ++c) {
    const fb::Call& call = *m.plan()->Get(c);
    CallRecord& record = e->calls[c];
    record.fn = module.kernels != nullptr ? module.kernels[call.kernel()] : nullptr;
    record.args = slot;
    record.workspace_bytes = m.kernels()->Get(call.kernel())->workspace_bytes();
    for (const fb::Arg* arg : *call.args()) *slot++ = ArgAddress(*e, m, *arg);
  }
  e->ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
  e->ctx.parallel_for = SerialParallelFor;
  e->ctx.pool = nullptr;
  e->ctx.num_threads = 1;
  e->ctx.workspace = nullptr;
  e->ctx.workspace_bytes = 0;
  return e;
}

int32_t SerialParallelFor(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  (void)pool;
  for (int32_t t = 0; t < num_tasks; ++t) {
    const int32_t rc = task(t, num_tasks, closure);
    if (rc != 0) return rc;
  }
  return 0;
}

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
namespace {

// CheckTensorMatches against `shape`; with `symbols`, each axis `dims` marks Symbolic may be any
// extent in its symbol's bounds, one per symbol, written to symbol_extents[symbol].
agate_status_t CheckTensor(const fb::Tensor& info, const int64_t* shape, const fb::TensorDims* dims,
                           const Symbols* symbols, const DLTensor* tensor, int32_t device_type, const char* role,
                           uint32_t index, int64_t* symbol_extents) {
#else
agate_status_t CheckTensorMatches(const fb::Tensor& info, const DLTensor* tensor, int32_t device_type,
                                  const char* role, uint32_t index) {
  const int64_t* shape = info.shape()->data();
#endif
  const char* name = info.name()->c_str();
  if (tensor == nullptr) return TensorFail(role, index, name) << ": tensor is NULL";
  if (tensor->device.device_type != device_type) {
    return TensorFail(role, index, name) << " is on DLPack device type "
                                        << static_cast<int32_t>(tensor->device.device_type) << "; the module needs "
                                        << device_type;
  }
  const DLDataType want = ToDLDataType(*info.dtype());
  if (!SameDType(tensor->dtype, want)) {
    return TensorFail(role, index, name) << " has dtype (code "
                                        << tensor->dtype.code << ", bits " << tensor->dtype.bits << ", lanes "
                                        << tensor->dtype.lanes << "); the module needs (code " << want.code
                                        << ", bits " << want.bits << ", lanes " << want.lanes << ")";
  }
  const uint32_t ndim = info.shape()->size();
  if (tensor->ndim != static_cast<int32_t>(ndim) || (tensor->ndim > 0 && tensor->shape == nullptr)) {
    return TensorFail(role, index, name) << " has " << tensor->ndim
                                        << " dimensions; the module needs " << ndim;
  }
  int64_t stride = 1;
  for (int32_t axis = tensor->ndim - 1; axis >= 0; --axis) {
    const int64_t extent = tensor->shape[axis];
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
    if (symbols != nullptr && dims != nullptr && dims->kinds()->Get(static_cast<uint32_t>(axis)) == fb::DimKind::Symbolic) {
      const uint32_t s = AxisSymbol(*dims, static_cast<uint32_t>(axis));
      const fb::Symbol* symbol = symbols->Get(s);
      if (extent < symbol->min() || extent > symbol->max()) {
        return TensorFail(role, index, name) << " has extent " << extent << " on axis " << axis << " (symbol "
                                            << symbol->name()->c_str() << "), outside its bounds " << symbol->min()
                                            << ".." << symbol->max();
      }
      if (symbol_extents[s] != 0 && symbol_extents[s] != extent) {
        return TensorFail(role, index, name) << " has extents " << extent << " on axis " << axis << " and "
                                            << symbol_extents[s] << " on a later axis, both symbol "
                                            << symbol->name()->c_str();
      }
      symbol_extents[s] = extent;
    } else
#endif
    if (extent != shape[axis]) {
      return TensorFail(role, index, name) << " has extent "
                                          << extent << " on axis " << axis << "; the module needs "
                                          << shape[axis];
    }
    if (tensor->strides != nullptr && extent != 1 && tensor->strides[axis] != stride) {
      return TensorFail(role, index, name) << " has stride "
                                          << tensor->strides[axis] << " on axis " << axis
                                          << "; agate needs compact row-major tensors (stride " << stride << ")";
    }
    stride *= extent;
  }
  const uintptr_t address = reinterpret_cast<uintptr_t>(tensor->data) + tensor->byte_offset;
  const uint32_t element = want.bits <= 8 ? 1 : want.bits / 8;
  // DLPack producers may give a zero-element tensor no storage (data NULL); nothing is ever read
  // or written through it, so only a tensor with elements needs a pointer.
  const bool needs_data = stride != 0;
  if ((tensor->data == nullptr && needs_data) || address % element != 0) {
    return Fail(AGATE_INVALID_ARGUMENT) << role << " " << index << " '" << name
                                        << "' data is NULL or not aligned to its " << element << "-byte elements";
  }
  return AGATE_OK;
}

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
}  // namespace

agate_status_t CheckTensorMatches(const fb::Tensor& info, const DLTensor* tensor, int32_t device_type,
                                  const char* role, uint32_t index) {
  int64_t unused[kMaxSymbols] = {0};
  return CheckTensor(info, info.shape()->data(), nullptr, nullptr, tensor, device_type, role, index, unused);
}

agate_status_t CheckTensorShape(const fb::Tensor& info, const int64_t* shape, const fb::TensorDims* dims,
                                const Symbols* symbols, const DLTensor* tensor, int32_t device_type, const char* role,
                                uint32_t index, int64_t* symbol_extents) {
  int64_t extents[kMaxSymbols] = {0};
  const agate_status_t status = CheckTensor(info, shape, dims, symbols, tensor, device_type, role, index, extents);
  if (symbol_extents != nullptr && status == AGATE_OK) {
    for (uint32_t s = 0; s < kMaxSymbols; ++s) symbol_extents[s] = extents[s];
  }
  return status;
}

namespace {

const fb::Symbol* SymbolOf(const agate_module& module, const fb::TensorDims* dims) {
  const int32_t axis = SymbolAxis(dims);
  if (axis < 0) return nullptr;
  return module.facts.dynamic->symbols()->Get(AxisSymbol(*dims, static_cast<uint32_t>(axis)));
}

uint32_t OutputShapeOffset(const agate_module& module, uint32_t index) {
  uint32_t offset = 0;
  for (uint32_t o = 0; o < index; ++o) offset += module.fb->outputs()->Get(o)->shape()->size();
  return offset;
}

// Runs a variant's `plan` once on the chunk starting at row `row`: the Input/Output arguments
// of tensors with symbolic rows address that chunk. Arguments are resolved per call (a
// few loads per argument, small against a kernel) into e->chunk_args.
agate_status_t RunChunk(agate_executor* e, const flatbuffers::Vector<flatbuffers::Offset<fb::Call>>& plan,
                        int64_t row) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  agate_kernel_ctx* ctx = &e->ctx;
  for (uint32_t c = 0; c < plan.size(); ++c) {
    const fb::Call& call = *plan.Get(c);
    void** args = e->chunk_args;
    uint32_t a = 0;
    for (const fb::Arg* arg : *call.args()) {
      uint8_t* address = nullptr;
      switch (arg->kind()) {
        case fb::ArgKind::Input:
          address = static_cast<uint8_t*>(e->inputs[arg->index()]);
          if (HasSymbolicRows(InputDims(module.facts, arg->index()))) {
            address += static_cast<uint64_t>(row) * RowBytes(*m.inputs()->Get(arg->index())) + arg->offset();
          }
          break;
        case fb::ArgKind::Output:
          address = e->outputs[arg->index()];
          if (HasSymbolicRows(OutputDims(module.facts, arg->index()))) {
            address += static_cast<uint64_t>(row) * RowBytes(*m.outputs()->Get(arg->index())) + arg->offset();
          }
          break;
        case fb::ArgKind::Arena: address = e->arena + arg->offset(); break;
        case fb::ArgKind::Constant:
          address = const_cast<uint8_t*>(m.constants()->Get(arg->index())->data()->data());
          break;
      }
      args[a++] = address;
    }
    const uint64_t workspace_bytes = m.kernels()->Get(call.kernel())->workspace_bytes();
    ctx->workspace_bytes = workspace_bytes;
    ctx->workspace = workspace_bytes != 0 ? e->workspace : nullptr;
    const int32_t rc = module.kernels[call.kernel()](args, ctx);
    if (rc != 0) {
      const char* check = FailedCheck(m.kernels()->Get(call.kernel()), rc);
      if (check != nullptr) return Fail(AGATE_INVALID_ARGUMENT) << check;
      return Fail(AGATE_INTERNAL) << "kernel '" << m.kernels()->Get(call.kernel())->name()->c_str() << "' (call " << c
                                  << " of the variant at row " << row << ") failed with code " << rc;
    }
  }
  return AGATE_OK;
}

// After a run: every output's run-time shape from the symbol's extent `rows` and the
// value-dependent extents the plan left in the arena, each checked against its upper bound
// before any is published (a violation leaves the previous shapes).
// `extents`: each symbol's run-time extent (NULL for a module without symbols).
agate_status_t PublishOutputShapes(agate_executor* e, const int64_t* extents) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  for (int pass = 0; pass < 2; ++pass) {
    int64_t* shape = e->output_shapes;
    for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
      const fb::Tensor& info = *m.outputs()->Get(o);
      const fb::TensorDims& dims = *OutputDims(module.facts, o);
      for (uint32_t axis = 0; axis < info.shape()->size(); ++axis) {
        int64_t extent = info.shape()->Get(axis);
        const fb::DimKind kind = dims.kinds()->Get(axis);
        if (kind == fb::DimKind::Symbolic && extents != nullptr) extent = extents[AxisSymbol(dims, axis)];
        if (kind == fb::DimKind::ValueDependent) {
          int64_t reported = 0;
          memcpy(&reported, e->arena + dims.shape_slot() + 8 * axis, sizeof(reported));
          if (reported < 0 || reported > extent) {
            return Fail(AGATE_INTERNAL) << "output " << o << " '" << info.name()->c_str() << "': the plan reported extent "
                                        << reported << " on axis " << axis << ", outside its upper bound 0.." << extent;
          }
          extent = reported;
        }
        if (pass == 1) *shape = extent;
        ++shape;
      }
    }
  }
  return AGATE_OK;
}

// Copies the elements of a tensor of `ndim` axes between two compact layouts, `from_shape` and
// `to_shape`: on each axis, the positions both have (the smaller extent).
void CopyPositions(const uint8_t* from, const int64_t* from_shape, uint8_t* to, const int64_t* to_shape,
                   uint32_t ndim, uint64_t element_bytes) {
  int64_t common[kMaxPaddedRank], index[kMaxPaddedRank], from_stride[kMaxPaddedRank], to_stride[kMaxPaddedRank];
  int64_t fs = 1, ts = 1;
  for (int32_t a = static_cast<int32_t>(ndim) - 1; a >= 0; --a) {
    common[a] = from_shape[a] < to_shape[a] ? from_shape[a] : to_shape[a];
    from_stride[a] = fs;
    to_stride[a] = ts;
    fs *= from_shape[a];
    ts *= to_shape[a];
    index[a] = 0;
    if (common[a] == 0) return;
  }
  if (ndim == 0) {
    memcpy(to, from, element_bytes);
    return;
  }
  const uint64_t run = static_cast<uint64_t>(common[ndim - 1]) * element_bytes;
  for (;;) {
    int64_t f = 0, t = 0;
    for (uint32_t a = 0; a + 1 < ndim; ++a) {
      f += index[a] * from_stride[a];
      t += index[a] * to_stride[a];
    }
    memcpy(to + static_cast<uint64_t>(t) * element_bytes, from + static_cast<uint64_t>(f) * element_bytes, run);
    int32_t a = static_cast<int32_t>(ndim) - 2;
    while (a >= 0 && ++index[a] == common[a]) index[a--] = 0;
    if (a < 0) return;
  }
}

uint64_t ElementBytes(const fb::Tensor& info) {
  const fb::DType& d = *info.dtype();
  return static_cast<uint64_t>(d.bits() == 1 ? 1 : d.bits() / 8) * d.lanes();
}

// `info`'s shape with each Symbolic axis (per `dims`) at its symbol's entry of `extents`, into
// `shape`; returns its bytes.
uint64_t ShapeAt(const fb::Tensor& info, const fb::TensorDims& dims, const int64_t* extents, int64_t* shape) {
  uint64_t bytes = ElementBytes(info);
  for (uint32_t a = 0; a < info.shape()->size(); ++a) {
    shape[a] = dims.kinds()->Get(a) == fb::DimKind::Symbolic ? extents[AxisSymbol(dims, a)] : info.shape()->Get(a);
    bytes *= static_cast<uint64_t>(shape[a]);
  }
  return bytes;
}

// The padded variant a run of these extents takes: the one whose extent of every symbol is the
// smallest compiled one covering it (the variants are every combination: verify.cc).
uint32_t ChoosePaddedVariant(const fb::DynamicShapes& d, const int64_t* rows) {
  uint32_t best = UINT32_MAX;
  double best_cost = -1;
  for (uint32_t v = 0; v < d.variants()->size(); ++v) {
    const flatbuffers::Vector<int64_t>& extents = *d.variants()->Get(v)->extents();
    double cost = 1;
    bool covers = true;
    for (uint32_t s = 0; s < extents.size(); ++s) {
      covers = covers && extents.Get(s) >= rows[s];
      cost *= static_cast<double>(extents.Get(s));
    }
    if (covers && (best_cost < 0 || cost < best_cost)) {
      best = v;
      best_cost = cost;
    }
  }
  return best;  // UINT32_MAX when none covers (verify.cc ensures one does for in-bounds extents)
}

// Runs a padded module once for the symbols' extents `rows`: the variant ChoosePaddedVariant
// picks, every input that carries a symbol staged zero-padded to that variant's extents, each
// extent written where the plan's masks read it, every output that carries one copied out.
agate_status_t RunPadded(agate_executor* e, const int64_t* rows) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  const fb::DynamicShapes& d = *module.facts.dynamic;
  const uint32_t chosen = ChoosePaddedVariant(d, rows);
  if (chosen == UINT32_MAX) return Fail(AGATE_INTERNAL) << "no variant of the padded module covers the run's extents";
  const fb::Variant& variant = *d.variants()->Get(chosen);
  int64_t extent[kMaxSymbols];
  for (uint32_t s = 0; s < d.symbols()->size(); ++s) extent[s] = variant.extents()->Get(s);
  int64_t at_rows[kMaxPaddedRank], at_extent[kMaxPaddedRank];
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    const fb::TensorDims& dims = *d.inputs()->Get(i);
    if (SymbolAxis(&dims) < 0) continue;
    const fb::Tensor& info = *m.inputs()->Get(i);
    ShapeAt(info, dims, rows, at_rows);
    const uint64_t bytes = ShapeAt(info, dims, extent, at_extent);
    uint8_t* staging = e->arena + dims.staging();
    memset(staging, 0, bytes);
    CopyPositions(static_cast<const uint8_t*>(e->inputs[i]), at_rows, staging, at_extent, info.shape()->size(),
                  ElementBytes(info));
  }
  for (uint32_t s = 0; s < d.symbols()->size(); ++s) memcpy(e->arena + d.extent_slots()->Get(s), &rows[s], sizeof(int64_t));
  agate_status_t status = RunChunk(e, *variant.plan(), 0);
  if (status != AGATE_OK) return status;
  for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
    const fb::TensorDims& dims = *d.outputs()->Get(o);
    if (SymbolAxis(&dims) < 0) continue;
    const fb::Tensor& info = *m.outputs()->Get(o);
    ShapeAt(info, dims, rows, at_rows);
    ShapeAt(info, dims, extent, at_extent);
    CopyPositions(e->arena + dims.staging(), at_extent, e->outputs[o], at_rows, info.shape()->size(), ElementBytes(info));
  }
  return PublishOutputShapes(e, rows);
}

// Runs a module with variants: every input carrying a symbol must agree on its extent. A padded
// module runs one variant; a batch-style one runs n rows as chunks of the largest variants
// (greedy), each at its rows' offsets.
agate_status_t RunVariants(agate_executor* e) {
  const agate_module& module = *e->module;
  const fb::Module& m = *module.fb;
  const fb::DynamicShapes& d = *module.facts.dynamic;
  const uint32_t num_symbols = d.symbols()->size();
  int64_t extents[kMaxSymbols] = {0};
  uint32_t first[kMaxSymbols] = {0};
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    for (uint32_t s = 0; s < num_symbols; ++s) {
      const int64_t bound = e->input_rows[i * num_symbols + s];
      if (bound == 0) continue;  // the input does not carry symbol s
      if (extents[s] == 0) {
        extents[s] = bound;
        first[s] = i;
      } else if (bound != extents[s]) {
        return Fail(AGATE_INVALID_ARGUMENT) << "inputs " << first[s] << " '" << m.inputs()->Get(first[s])->name()->c_str()
                                            << "' and " << i << " '" << m.inputs()->Get(i)->name()->c_str()
                                            << "' bind symbol " << d.symbols()->Get(s)->name()->c_str()
                                            << " to different extents: " << extents[s] << " and " << bound;
      }
    }
  }
  for (uint32_t o = 0; o < m.outputs()->size(); ++o) {
    for (uint32_t s = 0; s < num_symbols; ++s) {
      const int64_t bound = e->output_rows[o * num_symbols + s];
      if (bound != 0 && bound != extents[s]) {
        return Fail(AGATE_INVALID_ARGUMENT) << "output " << o << " '" << m.outputs()->Get(o)->name()->c_str()
                                            << "' is bound (agate_executor_set_output) to " << d.symbols()->Get(s)->name()->c_str()
                                            << " = " << bound << ", but the inputs give " << d.symbols()->Get(s)->name()->c_str()
                                            << " = " << extents[s];
      }
    }
  }
  if (d.padded()) return RunPadded(e, extents);
  const int64_t rows = extents[0];
  int64_t row = 0;
  while (row < rows) {
    uint32_t v = d.variants()->size() - 1;
    while (d.variants()->Get(v)->extent() > rows - row) --v;  // variant 0 has extent 1
    const fb::Variant& variant = *d.variants()->Get(v);
    agate_status_t status = RunChunk(e, *variant.plan(), row);
    if (status != AGATE_OK) return status;
    row += variant.extent();
  }
  return PublishOutputShapes(e, extents);
}

}  // namespace

const fb::Symbol* InputSymbol(const agate_module& module, uint32_t index) {
  return SymbolOf(module, InputDims(module.facts, index));
}

const fb::Symbol* OutputSymbol(const agate_module& module, uint32_t index) {
  return SymbolOf(module, OutputDims(module.facts, index));
}

const int64_t* OutputShape(const agate_executor& e, uint32_t index) {
  if (e.module->facts.dynamic == nullptr) return e.module->fb->outputs()->Get(index)->shape()->data();
  return e.output_shapes + OutputShapeOffset(*e.module, index);
}

uint64_t OutputBytes(const agate_executor& e, uint32_t index) {
  const fb::Tensor& info = *e.module->fb->outputs()->Get(index);
  const int64_t* shape = OutputShape(e, index);
  const fb::DType& d = *info.dtype();
  uint64_t bytes = static_cast<uint64_t>(d.bits() == 1 ? 1 : d.bits() / 8) * d.lanes();
  for (uint32_t axis = 0; axis < info.shape()->size(); ++axis) bytes *= static_cast<uint64_t>(shape[axis]);
  return bytes;
}
#endif

agate_status_t RunPlanOnCpu(agate_executor* e, uint64_t (*clock_ns)(), uint64_t* out_call_ns) {
  const fb::Module& m = *e->module->fb;
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) {
    if (e->inputs[i] == nullptr) {
      return Fail(AGATE_INVALID_ARGUMENT) << "input " << i << " '" << m.inputs()->Get(i)->name()->c_str()
                                              << "' is not bound (agate_executor_set_input)";
    }
  }
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  if (e->module->facts.dynamic != nullptr && e->module->facts.dynamic->variants() != nullptr) return RunVariants(e);
#endif
  agate_kernel_ctx* ctx = &e->ctx;
  const uint32_t num_calls = e->module->facts.num_calls;
  for (uint32_t c = 0; c < num_calls; ++c) {
    const CallRecord& call = e->calls[c];
    ctx->workspace_bytes = call.workspace_bytes;
    ctx->workspace = call.workspace_bytes != 0 ? e->workspace : nullptr;
    const uint64_t start = clock_ns != nullptr ? clock_ns() : 0;
    const int32_t rc = call.fn(call.args, ctx);
    if (clock_ns != nullptr) out_call_ns[c] = clock_ns() - start;
    if (rc != 0) {
#if defined(AGATE_RT_NO_MESSAGES)
      // Flash-constrained builds drop every message text, so they read no check message either:
      // a failed run-time check (-1 - i, see kernel_abi.h) is the input's fault, any other
      // status a kernel fault. Reading the module here would cost the core profile its goal.
      return Fail(rc < 0 ? AGATE_INVALID_ARGUMENT : AGATE_INTERNAL);
#else
      const uint32_t k = m.plan()->Get(c)->kernel();
      const char* check = FailedCheck(m.kernels()->Get(k), rc);
      if (check != nullptr) return Fail(AGATE_INVALID_ARGUMENT) << check;
      return Fail(AGATE_INTERNAL) << "kernel '" << m.kernels()->Get(k)->name()->c_str() << "' (plan call " << c
                                      << ") failed with code " << rc;
#endif
    }
  }
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  if (e->module->facts.dynamic != nullptr) return PublishOutputShapes(e, nullptr);
#endif
  return AGATE_OK;
}

}  // namespace rt
}  // namespace agate
