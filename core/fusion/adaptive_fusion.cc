#include "core/fusion/adaptive_fusion.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "core/fusion/shipped_policies.h"
#include "core/support/error.h"
#include "core/support/file.h"
#include "core/support/logging.h"

namespace agate {
namespace fusion {
namespace {

// Throws kCorrupt naming the policy file: POLICY_FAIL(reader) << "what is wrong";
#define POLICY_FAIL(reader) AGATE_THROW(kCorrupt) << "fusion policy '" << (reader).source() << "' is corrupt: "

constexpr int kMaxLayerWidth = 4096;  // a policy is a few small layers; anything wider is corrupt

class PolicyReader {
 public:
  PolicyReader(const std::string& text, const std::string& source) : in_(text), source_(source) {}

  std::string Word(const char* what) {
    std::string w;
    if (!(in_ >> w)) POLICY_FAIL(*this) << "ends early: expected " << what;
    return w;
  }
  void Expect(const std::string& word) {
    std::string w = Word(word.c_str());
    if (w != word) POLICY_FAIL(*this) << "expected '" << word << "', found '" << w << "'";
  }
  int Int(const char* what, int lo, int hi) {
    std::string w = Word(what);
    char* end = nullptr;
    long v = std::strtol(w.c_str(), &end, 10);
    if (end == w.c_str() || *end != '\0' || v < lo || v > hi)
      POLICY_FAIL(*this) << what << " '" << w << "' is not an integer in [" << lo << ", " << hi << "]";
    return static_cast<int>(v);
  }
  float Float(const char* what) {
    std::string w = Word(what);
    char* end = nullptr;
    float v = std::strtof(w.c_str(), &end);
    if (end == w.c_str() || *end != '\0' || !std::isfinite(v)) POLICY_FAIL(*this) << what << " '" << w << "' is not a finite number";
    return v;
  }
  const std::string& source() const { return source_; }
  std::istringstream& stream() { return in_; }

 private:
  std::istringstream in_;
  std::string source_;
};

DenseLayer ReadLayer(PolicyReader* r, int in) {
  DenseLayer layer;
  layer.in = r->Int("layer input width", 1, kMaxLayerWidth);
  layer.out = r->Int("layer output width", 1, kMaxLayerWidth);
  if (layer.in != in) POLICY_FAIL(*r) << "a layer takes " << layer.in << " inputs after a layer of " << in << " outputs";
  std::string act = r->Word("activation");
  if (act == "tanh") {
    layer.activation = DenseLayer::Activation::kTanh;
  } else if (act == "relu") {
    layer.activation = DenseLayer::Activation::kRelu;
  } else if (act == "linear") {
    layer.activation = DenseLayer::Activation::kLinear;
  } else {
    POLICY_FAIL(*r) << "unknown activation '" << act << "' (tanh, relu, linear)";
  }
  layer.weights.resize(static_cast<size_t>(layer.in) * layer.out);
  for (float& w : layer.weights) w = r->Float("weight");
  layer.bias.resize(layer.out);
  for (float& b : layer.bias) b = r->Float("bias");
  return layer;
}

}  // namespace

bool AdaptivePolicy::Fits(const target::Target& t) const {
  if (t.kind() != target::TargetKind::kLLVM || t.triple().rfind(arch, 0) != 0) return false;
  for (const std::string& f : features)
    if (!t.HasFeature(f)) return false;
  return true;
}

std::string AdaptivePolicy::TargetText() const {
  std::string text = arch;
  for (const std::string& f : features) text += " " + f;
  return text;
}

AdaptivePolicy ParseAdaptivePolicy(const std::string& text, const std::string& source) {
  PolicyReader r(text, source);
  AdaptivePolicy policy;
  policy.source = source;
  r.Expect("agate-fusion-policy");
  int version = r.Int("format version", 0, 1 << 20);
  if (version != 1) POLICY_FAIL(r) << "format version " << version << " (this compiler reads 1)";
  r.Expect("target");
  policy.arch = r.Word("target architecture");
  std::string word = r.Word("max_join");
  while (word != "max_join") {
    policy.features.push_back(word);
    if (policy.features.size() > 64) POLICY_FAIL(r) << "more than 64 target features";
    word = r.Word("max_join");
  }
  policy.max_join = r.Int("max_join", 1, 64);
  if (policy.max_join != GranularityWalk::kMaxJoin)
    POLICY_FAIL(r) << "max_join " << policy.max_join << " (this compiler's walk offers " << GranularityWalk::kMaxJoin << ")";
  std::string next = r.Word("features or hint");
  if (next == "hint") {
    std::string hint = r.Word("hint");
    if (hint != "rule") POLICY_FAIL(r) << "unknown hint '" << hint << "' (this compiler knows 'rule')";
    policy.rule_hint = true;
    policy.rule_bonus = r.Float("rule bonus");
    if (policy.rule_bonus < 0) POLICY_FAIL(r) << "negative rule bonus " << policy.rule_bonus;
    next = r.Word("features");
  }
  if (next != "features") POLICY_FAIL(r) << "expected 'features', found '" << next << "'";
  int features = r.Int("feature count", 1, kMaxLayerWidth);
  if (features != OperatorFeatureCount())
    POLICY_FAIL(r) << "trained on " << features << " operator features; this compiler computes " << OperatorFeatureCount();
  int width = features;
  bool in_q = false;
  for (word = r.Word("dense or end"); word != "end"; word = r.Word("dense or end")) {
    if (word != "dense") POLICY_FAIL(r) << "expected 'dense' or 'end', found '" << word << "'";
    std::string name = r.Word("layer name");
    if (name == "q" && !in_q) {
      if (policy.encoder.layers.empty()) POLICY_FAIL(r) << "no encoder layer before the q network";
      in_q = true;
      width = policy.state_width();
    } else if (name != (in_q ? "q" : "encoder")) {
      POLICY_FAIL(r) << "layer '" << name << "' out of order (encoder layers, then q layers)";
    }
    DenseLayer layer = ReadLayer(&r, width);
    width = layer.out;
    (in_q ? policy.q : policy.encoder).layers.push_back(std::move(layer));
    if (policy.encoder.layers.size() + policy.q.layers.size() > 16) POLICY_FAIL(r) << "more than 16 layers";
  }
  if (policy.q.layers.empty()) POLICY_FAIL(r) << "no q network";
  if (policy.q.output_width() != policy.max_join + 1)
    POLICY_FAIL(r) << "the q network gives " << policy.q.output_width() << " values for " << policy.max_join + 1
             << " actions";
  std::string extra;
  if (r.stream() >> extra) POLICY_FAIL(r) << "text after 'end': '" << extra << "'";
  return policy;
}

std::shared_ptr<const AdaptivePolicy> LoadAdaptivePolicy(const std::string& path) {
  std::vector<uint8_t> bytes;
  try {
    bytes = ReadFile(path);
  } catch (const Error& e) {
    throw Error(StatusCode::kNotFound, "fusion policy '" + path + "' cannot be read: " + e.message());
  }
  return std::make_shared<const AdaptivePolicy>(
      ParseAdaptivePolicy(std::string(bytes.begin(), bytes.end()), path));
}

std::shared_ptr<const AdaptivePolicy> MostSpecificPolicy(
    const std::vector<std::shared_ptr<const AdaptivePolicy>>& candidates, const target::Target& target) {
  // Several may fit (an AVX-512 machine runs the AVX2 policy too): the one that names the most
  // features was measured on the machine most like the target.
  std::shared_ptr<const AdaptivePolicy> best;
  for (const auto& policy : candidates) {
    if (policy->Fits(target) && (!best || policy->features.size() > best->features.size())) best = policy;
  }
  return best;
}

std::shared_ptr<const AdaptivePolicy> ShippedAdaptivePolicy(const target::Target& target) {
  std::vector<std::shared_ptr<const AdaptivePolicy>> shipped;
  for (const ShippedPolicy& policy : ShippedPolicies()) {
    shipped.push_back(std::make_shared<const AdaptivePolicy>(
        ParseAdaptivePolicy(policy.text, std::string("shipped policy ") + policy.name)));
  }
  return MostSpecificPolicy(shipped, target);
}

std::string ShippedPolicyTargets() {
  std::string text;
  for (const ShippedPolicy& shipped : ShippedPolicies()) {
    if (!text.empty()) text += ", ";
    text += ParseAdaptivePolicy(shipped.text, std::string("shipped policy ") + shipped.name).TargetText();
  }
  return text;
}

int RuleAction(const std::vector<int>& rule_group, const GranularityWalk& walk) {
  int k = 0;
  for (int v : walk.Chain()) {
    if (rule_group[v] != rule_group[walk.Seed()]) break;
    ++k;
  }
  return k;
}

std::vector<float> DecisionState(const AdaptivePolicy& policy, const std::vector<std::vector<float>>& embeddings,
                                 const GranularityWalk& walk, int rule_action) {
  int e = policy.embedding_width();
  int k = policy.max_join;
  std::vector<float> state(policy.state_width(), 0.0f);
  const std::vector<int>& chain = walk.Chain();
  std::copy(embeddings[walk.Seed()].begin(), embeddings[walk.Seed()].end(), state.begin());
  for (size_t i = 0; i < chain.size() && static_cast<int>(i) < k; ++i)
    std::copy(embeddings[chain[i]].begin(), embeddings[chain[i]].end(), state.begin() + e * (1 + i));
  state[e * (1 + k)] = static_cast<float>(chain.size()) / static_cast<float>(k);
  for (size_t i = 0; i < chain.size() && static_cast<int>(i) < k; ++i) state[e * (1 + k) + 1 + i] = 1.0f;
  if (policy.rule_hint) state[e * (1 + k) + 1 + k + std::min(std::max(rule_action, 0), k)] = 1.0f;
  return state;
}

int ChooseAction(const AdaptivePolicy& policy, const std::vector<float>& state, int legal_actions) {
  std::vector<float> q = policy.q.Evaluate(state);
  if (policy.rule_hint) {
    int hinted_at = policy.embedding_width() * (1 + policy.max_join) + 1 + policy.max_join;
    for (int a = 0; a <= policy.max_join && a < static_cast<int>(q.size()); ++a)
      if (state[hinted_at + a] > 0.5f) q[a] += policy.rule_bonus;
  }
  int best = 0;
  for (int a = 1; a < legal_actions && a < static_cast<int>(q.size()); ++a)
    if (q[a] > q[best]) best = a;
  return best;
}

namespace {

// The integer operators of a quantized graph (after QDQ folding).
bool HasIntegerProducts(const graph::Graph& graph) {
  for (const graph::Node& node : graph.nodes) {
    if (node.op == "QLinearConv" || node.op == "QLinearMatMul" || node.op == "ConvInteger" || node.op == "MatMulInteger")
      return true;
  }
  return false;
}

}  // namespace

Partition PartitionAdaptive(const graph::Graph& graph, const AdaptivePolicy& policy) {
  // Policies are trained on float models' measured groups (tools/fusion/train_fusion.py):
  // integer products and their requantising epilogues are outside their data. On ResNet-50
  // int8 the shipped policy left each residual Add + Relu + QuantizeLinear as a kernel of its
  // own, 6-7% slower than rule at 1 and 2 threads, so a quantized graph gets rule's groups.
  if (HasIntegerProducts(graph)) {
    AGATE_LOG(INFO) << "fusion adaptive: " << policy.source
                    << " was trained on float models; this quantized graph is partitioned by rule";
    return PartitionRule(graph);
  }
  GranularityWalk walk(graph);
  std::vector<std::vector<float>> embeddings;
  for (int v = 0; v < walk.nodes().size(); ++v)
    embeddings.push_back(policy.encoder.Evaluate(OperatorFeatures(graph, walk.nodes(), v)));
  std::vector<int> rule_group(walk.nodes().size(), -1);
  if (policy.rule_hint) {
    Partition rule = PartitionRule(graph);
    for (size_t i = 0; i < rule.size(); ++i)
      for (int v : rule[i]) rule_group[v] = static_cast<int>(i);
  }
  while (!walk.Done()) {
    int legal = static_cast<int>(walk.Chain().size()) + 1;
    int hint = policy.rule_hint ? RuleAction(rule_group, walk) : 0;
    walk.Apply(ChooseAction(policy, DecisionState(policy, embeddings, walk, hint), legal));
  }
  return walk.Result();
}

Partition PartitionRandom(const graph::Graph& graph, uint64_t seed) {
  GranularityWalk walk(graph);
  std::mt19937_64 rng(seed);
  while (!walk.Done()) walk.Apply(static_cast<int>(rng() % (walk.Chain().size() + 1)));
  return walk.Result();
}

}  // namespace fusion
}  // namespace agate
