package dev.agate;

/**
 * One dimension of a module input or output (runtime ABI 1.5): its bounds, its symbol and
 * what it is at run time.
 */
public final class DimInfo {
  /** What a dimension is at run time. */
  public enum Kind {
    /** Exactly {@code max} (== {@code min}). */
    STATIC,
    /** Any extent in [min, max], given by the inputs (a batch symbol on axis 0, or a padded one such as a sequence length on any axes). */
    SYMBOLIC,
    /** Known after a run (0..max): {@link Executor#getOutput} has the run-time shape. */
    VALUE_DEPENDENT
  }

  private final long min;
  private final long max;
  private final String symbol;
  private final Kind kind;

  DimInfo(long min, long max, String symbol, Kind kind) {
    this.min = min;
    this.max = max;
    this.symbol = symbol;
    this.kind = kind;
  }

  public long min() {
    return min;
  }

  public long max() {
    return max;
  }

  /** The symbol's name ("N") of a symbolic dimension, else null. */
  public String symbol() {
    return symbol;
  }

  public Kind kind() {
    return kind;
  }

  @Override
  public String toString() {
    return kind + (symbol != null ? " " + symbol : "") + " " + min + ".." + max;
  }
}
