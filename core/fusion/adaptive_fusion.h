// `--fusion adaptive`: fusion granularity chosen by a learned policy.
//
// Why: `rule` fixes the granularity by operator kinds; the AGATF paper learns it
// per operator sequence from measured runtimes. The policy here is a DQN trained
// offline (tools/fusion/train_fusion.py, on models the benchmark does not
// evaluate); this file only evaluates it, deterministically: same policy + same
// graph = same groups.
//
// At each step of the legal walk (action_space.h) the state is
//   [e(seed), e(chain[0]), ..., e(chain[K-1]), |chain| / K, legal(1), ..., legal(K)]
// with e() the encoder's embedding of an operator's raw features (embedding.h),
// zeros for chain slots past the chain's end, K = max_join; a policy with the
// rule hint also gets [rule(0), ..., rule(K)], one-hot: the action that follows
// `rule`'s grouping here (RuleAction). Why the hint: trained from rule's
// demonstrations without it, the network has to infer rule's choice from the
// embeddings and gets it wrong on operator patterns the training models lack
// (BERT's and Swin's blocks: 12-37 extra kernels, 0.84x rule's speed on swin_t);
// with it, imitating rule generalizes to every model and only the learned
// departures from rule depend on the training set. Even so the network's values
// on unseen operator patterns are extrapolations, so the policy leaves rule's
// action only where its predicted return beats it by more than B ms (the rule
// bonus): a trust margin against a cost model that, for instance, predicted
// 0.93x rule's time for vit_ci groupings that measured 1.20x slower. The Q
// network gives one value per action k = 0..K and the largest legal one wins
// (ties: smaller k).
//
// Policy file (text, whitespace separated):
//   agate-fusion-policy 1
//   target <arch> <llvm feature>...      e.g. "target x86_64 avx512f"
//   max_join K                           must equal GranularityWalk::kMaxJoin
//   hint rule B                          optional: the state ends with the rule hint, and
//                                        B (>= 0, ms) is added to the hinted action's value
//   features F                           must equal OperatorFeatureCount()
//   dense encoder IN OUT tanh|relu|linear   then OUT*IN weights (row-major), OUT biases
//   ...                                  (encoder layers first, then)
//   dense q IN OUT tanh|relu|linear ...
//   end
// Malformed text is kCorrupt naming the file and what is wrong; a policy for
// another target is kVersionMismatch.
#ifndef AGATE_CORE_FUSION_ADAPTIVE_FUSION_H_
#define AGATE_CORE_FUSION_ADAPTIVE_FUSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/fusion/action_space.h"
#include "core/fusion/embedding.h"
#include "core/fusion/fusion.h"
#include "core/target/target.h"

namespace agate {
namespace fusion {

struct AdaptivePolicy {
  std::string source;                 // the file it came from, or "shipped policy <name>"
  std::string arch;                   // "x86_64": the target triple's architecture
  std::vector<std::string> features;  // LLVM features the target must have ("avx512f")
  int max_join = 0;
  bool rule_hint = false;
  float rule_bonus = 0.0f;  // ms added to the hinted action's value
  DenseNet encoder;
  DenseNet q;

  int embedding_width() const { return encoder.output_width(); }
  int state_width() const {
    return embedding_width() * (1 + max_join) + 1 + max_join + (rule_hint ? max_join + 1 : 0);
  }
  bool Fits(const target::Target& target) const;
  std::string TargetText() const;  // "x86_64 avx512f"
};

// Parses a policy file's text; kCorrupt naming `source` on any malformed part.
AdaptivePolicy ParseAdaptivePolicy(const std::string& text, const std::string& source);
// Reads and parses a policy file: kNotFound naming it when it cannot be read.
std::shared_ptr<const AdaptivePolicy> LoadAdaptivePolicy(const std::string& path);
// Of `candidates`, the one for `target`: null when none fits it; of several that fit, the one
// that names the most target features (the first of equals).
std::shared_ptr<const AdaptivePolicy> MostSpecificPolicy(
    const std::vector<std::shared_ptr<const AdaptivePolicy>>& candidates, const target::Target& target);
// The policy shipped in the repository for `target` (MostSpecificPolicy of the shipped ones).
std::shared_ptr<const AdaptivePolicy> ShippedAdaptivePolicy(const target::Target& target);
// The shipped policies' targets, for messages: "x86_64 avx2 fma, x86_64 avx512f avx2 fma".
std::string ShippedPolicyTargets();

// The action at the walk's current decision that follows `rule_group` (node -> its group
// under rule): the longest prefix of the chain in the seed's rule group.
int RuleAction(const std::vector<int>& rule_group, const GranularityWalk& walk);
// The state vector of the walk's current decision (layout above); `embeddings[v]` is node v's;
// `rule_action` is RuleAction's answer (read only by a policy with the rule hint).
std::vector<float> DecisionState(const AdaptivePolicy& policy, const std::vector<std::vector<float>>& embeddings,
                                 const GranularityWalk& walk, int rule_action = 0);
// The action the policy takes in `state` given `legal_actions` (= chain size + 1).
int ChooseAction(const AdaptivePolicy& policy, const std::vector<float>& state, int legal_actions);

Partition PartitionAdaptive(const graph::Graph& graph, const AdaptivePolicy& policy);
// A uniformly random legal granularity at every step (mt19937_64 seeded with `seed`).
Partition PartitionRandom(const graph::Graph& graph, uint64_t seed);

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_ADAPTIVE_FUSION_H_
