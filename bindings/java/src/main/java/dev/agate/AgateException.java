package dev.agate;

/**
 * A failed agate call: the runtime's status ({@link #getStatus()}, numerically
 * {@link #getCode()}, the C {@code agate_status_t}) and its message naming the
 * tensor, kernel, file or byte at fault.
 *
 * <p>Unchecked, like the platform's own {@code IllegalArgumentException}: most
 * failures (wrong shape, wrong name) are programming errors, and loading code
 * that wants to recover catches it explicitly.
 */
public class AgateException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int code;

  /** Called by the JNI layer and by the binding's own checks. */
  public AgateException(int code, String message) {
    super(message);
    this.code = code;
  }

  AgateException(Status status, String message) {
    this(status.code(), message);
  }

  /** The numeric {@code agate_status_t}. */
  public int getCode() {
    return code;
  }

  /** What kind of failure. */
  public Status getStatus() {
    return Status.fromCode(code);
  }

  @Override
  public String toString() {
    return "AgateException[" + getStatus().displayName() + " (" + code + ")]: " + getMessage();
  }
}
