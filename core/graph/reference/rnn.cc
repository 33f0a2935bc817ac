// Reference kernels of RNN, GRU and LSTM, written after the equations of the ONNX specification.
#include <algorithm>
#include <cmath>

#include "core/graph/reference/kernel.h"
#include "core/support/error.h"

namespace agate {
namespace graph {
namespace reference {
namespace {

using Tensors = std::vector<Tensor>;
using Activation = std::function<double(double)>;

Activation ActivationNamed(const std::string& name) {
  if (name == "Sigmoid") return [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  if (name == "Relu") return [](double v) { return std::max(0.0, v); };
  return [](double v) { return std::tanh(v); };
}

struct Recurrence {
  std::string op;
  int64_t seq, batch, input, hidden, dirs, gates;
  bool batch_major;
  double clip;  // <= 0: none
  bool linear_before_reset, input_forget;
  std::vector<std::string> activations;  // per direction: f, g, (h)
};

// X[t][b][i] for either layout.
double XAt(const Tensor& x, const Recurrence& r, int64_t t, int64_t b, int64_t i) {
  return r.batch_major ? x.GetDouble((b * r.seq + t) * r.input + i) : x.GetDouble((t * r.batch + b) * r.input + i);
}

Tensors Recurrent(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Recurrence r;
  r.op = ctx.node.op;
  r.batch_major = ctx.attrs().GetInt("layout", 0) != 0;
  r.seq = r.batch_major ? x.shape()[1] : x.shape()[0];
  r.batch = r.batch_major ? x.shape()[0] : x.shape()[1];
  r.input = x.shape()[2];
  r.hidden = ctx.in(2).shape()[2];
  r.dirs = ctx.in(1).shape()[0];
  r.gates = r.op == "LSTM" ? 4 : r.op == "GRU" ? 3 : 1;
  r.clip = ctx.attrs().GetFloat("clip", 0.0);
  r.linear_before_reset = ctx.attrs().GetInt("linear_before_reset", 0) != 0;
  r.input_forget = ctx.attrs().GetInt("input_forget", 0) != 0;
  std::vector<std::string> defaults = r.op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                      : r.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Tanh"};
  std::vector<std::string> given;
  for (const std::string& a : ctx.attrs().GetStrings("activations", {})) given.push_back(a);
  size_t per_dir = defaults.size();
  std::string direction = ctx.attrs().GetString("direction", "forward");
  const Tensor* b = ctx.has(3) ? &ctx.in(3) : nullptr;
  const Tensor* lens = ctx.has(4) ? &ctx.in(4) : nullptr;
  const Tensor* h0 = ctx.has(5) ? &ctx.in(5) : nullptr;
  const Tensor* c0 = r.op == "LSTM" && ctx.has(6) ? &ctx.in(6) : nullptr;
  const Tensor* p = r.op == "LSTM" && ctx.has(7) ? &ctx.in(7) : nullptr;
  int64_t H = r.hidden, G = r.gates;
  std::vector<double> y(ctx.outputs[0].numel(), 0.0), yh(r.dirs * r.batch * H), yc(r.dirs * r.batch * H);
  auto clip = [&](double v) { return r.clip > 0 ? std::min(r.clip, std::max(-r.clip, v)) : v; };
  for (int64_t d = 0; d < r.dirs; ++d) {
    bool reverse = direction == "reverse" || (direction == "bidirectional" && d == 1);
    std::vector<Activation> act;
    for (size_t k = 0; k < per_dir; ++k) {
      size_t index = d * per_dir + k;
      act.push_back(ActivationNamed(index < given.size() ? given[index] : defaults[k]));
    }
    auto w = [&](int64_t row, int64_t col) { return ctx.in(1).GetDouble((d * G * H + row) * r.input + col); };
    auto rw = [&](int64_t row, int64_t col) { return ctx.in(2).GetDouble((d * G * H + row) * H + col); };
    auto wb = [&](int64_t row) { return b ? b->GetDouble(d * 2 * G * H + row) : 0.0; };
    auto rb = [&](int64_t row) { return b ? b->GetDouble(d * 2 * G * H + G * H + row) : 0.0; };
    for (int64_t bt = 0; bt < r.batch; ++bt) {
      std::vector<double> h(H), c(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0 ? h0->GetDouble((d * r.batch + bt) * H + j) : 0.0;
        c[j] = c0 ? c0->GetDouble((d * r.batch + bt) * H + j) : 0.0;
      }
      int64_t len = lens ? lens->GetInt(bt) : r.seq;
      for (int64_t step = 0; step < len; ++step) {
        int64_t t = reverse ? len - 1 - step : step;
        // Pre-activations of every gate row: x W^T + Wb, and h R^T + Rb kept apart for GRU.
        std::vector<double> xw(G * H), hr(G * H);
        for (int64_t row = 0; row < G * H; ++row) {
          double a = wb(row), s = rb(row);
          for (int64_t i = 0; i < r.input; ++i) a += XAt(x, r, t, bt, i) * w(row, i);
          for (int64_t j = 0; j < H; ++j) s += h[j] * rw(row, j);
          xw[row] = a;
          hr[row] = s;
        }
        std::vector<double> next(H);
        if (r.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) next[j] = act[0](clip(xw[j] + hr[j]));
        } else if (r.op == "GRU") {  // gate rows: z, r, h
          std::vector<double> z(H), reset(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = act[0](clip(xw[j] + hr[j]));
            reset[j] = act[0](clip(xw[H + j] + hr[H + j]));
          }
          for (int64_t j = 0; j < H; ++j) {
            double recurrent;
            if (r.linear_before_reset) {
              recurrent = reset[j] * hr[2 * H + j];
            } else {
              recurrent = rb(2 * H + j);
              for (int64_t k = 0; k < H; ++k) recurrent += reset[k] * h[k] * rw(2 * H + j, k);
            }
            double candidate = act[1](clip(xw[2 * H + j] + recurrent));
            next[j] = (1 - z[j]) * candidate + z[j] * h[j];
          }
        } else {  // LSTM gate rows: i, o, f, c; peepholes: i, o, f
          auto peep = [&](int k, int64_t j) { return p ? p->GetDouble(d * 3 * H + k * H + j) : 0.0; };
          std::vector<double> cell(H);
          for (int64_t j = 0; j < H; ++j) {
            double in_gate = act[0](clip(xw[j] + hr[j] + peep(0, j) * c[j]));
            double forget = act[0](clip(xw[2 * H + j] + hr[2 * H + j] + peep(2, j) * c[j]));
            if (r.input_forget) forget = 1 - in_gate;
            double candidate = act[1](clip(xw[3 * H + j] + hr[3 * H + j]));
            cell[j] = forget * c[j] + in_gate * candidate;
            double out_gate = act[0](clip(xw[H + j] + hr[H + j] + peep(1, j) * cell[j]));
            next[j] = out_gate * act[2](cell[j]);
          }
          c = cell;
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) {
          int64_t at = r.batch_major ? ((bt * r.seq + t) * r.dirs + d) * H + j : ((t * r.dirs + d) * r.batch + bt) * H + j;
          y[at] = h[j];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        int64_t at = r.batch_major ? (bt * r.dirs + d) * H + j : (d * r.batch + bt) * H + j;
        yh[at] = h[j];
        yc[at] = c[j];
      }
    }
  }
  Tensors out{Tensor::FromDoubles(ctx.outputs[0].dtype, ctx.outputs[0].shape, y)};
  if (ctx.outputs.size() > 1) out.push_back(Tensor::FromDoubles(ctx.outputs[1].dtype, ctx.outputs[1].shape, yh));
  if (ctx.outputs.size() > 2) out.push_back(Tensor::FromDoubles(ctx.outputs[2].dtype, ctx.outputs[2].shape, yc));
  return out;
}

}  // namespace

void RegisterRecurrentKernels(KernelRegistry* r) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) r->Register(op, Recurrent);
}

}  // namespace reference
}  // namespace graph
}  // namespace agate
