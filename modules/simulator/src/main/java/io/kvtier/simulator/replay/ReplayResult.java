package io.kvtier.simulator.replay;

import java.util.Objects;

/**
 * What one configuration of a replay gave. Token counts are prompt tokens; a hit token is one
 * whose KV the cache supplied, so its prefill is saved: on the device already ({@code device}),
 * loaded back from host memory ({@code host}), or fetched from the L3 store into host memory and
 * loaded back ({@code l3}). A request counts as a hit of a tier when at least one of its tokens
 * came from that tier.
 *
 * @param kind a configuration of the sweep or one of the baselines
 * @param configuration the capacities and policies replayed
 * @param requests requests replayed
 * @param promptTokens their prompt tokens
 * @param deviceHitTokens prompt tokens found on the device
 * @param hostHitTokens prompt tokens loaded back from the host (not counting L3 ones)
 * @param l3HitTokens prompt tokens the L3 store supplied
 * @param deviceHitRequests requests with at least one device hit token
 * @param hostHitRequests requests with at least one host hit token
 * @param l3HitRequests requests with at least one L3 hit token
 * @param hitRequests requests with at least one hit token in any tier
 * @param loadBacks host-to-device load-backs committed
 * @param deviceEvictionPages device pages freed by eviction
 * @param hostEvictionPages host pages freed by eviction
 * @param backups device-to-host backups committed
 * @param l3PagesWritten pages written to the L3 store
 * @param rejectedRequests requests whose prompt needs more pages than the whole device holds;
 *     replayed as misses and not cached
 * @param nanos wall-clock time of the replay itself (the trace was prepared before)
 * @param cpuNanos CPU time of the thread that ran it, the measure of speed per core on a machine
 *     that other work shares (0 where the JVM cannot measure thread CPU time)
 * @param usableDeviceHitTokens the part of {@code deviceHitTokens} that requests could resume
 *     from (HYBRID.md §5, §8): with recurrent-state snapshots a match is usable only up to its
 *     deepest snapshot; without them every hit token. Its prefill is saved; the rest of the match
 *     is computed again
 * @param usableHostHitTokens the usable part of {@code hostHitTokens}
 * @param usableL3HitTokens the usable part of {@code l3HitTokens}
 */
public record ReplayResult(
    Kind kind,
    ReplayConfiguration configuration,
    long requests,
    long promptTokens,
    long deviceHitTokens,
    long hostHitTokens,
    long l3HitTokens,
    long deviceHitRequests,
    long hostHitRequests,
    long l3HitRequests,
    long hitRequests,
    long loadBacks,
    long deviceEvictionPages,
    long hostEvictionPages,
    long backups,
    long l3PagesWritten,
    long rejectedRequests,
    long nanos,
    long cpuNanos,
    long usableDeviceHitTokens,
    long usableHostHitTokens,
    long usableL3HitTokens) {

  /** What a result row is. */
  public enum Kind {
    /** A configuration of the sweep. */
    SWEEP,
    /** Upper bound: a device that holds the whole trace, so nothing is ever evicted. */
    UNBOUNDED,
    /** Lower bound: no cache, every prompt token is computed. */
    NO_CACHE;

    /**
     * The name in tables and files.
     *
     * @return {@code sweep}, {@code unbounded} or {@code no-cache}
     */
    public String label() {
      return switch (this) {
        case SWEEP -> "sweep";
        case UNBOUNDED -> "unbounded";
        case NO_CACHE -> "no-cache";
      };
    }
  }

  /** A tier of the cache, or all of them. */
  public enum Tier {
    /** On the device (L1) at admission. */
    DEVICE,
    /** Loaded back from host memory (L2). */
    HOST,
    /** Fetched from the L3 store. */
    L3,
    /** Any tier. */
    TOTAL;

    /**
     * The name in files.
     *
     * @return {@code device}, {@code host}, {@code l3} or {@code total}
     */
    public String key() {
      return switch (this) {
        case DEVICE -> "device";
        case HOST -> "host";
        case L3 -> "l3";
        case TOTAL -> "total";
      };
    }
  }

  /**
   * A result without recurrent-state snapshots: every hit token usable.
   *
   * @param kind a configuration of the sweep or one of the baselines
   * @param configuration the capacities and policies replayed
   * @param requests requests replayed
   * @param promptTokens their prompt tokens
   * @param deviceHitTokens prompt tokens found on the device
   * @param hostHitTokens prompt tokens loaded back from the host
   * @param l3HitTokens prompt tokens the L3 store supplied
   * @param deviceHitRequests requests with a device hit
   * @param hostHitRequests requests with a host hit
   * @param l3HitRequests requests with an L3 hit
   * @param hitRequests requests with any hit
   * @param loadBacks load-backs committed
   * @param deviceEvictionPages device pages evicted
   * @param hostEvictionPages host pages evicted
   * @param backups backups committed
   * @param l3PagesWritten pages written to the L3 store
   * @param rejectedRequests requests too large for the device
   * @param nanos wall-clock time
   * @param cpuNanos CPU time
   */
  public ReplayResult(
      Kind kind,
      ReplayConfiguration configuration,
      long requests,
      long promptTokens,
      long deviceHitTokens,
      long hostHitTokens,
      long l3HitTokens,
      long deviceHitRequests,
      long hostHitRequests,
      long l3HitRequests,
      long hitRequests,
      long loadBacks,
      long deviceEvictionPages,
      long hostEvictionPages,
      long backups,
      long l3PagesWritten,
      long rejectedRequests,
      long nanos,
      long cpuNanos) {
    this(
        kind,
        configuration,
        requests,
        promptTokens,
        deviceHitTokens,
        hostHitTokens,
        l3HitTokens,
        deviceHitRequests,
        hostHitRequests,
        l3HitRequests,
        hitRequests,
        loadBacks,
        deviceEvictionPages,
        hostEvictionPages,
        backups,
        l3PagesWritten,
        rejectedRequests,
        nanos,
        cpuNanos,
        deviceHitTokens,
        hostHitTokens,
        l3HitTokens);
  }

  /** Validates the fields. */
  public ReplayResult {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(configuration, "configuration");
    long[] all = {
      requests,
      promptTokens,
      deviceHitTokens,
      hostHitTokens,
      l3HitTokens,
      deviceHitRequests,
      hostHitRequests,
      l3HitRequests,
      hitRequests,
      loadBacks,
      deviceEvictionPages,
      hostEvictionPages,
      backups,
      l3PagesWritten,
      rejectedRequests,
      nanos,
      cpuNanos,
      usableDeviceHitTokens,
      usableHostHitTokens,
      usableL3HitTokens
    };
    for (long v : all) {
      if (v < 0) {
        throw new IllegalArgumentException("negative count in a replay result: " + v);
      }
    }
    if (deviceHitTokens + hostHitTokens + l3HitTokens > promptTokens) {
      throw new IllegalArgumentException(
          "hit tokens "
              + (deviceHitTokens + hostHitTokens + l3HitTokens)
              + " exceed the prompt tokens "
              + promptTokens);
    }
    if (usableDeviceHitTokens > deviceHitTokens
        || usableHostHitTokens > hostHitTokens
        || usableL3HitTokens > l3HitTokens) {
      throw new IllegalArgumentException(
          "usable hit tokens "
              + usableDeviceHitTokens
              + "/"
              + usableHostHitTokens
              + "/"
              + usableL3HitTokens
              + " exceed the matched ones "
              + deviceHitTokens
              + "/"
              + hostHitTokens
              + "/"
              + l3HitTokens
              + " (device/host/l3)");
    }
  }

  /**
   * Usable hit tokens of a tier: the part of the match that requests resumed from.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return the tokens, at most {@link #hitTokens(Tier)}
   */
  public long usableHitTokens(Tier tier) {
    return switch (tier) {
      case DEVICE -> usableDeviceHitTokens;
      case HOST -> usableHostHitTokens;
      case L3 -> usableL3HitTokens;
      case TOTAL -> usableDeviceHitTokens + usableHostHitTokens + usableL3HitTokens;
    };
  }

  /**
   * The usable hit rate by tokens: usable hit tokens over prompt tokens.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return a fraction in [0, 1]; 0 for an empty trace
   */
  public double usableHitRate(Tier tier) {
    return promptTokens == 0 ? 0 : (double) usableHitTokens(tier) / promptTokens;
  }

  /**
   * The usable share of the matched hit tokens, what shows a 0% usable hit rate.
   *
   * @return usable over matched hit tokens of all tiers; 1 when nothing matched
   */
  public double usableOfMatched() {
    long matched = hitTokens(Tier.TOTAL);
    return matched == 0 ? 1 : (double) usableHitTokens(Tier.TOTAL) / matched;
  }

  /**
   * Hit tokens of a tier.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return the tokens
   */
  public long hitTokens(Tier tier) {
    return switch (tier) {
      case DEVICE -> deviceHitTokens;
      case HOST -> hostHitTokens;
      case L3 -> l3HitTokens;
      case TOTAL -> deviceHitTokens + hostHitTokens + l3HitTokens;
    };
  }

  /**
   * Requests with a hit in a tier.
   *
   * @param tier the tier, or {@link Tier#TOTAL} (a hit anywhere)
   * @return the requests
   */
  public long hitRequests(Tier tier) {
    return switch (tier) {
      case DEVICE -> deviceHitRequests;
      case HOST -> hostHitRequests;
      case L3 -> l3HitRequests;
      case TOTAL -> hitRequests;
    };
  }

  /**
   * The hit rate by tokens: hit tokens over prompt tokens.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return a fraction in [0, 1]; 0 for an empty trace
   */
  public double hitRate(Tier tier) {
    return promptTokens == 0 ? 0 : (double) hitTokens(tier) / promptTokens;
  }

  /**
   * The hit rate by requests: requests with a hit over requests.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return a fraction in [0, 1]; 0 for an empty trace
   */
  public double requestHitRate(Tier tier) {
    return requests == 0 ? 0 : (double) hitRequests(tier) / requests;
  }

  /**
   * Prompt tokens whose prefill the cache saves: every usable hit token (every hit token without
   * recurrent-state snapshots).
   *
   * @return {@code usableHitTokens(TOTAL)}
   */
  public long prefillTokensSaved() {
    return usableHitTokens(Tier.TOTAL);
  }

  /**
   * Replay speed: prompt tokens per second of this configuration's own run (on one core).
   *
   * @return tokens per second; 0 for a baseline that ran nothing
   */
  public double promptTokensPerSecond() {
    return nanos == 0 ? 0 : promptTokens * 1e9 / nanos;
  }

  /**
   * Replay speed per core: prompt tokens per second of the running thread's CPU time, which
   * other processes that share the cores do not inflate.
   *
   * @return tokens per CPU second; 0 when no CPU time was measured
   */
  public double promptTokensPerCpuSecond() {
    return cpuNanos == 0 ? 0 : promptTokens * 1e9 / cpuNanos;
  }
}
