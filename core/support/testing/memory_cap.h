// Runs a piece of code in a child process whose address space is capped, and says how it ended.
//
// Why: "no unbounded allocation from input files" must be testable. A reader that trusts a
// declared size either allocates gigabytes (slow, and the test machine may be shared) or, under
// a cap, dies of std::bad_alloc; the fixed reader refuses the input with an agate::Error before
// allocating. Running in a forked child keeps the cap and any abort away from the test runner.
// Under AddressSanitizer (which reserves terabytes of shadow memory) no cap is set.
#ifndef AGATE_CORE_SUPPORT_TESTING_MEMORY_CAP_H_
#define AGATE_CORE_SUPPORT_TESTING_MEMORY_CAP_H_

#include <cstddef>
#include <functional>
#include <string>

#include "core/support/error.h"

namespace agate {
namespace testing {

// How `body` ended in the capped child.
struct CappedOutcome {
  bool threw_agate_error = false;  // an agate::Error with `code` below
  StatusCode code = StatusCode::kOk;
  std::string description;         // for failure messages: "agate::Error corrupt input", "std::bad_alloc", ...
};

// Runs `body` in a child process that may allocate at most `cap_bytes` more than it has mapped.
CappedOutcome RunWithMemoryCap(const std::function<void()>& body, size_t cap_bytes = size_t{512} << 20);

}  // namespace testing
}  // namespace agate

#endif  // AGATE_CORE_SUPPORT_TESTING_MEMORY_CAP_H_
