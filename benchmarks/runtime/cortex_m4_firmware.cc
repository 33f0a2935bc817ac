// A minimal firmware that runs an agate module with the core profile, for
// cortex_m4_size.sh: linked with --gc-sections, its size minus the same
// firmware built with -DAGATE_BASELINE (no runtime calls) is what the runtime
// costs in flash. The module itself is data and is not counted.
#include <stddef.h>
#include <stdint.h>

#include "agate/runtime.h"

extern "C" int32_t firmware_kernel(void* const* args, const agate_kernel_ctx* ctx) {
  (void)ctx;
  *static_cast<uint8_t*>(args[0]) += 1;
  return 0;
}

// Placeholders the application would fill: a module in flash, RAM for the runtime.
extern "C" {
__attribute__((aligned(64))) volatile uint8_t g_module[64];
__attribute__((aligned(64))) uint8_t g_memory[4096];
volatile int32_t g_result;
}

int main() {
#if !defined(AGATE_BASELINE)
  static const agate_kernel_entry kEntries[] = {{"firmware_kernel", firmware_kernel}};
  static const agate_kernel_table kTable = {kEntries, 1};
  const void* data = const_cast<const uint8_t*>(g_module);
  agate_module_t* module = nullptr;
  agate_status_t status = agate_module_load_in_place(data, sizeof(g_module), &kTable, g_memory, 1024, &module);
  agate_executor_t* executor = nullptr;
  if (status == AGATE_OK) status = agate_executor_create_in_place(module, g_memory + 1024, 3072, &executor);
  uint8_t input = 1;
  int64_t shape[1] = {1};
  DLTensor tensor = {&input, {kDLCPU, 0}, 1, {kDLUInt, 8, 1}, shape, nullptr, 0};
  if (status == AGATE_OK) status = agate_executor_set_input(executor, 0, &tensor);
  if (status == AGATE_OK) status = agate_executor_run(executor);
  DLTensor output;
  if (status == AGATE_OK) status = agate_executor_get_output(executor, 0, &output);
  g_result = status;
  // What an application prints on failure.
  if (status != AGATE_OK) g_result = static_cast<int32_t>(agate_last_error_message()[0]);
#else
  g_result = firmware_kernel(reinterpret_cast<void* const*>(&g_memory), nullptr) + g_module[0];
#endif
  return 0;
}
