package io.kvtier.simulator;

import io.kvtier.core.config.L3Config;
import io.kvtier.core.config.L3PrefetchPolicy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The L3 tier of a simulation: which store each rank opens (by provider name, through {@link
 * java.util.ServiceLoader}), how the engine uses it, how fast each rank's store is in virtual
 * time, and the faults injected.
 *
 * @param store {@code none}, or a store provider's name: {@code memory}, {@code file}, {@code
 *     hazelcast}
 * @param capacityBytes the store capacity of each rank
 * @param directory the {@code file} store's directory (each rank uses its own shard keys, so
 *     ranks may share it); empty for a fresh temporary directory
 * @param prefetchPolicy when a prefetch stops waiting
 * @param prefetchThreshold the fewest tokens worth prefetching
 * @param backupThreshold hits after which a host-committed node is written to L3
 * @param timeout the prefetch timeout's base (virtual time); per KiToken adds a tenth of it, the
 *     cap is four times it
 * @param stepMicros virtual time one store step (one put, one probe, eight fetched pages) takes
 *     on rank 0
 * @param rankSkew how much slower each further rank's store is: rank r takes {@code stepMicros
 *     * (1 + rankSkew * r)}
 * @param faultProbability the chance that a page is dropped at its put, fails at its get, and
 *     (rarely) that a whole store call throws
 * @param flipProbability the chance that a page a get is about to read has one bit of its stored
 *     form flipped first (damage at rest, which the store's own CRC32C must catch: a counted
 *     corrupt page and a miss); 0 to 1
 */
public record L3Simulation(
    String store,
    long capacityBytes,
    Optional<Path> directory,
    L3PrefetchPolicy prefetchPolicy,
    int prefetchThreshold,
    int backupThreshold,
    Duration timeout,
    long stepMicros,
    double rankSkew,
    double faultProbability,
    double flipProbability) {

  /** No L3 tier. */
  public static final L3Simulation NONE =
      new L3Simulation(
          "none",
          64L << 20,
          Optional.empty(),
          L3PrefetchPolicy.TIMEOUT,
          64,
          1,
          Duration.ofMillis(20),
          500,
          0.5,
          0,
          0);

  /** Validates the fields. */
  public L3Simulation {
    Objects.requireNonNull(store, "store");
    Objects.requireNonNull(directory, "directory");
    Objects.requireNonNull(prefetchPolicy, "prefetchPolicy");
    Objects.requireNonNull(timeout, "timeout");
    if (store.isBlank()) {
      throw new IllegalArgumentException("store is blank: use none, memory, file or hazelcast");
    }
    if (capacityBytes < 1
        || prefetchThreshold < 1
        || backupThreshold < 0
        || stepMicros < 0
        || !(rankSkew >= 0)
        || !(faultProbability >= 0 && faultProbability <= 1)
        || !(flipProbability >= 0 && flipProbability <= 1)
        || timeout.isNegative()
        || timeout.isZero()) {
      throw new IllegalArgumentException(
          "bad L3 simulation settings: capacityBytes="
              + capacityBytes
              + " prefetchThreshold="
              + prefetchThreshold
              + " backupThreshold="
              + backupThreshold
              + " stepMicros="
              + stepMicros
              + " rankSkew="
              + rankSkew
              + " faultProbability="
              + faultProbability
              + " flipProbability="
              + flipProbability
              + " timeout="
              + timeout);
    }
  }

  /**
   * Whether a store is used.
   *
   * @return false for {@code none}
   */
  public boolean enabled() {
    return !store.equals("none");
  }

  /**
   * With a store.
   *
   * @param name a provider name or {@code none}
   * @return a copy
   */
  public L3Simulation withStore(String name) {
    return new L3Simulation(
        name,
        capacityBytes,
        directory,
        prefetchPolicy,
        prefetchThreshold,
        backupThreshold,
        timeout,
        stepMicros,
        rankSkew,
        faultProbability,
        flipProbability);
  }

  /**
   * With another capacity.
   *
   * @param bytes per rank
   * @return a copy
   */
  public L3Simulation withCapacityBytes(long bytes) {
    return new L3Simulation(
        store,
        bytes,
        directory,
        prefetchPolicy,
        prefetchThreshold,
        backupThreshold,
        timeout,
        stepMicros,
        rankSkew,
        faultProbability,
        flipProbability);
  }

  /**
   * With a directory for the {@code file} store.
   *
   * @param dir the directory
   * @return a copy
   */
  public L3Simulation withDirectory(Path dir) {
    return new L3Simulation(
        store,
        capacityBytes,
        Optional.of(dir),
        prefetchPolicy,
        prefetchThreshold,
        backupThreshold,
        timeout,
        stepMicros,
        rankSkew,
        faultProbability,
        flipProbability);
  }

  /**
   * With another policy and threshold.
   *
   * @param policy the policy
   * @param threshold tokens
   * @return a copy
   */
  public L3Simulation withPrefetch(L3PrefetchPolicy policy, int threshold) {
    return new L3Simulation(
        store,
        capacityBytes,
        directory,
        policy,
        threshold,
        backupThreshold,
        timeout,
        stepMicros,
        rankSkew,
        faultProbability,
        flipProbability);
  }

  /**
   * With other store timing and faults.
   *
   * @param micros virtual time of one step on rank 0
   * @param skew extra time per further rank, as a fraction
   * @param timeoutBase the prefetch timeout's base
   * @param faults the fault probability
   * @return a copy
   */
  public L3Simulation withTiming(long micros, double skew, Duration timeoutBase, double faults) {
    return new L3Simulation(
        store,
        capacityBytes,
        directory,
        prefetchPolicy,
        prefetchThreshold,
        backupThreshold,
        timeoutBase,
        micros,
        skew,
        faults,
        flipProbability);
  }

  /**
   * With stored pages damaged at rest.
   *
   * @param probability the chance per page a get reads, 0 to 1
   * @return a copy
   */
  public L3Simulation withFlipProbability(double probability) {
    return new L3Simulation(
        store,
        capacityBytes,
        directory,
        prefetchPolicy,
        prefetchThreshold,
        backupThreshold,
        timeout,
        stepMicros,
        rankSkew,
        faultProbability,
        probability);
  }

  /**
   * Whether the store is wrapped in the fault injector.
   *
   * @return true if pages are lost, reads fail or stored pages are flipped
   */
  public boolean injectsFaults() {
    return faultProbability > 0 || flipProbability > 0;
  }

  /**
   * The engine's L3 settings for this simulation.
   *
   * @return the config
   */
  public L3Config engineConfig() {
    return L3Config.DEFAULTS
        .withCapacityBytes(capacityBytes)
        .withPrefetchPolicy(prefetchPolicy)
        .withPrefetchThreshold(prefetchThreshold)
        .withBackupThreshold(backupThreshold)
        .withTimeouts(timeout, timeout.dividedBy(10), timeout.multipliedBy(4))
        .withModelId("kvtier-sim");
  }

  /**
   * Virtual time of one store step on a rank.
   *
   * @param rank the rank
   * @return nanoseconds
   */
  public long stepNanos(int rank) {
    return (long) (stepMicros * 1000L * (1 + rankSkew * rank));
  }
}
