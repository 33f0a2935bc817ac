// The modules the language bindings' tests load (see fixture_kernels.h for the
// numbers they compute), described as ModuleSpecs and serialized with the same
// SerializeModule the compiler uses.
#ifndef AGATE_BINDINGS_TESTDATA_FIXTURE_MODULES_H_
#define AGATE_BINDINGS_TESTDATA_FIXTURE_MODULES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/serialize/module_spec.h"

namespace agate {
namespace bindings_testdata {

// y = relu(a + b): inputs "a", "b" float32[2,3]; output "y" float32[2,3].
// kernel_object: the bytes of libagate_fixture_kernels.so.
serialize::ModuleSpec AddReluSpec(const std::vector<uint8_t>& kernel_object);

// add_relu per item of a batch (module format 2.0): inputs "a", "b" and output "y" are
// float32[N,2,3] with symbol N in 1..kBatchMax, compiled as variants of 1 and 2 items (a run of
// n items is chunks of 2, then 1).
constexpr int64_t kBatchMax = 5;
serialize::ModuleSpec BatchAddReluSpec(const std::vector<uint8_t>& kernel_object);

// add_relu over a padded sequence (module format 3.0): inputs "a", "b" and output "y" are
// float32[2,S] with symbol S in 1..kSequenceMax on axis 1, one padded variant of extent
// kSequenceMax (a run of n pads the inputs to it and copies y's first n columns out).
constexpr int64_t kSequenceMax = 3;
serialize::ModuleSpec PaddedAddReluSpec(const std::vector<uint8_t>& kernel_object);

// input "x" float32[4,8]; outputs "logits" float32[4,3] = x * W + bias and
// "classes" int32[4] = argmax per row; W and bias are constants.
serialize::ModuleSpec ClassifierSpec(const std::vector<uint8_t>& kernel_object);

// The classifier's constants, row-major (W is 8x3), as the tests recompute them.
std::vector<float> ClassifierWeights();
std::vector<float> ClassifierBias();

// Every fixture: file name (e.g. "add_relu.agm") and serialized module.
std::vector<std::pair<std::string, std::vector<uint8_t>>> AllFixtures(const std::vector<uint8_t>& kernel_object);

}  // namespace bindings_testdata
}  // namespace agate

#endif  // AGATE_BINDINGS_TESTDATA_FIXTURE_MODULES_H_
