package dev.agate;

/** Where a module's kernels run: the host's CPUs, or the GPU with a CUDA ordinal. */
public final class Device {
  /** The host's CPUs. */
  public static final Device CPU = new Device(false, 0);

  private final boolean cuda;
  private final int id;

  private Device(boolean cuda, int id) {
    this.cuda = cuda;
    this.id = id;
  }

  /** The GPU with CUDA ordinal {@code id}. */
  public static Device cuda(int id) {
    return new Device(true, id);
  }

  public boolean isCuda() {
    return cuda;
  }

  /** The CUDA ordinal (0 for the CPU). */
  public int id() {
    return id;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Device && ((Device) other).cuda == cuda && ((Device) other).id == id;
  }

  @Override
  public int hashCode() {
    return cuda ? 1 + id : 0;
  }

  @Override
  public String toString() {
    return cuda ? "cuda:" + id : "cpu";
  }
}
