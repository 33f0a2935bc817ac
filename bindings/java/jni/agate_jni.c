/* agate_jni: the native half of the Java binding (dev.agate.NativeApi).
 *
 * Why a hand-written JNI layer rather than a generated one: JNI needs the Java
 * objects (exceptions, TensorInfo) built on the Java side of each call, and the
 * runtime's thread-local error message must be read on the thread of the failed
 * call, which is always true inside one native method.
 *
 * Ownership. Java holds two kinds of handles as jlong:
 *   module   an agate_module_t*, freed by moduleFree;
 *   executor a jni_executor* (below): the agate_executor_t* plus the input
 *            buffers it reads, which set_input only borrows; freed by executorFree.
 * The Java side guarantees (dev.agate.ModuleState) that a module is freed after
 * its executors and that no handle is used after it is freed.
 *
 * Plain C99 and JNI only: the same file builds for Android with the NDK.
 */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agate/runtime.h"

/* ------------------------------------------------------------------------- */
/* Cached classes and methods (JNI_OnLoad): FindClass from a native method can
 * see the application's class loader only on the thread that loaded us. */

static jclass g_exception_class;   /* dev.agate.AgateException */
static jmethodID g_exception_ctor; /* (ILjava/lang/String;)V */
static jclass g_info_class;        /* dev.agate.TensorInfo */
static jmethodID g_info_ctor;      /* (Ljava/lang/String;III[JJ)V */
static jclass g_string_class;      /* java.lang.String */

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  JNIEnv* env;
  jclass local;
  (void)reserved;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
  local = (*env)->FindClass(env, "dev/agate/AgateException");
  if (local == NULL) return JNI_ERR;
  g_exception_class = (jclass)(*env)->NewGlobalRef(env, local);
  g_exception_ctor = (*env)->GetMethodID(env, g_exception_class, "<init>", "(ILjava/lang/String;)V");
  local = (*env)->FindClass(env, "dev/agate/TensorInfo");
  if (local == NULL) return JNI_ERR;
  g_info_class = (jclass)(*env)->NewGlobalRef(env, local);
  g_info_ctor = (*env)->GetMethodID(env, g_info_class, "<init>", "(Ljava/lang/String;III[JJ)V");
  local = (*env)->FindClass(env, "java/lang/String");
  if (local == NULL) return JNI_ERR;
  g_string_class = (jclass)(*env)->NewGlobalRef(env, local);
  if (g_exception_ctor == NULL || g_info_ctor == NULL) return JNI_ERR;
  return JNI_VERSION_1_6;
}

/* Throws AgateException(status, message). */
static void throw_agate(JNIEnv* env, agate_status_t status, const char* message) {
  jstring text = (*env)->NewStringUTF(env, message != NULL ? message : "");
  jobject error;
  if (text == NULL) return; /* OutOfMemoryError pending */
  error = (*env)->NewObject(env, g_exception_class, g_exception_ctor, (jint)status, text);
  if (error != NULL) (*env)->Throw(env, (jthrowable)error);
}

/* Throws for a non-OK status with the runtime's message; returns 1 if it threw. */
static int check(JNIEnv* env, agate_status_t status) {
  if (status == AGATE_OK) return 0;
  throw_agate(env, status, agate_last_error_message());
  return 1;
}

/* ------------------------------------------------------------------------- */
/* Executors: the runtime executor plus the input memory it borrows. */

typedef struct jni_executor {
  agate_executor_t* executor;
  const agate_module_t* module;
  uint32_t num_inputs;
  void** inputs; /* one 64-byte-aligned buffer per bound input, or NULL */
} jni_executor;

static jni_executor* as_executor(jlong handle) { return (jni_executor*)(intptr_t)handle; }
static agate_module_t* as_module(jlong handle) { return (agate_module_t*)(intptr_t)handle; }

static void free_executor(jni_executor* e) {
  uint32_t i;
  if (e == NULL) return;
  agate_executor_free(e->executor); /* first: it borrows the inputs */
  for (i = 0; i < e->num_inputs && e->inputs != NULL; ++i) free(e->inputs[i]);
  free(e->inputs);
  free(e);
}

/* ------------------------------------------------------------------------- */
/* dev.agate.NativeApi */

#define NATIVE(ret, name) JNIEXPORT ret JNICALL Java_dev_agate_NativeApi_##name

NATIVE(jint, runtimeAbiVersion)(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return (jint)agate_runtime_abi_version();
}

NATIVE(void, setNumThreads)(JNIEnv* env, jclass cls, jint n) {
  (void)cls;
  check(env, agate_runtime_set_num_threads(n));
}

NATIVE(jint, numThreads)(JNIEnv* env, jclass cls) {
  int32_t n = 0;
  (void)cls;
  check(env, agate_runtime_num_threads(&n));
  return n;
}

NATIVE(void, setKernelDir)(JNIEnv* env, jclass cls, jstring dir) {
  agate_status_t status;
  const char* chars = NULL;
  (void)cls;
  if (dir != NULL) {
    chars = (*env)->GetStringUTFChars(env, dir, NULL);
    if (chars == NULL) return;
  }
  status = agate_runtime_set_kernel_dir(chars);
  if (chars != NULL) (*env)->ReleaseStringUTFChars(env, dir, chars);
  check(env, status);
}

NATIVE(jlong, moduleLoadFile)(JNIEnv* env, jclass cls, jstring path) {
  agate_module_t* module = NULL;
  agate_status_t status;
  const char* chars;
  (void)cls;
  if (path == NULL) {
    throw_agate(env, AGATE_INVALID_ARGUMENT, "path is null");
    return 0;
  }
  chars = (*env)->GetStringUTFChars(env, path, NULL);
  if (chars == NULL) return 0;
  status = agate_module_load_from_file(chars, NULL, &module);
  (*env)->ReleaseStringUTFChars(env, path, chars);
  if (check(env, status)) return 0;
  return (jlong)(intptr_t)module;
}

NATIVE(jlong, moduleLoadBytes)(JNIEnv* env, jclass cls, jbyteArray data) {
  agate_module_t* module = NULL;
  agate_status_t status;
  jsize size;
  jbyte* bytes;
  (void)cls;
  if (data == NULL) {
    throw_agate(env, AGATE_INVALID_ARGUMENT, "module bytes are null");
    return 0;
  }
  size = (*env)->GetArrayLength(env, data);
  /* The runtime copies the bytes, so the array is released (JNI_ABORT: unchanged) right after. */
  bytes = (*env)->GetByteArrayElements(env, data, NULL);
  if (bytes == NULL) return 0;
  status = agate_module_load_from_memory(bytes, (size_t)size, NULL, &module);
  (*env)->ReleaseByteArrayElements(env, data, bytes, JNI_ABORT);
  if (check(env, status)) return 0;
  return (jlong)(intptr_t)module;
}

NATIVE(void, moduleFree)(JNIEnv* env, jclass cls, jlong module) {
  (void)env;
  (void)cls;
  agate_module_free(as_module(module));
}

NATIVE(jstring, moduleTarget)(JNIEnv* env, jclass cls, jlong module) {
  const char* target = NULL;
  (void)cls;
  if (check(env, agate_module_target(as_module(module), &target))) return NULL;
  return (*env)->NewStringUTF(env, target);
}

/* TensorInfo[] of the inputs (outputs = 0) or outputs (outputs = 1). */
static jobjectArray tensor_infos(JNIEnv* env, const agate_module_t* module, int outputs) {
  uint32_t count = 0, i;
  jobjectArray result;
  if (check(env, outputs ? agate_module_num_outputs(module, &count) : agate_module_num_inputs(module, &count))) {
    return NULL;
  }
  result = (*env)->NewObjectArray(env, (jsize)count, g_info_class, NULL);
  if (result == NULL) return NULL;
  for (i = 0; i < count; ++i) {
    agate_tensor_info info;
    jstring name;
    jlongArray shape;
    jobject object;
    if (check(env, outputs ? agate_module_output_info(module, i, &info) : agate_module_input_info(module, i, &info))) {
      return NULL;
    }
    name = (*env)->NewStringUTF(env, info.name);
    shape = (*env)->NewLongArray(env, info.ndim);
    if (name == NULL || shape == NULL) return NULL;
    (*env)->SetLongArrayRegion(env, shape, 0, info.ndim, (const jlong*)info.shape);
    object = (*env)->NewObject(env, g_info_class, g_info_ctor, name, (jint)info.dtype.code, (jint)info.dtype.bits,
                               (jint)info.dtype.lanes, shape, (jlong)info.bytes);
    if (object == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, result, (jsize)i, object);
    (*env)->DeleteLocalRef(env, object);
    (*env)->DeleteLocalRef(env, shape);
    (*env)->DeleteLocalRef(env, name);
  }
  return result;
}

NATIVE(jobjectArray, moduleInputs)(JNIEnv* env, jclass cls, jlong module) {
  (void)cls;
  return tensor_infos(env, as_module(module), 0);
}

NATIVE(jobjectArray, moduleOutputs)(JNIEnv* env, jclass cls, jlong module) {
  (void)cls;
  return tensor_infos(env, as_module(module), 1);
}

static jint find_tensor(JNIEnv* env, const agate_module_t* module, jstring name, int output) {
  uint32_t index = 0;
  agate_status_t status;
  const char* chars;
  if (name == NULL) {
    throw_agate(env, AGATE_INVALID_ARGUMENT, "tensor name is null");
    return -1;
  }
  chars = (*env)->GetStringUTFChars(env, name, NULL);
  if (chars == NULL) return -1;
  status = output ? agate_module_find_output(module, chars, &index) : agate_module_find_input(module, chars, &index);
  (*env)->ReleaseStringUTFChars(env, name, chars);
  if (check(env, status)) return -1;
  return (jint)index;
}

NATIVE(jint, moduleFindInput)(JNIEnv* env, jclass cls, jlong module, jstring name) {
  (void)cls;
  return find_tensor(env, as_module(module), name, 0);
}

NATIVE(jint, moduleFindOutput)(JNIEnv* env, jclass cls, jlong module, jstring name) {
  (void)cls;
  return find_tensor(env, as_module(module), name, 1);
}

NATIVE(jlong, executorCreate)(JNIEnv* env, jclass cls, jlong module_handle, jint num_threads) {
  const agate_module_t* module = as_module(module_handle);
  agate_executor_options options;
  jni_executor* e;
  (void)cls;
  e = (jni_executor*)calloc(1, sizeof(jni_executor));
  if (e == NULL) {
    throw_agate(env, AGATE_RESOURCE_EXHAUSTED, "cannot allocate the executor");
    return 0;
  }
  e->module = module;
  if (check(env, agate_module_num_inputs(module, &e->num_inputs))) {
    free_executor(e);
    return 0;
  }
  e->inputs = (void**)calloc(e->num_inputs == 0 ? 1 : e->num_inputs, sizeof(void*));
  if (e->inputs == NULL) {
    free_executor(e);
    throw_agate(env, AGATE_RESOURCE_EXHAUSTED, "cannot allocate the executor's input table");
    return 0;
  }
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.num_threads = num_threads;
  if (check(env, agate_executor_create(module, &options, &e->executor))) {
    free_executor(e);
    return 0;
  }
  return (jlong)(intptr_t)e;
}

NATIVE(void, executorFree)(JNIEnv* env, jclass cls, jlong executor) {
  (void)env;
  (void)cls;
  free_executor(as_executor(executor));
}

/* Copies `data` into executor-owned memory and binds it as input `index`; the
 * runtime checks dtype and shape. On failure the previous binding stays. */
NATIVE(void, executorSetInput)(JNIEnv* env, jclass cls, jlong executor, jint index, jint code, jint bits, jint lanes,
                               jlongArray shape, jbyteArray data) {
  jni_executor* e = as_executor(executor);
  int64_t* dims = NULL;
  void* buffer = NULL;
  jsize ndim, size;
  DLTensor tensor;
  agate_status_t status;
  (void)cls;
  if (shape == NULL || data == NULL) {
    throw_agate(env, AGATE_INVALID_ARGUMENT, "input shape or data is null");
    return;
  }
  if (index < 0 || (uint32_t)index >= e->num_inputs) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "input index out of range");
    return;
  }
  ndim = (*env)->GetArrayLength(env, shape);
  size = (*env)->GetArrayLength(env, data);
  dims = (int64_t*)malloc(sizeof(int64_t) * (size_t)(ndim == 0 ? 1 : ndim));
  if (dims == NULL || posix_memalign(&buffer, 64, size == 0 ? 1 : (size_t)size) != 0) {
    free(dims);
    throw_agate(env, AGATE_RESOURCE_EXHAUSTED, "cannot allocate the input's memory");
    return;
  }
  (*env)->GetLongArrayRegion(env, shape, 0, ndim, (jlong*)dims);
  (*env)->GetByteArrayRegion(env, data, 0, size, (jbyte*)buffer);
  memset(&tensor, 0, sizeof(tensor));
  tensor.data = buffer;
  tensor.device.device_type = kDLCPU;
  tensor.ndim = ndim;
  tensor.dtype.code = (uint8_t)code;
  tensor.dtype.bits = (uint8_t)bits;
  tensor.dtype.lanes = (uint16_t)lanes;
  tensor.shape = dims;
  status = agate_executor_set_input(e->executor, (uint32_t)index, &tensor);
  free(dims); /* read during the call only */
  if (check(env, status)) {
    free(buffer);
    return;
  }
  free(e->inputs[index]);
  e->inputs[index] = buffer;
}

NATIVE(void, executorRun)(JNIEnv* env, jclass cls, jlong executor) {
  (void)cls;
  check(env, agate_executor_run(as_executor(executor)->executor));
}

/* Output `index`'s run-time shape after the last run (runtime ABI 1.5; the module's shape for
 * static modules, the upper bounds before a first run). */
NATIVE(jlongArray, executorOutputShape)(JNIEnv* env, jclass cls, jlong executor, jint index) {
  jni_executor* e = as_executor(executor);
  int64_t dims[32];
  int32_t ndim = 0;
  jlongArray result;
  (void)cls;
  if (index < 0) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "output index out of range");
    return NULL;
  }
  if (check(env, agate_executor_output_shape(e->executor, (uint32_t)index, dims, 32, &ndim))) return NULL;
  result = (*env)->NewLongArray(env, ndim);
  if (result != NULL) (*env)->SetLongArrayRegion(env, result, 0, ndim, (const jlong*)dims);
  return result;
}

/* A copy of output `index`'s bytes at its run-time shape (dtype the module's), copied with
 * agate_executor_copy_output, so also from a GPU. */
NATIVE(jbyteArray, executorGetOutput)(JNIEnv* env, jclass cls, jlong executor, jint index) {
  jni_executor* e = as_executor(executor);
  agate_tensor_info info;
  DLTensor host;
  jbyteArray result;
  void* buffer = NULL;
  agate_status_t status;
  int64_t dims[32];
  int32_t ndim = 0, axis;
  uint64_t bytes;
  (void)cls;
  if (index < 0) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "output index out of range");
    return NULL;
  }
  if (check(env, agate_module_output_info(e->module, (uint32_t)index, &info))) return NULL;
  if (check(env, agate_executor_output_shape(e->executor, (uint32_t)index, dims, 32, &ndim))) return NULL;
  bytes = info.dtype.bits <= 8 ? 1 : info.dtype.bits / 8;
  bytes *= info.dtype.lanes;
  for (axis = 0; axis < ndim; ++axis) bytes *= (uint64_t)dims[axis];
  if (posix_memalign(&buffer, 64, bytes == 0 ? 1 : (size_t)bytes) != 0) {
    throw_agate(env, AGATE_RESOURCE_EXHAUSTED, "cannot allocate the output's copy");
    return NULL;
  }
  memset(&host, 0, sizeof(host));
  host.data = buffer;
  host.device.device_type = kDLCPU;
  host.ndim = ndim;
  host.dtype = info.dtype;
  host.shape = dims; /* read during the call only */
  status = agate_executor_copy_output(e->executor, (uint32_t)index, &host);
  result = status == AGATE_OK ? (*env)->NewByteArray(env, (jsize)bytes) : NULL;
  if (result != NULL && bytes != 0) {
    (*env)->SetByteArrayRegion(env, result, 0, (jsize)bytes, (const jbyte*)buffer);
  }
  free(buffer);
  check(env, status);
  return result;
}

/* Axis `axis` of input / output `index` (runtime ABI 1.5): {min, max, kind}. */
NATIVE(jlongArray, moduleDim)(JNIEnv* env, jclass cls, jlong module, jboolean output, jint index, jint axis) {
  agate_dim_info info;
  jlongArray result;
  jlong values[3];
  (void)cls;
  if (index < 0) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "tensor index out of range");
    return NULL;
  }
  if (check(env, output ? agate_module_output_dim(as_module(module), (uint32_t)index, axis, &info)
                        : agate_module_input_dim(as_module(module), (uint32_t)index, axis, &info))) {
    return NULL;
  }
  values[0] = info.min;
  values[1] = info.max;
  values[2] = info.kind;
  result = (*env)->NewLongArray(env, 3);
  if (result != NULL) (*env)->SetLongArrayRegion(env, result, 0, 3, values);
  return result;
}

/* The symbol of axis `axis` of input / output `index`, or null when it has none. */
NATIVE(jstring, moduleDimSymbol)(JNIEnv* env, jclass cls, jlong module, jboolean output, jint index, jint axis) {
  agate_dim_info info;
  (void)cls;
  if (index < 0) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "tensor index out of range");
    return NULL;
  }
  if (check(env, output ? agate_module_output_dim(as_module(module), (uint32_t)index, axis, &info)
                        : agate_module_input_dim(as_module(module), (uint32_t)index, axis, &info))) {
    return NULL;
  }
  return info.symbol != NULL ? (*env)->NewStringUTF(env, info.symbol) : NULL;
}

/* ------------------------------------------------------------------------- */
/* Direct ByteBuffers: zero-copy input, output copied into the caller's buffer */

/* The address and size of a direct buffer (its position already applied by the Java side's
 * slice()), or an AGATE_INVALID_ARGUMENT naming `what` when the buffer is not direct. */
static void* direct_buffer(JNIEnv* env, jobject buffer, const char* what, jlong* out_bytes) {
  void* address;
  char message[160];
  if (buffer == NULL) {
    snprintf(message, sizeof(message), "%s: the buffer is null", what);
    throw_agate(env, AGATE_INVALID_ARGUMENT, message);
    return NULL;
  }
  address = (*env)->GetDirectBufferAddress(env, buffer);
  *out_bytes = (*env)->GetDirectBufferCapacity(env, buffer);
  if (address == NULL && *out_bytes != 0) {
    snprintf(message, sizeof(message), "%s: not a direct ByteBuffer (ByteBuffer.allocateDirect)", what);
    throw_agate(env, AGATE_INVALID_ARGUMENT, message);
  }
  return address;
}

/* The bytes of a dense tensor of `dtype` and `shape`. */
static uint64_t dense_bytes(DLDataType dtype, const int64_t* shape, int32_t ndim) {
  uint64_t bytes = (uint64_t)(dtype.bits <= 8 ? 1 : dtype.bits / 8) * dtype.lanes;
  int32_t axis;
  for (axis = 0; axis < ndim; ++axis) bytes *= (uint64_t)shape[axis];
  return bytes;
}

/* Describes the direct buffer as a kDLCPU tensor of `dtype` and `dims` (borrowed: read during
 * the next runtime call only) in *out, after checking that it holds exactly that tensor's bytes;
 * `role` and `index` name the input or output in the exception. Returns 0 with a pending
 * exception on failure. */
static int buffer_tensor(JNIEnv* env, jobject buffer, const char* role, jint index, const agate_tensor_info* info,
                         int64_t* dims, int32_t ndim, DLTensor* out) {
  jlong bytes = 0;
  char message[256];
  void* address = direct_buffer(env, buffer, info->name, &bytes);
  uint64_t needed = dense_bytes(info->dtype, dims, ndim);
  if ((*env)->ExceptionCheck(env)) return 0;
  if ((uint64_t)bytes != needed) {
    snprintf(message, sizeof(message), "%s %d '%s': the buffer holds %lld bytes (from its position to its limit); "
             "the %s %s %llu", role, (int)index, info->name, (long long)bytes, role,
             role[0] == 'i' ? "needs" : "has", (unsigned long long)needed);
    throw_agate(env, AGATE_INVALID_ARGUMENT, message);
    return 0;
  }
  memset(out, 0, sizeof(*out));
  out->data = address;
  out->device.device_type = kDLCPU;
  out->ndim = ndim;
  out->dtype = info->dtype;
  out->shape = dims;
  return 1;
}

/* Binds input `index` to the direct buffer's memory without copying, with the module's dtype and
 * `shape` (NULL: the module's shape; a module with a symbolic dimension takes any extent in its
 * bounds). The Java side keeps the buffer reachable while it is bound. On failure the previous
 * binding stays. */
NATIVE(void, executorSetInputBuffer)(JNIEnv* env, jclass cls, jlong executor, jint index, jlongArray shape,
                                     jobject buffer) {
  jni_executor* e = as_executor(executor);
  agate_tensor_info info;
  DLTensor tensor;
  int64_t dims[32];
  int32_t ndim;
  (void)cls;
  if (index < 0 || (uint32_t)index >= e->num_inputs) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "input index out of range");
    return;
  }
  if (check(env, agate_module_input_info(e->module, (uint32_t)index, &info))) return;
  ndim = shape != NULL ? (int32_t)(*env)->GetArrayLength(env, shape) : info.ndim;
  if (ndim > 32) {
    throw_agate(env, AGATE_INVALID_ARGUMENT, "input shape has more than 32 dimensions");
    return;
  }
  if (shape != NULL) (*env)->GetLongArrayRegion(env, shape, 0, ndim, (jlong*)dims);
  else memcpy(dims, info.shape, sizeof(int64_t) * (size_t)ndim);
  if (!buffer_tensor(env, buffer, "input", index, &info, dims, ndim, &tensor)) return;
  if (check(env, agate_executor_set_input(e->executor, (uint32_t)index, &tensor))) return;
  free(e->inputs[index]); /* a copy bound before is no longer read */
  e->inputs[index] = NULL;
}

/* Copies output `index` (at its run-time shape) into the direct buffer, which must hold exactly
 * its bytes. */
NATIVE(void, executorCopyOutputToBuffer)(JNIEnv* env, jclass cls, jlong executor, jint index, jobject buffer) {
  jni_executor* e = as_executor(executor);
  agate_tensor_info info;
  DLTensor host;
  int64_t dims[32];
  int32_t ndim = 0;
  (void)cls;
  if (index < 0) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "output index out of range");
    return;
  }
  if (check(env, agate_module_output_info(e->module, (uint32_t)index, &info))) return;
  if (check(env, agate_executor_output_shape(e->executor, (uint32_t)index, dims, 32, &ndim))) return;
  if (!buffer_tensor(env, buffer, "output", index, &info, dims, ndim, &host)) return;
  check(env, agate_executor_copy_output(e->executor, (uint32_t)index, &host));
}

/* ------------------------------------------------------------------------- */
/* Devices (runtime ABI 1.2) */

static agate_module_options module_options(jint device_id) {
  agate_module_options options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.device_id = device_id;
  return options;
}

NATIVE(jlong, moduleLoadFileOnDevice)(JNIEnv* env, jclass cls, jstring path, jint device_id) {
  agate_module_t* module = NULL;
  agate_module_options options = module_options(device_id);
  agate_status_t status;
  const char* chars;
  (void)cls;
  if (path == NULL) {
    throw_agate(env, AGATE_INVALID_ARGUMENT, "module path is null");
    return 0;
  }
  chars = (*env)->GetStringUTFChars(env, path, NULL);
  if (chars == NULL) return 0;
  status = agate_module_load_from_file_with_options(chars, NULL, &options, &module);
  (*env)->ReleaseStringUTFChars(env, path, chars);
  if (check(env, status)) return 0;
  return (jlong)(intptr_t)module;
}

NATIVE(jlong, moduleLoadBytesOnDevice)(JNIEnv* env, jclass cls, jbyteArray data, jint device_id) {
  agate_module_t* module = NULL;
  agate_module_options options = module_options(device_id);
  agate_status_t status;
  jbyte* bytes;
  (void)cls;
  if (data == NULL) {
    throw_agate(env, AGATE_INVALID_ARGUMENT, "module bytes are null");
    return 0;
  }
  bytes = (*env)->GetByteArrayElements(env, data, NULL);
  if (bytes == NULL) return 0;
  status = agate_module_load_from_memory_with_options(bytes, (size_t)(*env)->GetArrayLength(env, data), NULL,
                                                      &options, &module);
  (*env)->ReleaseByteArrayElements(env, data, bytes, JNI_ABORT);
  if (check(env, status)) return 0;
  return (jlong)(intptr_t)module;
}

/* The module's device as (device_type << 32) | device_id (DLPack types: 1 CPU, 2 CUDA). */
NATIVE(jlong, moduleDevice)(JNIEnv* env, jclass cls, jlong module) {
  DLDevice device;
  (void)cls;
  if (check(env, agate_module_device(as_module(module), &device))) return 0;
  return ((jlong)device.device_type << 32) | (jlong)(uint32_t)device.device_id;
}

NATIVE(jint, cudaDeviceCount)(JNIEnv* env, jclass cls) {
  int32_t count = 0;
  (void)cls;
  check(env, agate_runtime_device_count(kDLCUDA, &count));
  return count;
}

/* Binds CUDA device memory at `address` as input or output `index` (address 0
 * with output: the executor's own memory again). The module's info gives dtype
 * and shape. On failure the previous binding stays. */
static void bind_device(JNIEnv* env, jni_executor* e, int output, jint index, jlong address) {
  agate_tensor_info info;
  DLDevice device;
  DLTensor tensor;
  agate_status_t status;
  if (index < 0) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "index out of range");
    return;
  }
  if (output && address == 0) {
    check(env, agate_executor_set_output(e->executor, (uint32_t)index, NULL));
    return;
  }
  if (check(env, agate_module_device(e->module, &device))) return;
  if (device.device_type != kDLCUDA) {
    throw_agate(env, AGATE_UNSUPPORTED, "the module runs on the CPU: it takes no device memory");
    return;
  }
  if (check(env, output ? agate_module_output_info(e->module, (uint32_t)index, &info)
                        : agate_module_input_info(e->module, (uint32_t)index, &info))) {
    return;
  }
  memset(&tensor, 0, sizeof(tensor));
  tensor.data = (void*)(uintptr_t)address;
  tensor.device = device;
  tensor.ndim = info.ndim;
  tensor.dtype = info.dtype;
  tensor.shape = (int64_t*)info.shape; /* read during the call only */
  status = output ? agate_executor_set_output(e->executor, (uint32_t)index, &tensor)
                  : agate_executor_set_input(e->executor, (uint32_t)index, &tensor);
  if (check(env, status)) return;
  if (!output && (uint32_t)index < e->num_inputs) { /* a host copy bound before is no longer read */
    free(e->inputs[index]);
    e->inputs[index] = NULL;
  }
}

NATIVE(void, executorSetInputDevice)(JNIEnv* env, jclass cls, jlong executor, jint index, jlong address) {
  (void)cls;
  bind_device(env, as_executor(executor), 0, index, address);
}

NATIVE(void, executorSetOutputDevice)(JNIEnv* env, jclass cls, jlong executor, jint index, jlong address) {
  (void)cls;
  bind_device(env, as_executor(executor), 1, index, address);
}

/* The device address of output `index` (CUDA modules). */
NATIVE(jlong, executorOutputDevicePointer)(JNIEnv* env, jclass cls, jlong executor, jint index) {
  jni_executor* e = as_executor(executor);
  DLTensor view;
  (void)cls;
  if (index < 0) {
    throw_agate(env, AGATE_OUT_OF_RANGE, "output index out of range");
    return 0;
  }
  if (check(env, agate_executor_get_output(e->executor, (uint32_t)index, &view))) return 0;
  if (view.device.device_type != kDLCUDA) {
    throw_agate(env, AGATE_UNSUPPORTED, "the module runs on the CPU: its outputs are host memory");
    return 0;
  }
  return (jlong)((uintptr_t)view.data + (uintptr_t)view.byte_offset);
}

/* The kernel each plan call runs, in plan order (runtime ABI 1.1). */
NATIVE(jobjectArray, moduleCallKernelNames)(JNIEnv* env, jclass cls, jlong module) {
  uint32_t count = 0, i;
  jobjectArray result;
  (void)cls;
  if (check(env, agate_module_num_calls(as_module(module), &count))) return NULL;
  result = (*env)->NewObjectArray(env, (jsize)count, g_string_class, NULL);
  if (result == NULL) return NULL;
  for (i = 0; i < count; ++i) {
    const char* name = NULL;
    jstring text;
    if (check(env, agate_module_call_kernel_name(as_module(module), i, &name))) return NULL;
    text = (*env)->NewStringUTF(env, name);
    if (text == NULL) return NULL;
    (*env)->SetObjectArrayElement(env, result, (jsize)i, text);
    (*env)->DeleteLocalRef(env, text);
  }
  return result;
}

/* One run with each plan call's wall time in nanoseconds (runtime ABI 1.1). */
NATIVE(jlongArray, executorRunProfiled)(JNIEnv* env, jclass cls, jlong executor) {
  jni_executor* e = as_executor(executor);
  uint32_t count = 0;
  uint64_t* ns;
  jlongArray result = NULL;
  (void)cls;
  if (check(env, agate_module_num_calls(e->module, &count))) return NULL;
  ns = (uint64_t*)calloc(count != 0 ? count : 1, sizeof(uint64_t)); /* never NULL for an empty plan */
  if (ns == NULL) {
    throw_agate(env, AGATE_RESOURCE_EXHAUSTED, "out of memory for the profile");
    return NULL;
  }
  if (!check(env, agate_executor_run_profiled(e->executor, ns, count))) {
    result = (*env)->NewLongArray(env, (jsize)count);
    if (result != NULL) (*env)->SetLongArrayRegion(env, result, 0, (jsize)count, (const jlong*)ns);
  }
  free(ns);
  return result;
}

NATIVE(jlong, executorArenaBytes)(JNIEnv* env, jclass cls, jlong executor) {
  uint64_t bytes = 0;
  (void)cls;
  check(env, agate_executor_arena_bytes(as_executor(executor)->executor, &bytes));
  return (jlong)bytes;
}
