package io.kvtier.core.config;

import io.kvtier.spi.config.ConfigValues;
import java.util.Arrays;
import java.util.Locale;

/**
 * The order in which evictable nodes leave a tier (CACHE.md §6). All orders read logical
 * clocks and counters only; ties break by node id.
 */
public enum EvictionPolicy {
  /** Least recently used first (lastAccess). */
  LRU,
  /** Least frequently used first (hitCount, then lastAccess). */
  LFU,
  /** Oldest created first. */
  FIFO,
  /** Most recently used first. */
  MRU,
  /** Newest created first. */
  FILO,
  /** Lowest priority first, then least recently used. */
  PRIORITY,
  /** Segmented LRU: nodes hit fewer than twice go first, each segment in LRU order. */
  SLRU;

  /**
   * The configuration name, for example {@code lru}.
   *
   * @return the lower-case name
   */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a configuration name.
   *
   * @param value for example {@code lfu}; case-insensitive
   * @return the policy
   * @throws IllegalArgumentException naming the value and the accepted names
   */
  public static EvictionPolicy parse(String value) {
    return ConfigValues.parseEnum(EvictionPolicy.class, "eviction policy", value);
  }

  /**
   * The accepted names.
   *
   * @return the names, in declaration order
   */
  public static String[] configNames() {
    return Arrays.stream(values()).map(EvictionPolicy::configName).toArray(String[]::new);
  }
}
