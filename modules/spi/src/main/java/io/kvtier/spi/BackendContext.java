package io.kvtier.spi;

import java.util.Map;
import java.util.Objects;

/**
 * What the engine hands to a provider's factory method besides the typed spec.
 *
 * @param rank the rank this backend instance serves (0 on a single rank); a simulated backend
 *     uses it to pick the rank's timing model
 * @param properties the configuration keys of the provider's {@link
 *     KvTierProvider#configNamespace() namespace}, with the full key (for example {@code
 *     sim.h2d-bandwidth}) and the raw string value; the provider parses them into its typed
 *     config and rejects keys it does not know
 * @param time the time source the backend must use for every timing decision
 * @param metrics where the backend reports counters and durations
 */
public record BackendContext(
    int rank, Map<String, String> properties, TimeSource time, BackendMetrics metrics) {

  /** Validates and copies the fields. */
  public BackendContext {
    if (rank < 0) {
      throw new IllegalArgumentException("rank=" + rank + " must be >= 0");
    }
    properties = Map.copyOf(Objects.requireNonNull(properties, "properties"));
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(metrics, "metrics");
  }

  /**
   * A context for rank 0 with no properties, the wall clock and no metrics; for tests and tools.
   *
   * @return the context
   */
  public static BackendContext defaults() {
    return new BackendContext(0, Map.of(), TimeSource.SYSTEM, BackendMetrics.NOOP);
  }

  /**
   * The same context for another rank.
   *
   * @param newRank the rank
   * @return a copy with {@code rank} replaced
   */
  public BackendContext withRank(int newRank) {
    return new BackendContext(newRank, properties, time, metrics);
  }
}
