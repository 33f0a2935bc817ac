package dev.agate;

import java.io.File;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * A compiled agate module loaded into the runtime.
 *
 * <p>Immutable and thread-safe: any number of threads may read it and create
 * executors from it at once; give each thread its own {@link Executor}.
 *
 * <p>Release it with {@link #close()} (try-with-resources). The native module is
 * freed once it is closed and its last executor is closed, so closing a module
 * whose executors are still open is safe: they keep working, and it is freed
 * after them. A module that is never closed is freed after it becomes
 * unreachable (a safety net, not a substitute for close: the GC does not see
 * native memory). Any use after close throws {@link AgateException} with
 * {@link Status#INVALID_ARGUMENT}.
 */
public final class Module implements AutoCloseable {
  private final ModuleState state;
  private final Reclaimer.Registration registration;
  private final String target;
  private final Device device;
  private final List<TensorInfo> inputs;
  private final List<TensorInfo> outputs;

  private Module(long handle) {
    state = new ModuleState(handle);
    registration = Reclaimer.register(this, state);
    try {
      target = NativeApi.moduleTarget(handle);
      long where = NativeApi.moduleDevice(handle);
      device = (where >>> 32) == 2 ? Device.cuda((int) where) : Device.CPU;
      inputs = Collections.unmodifiableList(Arrays.asList(NativeApi.moduleInputs(handle)));
      outputs = Collections.unmodifiableList(Arrays.asList(NativeApi.moduleOutputs(handle)));
    } catch (RuntimeException e) {
      registration.clean();
      throw e;
    }
  }

  /**
   * Loads a module from a file, mapped read-only (constants used in place).
   * {@link Status#NOT_FOUND} when it does not exist, {@link Status#CORRUPT} (or
   * another status, see runtime.h) when it is not a valid module.
   */
  public static Module fromFile(String path) {
    checkAbi();
    return new Module(NativeApi.moduleLoadFile(path));
  }

  public static Module fromFile(File file) {
    return fromFile(file.getPath());
  }

  /** Loads a module from bytes; the runtime copies them. */
  public static Module fromBytes(byte[] bytes) {
    checkAbi();
    return new Module(NativeApi.moduleLoadBytes(bytes));
  }

  /**
   * Loads a module from a file onto a device: a CUDA module onto the GPU with
   * CUDA ordinal {@code deviceId} ({@link Status#OUT_OF_RANGE} when there is no
   * such GPU, {@link Status#UNAVAILABLE} with the reason without a driver or
   * GPU); a CPU module needs {@code deviceId} 0 ({@link Status#INVALID_ARGUMENT}
   * otherwise). Runtime ABI 1.2.
   */
  public static Module fromFile(String path, int deviceId) {
    checkAbi();
    return new Module(NativeApi.moduleLoadFileOnDevice(path, deviceId));
  }

  /** Like {@link #fromBytes(byte[])}, onto a device (see {@link #fromFile(String, int)}). */
  public static Module fromBytes(byte[] bytes, int deviceId) {
    checkAbi();
    return new Module(NativeApi.moduleLoadBytesOnDevice(bytes, deviceId));
  }

  /**
   * How many GPUs the runtime can run CUDA modules on; throws
   * {@link Status#UNAVAILABLE} (with the reason) without a driver or GPU.
   */
  public static int cudaDeviceCount() {
    return NativeApi.cudaDeviceCount();
  }

  /** The ABI version of the loaded runtime library: (major << 16) | minor. */
  public static int runtimeAbiVersion() {
    return NativeApi.runtimeAbiVersion();
  }

  /**
   * Where modules loaded afterwards write their kernels (runtime ABI 1.4;
   * agate_runtime_set_kernel_dir). On Android before API 30, which has no
   * memfd_create and no /tmp, pass {@code context.getCodeCacheDir().getPath()}:
   * each loaded module keeps one file there, deleted when the module is closed.
   * {@code null} restores the default (an in-memory file). Throws NOT_FOUND when
   * {@code dir} is not a directory.
   */
  public static void setKernelDir(String dir) {
    NativeApi.setKernelDir(dir);
  }

  /** Sets the runtime's shared thread pool size (0: the default). */
  public static void setNumThreads(int numThreads) {
    NativeApi.setNumThreads(numThreads);
  }

  /** The runtime's shared thread pool size. */
  public static int numThreads() {
    return NativeApi.numThreads();
  }

  /** The binding was written against runtime ABI 1.5 (dimension bounds, run-time output shapes). */
  private static void checkAbi() {
    int version = NativeApi.runtimeAbiVersion();
    if ((version >>> 16) != 1 || (version & 0xffff) < 5) {
      throw new AgateException(Status.VERSION_MISMATCH, "libagate_runtime.so implements ABI " + (version >>> 16) + "."
          + (version & 0xffff) + "; this binding needs 1.5 or a newer 1.x");
    }
  }

  private void checkOpen() {
    if (state.isClosed()) throw new AgateException(Status.INVALID_ARGUMENT, "the Module is closed");
  }

  /** The target it was compiled for, e.g. "llvm -mtriple=x86_64-linux-gnu". */
  public String target() {
    checkOpen();
    return target;
  }

  /** Where the module's kernels run. */
  public Device device() {
    checkOpen();
    return device;
  }

  public List<TensorInfo> inputs() {
    checkOpen();
    return inputs;
  }

  public List<TensorInfo> outputs() {
    checkOpen();
    return outputs;
  }

  /**
   * Axis {@code axis} of input {@code name} (runtime ABI 1.5): static, or a symbol's bounds
   * ({@link #inputs} shows each dynamic dimension's upper bound). {@link Status#NOT_FOUND} for
   * an unknown name, {@link Status#OUT_OF_RANGE} past its dimensions.
   */
  public DimInfo inputDim(String name, int axis) {
    return dim(false, name, axis);
  }

  /** Axis {@code axis} of output {@code name} (see {@link #inputDim}). */
  public DimInfo outputDim(String name, int axis) {
    return dim(true, name, axis);
  }

  private DimInfo dim(boolean output, String name, int axis) {
    synchronized (state) {
      long handle = state.handleForUse();
      int index = output ? NativeApi.moduleFindOutput(handle, name) : NativeApi.moduleFindInput(handle, name);
      long[] v = NativeApi.moduleDim(handle, output, index, axis);
      return new DimInfo(v[0], v[1], NativeApi.moduleDimSymbol(handle, output, index, axis), DimInfo.Kind.values()[(int) v[2]]);
    }
  }

  /** A new executor whose parallel loops use the runtime's shared thread pool. */
  public Executor newExecutor() {
    return newExecutor(0);
  }

  /**
   * A new executor. numThreads: 0 to use the shared thread pool, 1 to run
   * kernels' parallel loops on the calling thread.
   */
  public Executor newExecutor(int numThreads) {
    long moduleHandle = state.acquireForExecutor();
    long handle;
    try {
      handle = NativeApi.executorCreate(moduleHandle, numThreads);
    } catch (RuntimeException e) {
      state.executorClosed();
      throw e;
    }
    return new Executor(new ExecutorState(handle, state), inputs, outputs, device);
  }

  /** Was the native module freed (closed and no executor left)? For tests. */
  boolean isNativeFreed() {
    return state.isFreed();
  }

  @Override
  public void close() {
    registration.clean();
  }

  @Override
  public String toString() {
    return "Module(" + target + ", inputs " + inputs + ", outputs " + outputs + ")";
  }
}
