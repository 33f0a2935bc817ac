package dev.agate;

/**
 * The JNI functions (bindings/java/jni/agate_jni.c), one per C API call the
 * binding makes. Failures throw {@link AgateException} with the runtime's status
 * and message. Handles are raw pointers as longs; only {@link ModuleState} and
 * {@link ExecutorState} hold them.
 */
final class NativeApi {
  static {
    // From the library path, else from this jar's resources (NativeLoader says how).
    NativeLoader.load();
  }

  private NativeApi() {}

  static native int runtimeAbiVersion();

  static native void setNumThreads(int numThreads);

  static native int numThreads();

  // Kernel loading (runtime ABI 1.4).

  static native void setKernelDir(String dir);

  static native long moduleLoadFile(String path);

  static native long moduleLoadBytes(byte[] data);

  static native void moduleFree(long module);

  static native String moduleTarget(long module);

  static native TensorInfo[] moduleInputs(long module);

  static native TensorInfo[] moduleOutputs(long module);

  static native int moduleFindInput(long module, String name);

  static native int moduleFindOutput(long module, String name);

  static native long executorCreate(long module, int numThreads);

  static native void executorFree(long executor);

  static native void executorSetInput(long executor, int index, int code, int bits, int lanes, long[] shape,
      byte[] data);

  static native void executorRun(long executor);

  static native byte[] executorGetOutput(long executor, int index);

  static native void executorSetInputBuffer(long executor, int index, long[] shape, java.nio.ByteBuffer buffer);

  static native void executorCopyOutputToBuffer(long executor, int index, java.nio.ByteBuffer buffer);

  // Runtime ABI 1.5: run-time output shapes and dimension bounds.
  static native long[] executorOutputShape(long executor, int index);

  static native long[] moduleDim(long module, boolean output, int index, int axis);

  static native String moduleDimSymbol(long module, boolean output, int index, int axis);

  static native long executorArenaBytes(long executor);

  static native String[] moduleCallKernelNames(long module);

  static native long[] executorRunProfiled(long executor);

  // Devices (runtime ABI 1.2).

  static native long moduleLoadFileOnDevice(String path, int deviceId);

  static native long moduleLoadBytesOnDevice(byte[] data, int deviceId);

  /** (DLPack device type << 32) | device id. */
  static native long moduleDevice(long module);

  static native int cudaDeviceCount();

  static native void executorSetInputDevice(long executor, int index, long address);

  /** address 0: the executor's own memory again. */
  static native void executorSetOutputDevice(long executor, int index, long address);

  static native long executorOutputDevicePointer(long executor, int index);
}
