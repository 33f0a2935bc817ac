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

  Executor(ExecutorState state, List<TensorInfo> outputs) {
    this.state = state;
    this.registration = Reclaimer.register(this, state);
    this.outputs = outputs;
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
   * wall time in plan order (runtime ABI 1.1; CPU modules only: other modules
   * throw {@link Status#UNSUPPORTED}). Each call is timed by two clock reads,
   * so the sum is a little above an unprofiled run.
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

  /** A copy of output {@code name} from the last run. */
  public Tensor getOutput(String name) {
    synchronized (state) {
      long handle = state.handleForUse();
      int index = NativeApi.moduleFindOutput(state.module().handleForExecutor(), name);
      return Tensor.adopt(outputs.get(index), NativeApi.executorGetOutput(handle, index));
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
