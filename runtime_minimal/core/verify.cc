#include "runtime_minimal/core/verify.h"

#include <string.h>

#include "agate/kernel_abi.h"
#include "runtime_minimal/core/message.h"

namespace agate {
namespace rt {
namespace {

// Tensors, arena and constants stay below 2^62 bytes so sums of two never overflow.
constexpr uint64_t kMaxBytes = uint64_t{1} << 62;
// Model inputs or outputs per module; bounds the verifier's work and stack.
constexpr uint32_t kMaxTensors = 1024;

bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

const char* ArgKindName(fb::ArgKind kind) {
  switch (kind) {
    case fb::ArgKind::Input: return "input";
    case fb::ArgKind::Output: return "output";
    case fb::ArgKind::Arena: return "arena";
    case fb::ArgKind::Constant: return "constant";
  }
  return "unknown";
}

// Writes the 4 identifier bytes printable, or as hex when they are not.
void AppendIdentifier(Message& m, const uint8_t* id) {
  bool printable = true;
  for (int i = 0; i < 4; ++i) printable = printable && id[i] >= 0x20 && id[i] < 0x7f;
  char text[12];
  if (printable) {
    memcpy(text, id, 4);
    text[4] = '\0';
    m << "'" << text << "'";
    return;
  }
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    text[2 * i] = kHex[id[i] >> 4];
    text[2 * i + 1] = kHex[id[i] & 15];
  }
  text[8] = '\0';
  m << "0x" << text;
}

// Reads format_major/minor after verifying only the root table and those two
// fields, which never move (module.fbs), so any future module reaches here.
// Uses the caller's verifier (one Verifier per load: each instance costs flash on a
// microcontroller) and leaves it as it found it but for its table count.
agate_status_t CheckVersion(flatbuffers::Verifier& verifier, const uint8_t* data, size_t size) {
  const flatbuffers::uoffset_t root = verifier.VerifyOffset(0);
  if (root == 0) return Fail(AGATE_CORRUPT) << "module is corrupt: its root offset points outside its " << size << " bytes";
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(data + root);
  if (!table->VerifyTableStart(verifier) ||
      !table->VerifyField<uint32_t>(verifier, fb::Module::VT_FORMAT_MAJOR, 4) ||
      !table->VerifyField<uint32_t>(verifier, fb::Module::VT_FORMAT_MINOR, 4)) {
    return Fail(AGATE_CORRUPT) << "module is corrupt: its root table (format version) is not inside its " << size
                               << " bytes";
  }
  verifier.EndTable();
  const uint32_t major = table->GetField<uint32_t>(fb::Module::VT_FORMAT_MAJOR, 0);
  const uint32_t minor = table->GetField<uint32_t>(fb::Module::VT_FORMAT_MINOR, 0);
  if (major > kFormatMajor) {
    return Fail(AGATE_VERSION_MISMATCH) << "module format " << major << "." << minor
                                        << " is newer than this runtime (reads format major " << kOldestSupportedMajor
                                        << ".." << kFormatMajor
                                        << "); update the runtime or rebuild the module with an older compiler";
  }
#ifdef AGATE_RT_STATIC_SHAPES_ONLY
  if (major >= kDynamicFormatMajor) {
    return Fail(AGATE_UNSUPPORTED) << "module format " << major << "." << minor
                                   << " may have dynamic shapes; this runtime was built with AGATE_RT_STATIC_SHAPES_ONLY";
  }
#endif
  if (major < kOldestSupportedMajor) {
    return Fail(AGATE_VERSION_MISMATCH) << "module format " << major << "." << minor
                                        << " is older than this runtime reads (oldest major " << kOldestSupportedMajor
                                        << "); recompile the model";
  }
  return AGATE_OK;
}

agate_status_t CheckTensor(const fb::Tensor& t, const char* role, uint32_t index) {
  const fb::DType& d = *t.dtype();
  const uint8_t code = static_cast<uint8_t>(d.code());
  const uint8_t bits = d.bits();
  const bool bits_ok = bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
  if (code > static_cast<uint8_t>(fb::ElemCode::MAX) || !bits_ok || d.lanes() == 0 ||
      (code == static_cast<uint8_t>(fb::ElemCode::Bool)) != (bits == 1)) {
    return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' has an invalid dtype (code "
                               << code << ", bits " << bits << ", lanes " << d.lanes() << ")";
  }
  if (t.shape()->size() > 32) {
    return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' has " << t.shape()->size()
                               << " dimensions (at most 32)";
  }
  uint64_t bytes = static_cast<uint64_t>(bits == 1 ? 1 : bits / 8) * d.lanes();
  for (flatbuffers::uoffset_t axis = 0; axis < t.shape()->size(); ++axis) {
    const int64_t extent = t.shape()->Get(axis);
    if (extent < 0) {
      return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' has extent " << extent
                                 << " on axis " << axis;
    }
    // Overflow check without a 64-bit division (a libgcc routine on 32-bit MCUs).
    uint64_t product = 0;
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(extent), &product) || product > kMaxBytes) {
      return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' is too large (axis "
                                 << axis << ")";
    }
    bytes *= static_cast<uint64_t>(extent);
  }
  return AGATE_OK;
}

agate_status_t CheckTensors(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>& tensors, const char* role,
                            uint64_t* out_total_padded) {
  if (tensors.size() > kMaxTensors) {
    return Fail(AGATE_CORRUPT) << "module has " << tensors.size() << " " << role << "s (at most " << kMaxTensors << ")";
  }
  uint64_t total = 0;
  for (flatbuffers::uoffset_t i = 0; i < tensors.size(); ++i) {
    agate_status_t status = CheckTensor(*tensors.Get(i), role, i);
    if (status != AGATE_OK) return status;
    for (flatbuffers::uoffset_t j = 0; j < i; ++j) {
      if (SameString(tensors.Get(i)->name()->c_str(), tensors.Get(j)->name()->c_str())) {
        return Fail(AGATE_CORRUPT) << role << "s " << j << " and " << i << " are both named '"
                                   << tensors.Get(i)->name()->c_str() << "'";
      }
    }
    total += (TensorBytes(*tensors.Get(i)) + 63) & ~uint64_t{63};
    if (total > kMaxBytes) return Fail(AGATE_CORRUPT) << "the " << role << "s are too large";
  }
  *out_total_padded = total;
  return AGATE_OK;
}

agate_status_t CheckConstants(const uint8_t* data, const fb::Module& m, uint32_t* max_alignment) {
  if (m.constants() == nullptr) return AGATE_OK;
  for (flatbuffers::uoffset_t i = 0; i < m.constants()->size(); ++i) {
    const fb::Constant& c = *m.constants()->Get(i);
    if (!IsPowerOfTwo(c.alignment()) || c.alignment() > kMaxAlignment) {
      return Fail(AGATE_CORRUPT) << "constant " << i << " asks for alignment " << c.alignment()
                                 << " (a power of two up to " << kMaxAlignment << ")";
    }
    const size_t offset = static_cast<size_t>(c.data()->data() - data);
    if (offset % c.alignment() != 0) {
      return Fail(AGATE_CORRUPT) << "constant " << i << " is at byte " << offset << " of the module, not aligned to "
                                 << c.alignment() << " bytes";
    }
    if (c.alignment() > *max_alignment) *max_alignment = c.alignment();
  }
  return AGATE_OK;
}

agate_status_t CheckKernels(const fb::Module& m) {
  const auto& kernels = *m.kernels();
  for (flatbuffers::uoffset_t k = 0; k < kernels.size(); ++k) {
    const fb::Kernel& kernel = *kernels.Get(k);
    if (kernel.name()->size() == 0) return Fail(AGATE_CORRUPT) << "kernel " << k << " has an empty name";
    if (kernel.workspace_bytes() > m.workspace_bytes()) {
      return Fail(AGATE_CORRUPT) << "kernel " << k << " '" << kernel.name()->c_str() << "' needs "
                                 << kernel.workspace_bytes() << " workspace bytes, more than the module's "
                                 << m.workspace_bytes();
    }
  }
  if (m.target_kind() == fb::TargetKind::HostCpu) {
    if (m.host_object() == nullptr || m.host_object()->data()->size() == 0) {
      if (kernels.size() != 0) return Fail(AGATE_NOT_FOUND) << "host module has kernels but no host object";
    } else if (m.host_object()->format() != fb::ObjectFormat::ElfSharedObject) {
      return Fail(AGATE_CORRUPT) << "host object has unknown format "
                                 << static_cast<uint32_t>(m.host_object()->format());
    }
  }
  return AGATE_OK;
}

// An argument that names a whole tensor or constant: offset 0 and its exact size.
agate_status_t CheckWholeArg(const fb::Arg& arg, uint32_t call, uint32_t a, uint32_t count, uint64_t bytes_of_index,
                             bool index_ok) {
  if (!index_ok) {
    return Fail(AGATE_OUT_OF_RANGE) << "call " << call << " argument " << a << " names " << ArgKindName(arg.kind())
                                    << " " << arg.index() << " of " << count;
  }
  if (arg.offset() != 0 || arg.bytes() != bytes_of_index) {
    return Fail(AGATE_CORRUPT) << "call " << call << " argument " << a << " (" << ArgKindName(arg.kind()) << " "
                               << arg.index() << ") covers [" << arg.offset() << ", +" << arg.bytes()
                               << ") but the tensor has " << bytes_of_index << " bytes";
  }
  return AGATE_OK;
}

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
// A variant plan's argument of a tensor whose axis 0 is the batch symbol: any
// [offset, offset + bytes) inside the chunk of `extent` rows.
agate_status_t CheckChunkArg(const fb::Arg& arg, uint32_t call, uint32_t a, uint64_t chunk_bytes) {
  if (arg.offset() > chunk_bytes || arg.bytes() > chunk_bytes - arg.offset()) {
    return Fail(AGATE_OUT_OF_RANGE) << "call " << call << " argument " << a << " (" << ArgKindName(arg.kind()) << " "
                                    << arg.index() << ") covers [" << arg.offset() << ", +" << arg.bytes()
                                    << ") outside its variant's chunk of " << chunk_bytes << " bytes";
  }
  return AGATE_OK;
}
#endif

// Checks `plan` (Module.plan, or with `extent` > 0 the plan of a variant of that many rows,
// whose Input/Output arguments of tensors with symbolic rows address the chunk).
agate_status_t CheckPlan(const fb::Module& m, const flatbuffers::Vector<flatbuffers::Offset<fb::Call>>& plan,
                         const ModuleFacts& facts, int64_t extent, uint32_t* total_args) {
  const uint32_t num_inputs = m.inputs()->size();
  const uint32_t num_outputs = m.outputs()->size();
  const uint32_t num_constants = m.constants() ? m.constants()->size() : 0;
  uint64_t args_sum = 0;
  uint32_t written[kMaxTensors / 32] = {};  // outputs some call writes
  for (flatbuffers::uoffset_t c = 0; c < plan.size(); ++c) {
    const fb::Call& call = *plan.Get(c);
    if (call.kernel() >= m.kernels()->size()) {
      return Fail(AGATE_OUT_OF_RANGE) << "call " << c << " names kernel " << call.kernel() << " of "
                                      << m.kernels()->size();
    }
    const fb::Kernel& kernel = *m.kernels()->Get(call.kernel());
    if (call.args()->size() != kernel.param_bytes()->size()) {
      return Fail(AGATE_CORRUPT) << "call " << c << " passes " << call.args()->size() << " arguments to kernel '"
                                 << kernel.name()->c_str() << "', which takes " << kernel.param_bytes()->size();
    }
    for (flatbuffers::uoffset_t a = 0; a < call.args()->size(); ++a) {
      const fb::Arg& arg = *call.args()->Get(a);
      if (arg.bytes() != kernel.param_bytes()->Get(a)) {
        return Fail(AGATE_CORRUPT) << "call " << c << " argument " << a << " has " << arg.bytes()
                                   << " bytes but kernel '" << kernel.name()->c_str() << "' parameter " << a
                                   << " uses " << kernel.param_bytes()->Get(a);
      }
      const uint32_t i = arg.index();
      agate_status_t status = AGATE_OK;
      switch (arg.kind()) {
        case fb::ArgKind::Input:
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
          if (extent > 0 && i < num_inputs && HasSymbolicRows(InputDims(facts, i))) {
            status = CheckChunkArg(arg, c, a, RowBytes(*m.inputs()->Get(i)) * static_cast<uint64_t>(extent));
            break;
          }
#endif
          status = CheckWholeArg(arg, c, a, num_inputs, i < num_inputs ? TensorBytes(*m.inputs()->Get(i)) : 0,
                                 i < num_inputs);
          break;
        case fb::ArgKind::Output:
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
          if (extent > 0 && i < num_outputs && HasSymbolicRows(OutputDims(facts, i))) {
            status = CheckChunkArg(arg, c, a, RowBytes(*m.outputs()->Get(i)) * static_cast<uint64_t>(extent));
            if (status == AGATE_OK) written[i / 32] |= uint32_t{1} << (i % 32);
            break;
          }
#endif
          status = CheckWholeArg(arg, c, a, num_outputs, i < num_outputs ? TensorBytes(*m.outputs()->Get(i)) : 0,
                                 i < num_outputs);
          if (status == AGATE_OK) written[i / 32] |= uint32_t{1} << (i % 32);
          break;
        case fb::ArgKind::Constant:
          status = CheckWholeArg(arg, c, a, num_constants,
                                 i < num_constants ? m.constants()->Get(i)->data()->size() : 0, i < num_constants);
          break;
        case fb::ArgKind::Arena:
          if (arg.offset() > m.arena_bytes() || arg.bytes() > m.arena_bytes() - arg.offset()) {
            return Fail(AGATE_OUT_OF_RANGE) << "call " << c << " argument " << a << " covers arena bytes ["
                                            << arg.offset() << ", +" << arg.bytes() << ") outside the arena of "
                                            << m.arena_bytes() << " bytes";
          }
          break;
        default:
          return Fail(AGATE_CORRUPT) << "call " << c << " argument " << a << " has unknown kind "
                                     << static_cast<uint32_t>(arg.kind());
      }
      if (status != AGATE_OK) return status;
    }
    args_sum += call.args()->size();
  }
  if (args_sum > 0x7fffffff) return Fail(AGATE_CORRUPT) << "plan has " << args_sum << " arguments";
  *total_args = static_cast<uint32_t>(args_sum);
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  // A module with variants runs them instead of its (empty) Module.plan.
  if (extent == 0 && facts.dynamic != nullptr && facts.dynamic->variants() != nullptr) return AGATE_OK;
#else
  (void)facts;
  (void)extent;
#endif
  // Every output must be written by some call, or the caller would read garbage. A zero-element
  // output has no bytes to read, so it needs no writer (a model may output an empty tensor).
  for (uint32_t o = 0; o < num_outputs; ++o) {
    if ((written[o / 32] & (uint32_t{1} << (o % 32))) == 0 && TensorBytes(*m.outputs()->Get(o)) != 0) {
      return Fail(AGATE_CORRUPT) << "output " << o << " '" << m.outputs()->Get(o)->name()->c_str()
                                 << "' is never written by the plan";
    }
  }
  return AGATE_OK;
}

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
// One input's or output's TensorDims against its Tensor: a kind per axis, Symbolic only on
// axis 0 with the symbol's max as the tensor's extent, ValueDependent only on outputs of a
// module without variants, with its shape slot inside the arena.
agate_status_t CheckTensorDims(const fb::Module& m, const fb::DynamicShapes& d, const fb::TensorDims& dims,
                               const fb::Tensor& t, const char* role, uint32_t index, bool is_output) {
  const uint32_t ndim = t.shape()->size();
  if (dims.kinds()->size() != ndim || (dims.axis_symbols() != nullptr && dims.axis_symbols()->size() != ndim)) {
    return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' has " << ndim
                               << " dimensions but " << dims.kinds()->size() << " dimension kinds"
                               << (dims.axis_symbols() != nullptr ? " or another count of axis symbols" : "");
  }
  bool value_dependent = false;
  for (uint32_t axis = 0; axis < ndim; ++axis) {
    const fb::DimKind kind = dims.kinds()->Get(axis);
    if (kind == fb::DimKind::Static) continue;
    if (kind == fb::DimKind::Symbolic) {
      const uint32_t symbol = AxisSymbol(dims, axis);
      if ((axis != 0 && !d.padded()) || symbol >= d.symbols()->size()) {
        return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' axis " << axis
                                   << " is symbolic (symbol " << symbol << " of " << d.symbols()->size()
                                   << "); only axis 0 may carry a symbol that is not padded";
      }
      const fb::Symbol& sym = *d.symbols()->Get(symbol);
      if (t.shape()->Get(axis) != sym.max()) {
        return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' has extent "
                                   << t.shape()->Get(axis) << " on axis " << axis << ", not the upper bound " << sym.max()
                                   << " of its symbol " << sym.name()->c_str();
      }
      continue;
    }
    if (kind == fb::DimKind::ValueDependent && is_output && d.variants() == nullptr) {
      value_dependent = true;
      continue;
    }
    return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' axis " << axis
                               << " has dimension kind " << static_cast<uint32_t>(kind)
                               << ", which only outputs of a module without variants may have (2) or is unknown";
  }
  if (d.padded() && SymbolAxis(&dims) >= 0) {
    const uint64_t staging = dims.staging();
    const uint64_t bytes = TensorBytes(t);
    if (ndim > kMaxPaddedRank || staging % 64 != 0 || staging > m.arena_bytes() || bytes > m.arena_bytes() - staging) {
      return Fail(AGATE_CORRUPT) << role << " " << index << " '" << t.name()->c_str() << "' (" << ndim
                                 << " dimensions) has its staging buffer at [" << staging << ", +" << bytes
                                 << "), which is not 64-byte aligned inside the arena of " << m.arena_bytes()
                                 << " bytes, or has more than " << kMaxPaddedRank << " dimensions";
    }
  }
  if (value_dependent) {
    const uint64_t slot = dims.shape_slot();
    if (slot % 8 != 0 || slot > m.arena_bytes() || uint64_t{8} * ndim > m.arena_bytes() - slot) {
      return Fail(AGATE_OUT_OF_RANGE) << role << " " << index << " '" << t.name()->c_str() << "' shape slot ["
                                      << slot << ", +" << uint64_t{8} * ndim << ") is not 8-byte aligned inside the arena of "
                                      << m.arena_bytes() << " bytes";
    }
  }
  return AGATE_OK;
}

// No call of a padded variant's plan names a tensor that carries the symbol as an Input or
// Output: those live in their staging buffers.
agate_status_t CheckPaddedArgs(const flatbuffers::Vector<flatbuffers::Offset<fb::Call>>& plan, const ModuleFacts& facts,
                               uint32_t variant) {
  for (flatbuffers::uoffset_t c = 0; c < plan.size(); ++c) {
    for (const fb::Arg* arg : *plan.Get(c)->args()) {
      const bool input = arg->kind() == fb::ArgKind::Input, output = arg->kind() == fb::ArgKind::Output;
      const flatbuffers::Vector<flatbuffers::Offset<fb::TensorDims>>& dims =
          *(input ? facts.dynamic->inputs() : facts.dynamic->outputs());
      if ((input || output) && arg->index() < dims.size() && SymbolAxis(dims.Get(arg->index())) >= 0) {
        return Fail(AGATE_CORRUPT) << "variant " << variant << " call " << c << " passes " << (input ? "input " : "output ")
                                   << arg->index() << ", which carries the padded symbol, other than through its staging buffer";
      }
    }
  }
  return AGATE_OK;
}

// A padded module's symbols and variants: an extent slot per symbol inside the arena, an extent
// per symbol in each variant within its bounds, and the variants exactly every combination of
// each symbol's extents (so a run finds the smallest one covering its extents), the largest of
// each symbol its max.
agate_status_t CheckPaddedVariants(const fb::Module& m, const fb::DynamicShapes& d) {
  const uint32_t num_symbols = d.symbols()->size();  // at most kMaxSymbols (CheckDynamicShapes)
  if (d.extent_slots() == nullptr || d.extent_slots()->size() != num_symbols) {
    return Fail(AGATE_CORRUPT) << "padded module has " << num_symbols << " symbols and "
                               << (d.extent_slots() ? d.extent_slots()->size() : 0) << " extent slots";
  }
  // The checks below compare variants pairwise: a bound keeps a hostile file from stalling the load.
  if (d.variants()->size() > kMaxPaddedVariants) {
    return Fail(AGATE_CORRUPT) << "padded module has " << d.variants()->size() << " variants (at most "
                               << kMaxPaddedVariants << ")";
  }
  uint64_t combinations = 1;
  for (uint32_t s = 0; s < num_symbols; ++s) {
    const fb::Symbol& sym = *d.symbols()->Get(s);
    const uint64_t slot = d.extent_slots()->Get(s);
    if (slot % 8 != 0 || slot > m.arena_bytes() || m.arena_bytes() - slot < 8) {
      return Fail(AGATE_CORRUPT) << "padded symbol " << sym.name()->c_str() << "'s extent slot " << slot
                                 << " is not 8 bytes aligned inside the arena of " << m.arena_bytes() << " bytes";
    }
    uint32_t distinct = 0;
    int64_t largest = 0;
    for (uint32_t v = 0; v < d.variants()->size(); ++v) {
      const fb::Variant& variant = *d.variants()->Get(v);
      if (variant.extents() == nullptr || variant.extents()->size() != num_symbols) {
        return Fail(AGATE_CORRUPT) << "variant " << v << " of a padded module does not give one extent per symbol";
      }
      const int64_t extent = variant.extents()->Get(s);
      if (extent < 1 || extent > sym.max() || (s == 0 && extent != variant.extent())) {
        return Fail(AGATE_CORRUPT) << "variant " << v << " has extent " << extent << " of symbol " << sym.name()->c_str()
                                   << ", outside 1.." << sym.max();
      }
      largest = extent > largest ? extent : largest;
      bool seen = false;
      for (uint32_t u = 0; u < v && !seen; ++u) seen = d.variants()->Get(u)->extents()->Get(s) == extent;
      distinct += seen ? 0 : 1;
    }
    if (largest != sym.max()) {
      return Fail(AGATE_CORRUPT) << "padded symbol " << sym.name()->c_str() << "'s largest variant extent is " << largest
                                 << ", not its upper bound " << sym.max();
    }
    combinations *= distinct;
  }
  for (uint32_t v = 0; v < d.variants()->size(); ++v) {
    for (uint32_t u = 0; u < v; ++u) {
      bool same = true;
      for (uint32_t s = 0; s < num_symbols; ++s) {
        same = same && d.variants()->Get(u)->extents()->Get(s) == d.variants()->Get(v)->extents()->Get(s);
      }
      if (same) return Fail(AGATE_CORRUPT) << "variants " << u << " and " << v << " have the same extents";
    }
  }
  uint32_t carried = 0;  // a bit per symbol some input carries: a run takes its extent from them
  for (const fb::TensorDims* dims : *d.inputs()) {
    for (uint32_t axis = 0; axis < dims->kinds()->size(); ++axis) {
      const uint32_t s = AxisSymbol(*dims, axis);
      if (dims->kinds()->Get(axis) == fb::DimKind::Symbolic && s < num_symbols) carried |= 1u << s;
    }
  }
  if (carried != (1u << num_symbols) - 1) {
    return Fail(AGATE_CORRUPT) << "some symbol of the padded module is carried by no input, so a run could not know "
                               << "its extent";
  }
  if (combinations != d.variants()->size()) {
    return Fail(AGATE_CORRUPT) << "padded module has " << d.variants()->size() << " variants, not the "
                               << combinations << " combinations of its symbols' extents";
  }
  return AGATE_OK;
}

agate_status_t CheckVariants(const fb::Module& m, const fb::DynamicShapes& d, ModuleFacts* facts) {
  const bool has_symbol = d.symbols()->size() != 0;
  if (d.variants() == nullptr || d.variants()->size() == 0) {
    if (!has_symbol) return AGATE_OK;
    return Fail(AGATE_CORRUPT) << "module has symbol " << d.symbols()->Get(0)->name()->c_str() << " but no variants";
  }
  if (!has_symbol) return Fail(AGATE_CORRUPT) << "module has variants but no symbol";
  if (m.plan()->size() != 0) return Fail(AGATE_CORRUPT) << "module has variants and a non-empty Module.plan";
  bool carried = false;  // a run takes the symbol's extent from the inputs
  for (uint32_t i = 0; i < m.inputs()->size(); ++i) carried = carried || SymbolAxis(InputDims(*facts, i)) >= 0;
  if (!carried) {
    return Fail(AGATE_CORRUPT) << "no input carries symbol " << d.symbols()->Get(0)->name()->c_str()
                               << ", so a run could not know its extent";
  }
  const fb::Symbol& sym = *d.symbols()->Get(0);
  if (d.padded()) {
    agate_status_t status = CheckPaddedVariants(m, d);
    if (status != AGATE_OK) return status;
  }
  int64_t previous = 0;
  for (uint32_t v = 0; v < d.variants()->size(); ++v) {
    const fb::Variant& variant = *d.variants()->Get(v);
    const int64_t extent = variant.extent();
    if (!d.padded() && (extent <= previous || extent > sym.max() || (v == 0 && extent != 1))) {
      return Fail(AGATE_CORRUPT) << "variant " << v << " has extent " << extent << "; extents must ascend from 1 to at most "
                                 << sym.max() << " (" << sym.name()->c_str() << "'s upper bound)";
    }
    previous = extent;
    uint32_t args = 0;
    // A padded variant runs once on the staged tensors, which its plan reads as Arena arguments.
    agate_status_t status = d.padded() ? CheckPaddedArgs(*variant.plan(), *facts, v) : AGATE_OK;
    if (status == AGATE_OK) status = CheckPlan(m, *variant.plan(), *facts, d.padded() ? 0 : extent, &args);
    if (status != AGATE_OK) return status;
    for (const fb::Call* call : *variant.plan()) {
      if (call->args()->size() > facts->max_variant_args) facts->max_variant_args = call->args()->size();
    }
  }
  return AGATE_OK;
}
#endif

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
// Format 2.0: verifies the dynamic shapes (in the nested Metadata buffer) and their meaning.
agate_status_t CheckDynamicShapes(const uint8_t* data, const fb::Module& m, ModuleFacts* facts) {
  if (m.format_major() < 2) return AGATE_OK;  // 1.x modules are static
  const flatbuffers::Vector<uint8_t>* nested = m.metadata();
  if (nested == nullptr) return AGATE_OK;
  if (static_cast<size_t>(nested->data() - data) % 8 != 0) {
    return Fail(AGATE_CORRUPT) << "module metadata is not 8-byte aligned";
  }
  flatbuffers::Verifier verifier(nested->data(), nested->size());
  if (!verifier.VerifyBuffer<fb::Metadata>(nullptr)) {
    return Fail(AGATE_CORRUPT) << "module metadata (" << nested->size()
                               << " bytes, which hold its dynamic shapes) is truncated or corrupt";
  }
  const fb::DynamicShapes* dynamic = flatbuffers::GetRoot<fb::Metadata>(nested->data())->dynamic_shapes();
  if (dynamic == nullptr) return AGATE_OK;
  const fb::DynamicShapes& d = *dynamic;
  if (m.target_kind() == fb::TargetKind::Cuda) {
    return Fail(AGATE_UNSUPPORTED) << "dynamic shapes are not supported for CUDA modules yet";
  }
  if (d.symbols()->size() > (d.padded() ? kMaxSymbols : 1)) {
    return Fail(AGATE_UNSUPPORTED) << "module has " << d.symbols()->size() << " symbols; this runtime supports "
                                   << (d.padded() ? kMaxSymbols : 1) << (d.padded() ? " padded ones" : " batch-style one");
  }
  for (const fb::Symbol* sym : *d.symbols()) {
    if (sym->min() < 1 || sym->min() > sym->max()) {
      return Fail(AGATE_CORRUPT) << "symbol " << sym->name()->c_str() << " has bounds " << sym->min() << ".."
                                 << sym->max() << " (need 1 <= min <= max)";
    }
  }
  if (d.inputs()->size() != m.inputs()->size() || d.outputs()->size() != m.outputs()->size()) {
    return Fail(AGATE_CORRUPT) << "module's dynamic shapes describe " << d.inputs()->size() << " inputs and "
                               << d.outputs()->size() << " outputs; it has " << m.inputs()->size() << " and "
                               << m.outputs()->size();
  }
  agate_status_t status = AGATE_OK;
  for (uint32_t i = 0; i < m.inputs()->size() && status == AGATE_OK; ++i) {
    status = CheckTensorDims(m, d, *d.inputs()->Get(i), *m.inputs()->Get(i), "input", i, false);
  }
  for (uint32_t o = 0; o < m.outputs()->size() && status == AGATE_OK; ++o) {
    status = CheckTensorDims(m, d, *d.outputs()->Get(o), *m.outputs()->Get(o), "output", o, true);
    facts->output_dims += m.outputs()->Get(o)->shape()->size();
  }
  if (status != AGATE_OK) return status;
  facts->dynamic = &d;
  status = CheckVariants(m, d, facts);
  if (status != AGATE_OK) facts->dynamic = nullptr;
  return status;
}
#endif

}  // namespace

bool SameString(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

uint64_t Fnv1a64(const uint8_t* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 0x100000001b3ull;
  return hash;
}

#ifndef AGATE_RT_STATIC_SHAPES_ONLY
const fb::TensorDims* InputDims(const ModuleFacts& facts, uint32_t index) {
  return facts.dynamic != nullptr ? facts.dynamic->inputs()->Get(index) : nullptr;
}

const fb::TensorDims* OutputDims(const ModuleFacts& facts, uint32_t index) {
  return facts.dynamic != nullptr ? facts.dynamic->outputs()->Get(index) : nullptr;
}

bool HasSymbolicRows(const fb::TensorDims* dims) {
  return dims != nullptr && dims->kinds()->size() != 0 && dims->kinds()->Get(0) == fb::DimKind::Symbolic;
}

uint32_t AxisSymbol(const fb::TensorDims& dims, uint32_t axis) {
  return dims.axis_symbols() != nullptr ? dims.axis_symbols()->Get(axis) : dims.symbol();
}

uint32_t NumSymbols(const ModuleFacts& facts) { return facts.dynamic != nullptr ? facts.dynamic->symbols()->size() : 0; }

int32_t SymbolAxis(const fb::TensorDims* dims) {
  if (dims == nullptr) return -1;
  for (uint32_t axis = 0; axis < dims->kinds()->size(); ++axis) {
    if (dims->kinds()->Get(axis) == fb::DimKind::Symbolic) return static_cast<int32_t>(axis);
  }
  return -1;
}

uint64_t RowBytes(const fb::Tensor& tensor) {
  const fb::DType& d = *tensor.dtype();
  uint64_t bytes = static_cast<uint64_t>(d.bits() == 1 ? 1 : d.bits() / 8) * d.lanes();
  for (uint32_t axis = 1; axis < tensor.shape()->size(); ++axis) bytes *= static_cast<uint64_t>(tensor.shape()->Get(axis));
  return bytes;
}
#endif

uint64_t TensorBytes(const fb::Tensor& tensor) {
  const fb::DType& d = *tensor.dtype();
  uint64_t bytes = static_cast<uint64_t>(d.bits() == 1 ? 1 : d.bits() / 8) * d.lanes();
  for (int64_t extent : *tensor.shape()) bytes *= static_cast<uint64_t>(extent);
  return bytes;
}

agate_status_t VerifyModule(const uint8_t* data, size_t size, const fb::Module** out_module, ModuleFacts* out_facts) {
  if (data == nullptr && size != 0) return Fail(AGATE_INVALID_ARGUMENT) << "module data is NULL";
  if (size < 8) {
    return Fail(AGATE_CORRUPT) << "module is " << size << " bytes: too short to be an agate module (at least 8)";
  }
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Fail(AGATE_CORRUPT) << "module is " << size << " bytes: larger than a FlatBuffer can be";
  }
  const char* identifier = fb::ModuleIdentifier();
  if (data[4] != identifier[0] || data[5] != identifier[1] || data[6] != identifier[2] || data[7] != identifier[3]) {
    Message m = Fail(AGATE_CORRUPT);
    m << "not an agate module: file identifier ";
    AppendIdentifier(m, data + 4);
    return m << ", expected 'AGTM'";
  }
  flatbuffers::Verifier verifier(data, size);
  agate_status_t status = CheckVersion(verifier, data, size);
  if (status != AGATE_OK) return status;

  // The identifier was checked above; VerifyBuffer(nullptr) skips the strncmp.
  if (!verifier.VerifyBuffer<fb::Module>(nullptr)) {
    return Fail(AGATE_CORRUPT) << "module is truncated or corrupt: FlatBuffers verification of its " << size
                               << " bytes failed";
  }
  const fb::Module& m = *fb::GetModule(data);
  if (m.kernel_abi_version() == 0 || m.kernel_abi_version() > AGATE_KERNEL_ABI_VERSION) {
    return Fail(AGATE_VERSION_MISMATCH) << "module's kernels use kernel ABI " << m.kernel_abi_version()
                                        << "; this runtime provides 1.." << AGATE_KERNEL_ABI_VERSION;
  }
  if (m.target_kind() > fb::TargetKind::MAX) {
    return Fail(AGATE_CORRUPT) << "module has unknown target kind " << static_cast<uint32_t>(m.target_kind());
  }
  if (!IsPowerOfTwo(m.arena_alignment()) || m.arena_alignment() > kMaxAlignment) {
    return Fail(AGATE_CORRUPT) << "arena alignment " << m.arena_alignment() << " is not a power of two up to "
                               << kMaxAlignment;
  }
  if (m.arena_bytes() > kMaxBytes || m.workspace_bytes() > kMaxBytes || m.arena_bytes() > SIZE_MAX / 2 ||
      m.workspace_bytes() > SIZE_MAX / 2) {
    return Fail(AGATE_CORRUPT) << "arena (" << m.arena_bytes() << " bytes) or workspace (" << m.workspace_bytes()
                               << " bytes) is too large for this machine";
  }
  ModuleFacts facts = {};
  facts.num_calls = m.plan()->size();
  facts.max_alignment = 8;
  uint64_t inputs_bytes = 0;
  if ((status = CheckTensors(*m.inputs(), "input", &inputs_bytes)) != AGATE_OK) return status;
  if ((status = CheckTensors(*m.outputs(), "output", &facts.outputs_bytes)) != AGATE_OK) return status;
  if (facts.outputs_bytes > SIZE_MAX / 2) return Fail(AGATE_CORRUPT) << "outputs are too large for this machine";
  if ((status = CheckConstants(data, m, &facts.max_alignment)) != AGATE_OK) return status;
  if ((status = CheckKernels(m)) != AGATE_OK) return status;
#ifndef AGATE_RT_STATIC_SHAPES_ONLY
  if ((status = CheckDynamicShapes(data, m, &facts)) != AGATE_OK) return status;
#endif
  if ((status = CheckPlan(m, *m.plan(), facts, 0, &facts.total_args)) != AGATE_OK) return status;
  *out_module = &m;
  *out_facts = facts;
  return AGATE_OK;
}

}  // namespace rt
}  // namespace agate
