package io.kvtier.spi;

/** Element-wise reduction of a collective all-reduce over {@code long} values. */
public enum ReduceOp {
  /** The smallest value: "how much is done on every rank". */
  MIN,
  /** The largest value: "has any rank given up". */
  MAX,
  /** The sum (wrapping on overflow, as two's complement addition). */
  SUM;

  /**
   * Applies the operation to two values.
   *
   * @param a one value
   * @param b the other
   * @return the reduced value
   */
  public long apply(long a, long b) {
    return switch (this) {
      case MIN -> Math.min(a, b);
      case MAX -> Math.max(a, b);
      case SUM -> a + b;
    };
  }
}
