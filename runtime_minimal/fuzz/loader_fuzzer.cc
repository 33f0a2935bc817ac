// libFuzzer target over the module loader: any bytes must be refused with a
// status and message or accepted as a module that can be inspected and get an
// executor, never crash, leak or read out of bounds (run under ASan).
//
// Both loaders are exercised: in place with the static kernel table (the core
// profile's path, what a microcontroller runs) and from memory (the host path,
// including the embedded object's checksum, ELF check and dlopen; CUDA modules
// through the cuda profile's payload checks, then refused for want of a driver). Plans are not
// run: a module is trusted to describe its own kernels (Kernel.param_bytes), which
// a fuzzer can rewrite consistently; verification guarantees every argument lies
// inside the buffer it names.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agate/runtime.h"
#include "runtime_minimal/testing/test_modules.h"

namespace {

// CUDA modules are checked (cuda_verify) but never handed to a driver: the
// fuzzer opens none, whatever the machine has.
const bool kNoCudaDriver = setenv("AGATE_CUDA_DRIVER", "/nonexistent/agate-loader-fuzzer-opens-no-cuda-driver", 1) == 0;

void Inspect(agate_module_t* module) {
  uint32_t inputs = 0, outputs = 0;
  agate_module_num_inputs(module, &inputs);
  agate_module_num_outputs(module, &outputs);
  agate_tensor_info info;
  // Reading every name and shape lets ASan check they lie inside the module.
  volatile size_t sink = 0;
  for (uint32_t i = 0; i < inputs; ++i) {
    if (agate_module_input_info(module, i, &info) != AGATE_OK) continue;
    sink = sink + strlen(info.name);
    for (int32_t axis = 0; axis < info.ndim; ++axis) sink = sink + static_cast<size_t>(info.shape[axis]);
  }
  for (uint32_t o = 0; o < outputs; ++o) {
    if (agate_module_output_info(module, o, &info) != AGATE_OK) continue;
    sink = sink + strlen(info.name);
    for (int32_t axis = 0; axis < info.ndim; ++axis) sink = sink + static_cast<size_t>(info.shape[axis]);
  }
  size_t bytes = 0;
  // Executors of reasonable size only: a valid module may ask for any arena.
  if (agate_executor_in_place_bytes(module, &bytes) == AGATE_OK && bytes < (1u << 20)) {
    void* memory = nullptr;
    if (posix_memalign(&memory, 64, bytes == 0 ? 64 : bytes) != 0) return;
    agate_executor_t* executor = nullptr;
    if (agate_executor_create_in_place(module, memory, bytes, &executor) == AGATE_OK) {
      DLTensor output;
      for (uint32_t o = 0; o < outputs; ++o) agate_executor_get_output(executor, o, &output);
      agate_executor_free(executor);
    }
    free(memory);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The in-place loader needs the bytes aligned like a mapped file.
  void* aligned = nullptr;
  if (posix_memalign(&aligned, 4096, size == 0 ? 1 : size) != 0) return 0;
  if (size != 0) memcpy(aligned, data, size);
  size_t need = 0;
  if (agate_module_in_place_bytes(aligned, size, &need) == AGATE_OK) {
    void* memory = malloc(need);
    agate_module_t* module = nullptr;
    if (memory != nullptr && agate_module_load_in_place(aligned, size, agate::testing::TestKernelTable(), memory, need,
                                                        &module) == AGATE_OK) {
      Inspect(module);
      agate_module_free(module);
    }
    free(memory);
  }
  free(aligned);

  agate_module_t* module = nullptr;
  if (agate_module_load_from_memory(data, size, agate::testing::TestKernelTable(), &module) == AGATE_OK) {
    Inspect(module);
    agate_module_free(module);
  } else if (agate_last_error_message()[0] == '\0') {
    abort();  // every refusal says why
  }
  return 0;
}
