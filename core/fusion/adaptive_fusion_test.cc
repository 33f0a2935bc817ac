#include "core/fusion/adaptive_fusion.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/graph/testing/graph_builder.h"
#include "core/support/error.h"

namespace agate {
namespace fusion {
namespace {

using graph::DType;
using graph::Graph;
using graph::TensorType;
using graph::testing::Add;
using graph::testing::Finish;
using graph::testing::GroupNames;
using graph::testing::RandomTensor;
using Groups = std::vector<std::vector<std::string>>;

// A policy whose Q network prefers the legal action nearest `preferred` whatever the state: encoder to 2
// values, q linear with zero weights and a bias that peaks at `preferred`.
std::string ConstantPolicy(int preferred, const std::string& target = "x86_64 avx512f") {
  int features = OperatorFeatureCount(), k = GranularityWalk::kMaxJoin, e = 2;
  std::ostringstream s;
  s << "agate-fusion-policy 1\ntarget " << target << "\nmax_join " << k << "\nfeatures " << features << "\n";
  s << "dense encoder " << features << " " << e << " tanh\n";
  for (int i = 0; i < features * e; ++i) s << (i % 7 == 0 ? "0.1 " : "0 ");
  s << "\n0 0\n";
  int state = e * (1 + k) + 1 + k;
  s << "dense q " << state << " " << k + 1 << " linear\n";
  for (int i = 0; i < state * (k + 1); ++i) s << "0 ";
  s << "\n";
  for (int a = 0; a <= k; ++a) s << -std::abs(a - preferred) << " ";  // the legal action nearest `preferred`
  s << "\nend\n";
  return s.str();
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

Graph ConvChain() {
  Graph g;
  g.AddInput("x", TensorType{DType::Float(32), {1, 16, 8, 8}});
  g.AddConstant("w", RandomTensor({16, 16, 1, 1}, 1));
  Add(&g, "Conv", "conv1", {"x", "w"}, {"c1"});
  Add(&g, "Relu", "relu1", {"c1"}, {"r1"});
  Add(&g, "Sigmoid", "sig1", {"r1"}, {"s1"});
  Add(&g, "Conv", "conv2", {"s1", "w"}, {"c2"});
  Add(&g, "Relu", "relu2", {"c2"}, {"y"});
  return Finish(g, {"y"});
}

const char* kAvx512 = "llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512";
const char* kAvx2 = "llvm -mtriple=x86_64-linux-gnu -mcpu=znver3";

TEST(AdaptiveFusionTest, ThePolicyChoosesTheGranularity) {
  Graph g = ConvChain();
  AdaptivePolicy greedy = ParseAdaptivePolicy(ConstantPolicy(GranularityWalk::kMaxJoin), "greedy");
  AdaptivePolicy single = ParseAdaptivePolicy(ConstantPolicy(0), "single");
  AdaptivePolicy one = ParseAdaptivePolicy(ConstantPolicy(1), "one");
  // The largest legal action: every chain joined; action 0: one kernel per operator, except that
  // an elementwise chain is never split (GranularityWalk::AbsorbProducers: sig1 takes relu1).
  EXPECT_EQ(GroupNames(FuseOperators(g, [&](const Graph& x) { return PartitionAdaptive(x, greedy); })),
            (Groups{{"conv1", "relu1", "sig1"}, {"conv2", "relu2"}}));
  EXPECT_EQ(GroupNames(FuseOperators(g, [&](const Graph& x) { return PartitionAdaptive(x, single); })),
            (Groups{{"conv1"}, {"relu1", "sig1"}, {"conv2"}, {"relu2"}}));
  EXPECT_EQ(GroupNames(FuseOperators(g, [&](const Graph& x) { return PartitionAdaptive(x, one); })),
            (Groups{{"conv1", "relu1"}, {"sig1"}, {"conv2", "relu2"}}));
}

// A quantized graph (integer products after QDQ folding) is outside the policies' training data:
// it gets rule's groups, whatever the policy would choose (here: every operator alone).
TEST(AdaptiveFusionTest, QuantizedGraphsArePartitionedByRule) {
  Graph g;
  g.AddInput("x", TensorType{DType::UInt(8), {1, 8, 6, 6}});
  g.AddConstant("xs", graph::Tensor::FromDoubles(DType::Float(32), {}, {0.02}));
  g.AddConstant("xz", graph::Tensor::FromInts(DType::UInt(8), {}, {128}));
  g.AddConstant("w", graph::Tensor::FromInts(DType::Int(8), {8, 8, 1, 1}, std::vector<int64_t>(64, 3)));
  g.AddConstant("ws", graph::Tensor::FromDoubles(DType::Float(32), {}, {0.01}));
  g.AddConstant("wz", graph::Tensor::FromInts(DType::Int(8), {}, {0}));
  g.AddConstant("ys", graph::Tensor::FromDoubles(DType::Float(32), {}, {0.05}));
  g.AddConstant("yz", graph::Tensor::FromInts(DType::UInt(8), {}, {10}));
  Add(&g, "QLinearConv", "qconv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"q"});
  Add(&g, "DequantizeLinear", "dq", {"q", "ys", "yz"}, {"d"});
  Add(&g, "Relu", "relu", {"d"}, {"r"});
  Add(&g, "QuantizeLinear", "qout", {"r", "ys", "yz"}, {"y"});
  g = Finish(g, {"y"});
  AdaptivePolicy single = ParseAdaptivePolicy(ConstantPolicy(0), "single");
  EXPECT_EQ(GroupNames(FuseOperators(g, [&](const Graph& x) { return PartitionAdaptive(x, single); })),
            GroupNames(FuseOperators(g, FusionPolicy::kRule)));
  EXPECT_EQ(GroupNames(FuseOperators(g, FusionPolicy::kRule)), (Groups{{"qconv", "dq", "relu", "qout"}}));
}

TEST(AdaptiveFusionTest, TheShippedPoliciesAreDeterministic) {
  for (const auto& [target, name] : std::vector<std::pair<std::string, std::string>>{
           {kAvx512, "x86_64_avx512"}, {kAvx2, "x86_64_avx2"}}) {
    FusionPolicy policy = ParseFusionPolicy("adaptive", target);
    ASSERT_EQ(policy.kind, FusionPolicy::kAdaptive) << target;
    ASSERT_NE(policy.adaptive, nullptr);
    EXPECT_EQ(policy.adaptive->source, "shipped policy " + name);
    Graph g = ConvChain();
    Groups first = GroupNames(FuseOperators(g, policy));
    for (int i = 0; i < 3; ++i) {
      FusionPolicy again = ParseFusionPolicy("adaptive", target);
      EXPECT_EQ(GroupNames(FuseOperators(g, again)), first);
    }
  }
}

// Of several policies that fit a target, the one naming the most of its features is used (an
// AVX-512 machine also runs an AVX2 policy); one naming a feature the target lacks never is.
TEST(AdaptiveFusionTest, TheMostSpecificFittingPolicyIsChosen) {
  auto parse = [](const std::string& target, const std::string& name) {
    return std::make_shared<const AdaptivePolicy>(ParseAdaptivePolicy(ConstantPolicy(0, target), name));
  };
  auto avx2 = parse("x86_64 avx2 fma", "avx2");
  auto avx512 = parse("x86_64 avx512f avx2 fma", "avx512");
  auto vnni = parse("x86_64 avx512f avx512vnni avx2 fma", "vnni");
  auto arm = parse("aarch64 neon", "arm");
  const target::Target skylake = target::Target::Parse(kAvx512);
  const target::Target haswell = target::Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=haswell");
  const target::Target cascadelake = target::Target::Parse("llvm -mtriple=x86_64-linux-gnu -mcpu=cascadelake");
  for (const auto& order : {std::vector<std::shared_ptr<const AdaptivePolicy>>{avx2, avx512, vnni, arm},
                            std::vector<std::shared_ptr<const AdaptivePolicy>>{arm, vnni, avx512, avx2}}) {
    EXPECT_EQ(MostSpecificPolicy(order, skylake)->source, "avx512");  // no VNNI on Skylake-SP
    EXPECT_EQ(MostSpecificPolicy(order, haswell)->source, "avx2");
    EXPECT_EQ(MostSpecificPolicy(order, cascadelake)->source, "vnni");
  }
  EXPECT_EQ(MostSpecificPolicy({avx512, vnni, arm}, haswell), nullptr);
  EXPECT_EQ(MostSpecificPolicy({avx2}, target::Target::Parse("c")), nullptr);
}

TEST(AdaptiveFusionTest, BadPolicyFilesAreErrorsNamingTheFile) {
  auto code_of = [](const std::string& text, const std::string& target) {
    try {
      ParseFusionPolicy(text, target);
    } catch (const Error& e) {
      return std::make_pair(e.code(), e.message());
    }
    return std::make_pair(StatusCode::kOk, std::string());
  };
  std::string missing = ::testing::TempDir() + "/no_such.policy";
  auto [code, message] = code_of("adaptive,policy=" + missing, kAvx512);
  EXPECT_EQ(code, StatusCode::kNotFound);
  EXPECT_NE(message.find(missing), std::string::npos) << message;

  std::string good = ConstantPolicy(1);
  std::string truncated = WriteTemp("truncated.policy", good.substr(0, good.size() / 2));
  std::tie(code, message) = code_of("adaptive,policy=" + truncated, kAvx512);
  EXPECT_EQ(code, StatusCode::kCorrupt);
  EXPECT_NE(message.find(truncated), std::string::npos) << message;

  std::string nan = good;
  nan.replace(nan.find("0.1"), 3, "nan");
  std::tie(code, message) = code_of("adaptive,policy=" + WriteTemp("nan.policy", nan), kAvx512);
  EXPECT_EQ(code, StatusCode::kCorrupt);
  EXPECT_NE(message.find("not a finite number"), std::string::npos) << message;

  std::string wide = good;
  wide.replace(wide.find("features "), 12, "features 99\n");
  std::tie(code, message) = code_of("adaptive,policy=" + WriteTemp("wide.policy", wide), kAvx512);
  EXPECT_EQ(code, StatusCode::kCorrupt);

  std::string foreign = WriteTemp("foreign.policy", ConstantPolicy(1, "aarch64 neon"));
  std::tie(code, message) = code_of("adaptive,policy=" + foreign, kAvx512);
  EXPECT_EQ(code, StatusCode::kVersionMismatch);
  EXPECT_NE(message.find(foreign), std::string::npos) << message;
  EXPECT_EQ(ParseFusionPolicy("adaptive,policy=" + foreign, "llvm -mtriple=aarch64-linux-gnu").kind,
            FusionPolicy::kAdaptive);

  // No shipped policy for AArch64: an error, or rule when asked for.
  std::tie(code, message) = code_of("adaptive", "llvm -mtriple=aarch64-linux-gnu");
  EXPECT_EQ(code, StatusCode::kNotFound);
  EXPECT_NE(message.find("x86_64 avx512f avx2 fma"), std::string::npos) << message;
  EXPECT_NE(message.find("x86_64 avx2 fma"), std::string::npos) << message;
  // An x86-64 machine without AVX-512 is given the policy measured with AVX2 code, one without
  // AVX2 (x86-64-v2: SSE4.2) none.
  EXPECT_EQ(ParseFusionPolicy("adaptive", kAvx2).adaptive->source, "shipped policy x86_64_avx2");
  std::tie(code, message) = code_of("adaptive", "llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v2");
  EXPECT_EQ(code, StatusCode::kNotFound);
  EXPECT_EQ(ParseFusionPolicy("adaptive,fallback=rule", "llvm -mtriple=aarch64-linux-gnu").kind, FusionPolicy::kRule);
  EXPECT_EQ(ParseFusionPolicy("adaptive,policy=" + truncated + ",fallback=rule", kAvx512).kind, FusionPolicy::kRule);

  std::tie(code, message) = code_of("adaptive,fallback=none", kAvx512);
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  std::tie(code, message) = code_of("random,seed=-3", kAvx512);
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  std::tie(code, message) = code_of("rule,extra", kAvx512);
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFusionPolicy("random,seed=7").seed, 7u);
}

}  // namespace
}  // namespace fusion
}  // namespace agate
