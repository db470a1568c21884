package io.kvtier.core.config;

import java.util.Objects;

/**
 * The typed settings of one rank's radix cache (CACHE.md §13), already resolved to pages.
 * {@link KvTierConfig} builds it from properties; tests and embedders may build it directly.
 *
 * @param pageSize tokens per page, at least 1
 * @param devicePages pages of the device (L1) pool, at least 1
 * @param hostPages pages of the host (L2) pool, 0 to disable the host tier
 * @param writePolicy when device pages are backed up to the host
 * @param writeThroughThreshold hits that trigger a backup under {@link
 *     WritePolicy#WRITE_THROUGH_SELECTIVE}, at least 1
 * @param evictionPolicy the eviction order of both tiers
 * @param loadBackThreshold the fewest pages worth loading back from the host, at least 1
 * @param vocabSize token ids must be in {@code [0, vocabSize)}
 * @param snapshotSlots page slots of one recurrent-state snapshot (HYBRID.md §5), 0 = the model
 *     has no recurrent state and every decision is the all-full-attention one
 * @param snapshotIntervalPages pages between two interval snapshots, at least 1
 */
public record CacheConfig(
    int pageSize,
    int devicePages,
    int hostPages,
    WritePolicy writePolicy,
    int writeThroughThreshold,
    EvictionPolicy evictionPolicy,
    int loadBackThreshold,
    int vocabSize,
    int snapshotSlots,
    int snapshotIntervalPages) {

  /** Default write policy. */
  public static final WritePolicy DEFAULT_WRITE_POLICY = WritePolicy.WRITE_THROUGH;

  /** Default hit threshold of selective write-through. */
  public static final int DEFAULT_WRITE_THROUGH_THRESHOLD = 2;

  /** Default eviction policy. */
  public static final EvictionPolicy DEFAULT_EVICTION_POLICY = EvictionPolicy.LRU;

  /** Default load-back threshold in pages. */
  public static final int DEFAULT_LOAD_BACK_THRESHOLD = 1;

  /** Default vocabulary bound: any non-negative int token id. */
  public static final int DEFAULT_VOCAB_SIZE = Integer.MAX_VALUE;

  /** Default pages between two interval snapshots. */
  public static final int DEFAULT_SNAPSHOT_INTERVAL_PAGES = 8;

  /** Validates the fields; each message names the field and the value. */
  public CacheConfig {
    atLeast("pageSize", pageSize, 1);
    atLeast("devicePages", devicePages, 1);
    atLeast("hostPages", hostPages, 0);
    Objects.requireNonNull(writePolicy, "writePolicy");
    atLeast("writeThroughThreshold", writeThroughThreshold, 1);
    Objects.requireNonNull(evictionPolicy, "evictionPolicy");
    atLeast("loadBackThreshold", loadBackThreshold, 1);
    atLeast("vocabSize", vocabSize, 1);
    atLeast("snapshotSlots", snapshotSlots, 0);
    atLeast("snapshotIntervalPages", snapshotIntervalPages, 1);
    if (snapshotSlots >= devicePages) {
      throw new IllegalArgumentException(
          "snapshotSlots="
              + snapshotSlots
              + " must be below devicePages="
              + devicePages
              + ": a snapshot takes its slots from the device pool (kvtier.snapshot-slots)");
    }
    if (writePolicy == WritePolicy.WRITE_BACK && hostPages == 0) {
      // Nothing to write back to: write-back would drop every evicted node anyway, which is
      // what a cache without a host tier does; say so rather than pretend.
      throw new IllegalArgumentException(
          "writePolicy=write_back needs a host tier, but hostPages=0: set host pages or a host"
              + " ratio, or use write_through");
    }
  }

  /**
   * A config without recurrent-state snapshots (the form before HYBRID.md §5).
   *
   * @param pageSize tokens per page
   * @param devicePages device pool pages
   * @param hostPages host pool pages (0: no host tier)
   * @param writePolicy the write policy
   * @param writeThroughThreshold the selective write-through threshold
   * @param evictionPolicy the eviction policy
   * @param loadBackThreshold the load-back threshold
   * @param vocabSize the vocabulary bound
   */
  public CacheConfig(
      int pageSize,
      int devicePages,
      int hostPages,
      WritePolicy writePolicy,
      int writeThroughThreshold,
      EvictionPolicy evictionPolicy,
      int loadBackThreshold,
      int vocabSize) {
    this(
        pageSize,
        devicePages,
        hostPages,
        writePolicy,
        writeThroughThreshold,
        evictionPolicy,
        loadBackThreshold,
        vocabSize,
        0,
        DEFAULT_SNAPSHOT_INTERVAL_PAGES);
  }

  /**
   * Whether requests take recurrent-state snapshots ({@link #snapshotSlots()} above 0).
   *
   * @return true with snapshots
   */
  public boolean snapshots() {
    return snapshotSlots > 0;
  }

  /**
   * This config with recurrent-state snapshots of {@code slots} page slots every {@code
   * intervalPages} pages (HYBRID.md §5).
   *
   * @param slots page slots of one snapshot, 0 for none
   * @param intervalPages pages between interval snapshots, at least 1
   * @return a copy
   */
  public CacheConfig withSnapshots(int slots, int intervalPages) {
    return new CacheConfig(
        pageSize,
        devicePages,
        hostPages,
        writePolicy,
        writeThroughThreshold,
        evictionPolicy,
        loadBackThreshold,
        vocabSize,
        slots,
        intervalPages);
  }

  private static void atLeast(String name, int value, int min) {
    if (value < min) {
      throw new IllegalArgumentException(name + "=" + value + " must be >= " + min);
    }
  }

  /**
   * A config with the default policies.
   *
   * @param pageSize tokens per page
   * @param devicePages device pool pages
   * @param hostPages host pool pages (0: no host tier)
   * @return the config
   */
  public static CacheConfig of(int pageSize, int devicePages, int hostPages) {
    return new CacheConfig(
        pageSize,
        devicePages,
        hostPages,
        DEFAULT_WRITE_POLICY,
        DEFAULT_WRITE_THROUGH_THRESHOLD,
        DEFAULT_EVICTION_POLICY,
        DEFAULT_LOAD_BACK_THRESHOLD,
        DEFAULT_VOCAB_SIZE);
  }

  /**
   * This config with another write policy.
   *
   * @param policy the policy
   * @return a copy
   */
  public CacheConfig withWritePolicy(WritePolicy policy) {
    return new CacheConfig(
        pageSize,
        devicePages,
        hostPages,
        policy,
        writeThroughThreshold,
        evictionPolicy,
        loadBackThreshold,
        vocabSize,
        snapshotSlots,
        snapshotIntervalPages);
  }

  /**
   * This config with another selective write-through threshold.
   *
   * @param threshold hits, at least 1
   * @return a copy
   */
  public CacheConfig withWriteThroughThreshold(int threshold) {
    return new CacheConfig(
        pageSize,
        devicePages,
        hostPages,
        writePolicy,
        threshold,
        evictionPolicy,
        loadBackThreshold,
        vocabSize,
        snapshotSlots,
        snapshotIntervalPages);
  }

  /**
   * This config with another eviction policy.
   *
   * @param policy the policy
   * @return a copy
   */
  public CacheConfig withEvictionPolicy(EvictionPolicy policy) {
    return new CacheConfig(
        pageSize,
        devicePages,
        hostPages,
        writePolicy,
        writeThroughThreshold,
        policy,
        loadBackThreshold,
        vocabSize,
        snapshotSlots,
        snapshotIntervalPages);
  }

  /**
   * This config with another load-back threshold.
   *
   * @param pages pages, at least 1
   * @return a copy
   */
  public CacheConfig withLoadBackThreshold(int pages) {
    return new CacheConfig(
        pageSize,
        devicePages,
        hostPages,
        writePolicy,
        writeThroughThreshold,
        evictionPolicy,
        pages,
        vocabSize,
        snapshotSlots,
        snapshotIntervalPages);
  }

  /**
   * This config with another vocabulary bound.
   *
   * @param size token ids must be below it
   * @return a copy
   */
  public CacheConfig withVocabSize(int size) {
    return new CacheConfig(
        pageSize,
        devicePages,
        hostPages,
        writePolicy,
        writeThroughThreshold,
        evictionPolicy,
        loadBackThreshold,
        size,
        snapshotSlots,
        snapshotIntervalPages);
  }
}
