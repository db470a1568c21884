package io.kvtier.core.config;

import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.config.ConfigValues;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.function.Function;

/**
 * Builds a {@link KvTierConfig} from up to three sources on top of the defaults. Precedence, the
 * later winning, does not depend on the order of the calls:
 *
 * <ol>
 *   <li>the defaults ({@code KvTierConfig.DEFAULT_*});
 *   <li>properties: {@link #propertiesFile(Path)} and {@link #properties(Map)}, later calls
 *       overriding earlier ones;
 *   <li>system properties: {@link #systemProperties()}, {@code kvtier.*} keys only (other keys of
 *       the JVM are not configuration);
 *   <li>explicit settings: {@link #set(String, String)} and the typed setters.
 * </ol>
 *
 * <p>A source that sets one of a group of {@link KvTierKeys#ALTERNATIVES alternative keys} (for
 * example {@code kvtier.device-bytes}) overrides any key of that group set by a source below it;
 * two keys of one group in one source are a conflict. Unknown {@code kvtier.*} keys are errors
 * naming the closest known key. Keys of other namespaces are backend properties. Values are
 * checked by {@link #build()}, and every error is an {@link IllegalArgumentException} naming the
 * key and the value.
 */
public final class KvTierConfigBuilder {

  /** System properties of the test harness ({@code kvtier.tests.seed}, ...), never config. */
  static final String TEST_HARNESS_PREFIX = "kvtier.tests.";

  private enum Level {
    PROPERTIES,
    SYSTEM,
    EXPLICIT
  }

  /** A value and the source it came from, for messages. */
  record Setting(String value, String origin) {}

  private final Map<Level, Map<String, Setting>> values = new EnumMap<>(Level.class);
  private final Map<ProviderKind, List<String>> autoOrders = new EnumMap<>(ProviderKind.class);

  KvTierConfigBuilder() {
    for (Level level : Level.values()) {
      values.put(level, new LinkedHashMap<>());
    }
    for (ProviderKind kind : ProviderKind.values()) {
      autoOrders.put(kind, kind.defaultAutoOrder());
    }
  }

  /**
   * Reads a {@code .properties} file (UTF-8) at the properties level.
   *
   * @param file the file
   * @return this builder
   * @throws IllegalArgumentException if the file does not exist or is not a properties file
   * @throws UncheckedIOException if reading fails otherwise
   */
  public KvTierConfigBuilder propertiesFile(Path file) {
    Objects.requireNonNull(file, "file");
    Properties properties = new Properties();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      properties.load(reader);
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException(
          "configuration file " + file.toAbsolutePath() + " does not exist: check the path", e);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "configuration file "
              + file.toAbsolutePath()
              + " is not a properties file: "
              + e.getMessage(),
          e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read configuration file " + file.toAbsolutePath(), e);
    }
    putAll(
        Level.PROPERTIES,
        properties.stringPropertyNames(),
        properties::getProperty,
        "file " + file);
    return this;
  }

  /**
   * Adds properties at the properties level, as if read from a file.
   *
   * @param properties keys and values
   * @return this builder
   */
  public KvTierConfigBuilder properties(Map<String, String> properties) {
    Objects.requireNonNull(properties, "properties");
    putAll(Level.PROPERTIES, properties.keySet(), properties::get, "properties");
    return this;
  }

  /**
   * Reads the {@code kvtier.*} keys of the JVM's system properties.
   *
   * @return this builder
   */
  public KvTierConfigBuilder systemProperties() {
    return systemProperties(System.getProperties());
  }

  /**
   * Reads the {@code kvtier.*} keys of {@code properties} at the system-properties level.
   *
   * @param properties for example {@link System#getProperties()}
   * @return this builder
   */
  public KvTierConfigBuilder systemProperties(Properties properties) {
    Objects.requireNonNull(properties, "properties");
    // kvtier.tests.* belong to the test harness (seed, multiplier), not to the engine.
    List<String> keys =
        properties.stringPropertyNames().stream()
            .filter(key -> key.startsWith(KvTierKeys.PREFIX))
            .filter(key -> !key.startsWith(TEST_HARNESS_PREFIX))
            .toList();
    putAll(Level.SYSTEM, keys, properties::getProperty, "system properties");
    return this;
  }

  /**
   * Sets one key explicitly, above every other source: a {@code kvtier.*} key or a backend
   * property such as {@code sim.seed}.
   *
   * @param key the key
   * @param value the value, as it would be written in a properties file
   * @return this builder
   */
  public KvTierConfigBuilder set(String key, String value) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
    putAll(Level.EXPLICIT, List.of(key), k -> value, "builder");
    return this;
  }

  /**
   * Sets the order {@code auto} tries for one kind.
   *
   * @param kind the kind
   * @param order provider names, most preferred first; names not on the module path are skipped
   * @return this builder
   */
  public KvTierConfigBuilder autoOrder(ProviderKind kind, List<String> order) {
    autoOrders.put(Objects.requireNonNull(kind, "kind"), List.copyOf(order));
    return this;
  }

  /**
   * Sets {@value KvTierKeys#DEVICE}.
   *
   * @param name a provider name or {@code auto}
   * @return this builder
   */
  public KvTierConfigBuilder device(String name) {
    return set(KvTierKeys.DEVICE, name);
  }

  /**
   * Sets {@value KvTierKeys#HOST}.
   *
   * @param name a provider name or {@code auto}
   * @return this builder
   */
  public KvTierConfigBuilder host(String name) {
    return set(KvTierKeys.HOST, name);
  }

  /**
   * Sets {@value KvTierKeys#COLLECTIVE}.
   *
   * @param name a provider name or {@code auto}
   * @return this builder
   */
  public KvTierConfigBuilder collective(String name) {
    return set(KvTierKeys.COLLECTIVE, name);
  }

  /**
   * Sets {@value KvTierKeys#STORE}.
   *
   * @param name a provider name, {@code auto} or {@code none}
   * @return this builder
   */
  public KvTierConfigBuilder store(String name) {
    return set(KvTierKeys.STORE, name);
  }

  /**
   * Sets the KV layout: {@value KvTierKeys#LAYERS}, {@value KvTierKeys#KV_HEADS}, {@value
   * KvTierKeys#HEAD_DIM}, {@value KvTierKeys#DTYPE_BYTES} and {@value KvTierKeys#PAGE_SIZE}.
   *
   * @param layers transformer layers
   * @param kvHeads KV heads of one rank
   * @param headDim elements per head
   * @param dtypeBytes bytes per element
   * @param pageSize tokens per page
   * @return this builder
   */
  public KvTierConfigBuilder layout(
      int layers, int kvHeads, int headDim, int dtypeBytes, int pageSize) {
    set(KvTierKeys.LAYERS, Integer.toString(layers));
    set(KvTierKeys.KV_HEADS, Integer.toString(kvHeads));
    set(KvTierKeys.HEAD_DIM, Integer.toString(headDim));
    set(KvTierKeys.DTYPE_BYTES, Integer.toString(dtypeBytes));
    return pageSize(pageSize);
  }

  /**
   * Sets {@value KvTierKeys#PAGE_SIZE}.
   *
   * @param tokens tokens per page
   * @return this builder
   */
  public KvTierConfigBuilder pageSize(int tokens) {
    return set(KvTierKeys.PAGE_SIZE, Integer.toString(tokens));
  }

  /**
   * Sets {@value KvTierKeys#DEVICE_PAGES}.
   *
   * @param pages device pool pages
   * @return this builder
   */
  public KvTierConfigBuilder devicePages(int pages) {
    return set(KvTierKeys.DEVICE_PAGES, Integer.toString(pages));
  }

  /**
   * Sets {@value KvTierKeys#DEVICE_BYTES}.
   *
   * @param bytes device pool bytes, a multiple of the page bytes
   * @return this builder
   */
  public KvTierConfigBuilder deviceBytes(long bytes) {
    return set(KvTierKeys.DEVICE_BYTES, Long.toString(bytes));
  }

  /**
   * Sets {@value KvTierKeys#HOST_PAGES}.
   *
   * @param pages host pool pages
   * @return this builder
   */
  public KvTierConfigBuilder hostPages(int pages) {
    return set(KvTierKeys.HOST_PAGES, Integer.toString(pages));
  }

  /**
   * Sets {@value KvTierKeys#HOST_RATIO}.
   *
   * @param ratio host pages per device page, above 1
   * @return this builder
   */
  public KvTierConfigBuilder hostRatio(double ratio) {
    return set(KvTierKeys.HOST_RATIO, Double.toString(ratio));
  }

  /**
   * Sets {@value KvTierKeys#HOST_BYTES}.
   *
   * @param bytes host pool bytes, a multiple of the page bytes
   * @return this builder
   */
  public KvTierConfigBuilder hostBytes(long bytes) {
    return set(KvTierKeys.HOST_BYTES, Long.toString(bytes));
  }

  /**
   * Sets {@value KvTierKeys#MEMORY_LAYOUT}.
   *
   * @param layout the block order
   * @return this builder
   */
  public KvTierConfigBuilder memoryLayout(MemoryLayout layout) {
    return set(KvTierKeys.MEMORY_LAYOUT, layout.name().toLowerCase(Locale.ROOT));
  }

  /**
   * Sets {@value KvTierKeys#WRITE_POLICY}.
   *
   * @param policy the policy
   * @return this builder
   */
  public KvTierConfigBuilder writePolicy(WritePolicy policy) {
    return set(KvTierKeys.WRITE_POLICY, policy.configName());
  }

  /**
   * Sets {@value KvTierKeys#EVICTION_POLICY}.
   *
   * @param policy the policy
   * @return this builder
   */
  public KvTierConfigBuilder evictionPolicy(EvictionPolicy policy) {
    return set(KvTierKeys.EVICTION_POLICY, policy.configName());
  }

  /**
   * Sets {@value KvTierKeys#WRITE_THROUGH_THRESHOLD}.
   *
   * @param hits hits that trigger a backup under selective write-through
   * @return this builder
   */
  public KvTierConfigBuilder writeThroughThreshold(int hits) {
    return set(KvTierKeys.WRITE_THROUGH_THRESHOLD, Integer.toString(hits));
  }

  /**
   * Sets {@value KvTierKeys#LOAD_BACK_THRESHOLD}.
   *
   * @param pages the fewest pages worth loading back
   * @return this builder
   */
  public KvTierConfigBuilder loadBackThreshold(int pages) {
    return set(KvTierKeys.LOAD_BACK_THRESHOLD, Integer.toString(pages));
  }

  /**
   * Sets {@value KvTierKeys#VOCAB_SIZE}.
   *
   * @param size token ids must be below it
   * @return this builder
   */
  public KvTierConfigBuilder vocabSize(int size) {
    return set(KvTierKeys.VOCAB_SIZE, Integer.toString(size));
  }

  /**
   * Sets {@value KvTierKeys#SNAPSHOT_SLOTS}.
   *
   * @param slots page slots of one recurrent-state snapshot, 0 for none
   * @return this builder
   */
  public KvTierConfigBuilder snapshotSlots(int slots) {
    return set(KvTierKeys.SNAPSHOT_SLOTS, Integer.toString(slots));
  }

  /**
   * Sets {@value KvTierKeys#SNAPSHOT_INTERVAL_PAGES}.
   *
   * @param pages pages between two interval snapshots, at least 1
   * @return this builder
   */
  public KvTierConfigBuilder snapshotIntervalPages(int pages) {
    return set(KvTierKeys.SNAPSHOT_INTERVAL_PAGES, Integer.toString(pages));
  }

  /**
   * Sets {@value KvTierKeys#DIGEST_INTERVAL}.
   *
   * @param ticks ticks between digest checks, 0 for none
   * @return this builder
   */
  public KvTierConfigBuilder digestInterval(int ticks) {
    return set(KvTierKeys.DIGEST_INTERVAL, Integer.toString(ticks));
  }

  /**
   * Sets {@value KvTierKeys#RANKS}.
   *
   * @param ranks ranks in the group
   * @return this builder
   */
  public KvTierConfigBuilder ranks(int ranks) {
    return set(KvTierKeys.RANKS, Integer.toString(ranks));
  }

  /**
   * Sets {@value KvTierKeys#PARALLEL} and {@value KvTierKeys#CP_INTERLEAVE}.
   *
   * @param parallelism how the ranks split the model
   * @return this builder
   */
  public KvTierConfigBuilder parallelism(Parallelism parallelism) {
    set(KvTierKeys.PARALLEL, parallelism.configName());
    return set(KvTierKeys.CP_INTERLEAVE, Integer.toString(parallelism.interleave()));
  }

  /**
   * Sets {@value KvTierKeys#COLLECTIVE_TIMEOUT}.
   *
   * @param timeout how long one collective call may wait
   * @return this builder
   */
  public KvTierConfigBuilder collectiveTimeout(Duration timeout) {
    return set(KvTierKeys.COLLECTIVE_TIMEOUT, ConfigValues.formatDuration(timeout));
  }

  /**
   * Merges the sources and checks every value.
   *
   * @return the configuration
   * @throws IllegalArgumentException for an unknown key, a conflict or a bad value, naming the
   *     key and the value
   */
  public KvTierConfig build() {
    Map<String, Setting> merged = new LinkedHashMap<>();
    for (Level level : Level.values()) {
      Map<String, Setting> layer = values.get(level);
      for (List<String> group : KvTierKeys.ALTERNATIVES) {
        List<String> set = group.stream().filter(layer::containsKey).toList();
        if (set.size() > 1) {
          throw new IllegalArgumentException(
              String.join(" and ", set.stream().map(k -> k + "=" + layer.get(k).value()).toList())
                  + " are both set (in "
                  + layer.get(set.get(1)).origin()
                  + "): they size the"
                  + " same pool, set only one of "
                  + String.join(", ", group));
        }
        if (!set.isEmpty()) {
          group.forEach(merged::remove);
        }
      }
      merged.putAll(layer);
    }
    return new KvTierConfigParser(merged).parse(autoOrders);
  }

  private void putAll(
      Level level, Iterable<String> keys, Function<String, String> value, String origin) {
    for (String key : keys) {
      if (KvTierKeys.isEngineKey(key) && !KvTierKeys.ALL.contains(key)) {
        throw new IllegalArgumentException(
            ConfigValues.unknownKeyMessage(key, origin, KvTierKeys.ALL));
      }
      if (!KvTierKeys.isEngineKey(key) && key.indexOf('.') <= 0) {
        throw new IllegalArgumentException(
            "key '"
                + key
                + "' (in "
                + origin
                + ") has no namespace: write kvtier.<key> for the"
                + " engine or <namespace>.<key> for a backend, for example sim.seed");
      }
      String text = Objects.requireNonNull(value.apply(key), key);
      values.get(level).put(key, new Setting(text, origin));
    }
  }
}
