#include "agate_go.h"

#include <stdlib.h>
#include <string.h>

agate_status_t agate_go_set_input(agate_executor_t* e, uint32_t index, void* data, uint8_t code, uint8_t bits,
                                  uint16_t lanes, int32_t ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = lanes;
  t.shape = shape;
  return agate_executor_set_input(e, index, &t);
}

void* agate_go_alloc(size_t size) {
  void* p = NULL;
  if (posix_memalign(&p, 64, size == 0 ? 1 : size) != 0) return NULL;
  return p;
}

agate_status_t agate_go_create_executor(const agate_module_t* m, int32_t num_threads, agate_executor_t** out) {
  agate_executor_options options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.num_threads = num_threads;
  return agate_executor_create(m, &options, out);
}

agate_status_t agate_go_load_file(const char* path, int32_t device_id, agate_module_t** out) {
  agate_module_options options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.device_id = device_id;
  return agate_module_load_from_file_with_options(path, NULL, &options, out);
}

agate_status_t agate_go_load_memory(const void* data, size_t size, int32_t device_id, agate_module_t** out) {
  agate_module_options options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.device_id = device_id;
  return agate_module_load_from_memory_with_options(data, size, NULL, &options, out);
}

static DLTensor Tensor(void* data, int32_t device_type, int32_t device_id, uint8_t code, uint8_t bits,
                       uint16_t lanes, int32_t ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.device.device_type = (DLDeviceType)device_type;
  t.device.device_id = device_id;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = lanes;
  t.shape = shape;
  return t;
}

agate_status_t agate_go_bind_device(agate_executor_t* e, int output, uint32_t index, uint64_t address,
                                    int32_t device_id, uint8_t code, uint8_t bits, uint16_t lanes, int32_t ndim,
                                    int64_t* shape) {
  const DLTensor t = Tensor((void*)(uintptr_t)address, kDLCUDA, device_id, code, bits, lanes, ndim, shape);
  return output ? agate_executor_set_output(e, index, &t) : agate_executor_set_input(e, index, &t);
}

agate_status_t agate_go_copy_output(agate_executor_t* e, uint32_t index, void* data, uint8_t code, uint8_t bits,
                                    uint16_t lanes, int32_t ndim, int64_t* shape) {
  const DLTensor t = Tensor(data, kDLCPU, 0, code, bits, lanes, ndim, shape);
  return agate_executor_copy_output(e, index, &t);
}
