package io.kvtier.simulator.replay;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.Objects;

/**
 * One point of a replay sweep: the cache's capacities in tokens and its policies. Capacities are
 * whole pages (a capacity that is not is rounded down by {@link #of}).
 *
 * @param pageSize tokens per page, at least 1
 * @param deviceTokens device (L1) capacity in tokens, a page multiple; 0 is no cache at all (the
 *     "no cache" baseline: every request misses)
 * @param hostTokens host (L2) capacity in tokens, a page multiple; 0 is no host tier
 * @param l3Tokens L3 store capacity in tokens, a page multiple; 0 is no L3 tier (an L3 tier needs a
 *     host tier: its pages reach the device through host memory)
 * @param eviction the eviction order of both tiers
 * @param writePolicy when device pages are backed up to the host; {@code write_back} needs a host
 *     tier
 * @param snapshotSlots page slots of one recurrent-state snapshot (HYBRID.md §5, {@code
 *     kvtier.snapshot-slots}), taken from the device pool like pages: 0 for a model without
 *     recurrent layers (every hit usable), 1 for {@code kvtier replay --layer-mix} with one
 * @param snapshotIntervalPages pages between two interval snapshots, at least 1; read only with
 *     {@code snapshotSlots > 0}
 */
public record ReplayConfiguration(
    int pageSize,
    long deviceTokens,
    long hostTokens,
    long l3Tokens,
    EvictionPolicy eviction,
    WritePolicy writePolicy,
    int snapshotSlots,
    int snapshotIntervalPages) {

  /** The interval of a configuration without snapshots: CacheConfig's default. */
  public static final int DEFAULT_SNAPSHOT_INTERVAL_PAGES = 8;

  /**
   * A configuration without recurrent-state snapshots.
   *
   * @param pageSize tokens per page
   * @param deviceTokens device capacity in tokens, a page multiple (0: no cache)
   * @param hostTokens host capacity in tokens, a page multiple (0: no host tier)
   * @param l3Tokens L3 capacity in tokens, a page multiple (0: no L3 tier)
   * @param eviction the eviction policy
   * @param writePolicy the write policy
   */
  public ReplayConfiguration(
      int pageSize,
      long deviceTokens,
      long hostTokens,
      long l3Tokens,
      EvictionPolicy eviction,
      WritePolicy writePolicy) {
    this(
        pageSize,
        deviceTokens,
        hostTokens,
        l3Tokens,
        eviction,
        writePolicy,
        0,
        DEFAULT_SNAPSHOT_INTERVAL_PAGES);
  }

  /** Validates the fields; each message names the field and the value. */
  public ReplayConfiguration {
    Objects.requireNonNull(eviction, "eviction");
    Objects.requireNonNull(writePolicy, "writePolicy");
    if (pageSize < 1) {
      throw new IllegalArgumentException("pageSize=" + pageSize + " must be >= 1");
    }
    if (snapshotSlots < 0) {
      throw new IllegalArgumentException("snapshotSlots=" + snapshotSlots + " must be >= 0");
    }
    if (snapshotIntervalPages < 1) {
      throw new IllegalArgumentException(
          "snapshotIntervalPages=" + snapshotIntervalPages + " must be >= 1");
    }
    checkPages("deviceTokens", deviceTokens, pageSize);
    checkPages("hostTokens", hostTokens, pageSize);
    checkPages("l3Tokens", l3Tokens, pageSize);
    if (snapshotSlots > 0 && deviceTokens > 0 && deviceTokens / pageSize <= snapshotSlots) {
      throw new IllegalArgumentException(
          "deviceTokens="
              + deviceTokens
              + " holds "
              + deviceTokens / pageSize
              + " page(s), no more than one snapshot's snapshotSlots="
              + snapshotSlots
              + ": give the device at least "
              + (snapshotSlots + 1)
              + " pages");
    }
    if (deviceTokens == 0 && (hostTokens > 0 || l3Tokens > 0)) {
      throw new IllegalArgumentException(
          "deviceTokens=0 (no cache) with hostTokens="
              + hostTokens
              + " l3Tokens="
              + l3Tokens
              + ": lower tiers serve through the device, give it at least one page");
    }
    if (l3Tokens > 0 && hostTokens == 0) {
      throw new IllegalArgumentException(
          "l3Tokens="
              + l3Tokens
              + " needs a host tier (L3 pages reach the device through host memory), but"
              + " hostTokens=0: give host capacity or a host ratio above 0");
    }
    if (writePolicy == WritePolicy.WRITE_BACK && hostTokens == 0 && deviceTokens > 0) {
      throw new IllegalArgumentException(
          "writePolicy=write_back needs a host tier, but hostTokens=0: give host capacity or a"
              + " host ratio above 0, or use write_through");
    }
  }

  private static void checkPages(String name, long tokens, int pageSize) {
    if (tokens < 0 || tokens % pageSize != 0 || tokens / pageSize > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          name
              + "="
              + tokens
              + " must be a multiple of pageSize="
              + pageSize
              + " between 0 and "
              + (long) Integer.MAX_VALUE * pageSize);
    }
  }

  /**
   * A configuration with each capacity rounded down to whole pages.
   *
   * @param pageSize tokens per page
   * @param deviceTokens device capacity in tokens
   * @param hostTokens host capacity in tokens
   * @param l3Tokens L3 capacity in tokens
   * @param eviction the eviction policy
   * @param writePolicy the write policy
   * @return the configuration
   */
  public static ReplayConfiguration of(
      int pageSize,
      long deviceTokens,
      long hostTokens,
      long l3Tokens,
      EvictionPolicy eviction,
      WritePolicy writePolicy) {
    if (pageSize < 1) {
      throw new IllegalArgumentException("pageSize=" + pageSize + " must be >= 1");
    }
    return new ReplayConfiguration(
        pageSize,
        floor(deviceTokens, pageSize),
        floor(hostTokens, pageSize),
        floor(l3Tokens, pageSize),
        eviction,
        writePolicy);
  }

  /**
   * This configuration with recurrent-state snapshots.
   *
   * @param slots page slots per snapshot, 0 for none
   * @param intervalPages pages between two interval snapshots
   * @return a copy
   */
  public ReplayConfiguration withSnapshots(int slots, int intervalPages) {
    return new ReplayConfiguration(
        pageSize, deviceTokens, hostTokens, l3Tokens, eviction, writePolicy, slots, intervalPages);
  }

  /**
   * Whether requests take recurrent-state snapshots.
   *
   * @return {@code snapshotSlots() > 0}
   */
  public boolean snapshots() {
    return snapshotSlots > 0;
  }

  private static long floor(long tokens, int pageSize) {
    return tokens < 0 ? tokens : tokens - tokens % pageSize;
  }

  /**
   * Device pages.
   *
   * @return {@code deviceTokens / pageSize}
   */
  public int devicePages() {
    return (int) (deviceTokens / pageSize);
  }

  /**
   * Host pages.
   *
   * @return {@code hostTokens / pageSize}
   */
  public int hostPages() {
    return (int) (hostTokens / pageSize);
  }

  /**
   * L3 pages.
   *
   * @return {@code l3Tokens / pageSize}
   */
  public long l3Pages() {
    return l3Tokens / pageSize;
  }

  /**
   * A short label for tables and charts, for example {@code page=16 device=1M host=4M lru
   * write_through}.
   *
   * @return the label
   */
  public String label() {
    return "page="
        + pageSize
        + " device="
        + ReplayFormat.tokens(deviceTokens)
        + " host="
        + ReplayFormat.tokens(hostTokens)
        + " l3="
        + ReplayFormat.tokens(l3Tokens)
        + " "
        + eviction.configName()
        + " "
        + writePolicy.configName()
        + (snapshotSlots > 0 ? " snapshot-interval=" + snapshotIntervalPages : "");
  }
}
