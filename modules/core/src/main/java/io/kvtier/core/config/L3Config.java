package io.kvtier.core.config;

import java.time.Duration;
import java.util.Objects;

/**
 * The typed settings of the L3 storage tier (CACHE.md §12, §13). Which store is used is the
 * provider choice {@code kvtier.store}; these settings say how the engine uses it.
 *
 * @param capacityBytes the most bytes of page data the store keeps (its {@code KvStoreSpec}),
 *     at least 1
 * @param backupThreshold a host-committed node is written to L3 once its hit count reaches this;
 *     0 writes every node at its host commit
 * @param prefetchThreshold the fewest tokens an L3 hit (beyond the host hit) must have to be
 *     prefetched, at least 1
 * @param prefetchPolicy when a prefetch stops waiting for its pages
 * @param timeoutBase the timeout of a prefetch of no tokens, under {@link
 *     L3PrefetchPolicy#TIMEOUT}; positive
 * @param timeoutPerKiToken what each 1024 tokens of a prefetch add to its timeout; at least 0
 * @param timeoutCap the longest timeout, at least {@code timeoutBase}
 * @param modelId the model's identity, part of every L3 key so that two models never share a
 *     page; not blank
 * @param replicatedKv whether every rank holds the same KV (MLA): then the keys leave out the
 *     rank and only rank 0 writes; otherwise (sharded KV, the default) each rank writes and reads
 *     its own shard under keys salted with its rank and the world size
 */
public record L3Config(
    long capacityBytes,
    int backupThreshold,
    int prefetchThreshold,
    L3PrefetchPolicy prefetchPolicy,
    Duration timeoutBase,
    Duration timeoutPerKiToken,
    Duration timeoutCap,
    String modelId,
    boolean replicatedKv) {

  /** Default of {@link #capacityBytes()}: 1 GiB. */
  public static final long DEFAULT_CAPACITY_BYTES = 1L << 30;

  /** Default of {@link #backupThreshold()}: write a node once it has one hit (its insert). */
  public static final int DEFAULT_BACKUP_THRESHOLD = 1;

  /** Default of {@link #prefetchThreshold()}, in tokens. */
  public static final int DEFAULT_PREFETCH_THRESHOLD = 256;

  /** Default of {@link #prefetchPolicy()}. */
  public static final L3PrefetchPolicy DEFAULT_PREFETCH_POLICY = L3PrefetchPolicy.TIMEOUT;

  /** Default of {@link #timeoutBase()}. */
  public static final Duration DEFAULT_TIMEOUT_BASE = Duration.ofSeconds(1);

  /** Default of {@link #timeoutPerKiToken()}. */
  public static final Duration DEFAULT_TIMEOUT_PER_KI_TOKEN = Duration.ofMillis(250);

  /** Default of {@link #timeoutCap()}. */
  public static final Duration DEFAULT_TIMEOUT_CAP = Duration.ofSeconds(10);

  /** Default of {@link #modelId()}. */
  public static final String DEFAULT_MODEL_ID = "default";

  /** The defaults. */
  public static final L3Config DEFAULTS =
      new L3Config(
          DEFAULT_CAPACITY_BYTES,
          DEFAULT_BACKUP_THRESHOLD,
          DEFAULT_PREFETCH_THRESHOLD,
          DEFAULT_PREFETCH_POLICY,
          DEFAULT_TIMEOUT_BASE,
          DEFAULT_TIMEOUT_PER_KI_TOKEN,
          DEFAULT_TIMEOUT_CAP,
          DEFAULT_MODEL_ID,
          false);

  /** Validates the fields; each message names the field and the value. */
  public L3Config {
    if (capacityBytes < 1) {
      throw new IllegalArgumentException("capacityBytes=" + capacityBytes + " must be >= 1");
    }
    if (backupThreshold < 0) {
      throw new IllegalArgumentException(
          "backupThreshold=" + backupThreshold + " must be >= 0 (0 writes at the host commit)");
    }
    if (prefetchThreshold < 1) {
      throw new IllegalArgumentException(
          "prefetchThreshold=" + prefetchThreshold + " must be >= 1 token");
    }
    Objects.requireNonNull(prefetchPolicy, "prefetchPolicy");
    Objects.requireNonNull(timeoutBase, "timeoutBase");
    Objects.requireNonNull(timeoutPerKiToken, "timeoutPerKiToken");
    Objects.requireNonNull(timeoutCap, "timeoutCap");
    Objects.requireNonNull(modelId, "modelId");
    if (timeoutBase.isNegative() || timeoutBase.isZero()) {
      throw new IllegalArgumentException("timeoutBase=" + timeoutBase + " must be positive");
    }
    if (timeoutPerKiToken.isNegative()) {
      throw new IllegalArgumentException(
          "timeoutPerKiToken=" + timeoutPerKiToken + " must be >= 0");
    }
    if (timeoutCap.compareTo(timeoutBase) < 0) {
      throw new IllegalArgumentException(
          "timeoutCap="
              + timeoutCap
              + " is below timeoutBase="
              + timeoutBase
              + ": the cap must allow at least the base timeout");
    }
    if (modelId.isBlank()) {
      throw new IllegalArgumentException(
          "modelId is blank: name the model (it separates the L3 pages of different models)");
    }
  }

  /**
   * The timeout of a prefetch of {@code tokens} tokens: {@code base + perKiToken * tokens /
   * 1024}, at most the cap.
   *
   * @param tokens the prefetch's tokens, at least 0
   * @return nanoseconds
   */
  public long timeoutNanos(long tokens) {
    if (tokens < 0) {
      throw new IllegalArgumentException("tokens=" + tokens + " must be >= 0");
    }
    long cap = timeoutCap.toNanos();
    double nanos = timeoutBase.toNanos() + timeoutPerKiToken.toNanos() * (tokens / 1024.0);
    return nanos >= cap ? cap : (long) nanos;
  }

  /**
   * With another prefetch policy.
   *
   * @param policy the policy
   * @return a copy
   */
  public L3Config withPrefetchPolicy(L3PrefetchPolicy policy) {
    return new L3Config(
        capacityBytes,
        backupThreshold,
        prefetchThreshold,
        policy,
        timeoutBase,
        timeoutPerKiToken,
        timeoutCap,
        modelId,
        replicatedKv);
  }

  /**
   * With another prefetch threshold.
   *
   * @param tokens at least 1
   * @return a copy
   */
  public L3Config withPrefetchThreshold(int tokens) {
    return new L3Config(
        capacityBytes,
        backupThreshold,
        tokens,
        prefetchPolicy,
        timeoutBase,
        timeoutPerKiToken,
        timeoutCap,
        modelId,
        replicatedKv);
  }

  /**
   * With another backup threshold.
   *
   * @param hits at least 0
   * @return a copy
   */
  public L3Config withBackupThreshold(int hits) {
    return new L3Config(
        capacityBytes,
        hits,
        prefetchThreshold,
        prefetchPolicy,
        timeoutBase,
        timeoutPerKiToken,
        timeoutCap,
        modelId,
        replicatedKv);
  }

  /**
   * With other timeouts.
   *
   * @param base positive
   * @param perKiToken at least 0
   * @param cap at least {@code base}
   * @return a copy
   */
  public L3Config withTimeouts(Duration base, Duration perKiToken, Duration cap) {
    return new L3Config(
        capacityBytes,
        backupThreshold,
        prefetchThreshold,
        prefetchPolicy,
        base,
        perKiToken,
        cap,
        modelId,
        replicatedKv);
  }

  /**
   * With another store capacity.
   *
   * @param bytes at least 1
   * @return a copy
   */
  public L3Config withCapacityBytes(long bytes) {
    return new L3Config(
        bytes,
        backupThreshold,
        prefetchThreshold,
        prefetchPolicy,
        timeoutBase,
        timeoutPerKiToken,
        timeoutCap,
        modelId,
        replicatedKv);
  }

  /**
   * With another model id.
   *
   * @param id not blank
   * @return a copy
   */
  public L3Config withModelId(String id) {
    return new L3Config(
        capacityBytes,
        backupThreshold,
        prefetchThreshold,
        prefetchPolicy,
        timeoutBase,
        timeoutPerKiToken,
        timeoutCap,
        id,
        replicatedKv);
  }

  /**
   * With replicated (MLA) or sharded KV.
   *
   * @param replicated true for replicated KV
   * @return a copy
   */
  public L3Config withReplicatedKv(boolean replicated) {
    return new L3Config(
        capacityBytes,
        backupThreshold,
        prefetchThreshold,
        prefetchPolicy,
        timeoutBase,
        timeoutPerKiToken,
        timeoutCap,
        modelId,
        replicated);
  }
}
