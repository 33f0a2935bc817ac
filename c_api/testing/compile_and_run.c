/* A C99 program that uses only the public headers: compiles the bundled demo model with the
 * compiler ABI, writes the module, reloads it with the runtime ABI from the file, runs it, and
 * compares with PyTorch's output; the same with bfloat16 weights ("precision"); then checks that a
 * bad option is refused with a message.
 * Usage: compile_and_run MODEL.onnx INPUT.bin EXPECTED.bin (the module goes to $TEST_TMPDIR or /tmp) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agate/compiler.h"
#include "agate/runtime.h"

static int read_floats(const char* path, float* out, size_t count) {
  FILE* f = fopen(path, "rb");
  size_t n;
  if (f == NULL) return 0;
  n = fread(out, sizeof(float), count, f);
  fclose(f);
  return n == count;
}

#define CHECK_C(call)                                                                \
  do {                                                                               \
    agate_status_t s_ = (call);                                                      \
    if (s_ != AGATE_OK) {                                                            \
      fprintf(stderr, "%s: %d %s\n", #call, (int)s_, agate_compiler_last_error_message()); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)
#define CHECK_R(call)                                                                \
  do {                                                                               \
    agate_status_t s_ = (call);                                                      \
    if (s_ != AGATE_OK) {                                                            \
      fprintf(stderr, "%s: %s %s\n", #call, agate_status_name(s_), agate_last_error_message()); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(int argc, char** argv) {
  static float input[3 * 32 * 32];
  float expected[10];
  int64_t shape[4] = {1, 3, 32, 32};
  char path[4096];
  agate_model_t* model = NULL;
  agate_compile_options_t* options = NULL;
  agate_compiled_t* compiled = NULL;
  agate_compiled_t* narrow = NULL;
  const uint8_t* fp32_bytes = NULL;
  const uint8_t* narrow_bytes = NULL;
  size_t fp32_size = 0, narrow_size = 0;
  agate_module_t* module = NULL;
  agate_executor_t* executor = NULL;
  DLTensor tensor, output;
  const float* result;
  agate_status_t status;
  int i;

  const char* out_dir = getenv("TEST_TMPDIR");
  if (out_dir == NULL) out_dir = "/tmp";
  if (argc != 4 || !read_floats(argv[2], input, 3 * 32 * 32) || !read_floats(argv[3], expected, 10)) {
    fprintf(stderr, "usage: compile_and_run MODEL.onnx INPUT.bin EXPECTED.bin\n");
    return 2;
  }
  CHECK_C(agate_model_load_onnx_file(argv[1], &model));
  CHECK_C(agate_compile_options_create(&options));
  CHECK_C(agate_compile_options_set(options, "target", "llvm"));
  CHECK_C(agate_compile_options_set(options, "fusion", "rule"));
  CHECK_C(agate_compile(model, options, &compiled));
  snprintf(path, sizeof(path), "%s/demo.agm", out_dir);
  CHECK_C(agate_compiled_write(compiled, path));

  CHECK_R(agate_module_load_from_file(path, NULL, &module));
  CHECK_R(agate_executor_create(module, NULL, &executor));
  memset(&tensor, 0, sizeof(tensor));
  tensor.data = input;
  tensor.device.device_type = kDLCPU;
  tensor.ndim = 4;
  tensor.dtype.code = kDLFloat;
  tensor.dtype.bits = 32;
  tensor.dtype.lanes = 1;
  tensor.shape = shape;
  CHECK_R(agate_executor_set_input(executor, 0, &tensor));
  CHECK_R(agate_executor_run(executor));
  CHECK_R(agate_executor_get_output(executor, 0, &output));
  result = (const float*)output.data;
  for (i = 0; i < 10; ++i) {
    if (fabs(result[i] - expected[i]) > 1e-4 + 1e-4 * fabs(expected[i])) {
      fprintf(stderr, "output[%d] = %g, PyTorch %g\n", i, result[i], expected[i]);
      return 1;
    }
  }
  agate_executor_free(executor);
  agate_module_free(module);
  CHECK_C(agate_compiled_bytes(compiled, &fp32_bytes, &fp32_size));

  /* bfloat16 weights: a smaller module, float32 in and out, near PyTorch (weights rounded to 2^-8). */
  CHECK_C(agate_compile_options_set(options, "precision", "bf16"));
  CHECK_C(agate_compile(model, options, &narrow));
  CHECK_C(agate_compiled_bytes(narrow, &narrow_bytes, &narrow_size));
  if (narrow_size >= fp32_size) {
    fprintf(stderr, "the bf16 module (%zu bytes) is not smaller than the fp32 one (%zu)\n", narrow_size, fp32_size);
    return 1;
  }
  CHECK_R(agate_module_load_from_memory(narrow_bytes, narrow_size, NULL, &module));
  CHECK_R(agate_executor_create(module, NULL, &executor));
  CHECK_R(agate_executor_set_input(executor, 0, &tensor));
  CHECK_R(agate_executor_run(executor));
  CHECK_R(agate_executor_get_output(executor, 0, &output));
  result = (const float*)output.data;
  for (i = 0; i < 10; ++i) {
    if (output.dtype.bits != 32 || fabs(result[i] - expected[i]) > 0.05 + 0.05 * fabs(expected[i])) {
      fprintf(stderr, "bf16 output[%d] = %g, PyTorch %g\n", i, result[i], expected[i]);
      return 1;
    }
  }
  agate_executor_free(executor);
  agate_module_free(module);
  agate_compiled_free(narrow);
  agate_compiled_free(compiled);
  CHECK_C(agate_compile_options_set(options, "precision", "fp8"));
  if (agate_compile(model, options, &compiled) != AGATE_INVALID_ARGUMENT ||
      strstr(agate_compiler_last_error_message(), "fp8") == NULL) {
    fprintf(stderr, "precision fp8 was not refused: %s\n", agate_compiler_last_error_message());
    return 1;
  }
  CHECK_C(agate_compile_options_set(options, "precision", "fp32"));

  /* A bad option is refused, with a message naming it, and leaves no module. */
  CHECK_C(agate_compile_options_set(options, "fusoin", "rule"));
  if (agate_compile(model, options, &compiled) != AGATE_INVALID_ARGUMENT ||
      strstr(agate_compiler_last_error_message(), "fusoin") == NULL) {
    fprintf(stderr, "a misspelled option was not refused: %s\n", agate_compiler_last_error_message());
    return 1;
  }
  /* The same model for an NVIDIA GPU: compiled here by NVRTC (no GPU needed), or refused
   * with AGATE_UNAVAILABLE naming NVRTC on a machine without the CUDA toolkit. */
  agate_compile_options_free(options);
  CHECK_C(agate_compile_options_create(&options));
  CHECK_C(agate_compile_options_set(options, "target", "cuda -arch=sm_80"));
  status = agate_compile(model, options, &compiled);
  if (status == AGATE_OK) {
    const uint8_t* bytes = NULL;
    size_t size = 0;
    CHECK_C(agate_compiled_bytes(compiled, &bytes, &size));
    if (size == 0 || memcmp(bytes + 4, "AGTM", 4) != 0) {
      fprintf(stderr, "the cuda module is not a module\n");
      return 1;
    }
    agate_compiled_free(compiled);
  } else if (status != AGATE_UNAVAILABLE || strstr(agate_compiler_last_error_message(), "NVRTC") == NULL) {
    fprintf(stderr, "compiling for cuda: %d %s\n", (int)status, agate_compiler_last_error_message());
    return 1;
  }
  if (agate_model_load_onnx_file("/nonexistent.onnx", &model) != AGATE_NOT_FOUND) {
    fprintf(stderr, "a missing model was not AGATE_NOT_FOUND\n");
    return 1;
  }
  agate_compile_options_free(options);
  agate_model_free(model);
  printf("compiled, wrote, reloaded and ran the demo model: matches PyTorch\n");
  return 0;
}
