#include "core/codegen/testing/loop_kernels.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <thread>
#include <utility>
#include <fstream>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "core/ir/buffer.h"
#include "core/ir/expr.h"
#include "core/ir/stmt.h"

namespace agate {
namespace codegen {
namespace testing {

using namespace ir;  // NOLINT: IR construction reads better without qualifiers

HostArray::HostArray(DType dtype, size_t count) : dtype_(dtype), count_(count) {
  size_t bytes = std::max<size_t>(64, (count * dtype.element_bytes() + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  std::memset(p, 0, bytes);
  data_ = std::shared_ptr<void>(p, std::free);
}

namespace {

Expr I64(int64_t v) { return Expr(v); }
Expr Ramp1(Expr base, int lanes) { return Ramp::make(cast(DType::Index(), base), I64(1), lanes); }

void FillUniform(const HostArray& a, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (size_t i = 0; i < a.count(); ++i) a.as<float>()[i] = dist(rng);
}

// ------------------------------------------------------------------ elementwise_math

Expr MathChain(Expr x, Expr scale) {
  return exp(x * scale) + tanh(x) + sigmoid(x) + erf(x * 0.5f) + sqrt(abs(x)) + log(abs(x) + 1.0f);
}

double MathChainReference(double x, double scale) {
  return std::exp(x * scale) + std::tanh(x) + 1.0 / (1.0 + std::exp(-x)) + std::erf(x * 0.5) + std::sqrt(std::fabs(x)) +
         std::log(std::fabs(x) + 1.0);
}

KernelCase ElementwiseMath() {
  const int n = 1000, lanes = 16, vector_part = n / lanes * lanes;
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(n)});
  Var scale("scale", DType::Float(32));
  Var io("io"), i("i");
  Stmt vector_loop =
      For::make(io, 0, vector_part / lanes, ForKind::kParallel,
                Store::make(y, MathChain(Load::make(x, Ramp1(io * lanes, lanes)), Broadcast::make(scale, lanes)),
                            Ramp1(io * lanes, lanes)));
  Stmt tail = For::make(i, vector_part, n - vector_part, ForKind::kSerial,
                        Store::make(y, MathChain(Load::make(x, i), scale), i));
  KernelCase c;
  c.func = LoweredFunc{"elementwise_math", {x, y}, LetStmt::make(scale, Expr(0.25f), Seq::make({vector_loop, tail})), 0};
  c.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), n), HostArray(DType::Float(32), n)};
    FillUniform(args[0], -6.0f, 6.0f, 1);
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int k = 0; k < n; ++k) args[1].as<float>()[k] = static_cast<float>(MathChainReference(args[0].as<float>()[k], 0.25));
  };
  c.outputs = {1};
  c.tolerance = 5e-6;
  return c;
}

// ------------------------------------------------------------------ round_half_even

// round (ONNX Round, C's nearbyint in the default mode): ties to even, at 16 lanes and in the
// scalar tail, on ties, values just below a half, the floats past 2^23 (already integers),
// infinities, NaN and negative values that round to -0. Backends without a rounding
// instruction (Cortex-M4's FPv4, soft-float cores) compute it inline.
KernelCase RoundHalfEven() {
  const int n = 96, lanes = 16, vector_part = 64;
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(n)});
  Var io("io"), i("i");
  Stmt vector_loop = For::make(io, 0, vector_part / lanes, ForKind::kSerial,
                               Store::make(y, ir::round(Load::make(x, Ramp1(io * lanes, lanes))), Ramp1(io * lanes, lanes)));
  Stmt tail = For::make(i, vector_part, n - vector_part, ForKind::kSerial, Store::make(y, ir::round(Load::make(x, i)), i));
  KernelCase c;
  c.func = LoweredFunc{"round_half_even", {x, y}, Seq::make({vector_loop, tail}), 0};
  c.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), n), HostArray(DType::Float(32), n)};
    const float specials[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.49999997f, -0.49999997f, 1.4999999f,
                              8388607.5f, -8388607.5f, 8388608.0f, 8388609.0f, 16777215.0f, 1e10f, -1e10f,
                              std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(), -0.3f, -0.0f, 0.0f, 1e-30f, 126.5f};
    float* v = args[0].as<float>();
    const int count = static_cast<int>(sizeof(specials) / sizeof(specials[0]));
    for (int k = 0; k < n; ++k) {
      // the specials in the vector part and again in the tail; elsewhere halves and near-halves
      int s = k < vector_part ? k : k - vector_part;
      v[k] = s < count ? specials[s] : static_cast<float>((k * 37) % 401 - 200) * 0.5f + (k % 3 == 0 ? 0.001f : 0.0f);
    }
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int k = 0; k < n; ++k) args[1].as<float>()[k] = std::nearbyint(args[0].as<float>()[k]);
  };
  c.outputs = {1};
  return c;
}

// ------------------------------------------------------------------ matmul_tiled

KernelCase MatmulTiled() {
  const int m = 64, n = 64, k = 48, rows = 4, lanes = 16;
  Buffer a = CreateBuffer("A", DType::Float(32), {Expr(m), Expr(k)});
  Buffer b = CreateBuffer("B", DType::Float(32), {Expr(k), Expr(n)});
  Buffer c = CreateBuffer("C", DType::Float(32), {Expr(m), Expr(n)});
  Buffer acc = CreateBuffer("acc", DType::Float(32), {Expr(rows * lanes)}, MemoryScope::kLocal);
  Var io("io"), jo("jo"), r("r"), kk("k"), r2("r2"), r3("r3");
  Stmt init = For::make(r, 0, rows, ForKind::kUnrolled,
                        Store::make(acc, Broadcast::make(Expr(0.0f), lanes), Ramp1(r * lanes, lanes)));
  Expr a_value = Broadcast::make(Load::make(a, (io * rows + r2) * k + kk), lanes);
  Expr b_value = Load::make(b, Ramp1(kk * n + jo * lanes, lanes));
  Stmt update = For::make(
      kk, 0, k, ForKind::kSerial,
      For::make(r2, 0, rows, ForKind::kUnrolled,
                Store::make(acc, Load::make(acc, Ramp1(r2 * lanes, lanes)) + a_value * b_value, Ramp1(r2 * lanes, lanes))));
  Stmt write = For::make(r3, 0, rows, ForKind::kSerial,
                         Store::make(c, Load::make(acc, Ramp1(r3 * lanes, lanes)), Ramp1((io * rows + r3) * n + jo * lanes, lanes)));
  Stmt body = For::make(io, 0, m / rows, ForKind::kParallel,
                        For::make(jo, 0, n / lanes, ForKind::kSerial,
                                  Allocate::make(acc, {Expr(rows * lanes)}, 64, MemoryScope::kLocal,
                                                 Seq::make({init, update, write}))));
  KernelCase kc;
  kc.func = LoweredFunc{"matmul_tiled", {a, b, c}, body, 0};
  kc.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), m * k), HostArray(DType::Float(32), k * n),
                                   HostArray(DType::Float(32), m * n)};
    FillUniform(args[0], -1, 1, 2);
    FillUniform(args[1], -1, 1, 3);
    return args;
  };
  kc.reference = [=](std::vector<HostArray>& args) {
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double sum = 0;
        for (int p = 0; p < k; ++p) sum += double(args[0].as<float>()[i * k + p]) * args[1].as<float>()[p * n + j];
        args[2].as<float>()[i * n + j] = static_cast<float>(sum);
      }
    }
  };
  kc.outputs = {2};
  kc.tolerance = 1e-5;
  return kc;
}

// ------------------------------------------------------------------ reduce_rows

KernelCase ReduceRows() {
  const int batches = 2, rows = 16, cols = 50;
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(batches * rows * cols)});
  Buffer sum = CreateBuffer("S", DType::Float(32), {Expr(batches * rows)});
  Buffer mx = CreateBuffer("M", DType::Float(32), {Expr(batches * rows)});
  Buffer acc = CreateBuffer("acc", DType::Float(32), {Expr(2)}, MemoryScope::kLocal);
  Var bt("b"), i("i"), j("j"), row("row");
  Expr value = Load::make(x, row * cols + j);
  Stmt reduce = For::make(j, 0, cols, ForKind::kSerial,
                          Seq::make({Store::make(acc, Load::make(acc, I64(0)) + value, I64(0)),
                                     Store::make(acc, max(Load::make(acc, I64(1)), value), I64(1))}));
  Stmt per_row = LetStmt::make(
      row, bt * rows + i,
      Allocate::make(acc, {Expr(2)}, 16, MemoryScope::kLocal,
                     Seq::make({Store::make(acc, Expr(0.0f), I64(0)), Store::make(acc, Expr(-std::numeric_limits<float>::max()), I64(1)),
                                reduce, Store::make(sum, Load::make(acc, I64(0)), row),
                                Store::make(mx, Load::make(acc, I64(1)), row)})));
  Stmt body = Seq::make({AssertStmt::make(Expr(cols) > 0, "rows must not be empty"),
                         For::make(bt, 0, batches, ForKind::kSerial, For::make(i, 0, rows, ForKind::kParallel, per_row))});
  KernelCase c;
  c.func = LoweredFunc{"reduce_rows", {x, sum, mx}, body, 0};
  c.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), batches * rows * cols),
                                   HostArray(DType::Float(32), batches * rows), HostArray(DType::Float(32), batches * rows)};
    FillUniform(args[0], -10, 10, 4);
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int r = 0; r < batches * rows; ++r) {
      float s = 0, m = -std::numeric_limits<float>::max();
      for (int k = 0; k < cols; ++k) {
        s += args[0].as<float>()[r * cols + k];
        m = std::max(m, args[0].as<float>()[r * cols + k]);
      }
      args[1].as<float>()[r] = s;
      args[2].as<float>()[r] = m;
    }
  };
  c.outputs = {1, 2};
  c.tolerance = 1e-5;
  return c;
}

// ------------------------------------------------------------------ integer_ops

KernelCase IntegerOps() {
  const int n = 37;
  Buffer a = CreateBuffer("A", DType::Int(32), {Expr(n)});
  Buffer q = CreateBuffer("Q", DType::Int(32), {Expr(n)});
  Buffer r = CreateBuffer("R", DType::Int(32), {Expr(n)});
  Buffer even = CreateBuffer("E", DType::Bool(), {Expr(n)});
  Buffer f = CreateBuffer("F", DType::Float(32), {Expr(n)});
  Buffer bits = CreateBuffer("B", DType::Int(32), {Expr(n)});
  Var i("i");
  Expr v = Load::make(a, i);
  Stmt body = For::make(
      i, 0, n, ForKind::kSerial,
      Seq::make({Store::make(q, floordiv(v, 3) * 10 + floormod(v, 3), i),
                 Store::make(r, select(v > 5, truncmod(v, 4), min(v, Expr(0) - v) + truncdiv(v, 7)), i),
                 Store::make(even, floormod(v, 2) == 0, i),
                 Store::make(f, select(Load::make(even, i), cast(DType::Float(32), v) / 2.0f, Expr(-1.0f)), i),
                 Store::make(bits, bitwise_xor(bitwise_and(v, 13), bitwise_or(bitwise_not(v), 6)), i)}));
  KernelCase c;
  c.func = LoweredFunc{"integer_ops", {a, q, r, even, f, bits}, body, 0};
  c.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Int(32), n), HostArray(DType::Int(32), n), HostArray(DType::Int(32), n),
                                   HostArray(DType::Bool(), n), HostArray(DType::Float(32), n), HostArray(DType::Int(32), n)};
    for (int k = 0; k < n; ++k) args[0].as<int32_t>()[k] = (k * 37) % 101 - 50;
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int k = 0; k < n; ++k) {
      int32_t x = args[0].as<int32_t>()[k];
      int32_t fd = static_cast<int32_t>(std::floor(x / 3.0));
      args[1].as<int32_t>()[k] = fd * 10 + (x - fd * 3);
      args[2].as<int32_t>()[k] = x > 5 ? x % 4 : std::min(x, -x) + x / 7;
      bool is_even = ((x % 2) + 2) % 2 == 0;
      args[3].as<uint8_t>()[k] = is_even;
      args[4].as<float>()[k] = is_even ? x / 2.0f : -1.0f;
      args[5].as<int32_t>()[k] = (x & 13) ^ (~x | 6);
    }
  };
  c.outputs = {1, 2, 3, 4, 5};
  return c;
}

// ------------------------------------------------------------------ shift_ops

// Logical shifts (CallOp::kShiftLeft/kShiftRight) of uint8/uint32 scalars and uint16 vectors,
// with amounts from 0 to past the bit width (which give 0), results widened to int32.
KernelCase ShiftOps() {
  const int n = 40, lanes = 8;
  Buffer a = CreateBuffer("A", DType::Int(32), {Expr(n)});
  Buffer amount = CreateBuffer("S", DType::Int(32), {Expr(n)});
  Buffer left8 = CreateBuffer("L8", DType::Int(32), {Expr(n)});
  Buffer right32 = CreateBuffer("R32", DType::Int(32), {Expr(n)});
  Buffer left16 = CreateBuffer("L16", DType::Int(32), {Expr(n)});
  Var i("i"), v("v");
  Expr x = Load::make(a, i), k = Load::make(amount, i);
  Stmt scalar = For::make(
      i, 0, n, ForKind::kSerial,
      Seq::make({Store::make(left8, cast(DType::Int(32), shift_left(cast(DType::UInt(8), x), cast(DType::UInt(8), k))), i),
                 Store::make(right32,
                             cast(DType::Int(32), shift_right(cast(DType::UInt(32), x), cast(DType::UInt(32), k))), i)}));
  Expr index = Ramp1(v * lanes, lanes);
  Expr xv = cast(DType::UInt(16, lanes), Load::make(a, index)), kv = cast(DType::UInt(16, lanes), Load::make(amount, index));
  Stmt vector = For::make(v, 0, n / lanes, ForKind::kSerial,
                          Store::make(left16, cast(DType::Int(32, lanes), shift_left(xv, kv)), index));
  KernelCase c;
  c.func = LoweredFunc{"shift_ops", {a, amount, left8, right32, left16}, Seq::make({scalar, vector}), 0};
  c.make_args = [=] {
    std::vector<HostArray> args;
    for (int j = 0; j < 5; ++j) args.emplace_back(DType::Int(32), n);
    for (int j = 0; j < n; ++j) {
      args[0].as<int32_t>()[j] = static_cast<int32_t>(0x9E3779B9u * (j + 1));
      args[1].as<int32_t>()[j] = j;  // 0..39: past 8, 16 and 32 bits
    }
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int j = 0; j < n; ++j) {
      uint32_t x32 = static_cast<uint32_t>(args[0].as<int32_t>()[j]);
      uint32_t s = static_cast<uint32_t>(args[1].as<int32_t>()[j]);
      uint8_t x8 = static_cast<uint8_t>(x32), s8 = static_cast<uint8_t>(s);
      uint16_t x16 = static_cast<uint16_t>(x32), s16 = static_cast<uint16_t>(s);
      args[2].as<int32_t>()[j] = s8 >= 8 ? 0 : static_cast<uint8_t>(x8 << s8);
      args[3].as<int32_t>()[j] = static_cast<int32_t>(s >= 32 ? 0u : x32 >> s);
      args[4].as<int32_t>()[j] = s16 >= 16 ? 0 : static_cast<uint16_t>(x16 << s16);
    }
  };
  c.outputs = {2, 3, 4};
  return c;
}

// ------------------------------------------------------------------ dot products

// An integer operand element as int64 (uint8, int8 or int16 arrays).
int64_t IntAt(const HostArray& array, int i) {
  if (array.dtype() == DType::UInt(8)) return array.as<uint8_t>()[i];
  if (array.dtype() == DType::Int(8)) return array.as<int8_t>()[i];
  return array.as<int16_t>()[i];
}

// What a dot-product intrinsic's kernel case varies. Each row reads `row_in` elements of a
// and b and writes accumulators of 16, 8, 4 and 1 lanes, then 16 lanes with a broadcast
// group of a (at element row * broadcast_stride + broadcast_offset).
struct DotSpec {
  std::string name;
  int group = 4;  // products per int32 lane
  DType a_type, b_type;
  int rows = 0, row_in = 0;
  int broadcast_stride = 0, broadcast_offset = 0;
  std::function<Expr(Expr, Expr, Expr)> dot;
  std::function<void(std::vector<HostArray>&)> fill;  // a, b and the accumulators
};

KernelCase DotCase(const DotSpec& spec) {
  const int per_row = 16 + 8 + 4 + 1 + 16, g = spec.group;
  Buffer a = CreateBuffer("A", spec.a_type, {Expr(spec.rows * spec.row_in)});
  Buffer b = CreateBuffer("B", spec.b_type, {Expr(spec.rows * spec.row_in)});
  Buffer acc = CreateBuffer("Acc", DType::Int(32), {Expr(spec.rows * per_row)});
  Buffer out = CreateBuffer("Out", DType::Int(32), {Expr(spec.rows * per_row)});
  Var i("i");
  Expr in = i * spec.row_in, o = i * per_row;
  auto dot = [&](int offset, int lanes, bool broadcast_a) {
    Expr acc_v = lanes == 1 ? Load::make(acc, o + offset) : Load::make(acc, Ramp1(o + offset, lanes));
    Expr a_v = broadcast_a ? Load::make(a, Ramp1(i * spec.broadcast_stride + spec.broadcast_offset, g))
                           : Load::make(a, Ramp1(in, g * lanes));
    Expr b_v = Load::make(b, Ramp1(in, g * lanes));
    Expr index = lanes == 1 ? o + offset : Ramp1(o + offset, lanes);
    return Store::make(out, spec.dot(acc_v, a_v, b_v), index);
  };
  Stmt body = For::make(i, 0, spec.rows, ForKind::kSerial,
                        Seq::make({dot(0, 16, false), dot(16, 8, false), dot(24, 4, false), dot(28, 1, false),
                                   dot(29, 16, true)}));
  KernelCase c;
  c.func = LoweredFunc{spec.name, {a, b, acc, out}, body, 0};
  c.make_args = [spec] {
    std::vector<HostArray> args = {HostArray(spec.a_type, spec.rows * spec.row_in),
                                   HostArray(spec.b_type, spec.rows * spec.row_in),
                                   HostArray(DType::Int(32), spec.rows * per_row),
                                   HostArray(DType::Int(32), spec.rows * per_row)};
    spec.fill(args);
    return args;
  };
  c.reference = [spec](std::vector<HostArray>& args) {
    const int gr = spec.group;
    for (int r = 0; r < spec.rows; ++r) {
      auto run = [&](int offset, int lanes, bool broadcast_a) {
        for (int l = 0; l < lanes; ++l) {
          int64_t sum = args[2].as<int32_t>()[r * per_row + offset + l];
          for (int j = 0; j < gr; ++j) {
            int ai = broadcast_a ? r * spec.broadcast_stride + spec.broadcast_offset + j : r * spec.row_in + gr * l + j;
            sum += IntAt(args[0], ai) * IntAt(args[1], r * spec.row_in + gr * l + j);
          }
          args[3].as<int32_t>()[r * per_row + offset + l] = static_cast<int32_t>(static_cast<uint32_t>(sum));
        }
      };
      run(0, 16, false);
      run(16, 8, false);
      run(24, 4, false);
      run(28, 1, false);
      run(29, 16, true);
    }
  };
  c.outputs = {3};
  return c;
}

// The 4-way u8 x s8 dot product at every width a schedule uses (16, 8, 4 lanes and
// scalar), in its broadcast form, at the extremes (255 x -128 and 255 x 127 next to
// accumulators that wrap past INT32_MIN and INT32_MAX) and on mixed values.
// What the two 4-way 8-bit dot products' cases share: three rows of 64 operands, the
// broadcast group every 4.
DotSpec Dot4Spec(const char* name, DType a_type, std::function<Expr(Expr, Expr, Expr)> dot) {
  DotSpec spec;
  spec.name = name;
  spec.group = 4;
  spec.a_type = a_type;
  spec.b_type = DType::Int(8);
  spec.rows = 3;
  spec.row_in = 64;
  spec.broadcast_stride = 4;
  spec.dot = std::move(dot);
  return spec;
}

KernelCase Dot4U8S8() {
  DotSpec spec = Dot4Spec("dot4_u8s8", DType::UInt(8), [](Expr acc, Expr a, Expr b) { return dot4_u8s8(acc, a, b); });
  spec.fill = [](std::vector<HostArray>& args) {
    const int per_row = 45;
    for (int k = 0; k < 64; ++k) {
      args[0].as<uint8_t>()[k] = 255;
      args[1].as<int8_t>()[k] = -128;
      args[0].as<uint8_t>()[64 + k] = 255;
      args[1].as<int8_t>()[64 + k] = 127;
      args[0].as<uint8_t>()[128 + k] = static_cast<uint8_t>((k * 97 + 13) % 256);
      args[1].as<int8_t>()[128 + k] = static_cast<int8_t>((k * 59 + 7) % 256 - 128);
    }
    for (int k = 0; k < per_row; ++k) {
      args[2].as<int32_t>()[k] = std::numeric_limits<int32_t>::min() + 1000 * k;  // wraps below INT32_MIN
      args[2].as<int32_t>()[per_row + k] = std::numeric_limits<int32_t>::max() - 1000 * k;  // wraps above INT32_MAX
      args[2].as<int32_t>()[2 * per_row + k] = k * 12345 - 200000;
    }
  };
  return DotCase(spec);
}

// The 4-way s8 x s8 dot product (AArch64's sdot) at the same widths, in its broadcast form,
// at the extremes (-128 x -128, whose four products sum to 65536, and 127 x -128, next to
// accumulators that wrap past INT32_MAX and INT32_MIN) and on mixed values.
KernelCase Dot4S8S8() {
  DotSpec spec = Dot4Spec("dot4_s8s8", DType::Int(8), [](Expr acc, Expr a, Expr b) { return dot4_s8s8(acc, a, b); });
  spec.fill = [](std::vector<HostArray>& args) {
    const int per_row = 45;
    for (int k = 0; k < 64; ++k) {
      args[0].as<int8_t>()[k] = -128;
      args[1].as<int8_t>()[k] = -128;
      args[0].as<int8_t>()[64 + k] = 127;
      args[1].as<int8_t>()[64 + k] = -128;
      args[0].as<int8_t>()[128 + k] = static_cast<int8_t>((k * 97 + 13) % 256 - 128);
      args[1].as<int8_t>()[128 + k] = static_cast<int8_t>((k * 59 + 7) % 256 - 128);
    }
    for (int k = 0; k < per_row; ++k) {
      args[2].as<int32_t>()[k] = std::numeric_limits<int32_t>::max() - 1000 * k;  // wraps above INT32_MAX
      args[2].as<int32_t>()[per_row + k] = std::numeric_limits<int32_t>::min() + 1000 * k;  // wraps below INT32_MIN
      args[2].as<int32_t>()[2 * per_row + k] = k * 12345 - 200000;
    }
  };
  return DotCase(spec);
}

// The 2-way int16 dot product (pmaddwd + add) at the same widths, in its broadcast form,
// at the extremes: -32768 x -32768 pairs (pmaddwd's one wrapping pair sum) and 32767 x
// -32768, next to accumulators that wrap past INT32_MAX and INT32_MIN, and on the centred
// 8-bit values the int8 templates multiply ([-255, 255]).
KernelCase Dot2I16() {
  DotSpec spec;
  spec.name = "dot2_i16";
  spec.group = 2;
  spec.a_type = DType::Int(16);
  spec.b_type = DType::Int(16);
  spec.rows = 4;
  spec.row_in = 32;
  spec.broadcast_stride = 32;
  spec.broadcast_offset = 6;
  spec.dot = [](Expr acc, Expr a, Expr b) { return dot2_i16(acc, a, b); };
  spec.fill = [](std::vector<HostArray>& args) {
    const int per_row = 45;
    for (int k = 0; k < 32; ++k) {
      args[0].as<int16_t>()[k] = -32768;
      args[1].as<int16_t>()[k] = -32768;
      args[0].as<int16_t>()[32 + k] = 32767;
      args[1].as<int16_t>()[32 + k] = -32768;
      args[0].as<int16_t>()[64 + k] = static_cast<int16_t>((k * 97 + 13) % 511 - 255);
      args[1].as<int16_t>()[64 + k] = static_cast<int16_t>((k * 59 + 7) % 511 - 255);
      args[0].as<int16_t>()[96 + k] = static_cast<int16_t>(k * 2011 - 31000);
      args[1].as<int16_t>()[96 + k] = static_cast<int16_t>(30000 - k * 1777);
    }
    for (int k = 0; k < per_row; ++k) {
      args[2].as<int32_t>()[k] = std::numeric_limits<int32_t>::max() - 1000 * k;  // 2^31 more wraps
      args[2].as<int32_t>()[per_row + k] = std::numeric_limits<int32_t>::min() + 1000 * k;
      args[2].as<int32_t>()[2 * per_row + k] = k * 12345 - 200000;
      args[2].as<int32_t>()[3 * per_row + k] = -k * 54321;
    }
  };
  return DotCase(spec);
}

// ------------------------------------------------------------------ strided_predicated

KernelCase StridedPredicated() {
  const int n_out = 20, lanes = 8, chunks = 3;
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(64)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(n_out)});
  Var i("i");
  Expr out_index = Ramp1(i * lanes, lanes);
  Expr in_bounds = out_index < Broadcast::make(I64(n_out), lanes);
  Expr gathered = Load::make(x, Ramp::make(i * lanes * 2, I64(2), lanes), in_bounds);
  Stmt body = For::make(i, 0, chunks, ForKind::kSerial,
                        Store::make(y, gathered * Broadcast::make(Expr(2.0f), lanes), out_index, in_bounds));
  KernelCase c;
  c.func = LoweredFunc{"strided_predicated", {x, y}, body, 0};
  c.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), 64), HostArray(DType::Float(32), n_out)};
    FillUniform(args[0], -3, 3, 5);
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int k = 0; k < n_out; ++k) args[1].as<float>()[k] = args[0].as<float>()[2 * k] * 2.0f;
  };
  c.outputs = {1};
  return c;
}

// ------------------------------------------------------------------ workspace_reverse

KernelCase WorkspaceReverse() {
  const int n = 100;
  const int64_t offset = 64;
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(n)});
  Buffer tmp = CreateBuffer("tmp", DType::Float(32), {Expr(n)}, MemoryScope::kWorkspace);
  Var i("i"), j("j");
  Stmt body = Allocate::make(
      tmp, {Expr(n)}, 64, MemoryScope::kWorkspace,
      Seq::make({For::make(i, 0, n, ForKind::kSerial, Store::make(tmp, Load::make(x, i) * 3.0f, i)),
                 For::make(j, 0, n, ForKind::kParallel, Store::make(y, Load::make(tmp, I64(n - 1) - j), j))}),
      offset);
  KernelCase c;
  c.func = LoweredFunc{"workspace_reverse", {x, y}, body, offset + n * 4};
  c.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), n), HostArray(DType::Float(32), n)};
    FillUniform(args[0], -3, 3, 6);
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int k = 0; k < n; ++k) args[1].as<float>()[k] = args[0].as<float>()[n - 1 - k] * 3.0f;
  };
  c.outputs = {1};
  return c;
}

// ------------------------------------------------------------------ failing_assert

KernelCase FailingAssert() {
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(4)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(4)});
  Var i("i");
  Stmt body = For::make(i, 0, 4, ForKind::kParallel,
                        Seq::make({AssertStmt::make(Load::make(x, i) < 2.5f, "X must stay below 2.5"),
                                   Store::make(y, Load::make(x, i), i)}));
  KernelCase c;
  c.func = LoweredFunc{"failing_assert", {x, y}, body, 0};
  c.make_args = [] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), 4), HostArray(DType::Float(32), 4)};
    for (int k = 0; k < 4; ++k) args[0].as<float>()[k] = static_cast<float>(k);
    return args;
  };
  c.reference = [](std::vector<HostArray>&) {};
  c.expected_status = -1;
  return c;
}

// ------------------------------------------------------------------ odd_widths

// Vector widths that are not powers of two (40, 7 lanes with a predicate): the
// LLVM backend splits them into power-of-two pieces.
KernelCase OddWidths() {
  const int n = 120;
  Buffer x = CreateBuffer("X", DType::Float(32), {Expr(n)});
  Buffer y = CreateBuffer("Y", DType::Float(32), {Expr(n)});
  Buffer z = CreateBuffer("Z", DType::Float(32), {Expr(21)});
  Var i("i"), j("j");
  Expr wide = Ramp1(i * 40, 40);
  Stmt accumulate = For::make(i, 0, n / 40, ForKind::kSerial,
                              Store::make(y, Load::make(y, wide) + Load::make(x, wide) * Broadcast::make(Expr(2.0f), 40), wide));
  Expr narrow = Ramp1(j * 7, 7);
  Expr keep = narrow < Broadcast::make(I64(19), 7);
  Stmt predicated = For::make(j, 0, 3, ForKind::kSerial,
                              Store::make(z, exp(Load::make(x, narrow)) - Broadcast::make(Expr(1.0f), 7), narrow, keep));
  KernelCase c;
  c.func = LoweredFunc{"odd_widths", {x, y, z}, Seq::make({accumulate, predicated}), 0};
  c.make_args = [=] {
    std::vector<HostArray> args = {HostArray(DType::Float(32), n), HostArray(DType::Float(32), n), HostArray(DType::Float(32), 21)};
    FillUniform(args[0], -2, 2, 7);
    FillUniform(args[1], -2, 2, 8);
    for (int k = 0; k < 21; ++k) args[2].as<float>()[k] = 42.0f;
    return args;
  };
  c.reference = [=](std::vector<HostArray>& args) {
    for (int k = 0; k < n; ++k) args[1].as<float>()[k] += args[0].as<float>()[k] * 2.0f;
    for (int k = 0; k < 19; ++k) args[2].as<float>()[k] = std::exp(args[0].as<float>()[k]) - 1.0f;
  };
  c.outputs = {1, 2};
  c.tolerance = 2e-6;
  return c;
}

int32_t RunTasks(void* pool, agate_parallel_task_fn task, void* closure, int32_t num_tasks) {
  int threads = *static_cast<int*>(pool);
  if (threads <= 1) {
    for (int32_t t = 0; t < num_tasks; ++t) {
      if (int32_t status = task(t, num_tasks, closure)) return status;
    }
    return 0;
  }
  std::atomic<int32_t> first_error{0};
  std::vector<std::thread> workers;
  for (int32_t t = 0; t < num_tasks; ++t) {
    workers.emplace_back([&, t] {
      int32_t status = task(t, num_tasks, closure);
      int32_t expected = 0;
      if (status != 0) first_error.compare_exchange_strong(expected, status);
    });
  }
  for (auto& w : workers) w.join();
  return first_error.load();
}

}  // namespace

std::vector<KernelCase> AllKernelCases() {
  return {ElementwiseMath(), RoundHalfEven(), MatmulTiled(), ReduceRows(), IntegerOps(), ShiftOps(), Dot4U8S8(), Dot4S8S8(), Dot2I16(),
          StridedPredicated(),
          WorkspaceReverse(), OddWidths(), FailingAssert()};
}

std::vector<LoweredFunc> AllKernelFuncs() {
  std::vector<LoweredFunc> funcs;
  for (const KernelCase& c : AllKernelCases()) funcs.push_back(c.func);
  return funcs;
}

std::string CompareArrays(const HostArray& got, const HostArray& want, double tolerance) {
  std::ostringstream out;
  int mismatches = 0;
  for (size_t i = 0; i < want.count() && mismatches < 5; ++i) {
    double g = 0, w = 0;
    if (want.dtype() == DType::Float(32)) {
      g = got.as<float>()[i];
      w = want.as<float>()[i];
    } else if (want.dtype() == DType::Int(32)) {
      g = got.as<int32_t>()[i];
      w = want.as<int32_t>()[i];
    } else if (want.dtype().is_bool()) {
      g = got.as<uint8_t>()[i];
      w = want.as<uint8_t>()[i];
    } else {
      return "CompareArrays: unhandled dtype " + want.dtype().ToString();
    }
    // Equal values first: infinities (whose difference is NaN).
    bool ok = std::isnan(w) ? std::isnan(g) : g == w || std::fabs(g - w) <= tolerance * std::max(1.0, std::fabs(w));
    if (!ok) {
      out << "[" << i << "] got " << g << " want " << w << "; ";
      ++mismatches;
    }
  }
  return out.str();
}

TestContext::TestContext(int threads, size_t workspace_bytes)
    : workspace(DType::UInt(8), std::max<size_t>(workspace_bytes, 1)) {
  static int one = 1, two = 2, many = 4;
  int* pool = threads <= 1 ? &one : threads == 2 ? &two : &many;
  ctx.abi_version = AGATE_KERNEL_ABI_VERSION;
  ctx.parallel_for = RunTasks;
  ctx.pool = pool;
  ctx.num_threads = threads;
  ctx.workspace = workspace_bytes ? workspace.data() : nullptr;
  ctx.workspace_bytes = workspace_bytes;
}

std::string RunAndCheck(const KernelCase& c, agate_kernel_fn kernel, int threads) {
  std::vector<HostArray> args = c.make_args();
  std::vector<void*> pointers;
  for (const HostArray& a : args) pointers.push_back(a.data());
  TestContext context(threads, static_cast<size_t>(c.func.workspace_bytes));
  int32_t status = kernel(pointers.data(), &context.ctx);
  return CheckOutputs(c, status, args);
}

std::string DriverSource(const std::vector<LoweredFunc>& funcs) {
  std::ostringstream src;
  src << "/* Test driver: runs one agate kernel on arguments read from a file. */\n"
         "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
         "#include \"agate/kernel_abi.h\"\n\n";
  for (const LoweredFunc& f : funcs) src << "int32_t " << f.name << "(void* const* args, const agate_kernel_ctx* ctx);\n";
  src << "\nstatic int32_t run_tasks(void* pool, agate_parallel_task_fn task, void* closure, int32_t n) {\n"
         "  int32_t t;\n  (void)pool;\n"
         "  for (t = 0; t < n; ++t) { int32_t s = task(t, n, closure); if (s) return s; }\n  return 0;\n}\n\n"
         "/* malloc-based so that newlib (no aligned_alloc) links it too. */\n"
         "static void* alloc64(uint64_t bytes) {\n"
         "  char* p = (char*)malloc((size_t)bytes + 128);\n"
         "  if (!p) exit(10);\n"
         "  memset(p, 0, (size_t)bytes + 128);\n"
         "  return (void*)(((uintptr_t)p + 63) & ~(uintptr_t)63);\n}\n\n"
         "static agate_kernel_fn find(const char* name) {\n";
  for (const LoweredFunc& f : funcs) src << "  if (strcmp(name, \"" << f.name << "\") == 0) return " << f.name << ";\n";
  src << "  return 0;\n}\n\n"
         "int main(int argc, char** argv) {\n"
         "  FILE* in; FILE* out; uint32_t count, i; uint64_t sizes[16], workspace_bytes; void* args[16];\n"
         "  agate_kernel_ctx ctx; int32_t status; agate_kernel_fn kernel;\n"
         "  if (argc != 4) return 2;\n"
         "  kernel = find(argv[1]);\n  if (!kernel) return 3;\n"
         "  in = fopen(argv[2], \"rb\");\n  if (!in) return 4;\n"
         "  if (fread(&count, 4, 1, in) != 1 || count > 16) return 5;\n"
         "  for (i = 0; i < count; ++i) {\n"
         "    if (fread(&sizes[i], 8, 1, in) != 1) return 6;\n"
         "    args[i] = alloc64(sizes[i]);\n"
         "    if (sizes[i] && fread(args[i], 1, sizes[i], in) != sizes[i]) return 7;\n"
         "  }\n"
         "  if (fread(&workspace_bytes, 8, 1, in) != 1) return 8;\n  fclose(in);\n"
         "  ctx.abi_version = AGATE_KERNEL_ABI_VERSION;\n  ctx.parallel_for = run_tasks;\n  ctx.pool = 0;\n"
         "  ctx.num_threads = 3;\n  ctx.workspace_bytes = workspace_bytes;\n"
         "  ctx.workspace = workspace_bytes ? alloc64(workspace_bytes) : 0;\n"
         "  status = kernel(args, &ctx);\n"
         "  out = fopen(argv[3], \"wb\");\n  if (!out) return 9;\n"
         "  fwrite(&status, 4, 1, out);\n"
         "  for (i = 0; i < count; ++i) fwrite(args[i], 1, sizes[i], out);\n"
         "  fclose(out);\n  return 0;\n}\n";
  return src.str();
}

void WriteArgsFile(const std::string& path, const std::vector<HostArray>& args, uint64_t workspace_bytes) {
  std::ofstream out(path, std::ios::binary);
  uint32_t count = static_cast<uint32_t>(args.size());
  out.write(reinterpret_cast<const char*>(&count), 4);
  for (const HostArray& a : args) {
    uint64_t bytes = a.bytes();
    out.write(reinterpret_cast<const char*>(&bytes), 8);
    out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(bytes));
  }
  out.write(reinterpret_cast<const char*>(&workspace_bytes), 8);
}

int32_t ReadResultsFile(const std::string& path, std::vector<HostArray>* args) {
  std::ifstream in(path, std::ios::binary);
  int32_t status = 0x7fffffff;
  if (!in.read(reinterpret_cast<char*>(&status), 4)) return status;
  for (HostArray& a : *args) in.read(static_cast<char*>(a.data()), static_cast<std::streamsize>(a.bytes()));
  return status;
}

int RunCommand(const std::string& command, std::string* output) {
  std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output->append(buffer, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool HaveTool(const std::string& tool) {
  std::string output;
  return RunCommand("command -v " + tool, &output) == 0;
}

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/agate-codegen-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) return "";
  return buffer.data();
}

void WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string KernelAbiIncludeDir() {
  // Under bazel test the runfiles tree holds the header at its workspace path.
  for (const char* candidate : {"c_api/include", "../c_api/include"}) {
    struct stat info;
    if (stat((std::string(candidate) + "/agate/kernel_abi.h").c_str(), &info) == 0) {
      char* absolute = realpath(candidate, nullptr);
      std::string result = absolute ? absolute : candidate;
      std::free(absolute);
      return result;
    }
  }
  return "c_api/include";
}

bool HaveCortexM4Emulation() { return HaveTool("arm-none-eabi-gcc") && HaveTool("qemu-system-arm"); }

std::string LinkCortexM4Firmware(const std::string& dir, const std::vector<std::string>& inputs,
                                 const std::vector<LoweredFunc>& funcs) {
  // mps2-an386: 4 MiB of code memory at 0, 4 MiB of RAM at 0x20000000; the core
  // boots from the vector table at 0. Newlib's rdimon start code does the rest.
  WriteTextFile(dir + "/startup.c",
                "extern void _start(void);\n"
                "extern unsigned int __stack_top;\n"
                "static void hang(void) { for (;;) {} }\n"
                "/* Enables the FPU (CP10/CP11 full access), then runs newlib's start code. */\n"
                "static void reset(void) {\n"
                "  *(volatile unsigned int*)0xE000ED88u |= 0xFu << 20;\n"
                "  __asm__ volatile(\"dsb\\n isb\");\n"
                "  _start();\n"
                "}\n"
                "__attribute__((section(\".vectors\"), used)) void (*const vectors[16])(void) = {\n"
                "    (void (*)(void))&__stack_top, reset, hang, hang, hang, hang, hang, 0, 0, 0, 0, hang, hang, 0, hang, hang};\n");
  WriteTextFile(dir + "/link.ld",
                "ENTRY(_start)\n"
                "MEMORY {\n  CODE (rwx) : ORIGIN = 0x00000000, LENGTH = 4M\n  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 4M\n}\n"
                "SECTIONS {\n"
                "  .vectors : { KEEP(*(.vectors)) } > CODE\n"
                "  .text : { *(.text*) KEEP(*(.init)) KEEP(*(.fini)) *(.rodata*) } > CODE\n"
                "  .ARM.extab : { *(.ARM.extab*) } > CODE\n"
                "  .ARM.exidx : { __exidx_start = .; *(.ARM.exidx*) __exidx_end = .; } > CODE\n"
                "  .preinit_array : { PROVIDE_HIDDEN(__preinit_array_start = .); KEEP(*(.preinit_array)) "
                "PROVIDE_HIDDEN(__preinit_array_end = .); } > CODE\n"
                "  .init_array : { PROVIDE_HIDDEN(__init_array_start = .); KEEP(*(SORT(.init_array.*))) "
                "KEEP(*(.init_array)) PROVIDE_HIDDEN(__init_array_end = .); } > CODE\n"
                "  .fini_array : { PROVIDE_HIDDEN(__fini_array_start = .); KEEP(*(.fini_array)) "
                "PROVIDE_HIDDEN(__fini_array_end = .); } > CODE\n"
                "  .data : { *(.data*) } > RAM\n"
                "  .bss (NOLOAD) : { __bss_start__ = .; *(.bss*) *(COMMON) . = ALIGN(8); __bss_end__ = .; } > RAM\n"
                "  end = .; __end__ = .; PROVIDE(_end = .);\n"
                "  __stack_top = ORIGIN(RAM) + LENGTH(RAM);\n"
                "}\n");
  WriteTextFile(dir + "/driver.c", DriverSource(funcs));
  std::string command = "arm-none-eabi-gcc -std=c99 -O1 -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 "
                        "-specs=rdimon.specs -T " + dir + "/link.ld -I" + KernelAbiIncludeDir() + " " + dir +
                        "/startup.c " + dir + "/driver.c";
  for (const std::string& input : inputs) command += " " + input;
  command += " -o " + dir + "/firmware.elf -lm";
  std::string log;
  return RunCommand(command, &log) == 0 ? "" : log;
}

int RunCortexM4Firmware(const std::string& dir, const std::string& kernel, std::string* log) {
  // Relative file names: newlib's semihosting command line is limited to a few
  // hundred characters, too short for test directories.
  return RunCommand("cd " + dir + " && timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none "
                    "-semihosting-config enable=on,target=native,arg=driver,arg=" + kernel +
                        ",arg=in.bin,arg=out.bin -kernel firmware.elf",
                    log);
}

std::string CheckOutputs(const KernelCase& c, int32_t status, const std::vector<HostArray>& args) {
  std::vector<HostArray> expected = c.make_args();
  c.reference(expected);
  std::ostringstream out;
  if (status != c.expected_status) out << c.func.name << ": status " << status << ", expected " << c.expected_status << ". ";
  if (c.expected_status != 0) return out.str();
  for (int index : c.outputs) {
    std::string diff = CompareArrays(args[index], expected[index], c.tolerance);
    if (!diff.empty()) out << c.func.name << " output " << c.func.params[index]->name << ": " << diff;
  }
  return out.str();
}

}  // namespace testing
}  // namespace codegen
}  // namespace agate
