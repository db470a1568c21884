package io.kvtier.core.config;

import io.kvtier.spi.config.ConfigValues;
import java.util.Arrays;
import java.util.Locale;

/**
 * When an L3 prefetch stops waiting for its pages (CACHE.md §12). Whatever the policy, the
 * ranks take the pages that every rank has fetched (MIN) and release the rest.
 */
public enum L3PrefetchPolicy {
  /** Take what is fetched at the first agreement after the fetch started; never wait. */
  BEST_EFFORT,
  /** Wait until every rank has finished fetching (or failed). */
  WAIT_COMPLETE,
  /**
   * Wait until every rank has finished, or until some rank's clock passes the op's timeout of
   * {@code base + perKiToken * tokens / 1024}, capped.
   */
  TIMEOUT;

  /**
   * The configuration name, for example {@code best_effort}.
   *
   * @return the lower-case name
   */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a configuration name.
   *
   * @param value for example {@code wait_complete}; case-insensitive, '-' accepted for '_'
   * @return the policy
   * @throws IllegalArgumentException naming the value and the accepted names
   */
  public static L3PrefetchPolicy parse(String value) {
    return ConfigValues.parseEnum(L3PrefetchPolicy.class, "L3 prefetch policy", value);
  }

  /**
   * The accepted names.
   *
   * @return the names, in declaration order
   */
  public static String[] configNames() {
    return Arrays.stream(values()).map(L3PrefetchPolicy::configName).toArray(String[]::new);
  }
}
