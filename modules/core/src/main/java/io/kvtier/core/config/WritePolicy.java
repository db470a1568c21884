package io.kvtier.core.config;

import io.kvtier.spi.config.ConfigValues;
import java.util.Arrays;
import java.util.Locale;

/** When a device page is backed up to the host tier (CACHE.md §8). */
public enum WritePolicy {
  /** Back up every node as soon as it is inserted. */
  WRITE_THROUGH,
  /** Back up a node when its hit count reaches the write-through threshold. */
  WRITE_THROUGH_SELECTIVE,
  /** Back up only when the node is evicted from the device. */
  WRITE_BACK;

  /**
   * The configuration name, for example {@code write_through}.
   *
   * @return the lower-case name
   */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * Parses a configuration name.
   *
   * @param value for example {@code write_back}; case-insensitive, '-' accepted for '_'
   * @return the policy
   * @throws IllegalArgumentException naming the value and the accepted names
   */
  public static WritePolicy parse(String value) {
    return ConfigValues.parseEnum(WritePolicy.class, "write policy", value);
  }

  /**
   * The accepted names.
   *
   * @return the names, in declaration order
   */
  public static String[] configNames() {
    return Arrays.stream(values()).map(WritePolicy::configName).toArray(String[]::new);
  }
}
