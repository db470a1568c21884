package io.kvtier.collective.mpi;

import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * The typed configuration of the {@code mpi} collective, from the {@code mpi.*} properties.
 *
 * @param inlineLongs how many values of a MIN or MAX all-reduce travel inside the guard frame,
 *     the fixed-shape reduction that starts every call (see {@link MpiCollectiveProvider}); a
 *     MIN/MAX call with at most this many values costs one {@code MPI_Allreduce}, a longer one
 *     (and every SUM) two. Every rank must use the same value (checked when joining). Larger
 *     values make every call's frame bigger: measured in docs/PERFORMANCE.md.
 */
public record MpiConfig(int inlineLongs) {

  /** The namespace of the keys. */
  public static final String NAMESPACE = "mpi";

  /** The key of {@link #inlineLongs()}. */
  public static final String INLINE_LONGS = NAMESPACE + ".inline-longs";

  /**
   * The default of {@link #inlineLongs()}: the engine's hot reductions (per-queue acks, "give
   * up?", digests) carry one to four values, and a frame of 4 + 4 longs (one cache line) costs
   * about as much as a 1-long {@code MPI_Allreduce}.
   */
  public static final int DEFAULT_INLINE_LONGS = 4;

  /** The largest {@link #inlineLongs()}: beyond it a second call is cheaper than a huge frame. */
  public static final int MAX_INLINE_LONGS = 1024;

  /** Every key this module reads. */
  public static final Set<String> KEYS = Set.of(INLINE_LONGS);

  /** Validates the fields. */
  public MpiConfig {
    if (inlineLongs < 1 || inlineLongs > MAX_INLINE_LONGS) {
      throw new IllegalArgumentException(INLINE_LONGS + "=" + inlineLongs + " must be in [1, "
          + MAX_INLINE_LONGS + "] (the broadcast size travels in the first inline slot)");
    }
  }

  /**
   * The defaults.
   *
   * @return a config with every default
   */
  public static MpiConfig defaults() {
    return new MpiConfig(DEFAULT_INLINE_LONGS);
  }

  /**
   * Parses the {@code mpi.*} properties.
   *
   * @param properties full keys to raw values; keys of other namespaces are ignored
   * @return the config
   * @throws IllegalArgumentException naming an unknown {@code mpi.*} key or a bad value
   */
  public static MpiConfig fromProperties(Map<String, String> properties) {
    Objects.requireNonNull(properties, "properties");
    Set<String> unknown = new TreeSet<>();
    for (String key : properties.keySet()) {
      if (key.startsWith(NAMESPACE + ".") && !KEYS.contains(key)) {
        unknown.add(key);
      }
    }
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("unknown mpi collective properties " + unknown
          + ": the known keys are " + new TreeSet<>(KEYS));
    }
    int inline = DEFAULT_INLINE_LONGS;
    String value = properties.get(INLINE_LONGS);
    if (value != null) {
      try {
        inline = Integer.parseInt(value.strip());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            INLINE_LONGS + "='" + value + "' is not an integer: use a count such as 4", e);
      }
    }
    return new MpiConfig(inline);
  }

  /**
   * The properties that give this config, for round trips and for launching ranks.
   *
   * @return full keys to values
   */
  public Map<String, String> toProperties() {
    return Map.of(INLINE_LONGS, Integer.toString(inlineLongs));
  }
}
