package io.kvtier.simulator.replay;

import java.util.Arrays;
import java.util.Objects;

/**
 * What one configuration of a replay gave. Token counts are prompt tokens; a hit token is one
 * whose KV the cache supplied, so its prefill is saved: on the device already ({@code device}),
 * loaded back from host memory ({@code host}), or fetched from the L3 store into host memory and
 * loaded back ({@code l3}). A request counts as a hit of a tier when at least one of its tokens
 * came from that tier.
 *
 * <p>The counters are one structure read by name ({@link #get}, or the accessor of the same
 * name), each documented on its {@link ReplayCounter}; build a result with {@link #builder}.
 *
 * @param kind a configuration of the sweep or one of the baselines
 * @param configuration the capacities and policies replayed
 * @param counts one value per {@link ReplayCounter}, in its order
 */
public record ReplayResult(Kind kind, ReplayConfiguration configuration, long[] counts) {

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

  private static final ReplayCounter[] COUNTERS = ReplayCounter.values();

  /** Validates the fields: no count negative, no tier's usable hits above its matched ones. */
  public ReplayResult {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(configuration, "configuration");
    Objects.requireNonNull(counts, "counts");
    if (counts.length != COUNTERS.length) {
      throw new IllegalArgumentException(
          counts.length + " counts for the " + COUNTERS.length + " replay counters");
    }
    counts = counts.clone();
    for (long v : counts) {
      if (v < 0) {
        throw new IllegalArgumentException("negative count in a replay result: " + v);
      }
    }
    long device = counts[ReplayCounter.DEVICE_HIT_TOKENS.ordinal()];
    long host = counts[ReplayCounter.HOST_HIT_TOKENS.ordinal()];
    long l3 = counts[ReplayCounter.L3_HIT_TOKENS.ordinal()];
    long usableDevice = counts[ReplayCounter.USABLE_DEVICE_HIT_TOKENS.ordinal()];
    long usableHost = counts[ReplayCounter.USABLE_HOST_HIT_TOKENS.ordinal()];
    long usableL3 = counts[ReplayCounter.USABLE_L3_HIT_TOKENS.ordinal()];
    long prompt = counts[ReplayCounter.PROMPT_TOKENS.ordinal()];
    if (device + host + l3 > prompt) {
      throw new IllegalArgumentException(
          "hit tokens " + (device + host + l3) + " exceed the prompt tokens " + prompt);
    }
    if (usableDevice > device || usableHost > host || usableL3 > l3) {
      throw new IllegalArgumentException(
          "usable hit tokens "
              + usableDevice
              + "/"
              + usableHost
              + "/"
              + usableL3
              + " exceed the matched ones "
              + device
              + "/"
              + host
              + "/"
              + l3
              + " (device/host/l3)");
    }
  }

  /**
   * A builder of a result of one configuration, every counter 0.
   *
   * @param kind what the row is
   * @param configuration the configuration replayed
   * @return a builder
   */
  public static Builder builder(Kind kind, ReplayConfiguration configuration) {
    return new Builder(kind, configuration);
  }

  /**
   * One counter.
   *
   * @param counter which
   * @return its value
   */
  public long get(ReplayCounter counter) {
    return counts[counter.ordinal()];
  }

  /**
   * Every counter, in {@link ReplayCounter} order.
   *
   * @return a copy
   */
  @Override
  public long[] counts() {
    return counts.clone();
  }

  /** @return {@link ReplayCounter#REQUESTS} */
  public long requests() {
    return get(ReplayCounter.REQUESTS);
  }

  /** @return {@link ReplayCounter#PROMPT_TOKENS} */
  public long promptTokens() {
    return get(ReplayCounter.PROMPT_TOKENS);
  }

  /** @return {@link ReplayCounter#DEVICE_HIT_TOKENS} */
  public long deviceHitTokens() {
    return get(ReplayCounter.DEVICE_HIT_TOKENS);
  }

  /** @return {@link ReplayCounter#HOST_HIT_TOKENS} */
  public long hostHitTokens() {
    return get(ReplayCounter.HOST_HIT_TOKENS);
  }

  /** @return {@link ReplayCounter#L3_HIT_TOKENS} */
  public long l3HitTokens() {
    return get(ReplayCounter.L3_HIT_TOKENS);
  }

  /** @return {@link ReplayCounter#DEVICE_HIT_REQUESTS} */
  public long deviceHitRequests() {
    return get(ReplayCounter.DEVICE_HIT_REQUESTS);
  }

  /** @return {@link ReplayCounter#HOST_HIT_REQUESTS} */
  public long hostHitRequests() {
    return get(ReplayCounter.HOST_HIT_REQUESTS);
  }

  /** @return {@link ReplayCounter#L3_HIT_REQUESTS} */
  public long l3HitRequests() {
    return get(ReplayCounter.L3_HIT_REQUESTS);
  }

  /** @return {@link ReplayCounter#HIT_REQUESTS} */
  public long hitRequests() {
    return get(ReplayCounter.HIT_REQUESTS);
  }

  /** @return {@link ReplayCounter#LOAD_BACKS} */
  public long loadBacks() {
    return get(ReplayCounter.LOAD_BACKS);
  }

  /** @return {@link ReplayCounter#DEVICE_EVICTION_PAGES} */
  public long deviceEvictionPages() {
    return get(ReplayCounter.DEVICE_EVICTION_PAGES);
  }

  /** @return {@link ReplayCounter#HOST_EVICTION_PAGES} */
  public long hostEvictionPages() {
    return get(ReplayCounter.HOST_EVICTION_PAGES);
  }

  /** @return {@link ReplayCounter#BACKUPS} */
  public long backups() {
    return get(ReplayCounter.BACKUPS);
  }

  /** @return {@link ReplayCounter#L3_PAGES_WRITTEN} */
  public long l3PagesWritten() {
    return get(ReplayCounter.L3_PAGES_WRITTEN);
  }

  /** @return {@link ReplayCounter#REJECTED_REQUESTS} */
  public long rejectedRequests() {
    return get(ReplayCounter.REJECTED_REQUESTS);
  }

  /** @return {@link ReplayCounter#NANOS} */
  public long nanos() {
    return get(ReplayCounter.NANOS);
  }

  /** @return {@link ReplayCounter#CPU_NANOS} */
  public long cpuNanos() {
    return get(ReplayCounter.CPU_NANOS);
  }

  /** @return {@link ReplayCounter#USABLE_DEVICE_HIT_TOKENS} */
  public long usableDeviceHitTokens() {
    return get(ReplayCounter.USABLE_DEVICE_HIT_TOKENS);
  }

  /** @return {@link ReplayCounter#USABLE_HOST_HIT_TOKENS} */
  public long usableHostHitTokens() {
    return get(ReplayCounter.USABLE_HOST_HIT_TOKENS);
  }

  /** @return {@link ReplayCounter#USABLE_L3_HIT_TOKENS} */
  public long usableL3HitTokens() {
    return get(ReplayCounter.USABLE_L3_HIT_TOKENS);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ReplayResult other
        && kind == other.kind
        && configuration.equals(other.configuration)
        && Arrays.equals(counts, other.counts);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, configuration, Arrays.hashCode(counts));
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("ReplayResult[kind=").append(kind);
    s.append(", configuration=").append(configuration);
    for (ReplayCounter c : COUNTERS) {
      s.append(", ").append(c.key()).append('=').append(get(c));
    }
    return s.append(']').toString();
  }

  /** Sets a result's counters by name. */
  public static final class Builder {
    private final Kind kind;
    private final ReplayConfiguration configuration;
    private final long[] counts = new long[COUNTERS.length];
    private boolean usableSet;

    private Builder(Kind kind, ReplayConfiguration configuration) {
      this.kind = kind;
      this.configuration = configuration;
    }

    /**
     * Sets one counter.
     *
     * @param counter which
     * @param value its value
     * @return this
     */
    public Builder set(ReplayCounter counter, long value) {
      counts[counter.ordinal()] = value;
      usableSet |=
          counter == ReplayCounter.USABLE_DEVICE_HIT_TOKENS
              || counter == ReplayCounter.USABLE_HOST_HIT_TOKENS
              || counter == ReplayCounter.USABLE_L3_HIT_TOKENS;
      return this;
    }

    /**
     * The result; without a usable count set (no snapshots), every hit token is usable.
     *
     * @return the result
     */
    public ReplayResult build() {
      long[] v = counts.clone();
      if (!usableSet) {
        v[ReplayCounter.USABLE_DEVICE_HIT_TOKENS.ordinal()] =
            v[ReplayCounter.DEVICE_HIT_TOKENS.ordinal()];
        v[ReplayCounter.USABLE_HOST_HIT_TOKENS.ordinal()] =
            v[ReplayCounter.HOST_HIT_TOKENS.ordinal()];
        v[ReplayCounter.USABLE_L3_HIT_TOKENS.ordinal()] = v[ReplayCounter.L3_HIT_TOKENS.ordinal()];
      }
      return new ReplayResult(kind, configuration, v);
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
      case DEVICE -> usableDeviceHitTokens();
      case HOST -> usableHostHitTokens();
      case L3 -> usableL3HitTokens();
      case TOTAL -> usableDeviceHitTokens() + usableHostHitTokens() + usableL3HitTokens();
    };
  }

  /**
   * The usable hit rate by tokens: usable hit tokens over prompt tokens.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return a fraction in [0, 1]; 0 for an empty trace
   */
  public double usableHitRate(Tier tier) {
    return promptTokens() == 0 ? 0 : (double) usableHitTokens(tier) / promptTokens();
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
      case DEVICE -> deviceHitTokens();
      case HOST -> hostHitTokens();
      case L3 -> l3HitTokens();
      case TOTAL -> deviceHitTokens() + hostHitTokens() + l3HitTokens();
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
      case DEVICE -> deviceHitRequests();
      case HOST -> hostHitRequests();
      case L3 -> l3HitRequests();
      case TOTAL -> hitRequests();
    };
  }

  /**
   * The hit rate by tokens: hit tokens over prompt tokens.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return a fraction in [0, 1]; 0 for an empty trace
   */
  public double hitRate(Tier tier) {
    return promptTokens() == 0 ? 0 : (double) hitTokens(tier) / promptTokens();
  }

  /**
   * The hit rate by requests: requests with a hit over requests.
   *
   * @param tier the tier, or {@link Tier#TOTAL}
   * @return a fraction in [0, 1]; 0 for an empty trace
   */
  public double requestHitRate(Tier tier) {
    return requests() == 0 ? 0 : (double) hitRequests(tier) / requests();
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
    return nanos() == 0 ? 0 : promptTokens() * 1e9 / nanos();
  }

  /**
   * Replay speed per core: prompt tokens per second of the running thread's CPU time, which
   * other processes that share the cores do not inflate.
   *
   * @return tokens per CPU second; 0 when no CPU time was measured
   */
  public double promptTokensPerCpuSecond() {
    return cpuNanos() == 0 ? 0 : promptTokens() * 1e9 / cpuNanos();
  }
}
