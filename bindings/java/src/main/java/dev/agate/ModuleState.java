package dev.agate;

/**
 * The native module handle shared by a {@link Module} and its executors.
 *
 * <p>The C API requires every executor to be freed before its module. So the
 * handle is freed when the module has been closed (explicitly or by the
 * {@link Reclaimer}) AND its last executor is freed, whichever comes last.
 * Every use of the handle holds this object's lock, so a close on another thread
 * (or the reclaimer) waits for calls in progress and a later use sees the close.
 */
final class ModuleState implements Runnable {
  private long handle;
  private int openExecutors;
  private boolean closed;

  ModuleState(long handle) {
    this.handle = handle;
  }

  /** The live handle; the caller holds this object's lock. */
  long handleForUse() {
    if (closed) throw new AgateException(Status.INVALID_ARGUMENT, "the Module is closed");
    return handle;
  }

  /** The handle for an executor being created; counts it until executorClosed. */
  synchronized long acquireForExecutor() {
    long h = handleForUse();
    openExecutors++;
    return h;
  }

  /** Undoes acquireForExecutor when creation failed. */
  synchronized void executorClosed() {
    openExecutors--;
    freeIfUnused();
  }

  /** The handle for an open executor of this module (valid while it is open). */
  synchronized long handleForExecutor() {
    return handle;
  }

  synchronized void close() {
    closed = true;
    freeIfUnused();
  }

  synchronized boolean isClosed() {
    return closed;
  }

  /** Is the native module still allocated (tests). */
  synchronized boolean isFreed() {
    return handle == 0;
  }

  private void freeIfUnused() {
    if (closed && openExecutors == 0 && handle != 0) {
      NativeApi.moduleFree(handle);
      handle = 0;
    }
  }

  /** The reclaimer's action. */
  @Override
  public void run() {
    close();
  }
}
