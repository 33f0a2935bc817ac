package dev.agate;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs a module: holds the memory of one run (intermediate tensors, outputs).
 *
 * <p>Not thread-safe: use one executor from one thread at a time, and give each
 * thread its own (executors of one module run in parallel freely). Inputs given
 * as {@link Tensor}s are copied into native memory the executor owns, so the
 * caller may reuse its arrays at once; a direct {@link ByteBuffer} is bound
 * without a copy ({@link #setInput(String, ByteBuffer)}). Outputs are returned as
 * copies, or copied into the caller's buffer ({@link #getOutput(String, ByteBuffer)}).
 *
 * <p>Release it with {@link #close()}; an executor that is never closed is freed
 * after it becomes unreachable. Any use after close throws
 * {@link AgateException} with {@link Status#INVALID_ARGUMENT}.
 */
public final class Executor implements AutoCloseable {
  private final ExecutorState state;
  private final Reclaimer.Registration registration;
  private final List<TensorInfo> inputs;
  private final List<TensorInfo> outputs;
  private final Device device;
  // Direct buffers bound as inputs, by input index: the native executor reads their memory at
  // each run, so they stay reachable while bound.
  private final Map<Integer, ByteBuffer> boundBuffers = new HashMap<>();

  Executor(ExecutorState state, List<TensorInfo> inputs, List<TensorInfo> outputs, Device device) {
    this.state = state;
    this.registration = Reclaimer.register(this, state);
    this.inputs = inputs;
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
      boundBuffers.remove(index);
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
      boundBuffers.remove(index);
    }
  }

  /**
   * Binds input {@code name} to {@code buffer}'s bytes from its position to its
   * limit: the input's elements in the module's dtype and shape
   * ({@link Module#inputs()}), row-major, in native byte order
   * ({@code buffer.order(ByteOrder.nativeOrder())}), aligned to the element size.
   * A direct buffer ({@link ByteBuffer#allocateDirect}, what camera and media
   * APIs hand out) is bound without a copy: each {@link #run()} reads it, so keep
   * its contents unchanged while a run is in progress; the executor holds a
   * reference to it until another binding of the input or close. A heap buffer
   * is copied, like {@link #setInput(String, Tensor)}. The buffer's position and
   * limit are not changed. {@link Status#INVALID_ARGUMENT} naming the input when
   * the size differs; the previous binding then stays.
   */
  public void setInput(String name, ByteBuffer buffer) {
    setInput(name, null, buffer);
  }

  /**
   * {@link #setInput(String, ByteBuffer)} with the tensor's {@code shape}: for a
   * module with a symbolic dimension ({@link Module#inputDim}), any extent within
   * its bounds; {@code null} means the module's shape.
   */
  public void setInput(String name, long[] shape, ByteBuffer buffer) {
    if (buffer == null) throw new AgateException(Status.INVALID_ARGUMENT, "input " + name + ": the buffer is null");
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindInput(state.module().handleForExecutor(), name);
      if (buffer.isDirect()) {
        ByteBuffer view = buffer.slice();
        NativeApi.executorSetInputBuffer(handle, index, shape, view);
        boundBuffers.put(index, view);
        return;
      }
      TensorInfo info = inputs.get(index);
      long[] dims = shape != null ? shape : info.shape();
      long bytes = info.dtype().elementBytes();
      for (long d : dims) bytes *= d;
      if (buffer.remaining() != bytes) {
        throw new AgateException(Status.INVALID_ARGUMENT, "input " + index + " '" + name + "': the buffer holds "
            + buffer.remaining() + " bytes (from its position to its limit); the input needs " + bytes);
      }
      byte[] data = new byte[buffer.remaining()];
      buffer.duplicate().get(data);
      DType d = info.dtype();
      NativeApi.executorSetInput(handle, index, d.code(), d.bits(), d.lanes(), dims, data);
      boundBuffers.remove(index);
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

  /**
   * Copies output {@code name} of the last run into {@code buffer}, from its
   * position to its limit, which must hold exactly the output's bytes (its dtype
   * is {@link Module#outputs()}'s, its shape the run's: {@link #getOutput(String)}
   * says it for a module with dynamic shapes; native byte order). A direct buffer is
   * written by the runtime in place, a heap buffer through one copy. The buffer's
   * position and limit are not changed. {@link Status#INVALID_ARGUMENT} naming the
   * output when the size differs.
   */
  public void getOutput(String name, ByteBuffer buffer) {
    if (buffer == null) throw new AgateException(Status.INVALID_ARGUMENT, "output " + name + ": the buffer is null");
    if (buffer.isReadOnly()) {
      throw new AgateException(Status.INVALID_ARGUMENT, "output " + name + ": the buffer is read-only");
    }
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindOutput(state.module().handleForExecutor(), name);
      if (buffer.isDirect()) {
        NativeApi.executorCopyOutputToBuffer(handle, index, buffer.slice());
        return;
      }
      byte[] data = NativeApi.executorGetOutput(handle, index); // at the run-time shape
      if (buffer.remaining() != data.length) {
        throw new AgateException(Status.INVALID_ARGUMENT, "output " + index + " '" + name + "': the buffer holds "
            + buffer.remaining() + " bytes (from its position to its limit); the output has " + data.length);
      }
      buffer.duplicate().put(data);
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
