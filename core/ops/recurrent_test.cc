// RNN, GRU and LSTM compiled (one kernel with the time loop inside) against the reference interpreter:
// every direction and layout, sequence lengths, initial states, peepholes, clip, input_forget,
// linear_before_reset, activations per direction, constant and run-time weights, outputs left out.
#include <gtest/gtest.h>

#include "core/graph/testing/graph_builder.h"
#include "core/ops/recurrent.h"
#include "core/ops/testing/reference_check.h"
#include "core/support/error.h"

namespace agate {
namespace ops {
namespace {

using graph::Attribute;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::RandomTensor;
using testing::CheckAgainstReference;
using testing::CheckOptions;

const ir::DType kF32 = ir::DType::Float(32);

struct Case {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t seq = 4, batch = 3, input = 5, hidden = 6;
  bool bias = true, lens = false, initial = false, peephole = false, constant_weights = true;
  std::vector<std::string> activations;
  std::vector<double> alpha, beta;
  double clip = 0;
  int64_t input_forget = 0, linear_before_reset = 0;
  std::vector<bool> outputs{true, true, true};  // Y, Y_h, Y_c
  std::vector<int64_t> lengths;                 // with lens (default: a mix that includes 0 and seq)
};

int64_t Gates(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

Graph Build(const Case& c) {
  Graph g;
  int64_t dirs = c.direction == "bidirectional" ? 2 : 1, gh = Gates(c.op) * c.hidden;
  graph::Shape x = c.layout ? graph::Shape{c.batch, c.seq, c.input} : graph::Shape{c.seq, c.batch, c.input};
  graph::Shape state = c.layout ? graph::Shape{c.batch, dirs, c.hidden} : graph::Shape{dirs, c.batch, c.hidden};
  g.AddInput("x", TensorType{kF32, x});
  std::vector<std::string> in{"x", "w", "r", "", "", "", "", ""};
  // Weights scaled so that the gates are neither saturated nor linear.
  if (c.constant_weights) {
    g.AddConstant("w", RandomTensor({dirs, gh, c.input}, 11, -0.6, 0.6));
    g.AddConstant("r", RandomTensor({dirs, gh, c.hidden}, 12, -0.6, 0.6));
  } else {
    g.AddInput("w", TensorType{kF32, {dirs, gh, c.input}});
    g.AddInput("r", TensorType{kF32, {dirs, gh, c.hidden}});
  }
  if (c.bias) {
    g.AddConstant("b", RandomTensor({dirs, 2 * gh}, 13, -0.5, 0.5));
    in[3] = "b";
  }
  if (c.lens) {
    std::vector<int64_t> lengths = c.lengths;
    for (int64_t b = static_cast<int64_t>(lengths.size()); b < c.batch; ++b) lengths.push_back((b * 3 + 1) % (c.seq + 1));
    g.AddConstant("lens", graph::Tensor::FromInts(ir::DType::Int(32), {c.batch}, lengths));
    in[4] = "lens";
  }
  if (c.initial) {
    g.AddInput("h0", TensorType{kF32, state});
    in[5] = "h0";
    if (c.op == "LSTM") {
      g.AddInput("c0", TensorType{kF32, state});
      in[6] = "c0";
    }
  }
  if (c.peephole) {
    g.AddConstant("p", RandomTensor({dirs, 3 * c.hidden}, 14, -0.5, 0.5));
    in[7] = "p";
  }
  while (!in.empty() && in.back().empty()) in.pop_back();
  std::vector<std::string> names{"y", "y_h", "y_c"};
  std::vector<std::string> out, results;
  int outs = c.op == "LSTM" ? 3 : 2;
  for (int i = 0; i < outs; ++i) {
    out.push_back(c.outputs[i] ? names[i] : "");
    if (c.outputs[i]) results.push_back(names[i]);
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  std::vector<std::pair<std::string, Attribute>> attrs{{"hidden_size", Attribute(c.hidden)},
                                                        {"direction", Attribute(c.direction)},
                                                        {"layout", Attribute(c.layout)}};
  if (!c.activations.empty()) attrs.push_back({"activations", Attribute(c.activations)});
  if (!c.alpha.empty()) attrs.push_back({"activation_alpha", Attribute(c.alpha)});
  if (!c.beta.empty()) attrs.push_back({"activation_beta", Attribute(c.beta)});
  if (c.clip > 0) attrs.push_back({"clip", Attribute(c.clip)});
  if (c.op == "LSTM") attrs.push_back({"input_forget", Attribute(c.input_forget)});
  if (c.op == "GRU") attrs.push_back({"linear_before_reset", Attribute(c.linear_before_reset)});
  Add(&g, c.op, "rnn", in, out, attrs);
  return Finish(g, results);
}

std::string Describe(const Case& c) {
  return c.op + " " + c.direction + " layout=" + std::to_string(c.layout) + (c.lens ? " lens" : "") +
         (c.initial ? " initial" : "") + (c.peephole ? " peephole" : "") + (c.constant_weights ? " constW" : " runtimeW");
}

::testing::AssertionResult Check(const Case& c, bool eval = true) {
  CheckOptions options;
  options.eval = eval;
  options.tolerance = 2e-5;
  return CheckAgainstReference(Build(c), options);
}

TEST(RecurrentTest, EveryDirectionLayoutAndOptionalInput) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    for (const char* direction : {"forward", "reverse", "bidirectional"}) {
      for (int64_t layout : {0, 1}) {
        Case c;
        c.op = op;
        c.direction = direction;
        c.layout = layout;
        c.lens = layout == 0;
        c.initial = layout == 1 || std::string(direction) == "reverse";
        c.peephole = c.op == "LSTM" && layout == 1;
        c.constant_weights = std::string(direction) != "reverse";
        c.bias = std::string(direction) != "forward" || layout == 0;
        // The loop-IR interpreter for a few, LLVM for all.
        EXPECT_TRUE(Check(c, layout == 0 && std::string(direction) == "bidirectional")) << Describe(c);
      }
    }
  }
}

TEST(RecurrentTest, SequenceLengthsPadWithZerosAndKeepTheState) {
  for (const char* direction : {"forward", "reverse", "bidirectional"}) {
    for (int64_t layout : {0, 1}) {
      Case c;
      c.op = "GRU";
      c.direction = direction;
      c.layout = layout;
      c.lens = true;
      c.initial = true;
      c.seq = 5;
      c.batch = 4;
      c.lengths = {5, 0, 2, 4};
      EXPECT_TRUE(Check(c, false)) << Describe(c);
      c.op = "LSTM";
      EXPECT_TRUE(Check(c, false)) << Describe(c);
    }
  }
}

TEST(RecurrentTest, GruLinearBeforeReset) {
  for (int64_t lbr : {0, 1}) {
    for (bool constant : {true, false}) {
      Case c;
      c.op = "GRU";
      c.direction = "bidirectional";
      c.linear_before_reset = lbr;
      c.constant_weights = constant;
      c.initial = true;
      EXPECT_TRUE(Check(c, false)) << "linear_before_reset=" << lbr << " " << Describe(c);
    }
  }
}

TEST(RecurrentTest, LstmClipInputForgetPeepholes) {
  for (int64_t input_forget : {0, 1}) {
    Case c;
    c.op = "LSTM";
    c.direction = "bidirectional";
    c.peephole = true;
    c.initial = true;
    c.clip = 0.3;
    c.input_forget = input_forget;
    EXPECT_TRUE(Check(c, false)) << "input_forget=" << input_forget;
  }
}

TEST(RecurrentTest, ActivationsPerDirection) {
  Case rnn;
  rnn.op = "RNN";
  rnn.direction = "bidirectional";
  rnn.activations = {"Relu", "Sigmoid"};
  EXPECT_TRUE(Check(rnn, false));
  Case lstm;
  lstm.direction = "bidirectional";
  lstm.activations = {"Sigmoid", "Relu", "Tanh", "Sigmoid", "Tanh", "Relu"};
  EXPECT_TRUE(Check(lstm, false));
  Case gru;
  gru.op = "GRU";
  gru.direction = "reverse";
  gru.activations = {"Relu", "Sigmoid"};
  EXPECT_TRUE(Check(gru, false));
}

TEST(RecurrentTest, ActivationsWithAlphaAndBeta) {
  // Every ONNX recurrent activation; alpha/beta go, in list order, to the activations that take them.
  Case lstm;
  lstm.direction = "bidirectional";
  lstm.activations = {"HardSigmoid", "ScaledTanh", "Softsign", "Sigmoid", "LeakyRelu", "Elu"};
  lstm.alpha = {0.3, 0.9, 0.2, 0.7};
  lstm.beta = {0.4, 1.3};
  EXPECT_TRUE(Check(lstm, false));
  Case gru;
  gru.op = "GRU";
  gru.direction = "bidirectional";
  gru.activations = {"Sigmoid", "Affine", "HardSigmoid", "Softplus"};
  gru.alpha = {0.5};  // Affine's; HardSigmoid keeps its defaults (0.2, 0.5)
  gru.beta = {0.1};
  EXPECT_TRUE(Check(gru, false));
  Case rnn;
  rnn.op = "RNN";
  rnn.direction = "bidirectional";
  rnn.activations = {"ThresholdedRelu", "Softsign"};
  rnn.alpha = {0.1};
  EXPECT_TRUE(Check(rnn, false));
}

TEST(RecurrentTest, OutputsLeftOut) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    for (std::vector<bool> outputs : {std::vector<bool>{true, false, false}, std::vector<bool>{false, true, false},
                                      std::vector<bool>{false, false, true}}) {
      if (outputs[2] && std::string(op) != "LSTM") continue;
      Case c;
      c.op = op;
      c.direction = "bidirectional";
      c.layout = 1;
      c.outputs = outputs;
      EXPECT_TRUE(Check(c, false)) << op << " outputs " << outputs[0] << outputs[1] << outputs[2];
    }
  }
}

TEST(RecurrentTest, LongerSequenceAndWiderCell) {
  // Hidden sizes past one vector and a sequence long enough for errors to accumulate.
  Case c;
  c.seq = 24;
  c.batch = 2;
  c.input = 19;
  c.hidden = 33;
  c.direction = "bidirectional";
  c.lens = true;
  c.initial = true;
  EXPECT_TRUE(Check(c, false));
}

TEST(RecurrentTest, RefusesWhatItCannotCompile) {
  Case c;
  Graph g = testing::Fuse(Build(c));
  target::Target cuda = target::Target::Parse("cuda -arch=sm_80");
  ASSERT_EQ(g.groups.size(), 1u);
  try {
    LowerGroup(g, g.groups[0], cuda, "k0");
    FAIL() << "a cuda target was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("LSTM 'rnn'"), std::string::npos) << e.message();
  }
  EXPECT_TRUE(HasImplementation("LSTM") && HasImplementation("GRU") && HasImplementation("RNN"));
}

}  // namespace
}  // namespace ops
}  // namespace agate
