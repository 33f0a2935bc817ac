// ONNX conformance on a real GPU, in three steps over one folder, because the machine
// with a GPU is not the machine with the compiler (the deployment path a user takes):
//
//  1. here: `run_conformance --cuda-export DIR TARGET` compiles every case for the cuda
//     target (CudaExportExecutor) and writes, per test data set, DIR/<case>.<set>.agm and
//     .inputs.npz (or .error: why it did not compile, with its status). It also runs the
//     plan on the loop-IR evaluator, so its report is the --cuda-eval one.
//  2. on the GPU machine: tests/onnx_conformance/run_on_gpu.sh runs each module with
//     `agate-runtime run` and writes .outputs.npz (or .gpu_error: the runtime's message).
//  3. here: `run_conformance --gpu-results DIR` (CudaGpuResultsExecutor) tallies the GPU's
//     outputs against the test data with the harness's own comparison and tolerances.
//
// A run key is "<case>.<n>" for the case's n-th test_data_set (Executor::begin_run).
#ifndef AGATE_TESTS_ONNX_CONFORMANCE_CUDA_GPU_EXECUTOR_H_
#define AGATE_TESTS_ONNX_CONFORMANCE_CUDA_GPU_EXECUTOR_H_

#include <string>

#include "core/fusion/fusion.h"
#include "tests/onnx_conformance/conformance.h"

namespace agate {
namespace conformance {

Executor CudaExportExecutor(fusion::FusionPolicy policy, const std::string& target, const std::string& dir);
Executor CudaGpuResultsExecutor(const std::string& dir);

}  // namespace conformance
}  // namespace agate

#endif  // AGATE_TESTS_ONNX_CONFORMANCE_CUDA_GPU_EXECUTOR_H_
