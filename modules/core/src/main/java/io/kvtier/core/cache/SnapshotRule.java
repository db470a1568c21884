package io.kvtier.core.cache;

/**
 * The replicated rule of where a request takes recurrent-state snapshots (HYBRID.md §5): a
 * function of the page size, the interval and the request's replicated progress only, so every
 * rank takes the same snapshots at the same positions.
 *
 * <ul>
 *   <li><b>interval</b>: every position {@code e > 0} with {@code e % (K * pageSize) == 0} that
 *       the request computes ({@code K} = {@code kvtier.snapshot-interval-pages});
 *   <li><b>tail</b>: the request's insert end {@code floor(computed / pageSize) * pageSize} (at
 *       finish and at each chunk insert) when it is no interval position: the next turn of a
 *       conversation resumes there. The runner keeps the tail current: each step whose range
 *       {@code (from, to]} holds a page boundary that is no interval position writes the state
 *       at the last such boundary into the tail's slots.
 * </ul>
 */
public final class SnapshotRule {
  private final int pageSize;
  private final int interval;

  /**
   * The rule of one cache.
   *
   * @param pageSize tokens per page, at least 1
   * @param intervalPages pages between interval snapshots, at least 1
   */
  public SnapshotRule(int pageSize, int intervalPages) {
    if (pageSize < 1 || intervalPages < 1) {
      throw new IllegalArgumentException(
          "pageSize=" + pageSize + " and intervalPages=" + intervalPages + " must be >= 1");
    }
    this.pageSize = pageSize;
    this.interval = Math.multiplyExact(pageSize, intervalPages);
  }

  /**
   * Whether a position is an interval snapshot position.
   *
   * @param position tokens taken in
   * @return true for a positive multiple of the interval in tokens
   */
  public boolean isInterval(int position) {
    return position > 0 && position % interval == 0;
  }

  /**
   * The first interval position after {@code position}.
   *
   * @param position a position, at least 0
   * @return the smallest interval position above it
   */
  public int nextInterval(int position) {
    return (position / interval + 1) * interval;
  }

  /**
   * The insert end of a request that computed {@code computed} tokens: the tail position.
   *
   * @param computed tokens whose KV the request holds
   * @return {@code computed} rounded down to a page multiple
   */
  public int tail(int computed) {
    return computed - computed % pageSize;
  }

  /**
   * The position a step over {@code (from, to]} writes the tail at: the last page boundary in the
   * range that is no interval position (an interval snapshot holds the state there).
   *
   * @param from the step's first position
   * @param to one past its last
   * @return the position, or -1 if the step writes no tail
   */
  public int tailInStep(int from, int to) {
    int last = tail(to);
    return last > from && !isInterval(last) ? last : -1;
  }
}
