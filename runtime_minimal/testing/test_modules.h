// Modules built from hand-written kernels (test_kernels.h) for the runtime's
// tests and benchmarks, serialized with the same SerializeModule the compiler uses.
#ifndef AGATE_RUNTIME_MINIMAL_TESTING_TEST_MODULES_H_
#define AGATE_RUNTIME_MINIMAL_TESTING_TEST_MODULES_H_

#include <cstdint>
#include <cstring>
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

// The MLP per item of a batch: x and y are [N, 16, 16] float32 with symbol N in 1..max_batch
// (format 2.0), one variant per extent in `variants` (ascending from 1), each the MLP's calls
// once per item of its chunk.
serialize::ModuleSpec BatchMlpSpec(serialize::TargetKind kind, int64_t max_batch, const std::vector<int64_t>& variants);

// The MLP per item of a padded symbol (format 3.0): x and y are [S, 16, 16] float32 with S in
// 1..max (padded, though on axis 0), one variant per extent in `variants` (ascending, the last
// max), each the MLP's calls once per item of the staged (zero-padded) x into the staged y.
serialize::ModuleSpec PaddedMlpSpec(serialize::TargetKind kind, int64_t max, const std::vector<int64_t>& variants);

// indices = the indices (int64) of x's non-zero elements: x is 256 float32, indices a
// value-dependent output of at most 256 (format 2.0); with `overflow`, a second call reports
// extent 257, past the bound.
serialize::ModuleSpec NonZeroSpec(serialize::TargetKind kind, bool overflow);

// y = 2 * x via agate_test_double_via_workspace: a kernel with a workspace.
serialize::ModuleSpec WorkspaceSpec(serialize::TargetKind kind);

// `calls` calls of agate_test_noop on one arena byte: the executor's overhead.
serialize::ModuleSpec NoopChainSpec(serialize::TargetKind kind, int calls);

// Reads a whole file (fails the test when it cannot).
std::vector<uint8_t> ReadFile(const std::string& path);

// Runs `module`, whose one input and one output are float32 vectors of x.size() elements, on
// `x`, writing the output to *y: AGATE_OK, or the status of the first call that failed
// (agate_last_error_message() says why). The executor is created and freed here. Inline, so
// only the tests that call it need a runtime that defines the executor functions.
inline agate_status_t RunVectorModule(agate_module_t* module, std::vector<float> x, std::vector<float>* y) {
  agate_executor_t* executor = nullptr;
  agate_status_t status = agate_executor_create(module, nullptr, &executor);
  if (status != AGATE_OK) return status;
  int64_t shape[1] = {static_cast<int64_t>(x.size())};
  DLTensor t;
  std::memset(&t, 0, sizeof(t));
  t.data = x.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  y->assign(x.size(), 0.0f);
  status = agate_executor_set_input(executor, 0, &t);
  if (status == AGATE_OK) status = agate_executor_run(executor);
  t.data = y->data();
  if (status == AGATE_OK) status = agate_executor_copy_output(executor, 0, &t);
  agate_executor_free(executor);
  return status;
}

// A 16x16 float32 DLTensor over `data` (borrowed).
DLTensor MatrixTensor(float* data, int64_t* shape_storage);

}  // namespace testing
}  // namespace agate

#endif  // AGATE_RUNTIME_MINIMAL_TESTING_TEST_MODULES_H_
