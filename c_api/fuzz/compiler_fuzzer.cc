// libFuzzer target over the compiler's C ABI (agate/compiler.h): any bytes go to
// agate_model_load_onnx_memory, and a model that loads is compiled for the host ("llvm") and
// freed; built with AGATE_FUZZ_TARGET_C it compiles for the portable C target instead (no
// LLVM: every layer but LLVM's code generation, a hundred times the inputs per second).
// Every call must return a status with a message: no exception may cross the ABI (that
// would abort), no crash, no sanitizer report, no allocation above the fuzzer's
// -malloc_limit_mb. A status of AGATE_INTERNAL (an invariant of agate's that does not hold)
// is a bug too: the target aborts on it, printing the message.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "agate/compiler.h"

namespace {

#ifdef AGATE_FUZZ_TARGET_C
constexpr char kTarget[] = "c";
#else
constexpr char kTarget[] = "llvm";
#endif

void CheckStatus(agate_status_t status, const char* call) {
  if (status == AGATE_INTERNAL) {
    fprintf(stderr, "%s: internal error: %s\n", call, agate_compiler_last_error_message());
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  agate_model_t* model = nullptr;
  agate_status_t status = agate_model_load_onnx_memory(size ? data : reinterpret_cast<const uint8_t*>(""), size, &model);
  CheckStatus(status, "agate_model_load_onnx_memory");
  if (status != AGATE_OK) return 0;
  agate_compile_options_t* options = nullptr;
  if (agate_compile_options_create(&options) != AGATE_OK) abort();
  CheckStatus(agate_compile_options_set(options, "target", kTarget), "agate_compile_options_set");
  agate_compiled_t* compiled = nullptr;
  status = agate_compile(model, options, &compiled);
  CheckStatus(status, "agate_compile");
  if (status == AGATE_OK) {
    const uint8_t* bytes = nullptr;
    size_t n = 0;
    if (agate_compiled_bytes(compiled, &bytes, &n) != AGATE_OK || n == 0) abort();
    agate_compiled_free(compiled);
  }
  agate_compile_options_free(options);
  agate_model_free(model);
  return 0;
}
