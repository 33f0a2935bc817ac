/* A C99 program that uses agate only through its public headers: loads a
 * module from a file and from memory, inspects it, runs it, compares the output.
 * Compiled with gcc -std=c99 -Wall -Wextra -Werror -pedantic (see BUILD).
 * Usage: consumer MODULE INPUT EXPECTED */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agate/runtime.h"

static int fail(const char* what, agate_status_t status) {
  fprintf(stderr, "%s: %s: %s\n", what, agate_status_name(status), agate_last_error_message());
  return 1;
}

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  unsigned char* data;
  long n;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  data = (unsigned char*)malloc((size_t)n);
  if (data != NULL && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return data;
}

static int run_once(agate_module_t* module, float* input, const unsigned char* expected, size_t expected_size) {
  agate_executor_t* executor = NULL;
  agate_executor_options options;
  agate_tensor_info info;
  DLTensor tensor;
  DLTensor output;
  agate_status_t status;
  int64_t shape[2];
  uint32_t index = 99;

  options.struct_size = sizeof(options);
  options.num_threads = 0;
  if ((status = agate_module_input_info(module, 0, &info)) != AGATE_OK) return fail("input_info", status);
  if (strcmp(info.name, "x") != 0 || info.ndim != 2 || info.dtype.code != kDLFloat) {
    fprintf(stderr, "unexpected input %s\n", info.name);
    return 1;
  }
  if ((status = agate_module_find_output(module, "y", &index)) != AGATE_OK || index != 0) {
    return fail("find_output", status);
  }
  if ((status = agate_executor_create(module, &options, &executor)) != AGATE_OK) return fail("executor_create", status);
  shape[0] = info.shape[0];
  shape[1] = info.shape[1];
  tensor.data = input;
  tensor.device.device_type = kDLCPU;
  tensor.device.device_id = 0;
  tensor.ndim = 2;
  tensor.dtype = info.dtype;
  tensor.shape = shape;
  tensor.strides = NULL;
  tensor.byte_offset = 0;
  if ((status = agate_executor_set_input(executor, 0, &tensor)) != AGATE_OK) return fail("set_input", status);
  if ((status = agate_executor_run(executor)) != AGATE_OK) return fail("run", status);
  if ((status = agate_executor_get_output(executor, 0, &output)) != AGATE_OK) return fail("get_output", status);
  if (memcmp(output.data, expected, expected_size) != 0) {
    fprintf(stderr, "output differs from the expected bytes\n");
    return 1;
  }
  if ((status = agate_executor_free(executor)) != AGATE_OK) return fail("executor_free", status);
  return 0;
}

/* Runtime ABI 1.2 on a CPU module: load options, the module's device, device
 * counts, and an output written straight into the caller's (64-byte aligned) memory. */
static int run_with_abi_1_2(const char* path, float* input, const unsigned char* expected, size_t expected_size) {
  agate_module_t* module = NULL;
  agate_executor_t* executor = NULL;
  agate_module_options options;
  agate_tensor_info info;
  DLDevice device;
  DLTensor tensor;
  DLTensor output;
  agate_status_t status;
  int32_t count = -1;
  unsigned char* block = NULL;
  void* mine = NULL;
  int failed = 0;

  if ((status = agate_runtime_device_count(kDLCPU, &count)) != AGATE_OK || count != 1) return fail("cpu count", status);
  status = agate_runtime_device_count(kDLCUDA, &count); /* no GPU here: unavailable, with the reason */
  if (status != AGATE_OK && (status != AGATE_UNAVAILABLE || agate_last_error_message()[0] == '\0')) {
    return fail("cuda count", status);
  }
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.device_id = 1;
  if (agate_module_load_from_file_with_options(path, NULL, &options, &module) != AGATE_INVALID_ARGUMENT) {
    fprintf(stderr, "a CPU module on device 1 must be refused\n");
    return 1;
  }
  options.device_id = 0;
  if ((status = agate_module_load_from_file_with_options(path, NULL, &options, &module)) != AGATE_OK) {
    return fail("load_from_file_with_options", status);
  }
  if ((status = agate_module_device(module, &device)) != AGATE_OK || device.device_type != kDLCPU) {
    return fail("module_device", status);
  }
  if ((status = agate_module_output_info(module, 0, &info)) != AGATE_OK) return fail("output_info", status);
  block = (unsigned char*)malloc((size_t)info.bytes + 64); /* C99: align by hand */
  if (block == NULL) return 1;
  mine = block + (64 - (size_t)((uintptr_t)block % 64)) % 64;
  if ((status = agate_executor_create(module, NULL, &executor)) != AGATE_OK) return fail("executor_create", status);
  memset(&tensor, 0, sizeof(tensor));
  tensor.data = input;
  tensor.device.device_type = kDLCPU;
  tensor.ndim = info.ndim;
  tensor.dtype = info.dtype;
  tensor.shape = (int64_t*)info.shape;
  if ((status = agate_executor_set_input(executor, 0, &tensor)) != AGATE_OK) return fail("set_input", status);
  tensor.data = mine;
  if ((status = agate_executor_set_output(executor, 0, &tensor)) != AGATE_OK) return fail("set_output", status);
  if ((status = agate_executor_run(executor)) != AGATE_OK) return fail("run", status);
  if ((status = agate_executor_get_output(executor, 0, &output)) != AGATE_OK) return fail("get_output", status);
  if (output.data != mine || memcmp(mine, expected, expected_size) != 0) {
    fprintf(stderr, "the output was not written into the caller's memory\n");
    failed = 1;
  }
  agate_executor_free(executor);
  agate_module_free(module);
  free(block);
  return failed;
}

int main(int argc, char** argv) {
  agate_module_t* module = NULL;
  agate_status_t status;
  size_t module_size = 0, input_size = 0, expected_size = 0;
  unsigned char* module_bytes;
  unsigned char* input;
  unsigned char* expected;
  int failed = 0;

  if (argc != 4) {
    fprintf(stderr, "usage: consumer MODULE INPUT EXPECTED\n");
    return 2;
  }
  if ((agate_runtime_abi_version() >> 16) != AGATE_RUNTIME_ABI_VERSION_MAJOR) {
    fprintf(stderr, "runtime ABI %u does not match the header\n", (unsigned)agate_runtime_abi_version());
    return 1;
  }
  status = agate_module_load_from_file("/nonexistent.agm", NULL, &module);
  if (status != AGATE_NOT_FOUND || strstr(agate_last_error_message(), "/nonexistent.agm") == NULL) {
    fprintf(stderr, "a missing file must be AGATE_NOT_FOUND naming it\n");
    return 1;
  }
  module_bytes = read_file(argv[1], &module_size);
  input = read_file(argv[2], &input_size);
  expected = read_file(argv[3], &expected_size);
  if (module_bytes == NULL || input == NULL || expected == NULL) {
    fprintf(stderr, "cannot read the test files\n");
    return 1;
  }

  if ((status = agate_module_load_from_file(argv[1], NULL, &module)) != AGATE_OK) return fail("load_from_file", status);
  failed |= run_once(module, (float*)(void*)input, expected, expected_size);
  agate_module_free(module);

  if ((status = agate_module_load_from_memory(module_bytes, module_size, NULL, &module)) != AGATE_OK) {
    return fail("load_from_memory", status);
  }
  failed |= run_once(module, (float*)(void*)input, expected, expected_size);
  agate_module_free(module);
  failed |= run_with_abi_1_2(argv[1], (float*)(void*)input, expected, expected_size);

  free(module_bytes);
  free(input);
  free(expected);
  if (!failed) printf("C99 consumer: ok\n");
  return failed;
}
