package io.kvtier.simulator;

import java.util.Arrays;
import java.util.Objects;

/**
 * The value of every {@link SimulationCounter} of one run: a value with equality, so that two
 * runs of one config compare equal counter by counter.
 */
public final class SimulationCounts {
  private static final SimulationCounter[] ALL = SimulationCounter.values();

  private final long[] values;

  private SimulationCounts(long[] values) {
    this.values = values;
  }

  /**
   * One counter.
   *
   * @param counter which
   * @return its value
   */
  public long get(SimulationCounter counter) {
    return values[counter.ordinal()];
  }

  /**
   * A builder whose counters start at 0.
   *
   * @return a builder
   */
  public static Builder builder() {
    return new Builder(new long[ALL.length]);
  }

  /**
   * A builder that starts from these counts.
   *
   * @return a builder
   */
  public Builder toBuilder() {
    return new Builder(values.clone());
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SimulationCounts other && Arrays.equals(values, other.values);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(values);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("SimulationCounts[");
    for (SimulationCounter c : ALL) {
      s.append(c.ordinal() == 0 ? "" : ", ").append(c.key()).append('=').append(get(c));
    }
    return s.append(']').toString();
  }

  /** Sets counters by name. */
  public static final class Builder {
    private final long[] values;

    private Builder(long[] values) {
      this.values = values;
    }

    /**
     * Sets one counter.
     *
     * @param counter which
     * @param value its value
     * @return this
     */
    public Builder set(SimulationCounter counter, long value) {
      values[Objects.requireNonNull(counter, "counter").ordinal()] = value;
      return this;
    }

    /**
     * The counts.
     *
     * @return the counts set, 0 for the others
     */
    public SimulationCounts build() {
      return new SimulationCounts(values.clone());
    }
  }
}
