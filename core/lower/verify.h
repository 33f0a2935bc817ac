// Verifier: checks the invariants of the loop IR between lowering passes.
//
// Why: a pass that breaks an invariant (a variable used outside its loop, a
// buffer used outside its allocation, a TE-level node left after flattening,
// a workspace allocation inside a parallel loop) would otherwise surface as a
// crash or wrong numbers in generated code far away. The verifier names the
// pass after which the invariant broke; failures are kInternal (a bug in agate).
#ifndef AGATE_CORE_LOWER_VERIFY_H_
#define AGATE_CORE_LOWER_VERIFY_H_

#include <string>

#include "core/ir/function.h"

namespace agate {
namespace lower {

struct VerifyOptions {
  bool flattened = true;     // no Provide/Realize/TensorRead/Reduce allowed
  bool unique_defs = false;  // every variable and buffer bound once
};

// Throws agate::Error(kInternal) naming `after_pass` and the offending node.
void VerifyLoweredFunc(const ir::LoweredFunc& func, const std::string& after_pass, const VerifyOptions& options);

}  // namespace lower
}  // namespace agate

#endif  // AGATE_CORE_LOWER_VERIFY_H_
