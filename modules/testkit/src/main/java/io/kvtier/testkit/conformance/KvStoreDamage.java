package io.kvtier.testkit.conformance;

/**
 * How {@link KvStoreSuiteBase#damage} harms the stored form of one page (a file, a map value),
 * behind the store's back.
 */
public enum KvStoreDamage {
  /** Cut short: at least one byte removed from the end, at most all but one. */
  TRUNCATED,
  /** One bit flipped, anywhere in the stored form: header or payload. */
  FLIPPED_BIT,
  /** Emptied: zero bytes left. */
  EMPTIED,
  /** Removed altogether: a plain miss, not a damaged page. */
  REMOVED;

  /**
   * Whether the store must count this damage in {@link io.kvtier.spi.KvStoreStats#corrupt()}.
   *
   * @return true for every kind except {@link #REMOVED}, which leaves nothing to find damaged
   */
  public boolean countsAsCorrupt() {
    return this != REMOVED;
  }
}
