package io.kvtier.collective.mpi;

import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import java.util.Map;
import java.util.Set;

/**
 * The typed configuration of the {@code mpi} collective, from the {@code mpi.*} properties.
 *
 * @param inlineLongs the longest MIN or MAX all-reduce that travels inside the guard frame, the
 *     reduction that starts every call (see {@link MpiCollectiveProvider}); such a call costs one
 *     {@code MPI_Allreduce} once its call site has been seen (the frame is sized from the calls
 *     all ranks agreed on), a longer one (and every SUM) two. Every rank must use the same value
 *     (checked when joining). A larger value bounds how long a frame a mispredicted short call
 *     can pay for: measured in docs/PERFORMANCE.md.
 */
public record MpiConfig(int inlineLongs) {

  /** The namespace of the keys. */
  public static final String NAMESPACE = "mpi";

  /** The key of {@link #inlineLongs()}. */
  public static final String INLINE_LONGS = NAMESPACE + ".inline-longs";

  /**
   * The default of {@link #inlineLongs()}: 1 KiB of values. At 2 ranks C's {@code MPI_Allreduce}
   * takes 0.40 us for 1 long, 0.98 us for 64 and 1.11 us for 128, so up to here one call beats two
   * (frame, then values) by about 0.4 us, and a frame sized for 128 values that turns out to
   * carry 1 costs no more than the second call that a too small frame would have needed.
   */
  public static final int DEFAULT_INLINE_LONGS = 128;

  /** The largest {@link #inlineLongs()}, which bounds the frame buffers (8 KiB each). */
  public static final int MAX_INLINE_LONGS = 1024;

  /** Every key this module reads. */
  public static final Set<String> KEYS = Set.of(INLINE_LONGS);

  /** Reads the {@code mpi.*} keys; {@link #fromProperties} and the config test use it. */
  public static final ConfigParser<MpiConfig> PARSER = ConfigParser.of(NAMESPACE, MpiConfig::read);

  /** Validates the fields. */
  public MpiConfig {
    if (inlineLongs < 1 || inlineLongs > MAX_INLINE_LONGS) {
      throw new IllegalArgumentException(
          INLINE_LONGS + "=" + inlineLongs + " must be in [1, " + MAX_INLINE_LONGS + "]");
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
   * @throws IllegalArgumentException naming an unknown {@code mpi.*} key (and the closest known
   *     one) or a bad value
   */
  public static MpiConfig fromProperties(Map<String, String> properties) {
    return PARSER.parse(properties);
  }

  private static MpiConfig read(ConfigReader r) {
    return new MpiConfig(r.getInt(INLINE_LONGS, DEFAULT_INLINE_LONGS, 1, MAX_INLINE_LONGS));
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
