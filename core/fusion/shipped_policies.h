// The adaptive-fusion policies shipped in the repository (core/fusion/policies/*.policy),
// compiled into the library by a genrule, so `--fusion adaptive` needs no file at run time.
#ifndef AGATE_CORE_FUSION_SHIPPED_POLICIES_H_
#define AGATE_CORE_FUSION_SHIPPED_POLICIES_H_

#include <vector>

namespace agate {
namespace fusion {

struct ShippedPolicy {
  const char* name;  // the file's stem, e.g. "x86_64_avx512"
  const char* text;  // the policy file's text (adaptive_fusion.h)
};

const std::vector<ShippedPolicy>& ShippedPolicies();

}  // namespace fusion
}  // namespace agate

#endif  // AGATE_CORE_FUSION_SHIPPED_POLICIES_H_
