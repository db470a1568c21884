package io.kvtier.store.memory;

import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import java.util.List;
import java.util.Map;

/**
 * The typed configuration of the {@code memory} store, namespace {@code memory.}. It has no keys
 * today: the store's size is the spec's {@code capacityBytes} and its eviction policy is
 * Caffeine's. It exists so that a misspelt or misplaced {@code memory.*} key fails at start-up
 * instead of being ignored.
 */
public record MemoryConfig() {

  /** The namespace of every key, without the dot. */
  public static final String NAMESPACE = "memory";

  /** Every key this config knows: none. */
  public static final List<String> KEYS = List.of();

  /** The configuration with every default. */
  public static final MemoryConfig DEFAULTS = new MemoryConfig();

  /** Reads the {@code memory.*} keys (none); {@link #fromProperties} and the test use it. */
  public static final ConfigParser<MemoryConfig> PARSER =
      ConfigParser.of(NAMESPACE, MemoryConfig::read);

  /**
   * Parses the {@code memory.*} keys of a property map; keys of other namespaces are ignored.
   *
   * @param properties full keys to raw values
   * @return the config
   * @throws IllegalArgumentException for any {@code memory.*} key, naming it
   */
  public static MemoryConfig fromProperties(Map<String, String> properties) {
    return PARSER.parse(properties);
  }

  private static MemoryConfig read(ConfigReader r) {
    List<String> unknown = r.unknownKeys();
    if (!unknown.isEmpty()) {
      // Say why there is no key to suggest instead of the reader's generic message.
      String key = unknown.get(0);
      throw new IllegalArgumentException(
          "unknown key "
              + key
              + ": the memory store has no settings; its size is the"
              + " store's capacity (the engine's L3 capacity), so remove "
              + key);
    }
    return DEFAULTS;
  }

  /**
   * Every key with its value, readable by {@link #fromProperties}.
   *
   * @return an empty map
   */
  public Map<String, String> toProperties() {
    return Map.of();
  }
}
