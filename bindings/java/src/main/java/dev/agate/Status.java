package dev.agate;

/** The non-OK values of {@code agate_status_t} (c_api/include/agate/status.h). */
public enum Status {
  INVALID_ARGUMENT(1, "invalid argument"),
  NOT_FOUND(2, "not found"),
  UNSUPPORTED(3, "unsupported"),
  OUT_OF_RANGE(4, "out of range"),
  CORRUPT(5, "corrupt"),
  VERSION_MISMATCH(6, "version mismatch"),
  ILLEGAL_SCHEDULE(7, "illegal schedule"),
  RESOURCE_EXHAUSTED(8, "resource exhausted"),
  IO(9, "io"),
  UNAVAILABLE(10, "unavailable"),
  INTERNAL(11, "internal"),
  /** A code this binding does not know (a newer runtime). */
  UNKNOWN(-1, "unknown status");

  private final int code;
  private final String displayName;

  Status(int code, String displayName) {
    this.code = code;
    this.displayName = displayName;
  }

  public int code() {
    return code;
  }

  /** The runtime's short name ("corrupt"). */
  public String displayName() {
    return displayName;
  }

  public static Status fromCode(int code) {
    for (Status s : values()) {
      if (s.code == code) return s;
    }
    return UNKNOWN;
  }
}
