package dev.agate;

/**
 * The native executor handle of an {@link Executor}. Every use holds this
 * object's lock, so closing (explicitly or by the {@link Reclaimer}) waits for a
 * call in progress and a later use fails cleanly.
 */
final class ExecutorState implements Runnable {
  private long handle;
  private final ModuleState module;

  ExecutorState(long handle, ModuleState module) {
    this.handle = handle;
    this.module = module;
  }

  /** The live handle; the caller holds this object's lock. */
  long handleForUse() {
    if (handle == 0) throw new AgateException(Status.INVALID_ARGUMENT, "the Executor is closed");
    return handle;
  }

  ModuleState module() {
    return module;
  }

  synchronized void close() {
    if (handle == 0) return;
    NativeApi.executorFree(handle);
    handle = 0;
    module.executorClosed();
  }

  /** The reclaimer's action. */
  @Override
  public void run() {
    close();
  }
}
