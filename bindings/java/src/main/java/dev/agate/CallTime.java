package dev.agate;

/** One kernel call of a run: the kernel's name and its wall time, from {@link Executor#runProfiled()}. */
public final class CallTime {
  private final String kernel;
  private final long nanos;

  CallTime(String kernel, long nanos) {
    this.kernel = kernel;
    this.nanos = nanos;
  }

  /** The kernel the call ran (a fused group's kernel is named after the group). */
  public String kernel() {
    return kernel;
  }

  /** The call's wall time in nanoseconds (parallel loops included). */
  public long nanos() {
    return nanos;
  }

  @Override
  public String toString() {
    return kernel + ": " + nanos + " ns";
  }
}
