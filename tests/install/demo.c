/* A program outside the repository, built against an installed runtime only
 * (`pkg-config agate-runtime`): runs the demo module and compares its output
 * with PyTorch's. The `install` suite (tools/ci/suites/install.sh) builds it
 * twice, linked with the shared and with the static library.
 * The android suite cross-builds it for arm64 and runs it under qemu-aarch64,
 * also with KERNEL_DIR (agate_runtime_set_kernel_dir, the Android loader).
 * Usage: demo MODULE INPUT EXPECTED [KERNEL_DIR] (raw float32: 3x32x32 in, 10 out). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <agate/runtime.h>

static int read_floats(const char* path, float* out, size_t count) {
  FILE* f = fopen(path, "rb");
  size_t n;
  if (f == NULL) return 0;
  n = fread(out, sizeof(float), count, f);
  fclose(f);
  return n == count;
}

static int fail(const char* what, agate_status_t status) {
  fprintf(stderr, "%s: %s: %s\n", what, agate_status_name(status), agate_last_error_message());
  return 1;
}

int main(int argc, char** argv) {
  static float input[3 * 32 * 32];
  float expected[10];
  agate_module_t* module = NULL;
  agate_executor_t* executor = NULL;
  int64_t shape[4] = {1, 3, 32, 32};
  DLTensor tensor;
  DLTensor output;
  agate_status_t status;
  int i;

  if ((argc != 4 && argc != 5) || !read_floats(argv[2], input, 3 * 32 * 32) || !read_floats(argv[3], expected, 10)) {
    fprintf(stderr, "usage: demo MODULE INPUT EXPECTED [KERNEL_DIR]\n");
    return 2;
  }
  if (agate_runtime_abi_version() != AGATE_RUNTIME_ABI_VERSION) {
    fprintf(stderr, "runtime ABI %#x, header %#x\n", agate_runtime_abi_version(), AGATE_RUNTIME_ABI_VERSION);
    return 1;
  }
  if (argc == 5 && (status = agate_runtime_set_kernel_dir(argv[4])) != AGATE_OK) return fail("kernel_dir", status);
  if ((status = agate_module_load_from_file(argv[1], NULL, &module)) != AGATE_OK) return fail("load", status);
  if ((status = agate_executor_create(module, NULL, &executor)) != AGATE_OK) return fail("executor", status);
  tensor.data = input;
  tensor.device.device_type = kDLCPU;
  tensor.device.device_id = 0;
  tensor.ndim = 4;
  tensor.dtype.code = kDLFloat;
  tensor.dtype.bits = 32;
  tensor.dtype.lanes = 1;
  tensor.shape = shape;
  tensor.strides = NULL;
  tensor.byte_offset = 0;
  if ((status = agate_executor_set_input(executor, 0, &tensor)) != AGATE_OK) return fail("set_input", status);
  if ((status = agate_executor_run(executor)) != AGATE_OK) return fail("run", status);
  if ((status = agate_executor_get_output(executor, 0, &output)) != AGATE_OK) return fail("get_output", status);
  for (i = 0; i < 10; ++i) {
    const float got = ((const float*)output.data)[i];
    if (fabs(got - expected[i]) > 1e-4 + 1e-4 * fabs(expected[i])) {
      fprintf(stderr, "output[%d] = %g, PyTorch %g\n", i, got, expected[i]);
      return 1;
    }
  }
  agate_executor_free(executor);
  agate_module_free(module);
  printf("demo: 10 outputs match PyTorch\n");
  return 0;
}
