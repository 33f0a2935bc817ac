package dev.agate;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Runs a module: holds the memory of one run (intermediate tensors, outputs).
 *
 * <p>Not thread-safe: use one executor from one thread at a time, and give each
 * thread its own (executors of one module run in parallel freely). Inputs are
 * copied into native memory the executor owns, so the caller may reuse its
 * arrays at once; outputs are returned as copies.
 *
 * <p>Release it with {@link #close()}; an executor that is never closed is freed
 * after it becomes unreachable. Any use after close throws
 * {@link AgateException} with {@link Status#INVALID_ARGUMENT}.
 */
public final class Executor implements AutoCloseable {
  private final ExecutorState state;
  private final Reclaimer.Registration registration;
  private final List<TensorInfo> outputs;
  private final Device device;

  Executor(ExecutorState state, List<TensorInfo> outputs, Device device) {
    this.state = state;
    this.registration = Reclaimer.register(this, state);
    this.outputs = outputs;
    this.device = device;
  }

  private void requireCuda(String what) {
    if (!device.isCuda()) {
      throw new AgateException(Status.UNSUPPORTED, "the module runs on the CPU: " + what);
    }
  }

  /**
   * Binds input {@code name} to memory of the module's GPU at device address
   * {@code address} (another executor's {@link #outputDevicePointer(String)},
   * or a tensor of another CUDA library): no copy. The runtime checks that the
   * driver knows the address as memory of that GPU, 16-byte aligned, with room
   * for the input. The memory must hold the input and stay allocated and
   * unchanged until the last {@link #run()} that reads it has returned.
   * {@link Status#UNSUPPORTED} for CPU modules. Runtime ABI 1.2.
   */
  public void setInputDevicePointer(String name, long address) {
    requireCuda("it takes no device memory");
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindInput(state.module().handleForExecutor(), name);
      NativeApi.executorSetInputDevice(handle, index, address);
    }
  }

  /**
   * Makes runs write output {@code name} into memory of the module's GPU at
   * {@code address} (no copy), checked like {@link #setInputDevicePointer};
   * the memory must stay allocated until {@link #resetOutput} or close.
   */
  public void setOutputDevicePointer(String name, long address) {
    requireCuda("it takes no device memory");
    if (address == 0) throw new AgateException(Status.INVALID_ARGUMENT, "output " + name + ": address 0");
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindOutput(state.module().handleForExecutor(), name);
      NativeApi.executorSetOutputDevice(handle, index, address);
    }
  }

  /** Makes runs write output {@code name} into the executor's own memory again. */
  public void resetOutput(String name) {
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindOutput(state.module().handleForExecutor(), name);
      NativeApi.executorSetOutputDevice(handle, index, 0);
    }
  }

  /**
   * The device address of output {@code name} on the module's GPU (the
   * executor's memory, or what {@link #setOutputDevicePointer} bound),
   * overwritten by each run, valid until close. {@link Status#UNSUPPORTED} for
   * CPU modules (use {@link #getOutput}).
   */
  public long outputDevicePointer(String name) {
    requireCuda("its outputs are host memory");
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindOutput(state.module().handleForExecutor(), name);
      return NativeApi.executorOutputDevicePointer(handle, index);
    }
  }

  /**
   * Copies {@code tensor} in as input {@code name}. The runtime checks it:
   * {@link Status#NOT_FOUND} for an unknown name, {@link Status#INVALID_ARGUMENT}
   * naming the input when dtype or shape differ. On error the input keeps its
   * previous value.
   */
  public void setInput(String name, Tensor tensor) {
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindInput(state.module().handleForExecutor(), name);
      DType d = tensor.dtype();
      NativeApi.executorSetInput(handle, index, d.code(), d.bits(), d.lanes(), tensor.shape(), tensor.bytes());
    }
  }

  /** Runs the module once; every input must have been set. */
  public void run() {
    synchronized (state) {
      NativeApi.executorRun(state.handleForUse());
    }
  }

  /**
   * Runs the module once, like {@link #run()}, and returns every kernel call's
   * time in plan order (runtime ABI 1.1): wall time on CPUs (two clock reads
   * per call, so the sum is a little above an unprofiled run), device time
   * between CUDA events on GPUs (runtime ABI 1.2).
   */
  public List<CallTime> runProfiled() {
    synchronized (state) {
      long handle = state.handleForUse();
      String[] kernels = NativeApi.moduleCallKernelNames(state.module().handleForExecutor());
      long[] nanos = NativeApi.executorRunProfiled(handle);
      List<CallTime> calls = new ArrayList<>(kernels.length);
      for (int i = 0; i < kernels.length; ++i) calls.add(new CallTime(kernels[i], nanos[i]));
      return Collections.unmodifiableList(calls);
    }
  }

  /** A copy of output {@code name} from the last run (for a CUDA module, copied from the GPU). */
  public Tensor getOutput(String name) {
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindOutput(state.module().handleForExecutor(), name);
      // The run-time shape of the last run (a module with dynamic shapes: what it produced).
      long[] shape = NativeApi.executorOutputShape(handle, index);
      return Tensor.adopt(outputs.get(index).dtype(), shape, NativeApi.executorGetOutput(handle, index));
    }
  }

  /** The bytes this executor holds for intermediate tensors. */
  public long arenaBytes() {
    synchronized (state) {
      return NativeApi.executorArenaBytes(state.handleForUse());
    }
  }

  @Override
  public void close() {
    registration.clean();
  }
}
