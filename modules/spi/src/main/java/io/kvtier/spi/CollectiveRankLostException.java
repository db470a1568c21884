package io.kvtier.spi;

/**
 * A rank of the group is gone while this rank waited for it: its process died or was cut off
 * (Hazelcast membership), its thread ended without closing its handle ({@code local}), or it
 * closed its handle. Raised by the implementation's own failure detection, so a rank waiting in
 * {@link Collective#awaitBroadcast}, which no watchdog bounds, still learns that the rank it waits
 * for will never come.
 */
public class CollectiveRankLostException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  private final int lostRank;

  /**
   * Creates the exception.
   *
   * @param lostRank the rank that is gone
   * @param message how it went and what this rank waited in
   */
  public CollectiveRankLostException(int lostRank, String message) {
    super(message, null);
    if (lostRank < 0) {
      throw new IllegalArgumentException("lostRank=" + lostRank + " must be a rank, >= 0");
    }
    this.lostRank = lostRank;
  }

  /**
   * The rank that is gone.
   *
   * @return the rank
   */
  public int lostRank() {
    return lostRank;
  }
}
