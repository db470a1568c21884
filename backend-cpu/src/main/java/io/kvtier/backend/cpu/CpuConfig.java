package io.kvtier.backend.cpu;

import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The typed configuration of the CPU backend, namespace {@code cpu.}. The {@code cpu} device and
 * host pools share it; only the device's transfer engine reads a value today.
 *
 * @param copyThreads the copier threads of one transfer engine ({@value #COPY_THREADS}): with 2,
 *     each direction has a thread of its own, so a backup (device to host) never holds up a
 *     load-back (host to device); with 1, the two directions take turns batch by batch on one
 *     thread. A batch is copied by one thread, in order within its direction, so more threads
 *     than directions would sit idle and are not accepted.
 */
public record CpuConfig(int copyThreads) {

  /** The namespace of every key, without the dot. */
  public static final String NAMESPACE = "cpu";

  /** Key of {@link #copyThreads()}. */
  public static final String COPY_THREADS = "cpu.copy-threads";

  /** Every key this config knows, in documentation order. */
  public static final List<String> KEYS = List.of(COPY_THREADS);

  /** The fewest copier threads: both directions on one thread. */
  public static final int MIN_COPY_THREADS = 1;

  /** The most copier threads that can be busy at once: one per direction. */
  public static final int MAX_COPY_THREADS = 2;

  /**
   * Default of {@link #copyThreads()}: one thread per direction. A load-back issued while a
   * backup is copying then waits for no byte of the backup; see the README's measured figures.
   */
  public static final int DEFAULT_COPY_THREADS = 2;

  /** The configuration with every default. */
  public static final CpuConfig DEFAULTS = new CpuConfig(DEFAULT_COPY_THREADS);

  /** Reads the {@code cpu.*} keys; {@link #fromProperties} and the config tests use it. */
  public static final ConfigParser<CpuConfig> PARSER = ConfigParser.of(NAMESPACE, CpuConfig::read);

  /** Validates the fields. */
  public CpuConfig {
    if (copyThreads < MIN_COPY_THREADS || copyThreads > MAX_COPY_THREADS) {
      throw new IllegalArgumentException(
          COPY_THREADS
              + "="
              + copyThreads
              + " must be in ["
              + MIN_COPY_THREADS
              + ", "
              + MAX_COPY_THREADS
              + "]: 1 runs both copy directions on one thread, 2 gives each its own");
    }
  }

  /**
   * Parses the {@code cpu.*} keys of a property map; keys of other namespaces are ignored, keys
   * not set keep their default.
   *
   * @param properties full keys (for example {@code cpu.copy-threads}) to raw values
   * @return the config
   * @throws IllegalArgumentException for an unknown {@code cpu.*} key (naming the closest and
   *     listing the known keys) or a bad value (naming the key and the value)
   */
  public static CpuConfig fromProperties(Map<String, String> properties) {
    return PARSER.parse(properties);
  }

  private static CpuConfig read(ConfigReader r) {
    return new CpuConfig(
        r.getInt(COPY_THREADS, DEFAULT_COPY_THREADS, MIN_COPY_THREADS, MAX_COPY_THREADS));
  }

  /**
   * Every key with its value, in a form that {@link #fromProperties} reads back to an equal
   * config.
   *
   * @return key to raw value, in {@link #KEYS} order
   */
  public Map<String, String> toProperties() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(COPY_THREADS, Integer.toString(copyThreads));
    return out;
  }

  /**
   * This config with one key set to a new raw value, for tests and tools.
   *
   * @param key a key of {@link #KEYS}
   * @param value the raw value, as in a property file
   * @return the new config
   */
  public CpuConfig with(String key, String value) {
    Map<String, String> properties = new LinkedHashMap<>(toProperties());
    properties.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
    return fromProperties(properties);
  }
}
