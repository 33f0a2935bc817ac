// Modules built from hand-written kernels (test_kernels.h) for the runtime's
// tests and benchmarks, serialized with the same SerializeModule the compiler uses.
#ifndef AGATE_RUNTIME_MINIMAL_TESTING_TEST_MODULES_H_
#define AGATE_RUNTIME_MINIMAL_TESTING_TEST_MODULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agate/runtime.h"
#include "core/serialize/module_spec.h"

namespace agate {
namespace testing {

// The bytes of libagate_test_kernels.so (a data dependency of the test).
std::vector<uint8_t> TestKernelObject();

// The static kernel table of the test kernels (linked into the test binary).
const agate_kernel_table* TestKernelTable();

// y = relu(x * W + b) on 16x16 float32: matmul, add, relu; x is input "x",
// W and b constants, y output "y", one intermediate in the arena.
// kHostCpu modules embed TestKernelObject(); kMicro modules name kernels only.
serialize::ModuleSpec MlpSpec(serialize::TargetKind kind);
std::vector<float> MlpInput(int seed);
std::vector<float> MlpReference(const std::vector<float>& x);

// y = 2 * x via agate_test_double_via_workspace: a kernel with a workspace.
serialize::ModuleSpec WorkspaceSpec(serialize::TargetKind kind);

// `calls` calls of agate_test_noop on one arena byte: the executor's overhead.
serialize::ModuleSpec NoopChainSpec(serialize::TargetKind kind, int calls);

// Reads a whole file (fails the test when it cannot).
std::vector<uint8_t> ReadFile(const std::string& path);

// A 16x16 float32 DLTensor over `data` (borrowed).
DLTensor MatrixTensor(float* data, int64_t* shape_storage);

}  // namespace testing
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_TESTING_TEST_MODULES_H_
