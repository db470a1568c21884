package io.kvtier.spi.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;

/**
 * Reads the keys of one namespace (for example {@code sim.}) from properties for a typed
 * config: typed getters with defaults, units, range checks, and at the end {@link
 * #checkUnknownKeys()}, which names an unknown key of the namespace and the closest known one.
 *
 * <p>Every key a getter (or {@link #isSet}) asks for becomes known; {@link #knownKeys()} lists
 * them, which is what the testkit's full-mapping assertion compares with the keys a test sets.
 * A typed config therefore asks for every key it has on every parse, and checks the unknown keys
 * after it has asked for all of them. Keys of other namespaces are ignored: they belong to other
 * configs.
 *
 * <p>Values are stripped of surrounding white space before parsing. A bad value is an {@link
 * IllegalArgumentException} whose message starts with the key and names the value, what is
 * allowed and, when the reader was given origins, where the value came from. Not thread-safe;
 * one reader serves one parse.
 *
 * <pre>{@code
 * ConfigReader reader = ConfigReader.of("sim", properties);
 * long bandwidth = reader.getRate("sim.h2d-bandwidth", 25_000_000_000L);
 * Duration latency = reader.getDuration("sim.h2d-latency", Duration.ofNanos(5_000));
 * reader.checkUnknownKeys();
 * }</pre>
 */
public final class ConfigReader {

  private final String namespace;
  private final String prefix;
  private final Map<String, String> values = new LinkedHashMap<>();
  private final Map<String, String> origins;
  private final Set<String> known = new LinkedHashSet<>();

  private ConfigReader(
      String namespace, Map<String, String> properties, Map<String, String> origins) {
    Objects.requireNonNull(namespace, "namespace");
    if (namespace.isEmpty() || namespace.indexOf('.') >= 0) {
      throw new IllegalArgumentException(
          "namespace '" + namespace + "' must be a name without dot, for example sim");
    }
    this.namespace = namespace;
    this.prefix = namespace + ".";
    Objects.requireNonNull(properties, "properties");
    properties.forEach(
        (key, value) -> {
          Objects.requireNonNull(key, "property key");
          if (key.startsWith(prefix)) {
            values.put(key, Objects.requireNonNull(value, () -> "value of " + key));
          }
        });
    this.origins = Map.copyOf(origins);
  }

  /**
   * A reader of the keys of {@code namespace} in {@code properties}.
   *
   * @param namespace the namespace without its dot, for example {@code sim}
   * @param properties full keys (for example {@code sim.seed}) to raw values; keys of other
   *     namespaces are ignored
   * @return the reader
   */
  public static ConfigReader of(String namespace, Map<String, String> properties) {
    return new ConfigReader(namespace, properties, Map.of());
  }

  /**
   * A reader of the keys of {@code namespace} in {@code properties}, for example those of a
   * {@code .properties} file.
   *
   * @param namespace the namespace without its dot
   * @param properties the properties; only their string keys and values are read
   * @return the reader
   */
  public static ConfigReader of(String namespace, Properties properties) {
    Objects.requireNonNull(properties, "properties");
    Map<String, String> map = new LinkedHashMap<>();
    for (String key : properties.stringPropertyNames()) {
      map.put(key, properties.getProperty(key));
    }
    return new ConfigReader(namespace, map, Map.of());
  }

  /**
   * A reader whose value errors also say where each value came from, for a config merged from
   * several sources.
   *
   * @param namespace the namespace without its dot
   * @param properties full keys to raw values
   * @param origins for some keys, where the value came from, for example {@code "system
   *     properties"}; messages end with {@code [from <origin>]}
   * @return the reader
   */
  public static ConfigReader of(
      String namespace, Map<String, String> properties, Map<String, String> origins) {
    return new ConfigReader(namespace, properties, Objects.requireNonNull(origins, "origins"));
  }

  /**
   * The namespace this reader reads.
   *
   * @return the namespace, without its dot
   */
  public String namespace() {
    return namespace;
  }

  /**
   * Whether the key is set; makes the key known.
   *
   * @param key a key of this namespace
   * @return true if the properties hold it
   */
  public boolean isSet(String key) {
    return values.containsKey(know(key));
  }

  /**
   * The value of a key, stripped; makes the key known.
   *
   * @param key a key of this namespace
   * @return the value, or empty if the key is not set
   */
  public Optional<String> get(String key) {
    return Optional.ofNullable(values.get(know(key))).map(String::strip);
  }

  /**
   * Parses the value of a key with a parser of the config's own, for values the typed getters
   * do not cover (lists, paths); makes the key known. A parser's {@link
   * IllegalArgumentException} is rethrown with the key in front (unless its message starts with
   * the key) and the value's origin behind.
   *
   * @param <T> the value's type
   * @param key a key of this namespace
   * @param parser turns the stripped value into the typed value
   * @return the parsed value, or empty if the key is not set
   */
  public <T> Optional<T> get(String key, Function<String, ? extends T> parser) {
    Objects.requireNonNull(parser, "parser");
    Optional<String> value = get(key);
    if (value.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(parser.apply(value.get()));
    } catch (IllegalArgumentException e) {
      String message =
          e.getMessage().startsWith(key) ? e.getMessage() : key + ": " + e.getMessage();
      String origin = origins.get(key);
      throw new IllegalArgumentException(
          origin == null ? message : message + " [from " + origin + "]", e);
    }
  }

  /**
   * A string value.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return the stripped value or the default
   */
  public String getString(String key, String defaultValue) {
    return get(key).orElse(defaultValue);
  }

  /**
   * An {@code int} value.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return the value or the default
   * @throws IllegalArgumentException if the value is not a whole number
   */
  public int getInt(String key, int defaultValue) {
    return getInt(key, defaultValue, Integer.MIN_VALUE, Integer.MAX_VALUE);
  }

  /**
   * An {@code int} value in {@code [min, max]}.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set (not checked against the range)
   * @param min the smallest value allowed
   * @param max the largest value allowed
   * @return the value or the default
   * @throws IllegalArgumentException if the value is not a whole number in the range
   */
  public int getInt(String key, int defaultValue, int min, int max) {
    return get(key, v -> ConfigValues.parseInt(key, v, min, max)).orElse(defaultValue);
  }

  /**
   * A {@code long} value.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return the value or the default
   * @throws IllegalArgumentException if the value is not a whole number
   */
  public long getLong(String key, long defaultValue) {
    return get(key, v -> ConfigValues.parseLong(key, v)).orElse(defaultValue);
  }

  /**
   * A {@code double} value, as {@link Double#parseDouble} reads it; range checks are the
   * caller's.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return the value or the default
   * @throws IllegalArgumentException if the value is not a number
   */
  public double getDouble(String key, double defaultValue) {
    return get(key, v -> ConfigValues.parseDouble(key, v)).orElse(defaultValue);
  }

  /**
   * A boolean value: {@code true} or {@code false} in any case.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return the value or the default
   * @throws IllegalArgumentException for any other text
   */
  public boolean getBoolean(String key, boolean defaultValue) {
    return get(key, v -> ConfigValues.parseBoolean(key, v)).orElse(defaultValue);
  }

  /**
   * An enum value, by {@link ConfigValues#parseEnum}.
   *
   * @param <E> the enum
   * @param key a key of this namespace
   * @param type the enum's class
   * @param what what the constants are, for the message, for example {@code "write policy"}
   * @param defaultValue the value if the key is not set
   * @return the value or the default
   * @throws IllegalArgumentException naming every accepted name if the value is none of them
   */
  public <E extends Enum<E>> E getEnum(String key, Class<E> type, String what, E defaultValue) {
    return get(key, v -> ConfigValues.parseEnum(type, what, v)).orElse(defaultValue);
  }

  /**
   * A size in bytes, by {@link ConfigValues#parseBytes}.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return bytes, not negative, or the default
   * @throws IllegalArgumentException if the value is not a size
   */
  public long getBytes(String key, long defaultValue) {
    return get(key, v -> ConfigValues.parseBytes(key, v)).orElse(defaultValue);
  }

  /**
   * A size in bytes of at least one byte.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return bytes, at least 1, or the default
   * @throws IllegalArgumentException if the value is not a size or is zero
   */
  public long getPositiveBytes(String key, long defaultValue) {
    return get(
            key,
            v -> {
              long bytes = ConfigValues.parseBytes(key, v);
              if (bytes == 0) {
                throw notPositive(key, v);
              }
              return bytes;
            })
        .orElse(defaultValue);
  }

  /**
   * A transfer rate in bytes per second, by {@link ConfigValues#parseRate}.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return bytes per second, at least 1, or the default
   * @throws IllegalArgumentException if the value is not a rate of at least 1 byte per second
   */
  public long getRate(String key, long defaultValue) {
    return get(key, v -> ConfigValues.parseRate(key, v)).orElse(defaultValue);
  }

  /**
   * A duration, by {@link ConfigValues#parseDuration}.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return the duration, not negative, or the default
   * @throws IllegalArgumentException if the value is not a duration
   */
  public Duration getDuration(String key, Duration defaultValue) {
    return get(key, v -> ConfigValues.parseDuration(key, v)).orElse(defaultValue);
  }

  /**
   * A duration longer than zero.
   *
   * @param key a key of this namespace
   * @param defaultValue the value if the key is not set
   * @return the duration, positive, or the default
   * @throws IllegalArgumentException if the value is not a duration or is zero
   */
  public Duration getPositiveDuration(String key, Duration defaultValue) {
    return get(
            key,
            v -> {
              Duration d = ConfigValues.parseDuration(key, v);
              if (d.isZero()) {
                throw notPositive(key, v);
              }
              return d;
            })
        .orElse(defaultValue);
  }

  /**
   * The keys asked for so far, in the order first asked.
   *
   * @return the known keys
   */
  public List<String> knownKeys() {
    return List.copyOf(known);
  }

  /**
   * The keys of this namespace that are set but were never asked for, in the order of the
   * properties.
   *
   * @return the unknown keys, empty if none
   */
  public List<String> unknownKeys() {
    List<String> unknown = new ArrayList<>();
    for (String key : values.keySet()) {
      if (!known.contains(key)) {
        unknown.add(key);
      }
    }
    return unknown;
  }

  /**
   * Fails for the first key of this namespace that is set but was never asked for; call it
   * after asking for every key.
   *
   * @throws IllegalArgumentException naming the unknown key, where it came from, the closest
   *     known key and every known key
   */
  public void checkUnknownKeys() {
    List<String> unknown = unknownKeys();
    if (!unknown.isEmpty()) {
      String key = unknown.get(0);
      throw new IllegalArgumentException(
          ConfigValues.unknownKeyMessage(key, origins.getOrDefault(key, ""), knownKeys()));
    }
  }

  private String know(String key) {
    Objects.requireNonNull(key, "key");
    if (!key.startsWith(prefix) || key.length() == prefix.length()) {
      throw new IllegalArgumentException(
          "key '" + key + "' is not in the namespace " + prefix + " of this reader");
    }
    known.add(key);
    return key;
  }

  private static IllegalArgumentException notPositive(String key, String value) {
    return new IllegalArgumentException(key + "=" + value + " must be positive");
  }
}
