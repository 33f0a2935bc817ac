// Reference kernels of RNN, GRU and LSTM, written after the equations of the ONNX specification.
#include <algorithm>
#include <cmath>
#include <functional>

#include "core/graph_eval/kernel.h"
#include "core/support/error.h"

namespace agate {
namespace graph_eval {

using namespace graph;  // the graph IR is what this layer runs
namespace {

using Tensors = std::vector<Tensor>;
using Activation = std::function<double(double)>;

bool TakesAlpha(const std::string& n) {
  return n == "Affine" || n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" || n == "HardSigmoid" ||
         n == "Elu";
}
bool TakesBeta(const std::string& n) { return n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid"; }

// ONNX's activation functions with their default alpha/beta (those of the operators they are named after).
Activation ActivationNamed(const std::string& name, const double* alpha_given, const double* beta_given) {
  double alpha = alpha_given ? *alpha_given : name == "LeakyRelu" ? 0.01 : name == "HardSigmoid" ? 0.2 : 1.0;
  double beta = beta_given ? *beta_given : name == "HardSigmoid" ? 0.5 : name == "ScaledTanh" ? 1.0 : 0.0;
  if (name == "Sigmoid") return [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  if (name == "Relu") return [](double v) { return std::max(0.0, v); };
  if (name == "Affine") return [=](double v) { return alpha * v + beta; };
  if (name == "LeakyRelu") return [=](double v) { return v >= 0 ? v : alpha * v; };
  if (name == "ThresholdedRelu") return [=](double v) { return v > alpha ? v : 0.0; };
  if (name == "ScaledTanh") return [=](double v) { return alpha * std::tanh(beta * v); };
  if (name == "HardSigmoid") return [=](double v) { return std::max(0.0, std::min(1.0, alpha * v + beta)); };
  if (name == "Elu") return [=](double v) { return v >= 0 ? v : alpha * (std::exp(v) - 1); };
  if (name == "Softsign") return [](double v) { return v / (1 + std::fabs(v)); };
  if (name == "Softplus") return [](double v) { return std::log(1 + std::exp(v)); };
  return [](double v) { return std::tanh(v); };
}

// The sizes and settings shared by every step of one recurrent node.
struct Recurrence {
  const KernelContext* ctx;
  int64_t seq, batch, input, hidden, dirs, gates;
  bool batch_major, linear_before_reset, input_forget;
  double clip;  // <= 0: none

  explicit Recurrence(const KernelContext& c) : ctx(&c) {
    const Shape& x = c.in(0).shape();
    batch_major = c.attrs().GetInt("layout", 0) != 0;
    seq = batch_major ? x[1] : x[0];
    batch = batch_major ? x[0] : x[1];
    input = x[2];
    hidden = c.in(2).shape()[2];
    dirs = c.in(1).shape()[0];
    gates = c.node.op == "LSTM" ? 4 : c.node.op == "GRU" ? 3 : 1;
    clip = c.attrs().GetFloat("clip", 0.0);
    linear_before_reset = c.attrs().GetInt("linear_before_reset", 0) != 0;
    input_forget = c.attrs().GetInt("input_forget", 0) != 0;
  }
  double Clip(double v) const { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; }
  double X(int64_t t, int64_t b, int64_t i) const {
    return ctx->in(0).GetDouble(batch_major ? (b * seq + t) * input + i : (t * batch + b) * input + i);
  }
  double W(int64_t d, int64_t row, int64_t col) const {
    return ctx->in(1).GetDouble((d * gates * hidden + row) * input + col);
  }
  double R(int64_t d, int64_t row, int64_t col) const {
    return ctx->in(2).GetDouble((d * gates * hidden + row) * hidden + col);
  }
  // Input and recurrence biases (B = [Wb, Rb] per direction).
  double Wb(int64_t d, int64_t row) const {
    return ctx->has(3) ? ctx->in(3).GetDouble(d * 2 * gates * hidden + row) : 0.0;
  }
  double Rb(int64_t d, int64_t row) const {
    return ctx->has(3) ? ctx->in(3).GetDouble(d * 2 * gates * hidden + gates * hidden + row) : 0.0;
  }
  double Peephole(int64_t d, int gate, int64_t j) const {  // gates i, o, f
    return ctx->node.op == "LSTM" && ctx->has(7) ? ctx->in(7).GetDouble(d * 3 * hidden + gate * hidden + j) : 0.0;
  }
  // Activations f, g, (h) of direction d: given ones first, then the operator's defaults.
  std::vector<Activation> Activations(int64_t d) const {
    const std::string& op = ctx->node.op;
    std::vector<std::string> defaults = op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                        : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Tanh"};
    std::vector<std::string> given = ctx->attrs().GetStrings("activations", {});
    // activation_alpha/beta are consumed in the order of the listed activations, by those that take them
    // (as ONNX Runtime reads them); an activation past the lists gets its default.
    std::vector<double> alphas = ctx->attrs().GetFloats("activation_alpha", {});
    std::vector<double> betas = ctx->attrs().GetFloats("activation_beta", {});
    std::vector<Activation> listed;
    size_t next_alpha = 0, next_beta = 0;
    for (const std::string& name : given) {
      const double* alpha = TakesAlpha(name) && next_alpha < alphas.size() ? &alphas[next_alpha++] : nullptr;
      const double* beta = TakesBeta(name) && next_beta < betas.size() ? &betas[next_beta++] : nullptr;
      listed.push_back(ActivationNamed(name, alpha, beta));
    }
    std::vector<Activation> result;
    for (size_t k = 0; k < defaults.size(); ++k) {
      size_t index = d * defaults.size() + k;
      result.push_back(index < listed.size() ? listed[index] : ActivationNamed(defaults[k], nullptr, nullptr));
    }
    return result;
  }
};

// State carried across time steps for one (direction, batch) pair.
struct State {
  std::vector<double> h, c;
};

// One time step: returns the new hidden state (and updates the cell state for LSTM).
std::vector<double> Step(const Recurrence& r, int64_t d, int64_t b, int64_t t, const std::vector<Activation>& act,
                         State* state) {
  int64_t H = r.hidden, rows = r.gates * H;
  const std::vector<double>& h = state->h;
  // Pre-activations x W^T + Wb and h R^T + Rb, kept apart because GRU combines them differently.
  std::vector<double> xw(rows), hr(rows);
  for (int64_t row = 0; row < rows; ++row) {
    xw[row] = r.Wb(d, row);
    hr[row] = r.Rb(d, row);
    for (int64_t i = 0; i < r.input; ++i) xw[row] += r.X(t, b, i) * r.W(d, row, i);
    for (int64_t j = 0; j < H; ++j) hr[row] += h[j] * r.R(d, row, j);
  }
  std::vector<double> next(H);
  const std::string& op = r.ctx->node.op;
  if (op == "RNN") {
    for (int64_t j = 0; j < H; ++j) next[j] = act[0](r.Clip(xw[j] + hr[j]));
  } else if (op == "GRU") {  // gate rows: z, r, h
    std::vector<double> z(H), reset(H);
    for (int64_t j = 0; j < H; ++j) {
      z[j] = act[0](r.Clip(xw[j] + hr[j]));
      reset[j] = act[0](r.Clip(xw[H + j] + hr[H + j]));
    }
    for (int64_t j = 0; j < H; ++j) {
      double recurrent;
      if (r.linear_before_reset) {
        recurrent = reset[j] * hr[2 * H + j];
      } else {
        recurrent = r.Rb(d, 2 * H + j);
        for (int64_t k = 0; k < H; ++k) recurrent += reset[k] * h[k] * r.R(d, 2 * H + j, k);
      }
      double candidate = act[1](r.Clip(xw[2 * H + j] + recurrent));
      next[j] = (1 - z[j]) * candidate + z[j] * h[j];
    }
  } else {  // LSTM gate rows: i, o, f, c
    std::vector<double>& c = state->c;
    for (int64_t j = 0; j < H; ++j) {
      double in_gate = act[0](r.Clip(xw[j] + hr[j] + r.Peephole(d, 0, j) * c[j]));
      double forget = act[0](r.Clip(xw[2 * H + j] + hr[2 * H + j] + r.Peephole(d, 2, j) * c[j]));
      if (r.input_forget) forget = 1 - in_gate;
      double candidate = act[1](r.Clip(xw[3 * H + j] + hr[3 * H + j]));
      double cell = forget * c[j] + in_gate * candidate;
      double out_gate = act[0](r.Clip(xw[H + j] + hr[H + j] + r.Peephole(d, 1, j) * cell));
      next[j] = out_gate * act[2](cell);
      c[j] = cell;
    }
  }
  return next;
}

Tensors Recurrent(const KernelContext& ctx) {
  Recurrence r(ctx);
  int64_t H = r.hidden;
  std::string direction = ctx.attrs().GetString("direction", "forward");
  std::vector<double> y(ctx.outputs[0].numel(), 0.0), yh(r.dirs * r.batch * H), yc(r.dirs * r.batch * H);
  for (int64_t d = 0; d < r.dirs; ++d) {
    bool reverse = direction == "reverse" || (direction == "bidirectional" && d == 1);
    std::vector<Activation> act = r.Activations(d);
    for (int64_t b = 0; b < r.batch; ++b) {
      State state{std::vector<double>(H, 0.0), std::vector<double>(H, 0.0)};
      // initial_h/initial_c are [dirs, batch, H], or [batch, dirs, H] with layout 1 (as Y_h and Y_c).
      for (int64_t j = 0; j < H; ++j) {
        int64_t at = r.batch_major ? (b * r.dirs + d) * H + j : (d * r.batch + b) * H + j;
        if (ctx.has(5)) state.h[j] = ctx.in(5).GetDouble(at);
        if (ctx.node.op == "LSTM" && ctx.has(6)) state.c[j] = ctx.in(6).GetDouble(at);
      }
      // Steps past a sequence's length leave Y at zero and the state unchanged.
      int64_t length = ctx.has(4) ? ctx.in(4).GetInt(b) : r.seq;
      for (int64_t step = 0; step < length; ++step) {
        int64_t t = reverse ? length - 1 - step : step;
        state.h = Step(r, d, b, t, act, &state);
        for (int64_t j = 0; j < H; ++j) {
          int64_t at = r.batch_major ? ((b * r.seq + t) * r.dirs + d) * H + j : ((t * r.dirs + d) * r.batch + b) * H + j;
          y[at] = state.h[j];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        int64_t at = r.batch_major ? (b * r.dirs + d) * H + j : (d * r.batch + b) * H + j;
        yh[at] = state.h[j];
        yc[at] = state.c[j];
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

}  // namespace graph_eval
}  // namespace agate
