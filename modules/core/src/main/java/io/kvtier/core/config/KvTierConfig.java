package io.kvtier.core.config;

import io.kvtier.core.discovery.ProviderCandidate;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.config.ConfigValues;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The typed configuration of one kvtier engine, resolved: provider choices, the KV layout, pool
 * sizes in pages, cache policies, the rank group, and the properties of the backends.
 *
 * <p>Build it with {@link #builder()}, which reads the {@code kvtier.*} keys of {@link KvTierKeys}
 * from a properties file, system properties and explicit settings (in that order of precedence,
 * the last winning) on top of the defaults below.
 *
 * @param providers for each kind, a provider name, {@code auto}, or (for the store only) {@code
 *     none}
 * @param autoOrders for each kind, the names {@code auto} tries, most preferred first
 * @param layout the KV layout of one page
 * @param memoryLayout the block order of both pools
 * @param cache the radix cache's settings, with the pool sizes in pages
 * @param ranks ranks in the group, at least 1
 * @param parallelism how the ranks split the model: by KV heads (tp) or by positions (cp)
 * @param digestInterval ticks between replica digest checks, 0 for none
 * @param collectiveTimeout how long one collective call may wait, positive
 * @param l3 how the engine uses the L3 store (when {@code kvtier.store} names one)
 * @param backendProperties keys of other namespaces than {@code kvtier.}, for the providers
 */
public record KvTierConfig(
    Map<ProviderKind, String> providers,
    Map<ProviderKind, List<String>> autoOrders,
    KvLayout layout,
    MemoryLayout memoryLayout,
    CacheConfig cache,
    int ranks,
    Parallelism parallelism,
    int digestInterval,
    Duration collectiveTimeout,
    L3Config l3,
    Map<String, String> backendProperties) {

  /** Default of {@link KvTierKeys#DEVICE}. */
  public static final String DEFAULT_DEVICE = "auto";

  /** Default of {@link KvTierKeys#HOST}. */
  public static final String DEFAULT_HOST = "auto";

  /**
   * Default of {@link KvTierKeys#COLLECTIVE}: {@code local}, not {@code auto}. The distributed
   * collectives are available whenever their library is on the module path (mpi even without
   * mpirun, as one rank), so {@code auto} would start an MPI job or a Hazelcast member for a
   * process that was never launched as a rank of one; choosing them is the user's decision.
   */
  public static final String DEFAULT_COLLECTIVE = "local";

  /** Default of {@link KvTierKeys#STORE}: no L3 tier. */
  public static final String DEFAULT_STORE = "none";

  /** Default of {@link KvTierKeys#LAYERS}. */
  public static final int DEFAULT_LAYERS = 4;

  /** Default of {@link KvTierKeys#KV_HEADS}. */
  public static final int DEFAULT_KV_HEADS = 2;

  /** Default of {@link KvTierKeys#HEAD_DIM}. */
  public static final int DEFAULT_HEAD_DIM = 64;

  /** Default of {@link KvTierKeys#DTYPE_BYTES} (fp16). */
  public static final int DEFAULT_DTYPE_BYTES = 2;

  /** Default of {@link KvTierKeys#PAGE_SIZE}. */
  public static final int DEFAULT_PAGE_SIZE = 16;

  /** Default of {@link KvTierKeys#DEVICE_PAGES}: with the default layout, 32 MiB. */
  public static final int DEFAULT_DEVICE_PAGES = 1024;

  /** Default of {@link KvTierKeys#HOST_RATIO}, used when no host size is set. */
  public static final double DEFAULT_HOST_RATIO = 2.0;

  /** Default of {@link KvTierKeys#MEMORY_LAYOUT}. */
  public static final MemoryLayout DEFAULT_MEMORY_LAYOUT = MemoryLayout.LAYER_FIRST;

  /** Default of {@link KvTierKeys#RANKS}. */
  public static final int DEFAULT_RANKS = 1;

  /** Default of {@link KvTierKeys#DIGEST_INTERVAL}: every 64 ticks, as the engine's default. */
  public static final int DEFAULT_DIGEST_INTERVAL = 64;

  /** Default of {@link KvTierKeys#COLLECTIVE_TIMEOUT}. */
  public static final Duration DEFAULT_COLLECTIVE_TIMEOUT = Duration.ofSeconds(30);

  private static final Pattern NAMESPACED = Pattern.compile("[A-Za-z0-9_-]+\\.[^.].*");

  /** Validates the fields and copies the maps. */
  public KvTierConfig {
    providers = enumMap(Objects.requireNonNull(providers, "providers"), "providers");
    autoOrders = enumMap(Objects.requireNonNull(autoOrders, "autoOrders"), "autoOrders");
    Objects.requireNonNull(layout, "layout");
    Objects.requireNonNull(memoryLayout, "memoryLayout");
    Objects.requireNonNull(cache, "cache");
    Objects.requireNonNull(collectiveTimeout, "collectiveTimeout");
    Objects.requireNonNull(l3, "l3");
    Objects.requireNonNull(backendProperties, "backendProperties");
    for (ProviderKind kind : ProviderKind.values()) {
      checkChoice(kind, providers.get(kind));
      autoOrders.put(kind, List.copyOf(autoOrders.get(kind)));
    }
    if (layout.pageSize() != cache.pageSize()) {
      throw new IllegalArgumentException(
          "layout.pageSize="
              + layout.pageSize()
              + " differs from cache.pageSize="
              + cache.pageSize()
              + ": build both from the same "
              + KvTierKeys.PAGE_SIZE);
    }
    if (cache.hostPages() < 1) {
      throw new IllegalArgumentException(
          "cache.hostPages="
              + cache.hostPages()
              + ": the engine needs a host tier of at least"
              + " one page; set "
              + KvTierKeys.HOST_PAGES
              + ", "
              + KvTierKeys.HOST_RATIO
              + " or "
              + KvTierKeys.HOST_BYTES);
    }
    // Both pools must be addressable in bytes; PoolSpec says so, naming pages and page bytes.
    new PoolSpec(layout, cache.devicePages(), memoryLayout);
    new PoolSpec(layout, cache.hostPages(), memoryLayout);
    if (ranks < 1) {
      throw new IllegalArgumentException(KvTierKeys.RANKS + "=" + ranks + " must be >= 1");
    }
    Objects.requireNonNull(parallelism, "parallelism");
    if (parallelism.cp() && l3.replicatedKv()) {
      throw new IllegalArgumentException(
          KvTierKeys.PARALLEL
              + "=cp gives each rank other positions' KV, but "
              + KvTierKeys.L3_REPLICATED_KV
              + "=true says every rank holds the same KV: set one of them otherwise");
    }
    if (digestInterval < 0) {
      throw new IllegalArgumentException(
          KvTierKeys.DIGEST_INTERVAL + "=" + digestInterval + " must be >= 0 (0 turns it off)");
    }
    if (collectiveTimeout.isNegative() || collectiveTimeout.isZero()) {
      throw new IllegalArgumentException(
          KvTierKeys.COLLECTIVE_TIMEOUT + "=" + collectiveTimeout + " must be positive");
    }
    Map<String, String> sorted = new TreeMap<>();
    backendProperties.forEach(
        (key, value) -> {
          Objects.requireNonNull(value, key);
          if (KvTierKeys.isEngineKey(key) || !NAMESPACED.matcher(key).matches()) {
            throw new IllegalArgumentException(
                "backend property '"
                    + key
                    + "' must be 'namespace.name' in a provider's"
                    + " namespace (for example sim.seed), not in kvtier.");
          }
          sorted.put(key, value);
        });
    backendProperties = Collections.unmodifiableMap(sorted);
    providers = Collections.unmodifiableMap(providers);
    autoOrders = Collections.unmodifiableMap(autoOrders);
  }

  private static <V> EnumMap<ProviderKind, V> enumMap(Map<ProviderKind, V> map, String what) {
    EnumMap<ProviderKind, V> copy = new EnumMap<>(ProviderKind.class);
    for (ProviderKind kind : ProviderKind.values()) {
      V value = map.get(kind);
      if (value == null) {
        throw new IllegalArgumentException(what + " has no entry for " + kind.id());
      }
      copy.put(kind, value);
    }
    return copy;
  }

  private static void checkChoice(ProviderKind kind, String choice) {
    if (choice.equals("auto") || (kind.optional() && choice.equals("none"))) {
      return;
    }
    if (!ProviderCandidate.isValidName(choice)) {
      throw new IllegalArgumentException(
          kind.configKey()
              + "='"
              + choice
              + "' is not a provider name: use auto"
              + (kind.optional() ? ", none" : "")
              + " or a provider's name (lower-case letters,"
              + " digits and inner '-', like sim); bin/kvtier backends lists them");
    }
  }

  /**
   * A builder with the defaults.
   *
   * @return a new builder
   */
  public static KvTierConfigBuilder builder() {
    return new KvTierConfigBuilder();
  }

  /**
   * The configuration of the defaults alone.
   *
   * @return the config
   */
  public static KvTierConfig defaults() {
    return builder().build();
  }

  /**
   * The provider choice of one kind.
   *
   * @param kind the kind
   * @return a provider name, {@code auto} or {@code none}
   */
  public String provider(ProviderKind kind) {
    return providers.get(Objects.requireNonNull(kind, "kind"));
  }

  /**
   * The order {@code auto} tries for one kind.
   *
   * @param kind the kind
   * @return provider names, most preferred first
   */
  public List<String> autoOrder(ProviderKind kind) {
    return autoOrders.get(Objects.requireNonNull(kind, "kind"));
  }

  /**
   * The device pool's spec.
   *
   * @return layout, device pages, memory layout
   */
  public PoolSpec devicePool() {
    return new PoolSpec(layout, cache.devicePages(), memoryLayout);
  }

  /**
   * The host pool's spec.
   *
   * @return layout, host pages, memory layout
   */
  public PoolSpec hostPool() {
    return new PoolSpec(layout, cache.hostPages(), memoryLayout);
  }

  /**
   * The backend properties of one provider namespace, as a provider receives them in its
   * {@link io.kvtier.spi.BackendContext#properties()}.
   *
   * @param namespace the provider's {@code configNamespace()}, without the dot
   * @return the keys starting with {@code namespace + "."}, with their values
   */
  public Map<String, String> propertiesFor(String namespace) {
    Objects.requireNonNull(namespace, "namespace");
    Map<String, String> selected = new TreeMap<>();
    backendProperties.forEach(
        (key, value) -> {
          if (key.startsWith(namespace + ".")) {
            selected.put(key, value);
          }
        });
    return Collections.unmodifiableMap(selected);
  }

  /**
   * This configuration as properties that {@link KvTierConfigBuilder#properties(Map)} reads back
   * to an equal configuration (given the same auto orders): every {@code kvtier.*} key with its
   * resolved value (pool sizes in pages), then the backend properties.
   *
   * @return the properties in key documentation order
   */
  public Map<String, String> toProperties() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(KvTierKeys.DEVICE, provider(ProviderKind.DEVICE));
    out.put(KvTierKeys.HOST, provider(ProviderKind.HOST));
    out.put(KvTierKeys.COLLECTIVE, provider(ProviderKind.COLLECTIVE));
    out.put(KvTierKeys.STORE, provider(ProviderKind.STORE));
    out.put(KvTierKeys.LAYERS, Integer.toString(layout.layers()));
    out.put(KvTierKeys.KV_HEADS, Integer.toString(layout.kvHeads()));
    out.put(KvTierKeys.HEAD_DIM, Integer.toString(layout.headDim()));
    out.put(KvTierKeys.DTYPE_BYTES, Integer.toString(layout.dtypeBytes()));
    out.put(KvTierKeys.PAGE_SIZE, Integer.toString(layout.pageSize()));
    out.put(KvTierKeys.DEVICE_PAGES, Integer.toString(cache.devicePages()));
    out.put(KvTierKeys.HOST_PAGES, Integer.toString(cache.hostPages()));
    out.put(KvTierKeys.MEMORY_LAYOUT, memoryLayout.name().toLowerCase(Locale.ROOT));
    out.put(KvTierKeys.WRITE_POLICY, cache.writePolicy().configName());
    out.put(KvTierKeys.WRITE_THROUGH_THRESHOLD, Integer.toString(cache.writeThroughThreshold()));
    out.put(KvTierKeys.EVICTION_POLICY, cache.evictionPolicy().configName());
    out.put(KvTierKeys.LOAD_BACK_THRESHOLD, Integer.toString(cache.loadBackThreshold()));
    out.put(KvTierKeys.VOCAB_SIZE, Integer.toString(cache.vocabSize()));
    out.put(KvTierKeys.SNAPSHOT_SLOTS, Integer.toString(cache.snapshotSlots()));
    out.put(KvTierKeys.SNAPSHOT_INTERVAL_PAGES, Integer.toString(cache.snapshotIntervalPages()));
    out.put(KvTierKeys.RANKS, Integer.toString(ranks));
    out.put(KvTierKeys.PARALLEL, parallelism.configName());
    out.put(KvTierKeys.CP_INTERLEAVE, Integer.toString(parallelism.interleave()));
    out.put(KvTierKeys.DIGEST_INTERVAL, Integer.toString(digestInterval));
    out.put(KvTierKeys.COLLECTIVE_TIMEOUT, ConfigValues.formatDuration(collectiveTimeout));
    out.put(KvTierKeys.L3_BYTES, Long.toString(l3.capacityBytes()));
    out.put(KvTierKeys.L3_BACKUP_THRESHOLD, Integer.toString(l3.backupThreshold()));
    out.put(KvTierKeys.L3_PREFETCH_THRESHOLD, Integer.toString(l3.prefetchThreshold()));
    out.put(KvTierKeys.L3_PREFETCH_POLICY, l3.prefetchPolicy().configName());
    out.put(KvTierKeys.L3_TIMEOUT_BASE, ConfigValues.formatDuration(l3.timeoutBase()));
    out.put(
        KvTierKeys.L3_TIMEOUT_PER_KI_TOKEN, ConfigValues.formatDuration(l3.timeoutPerKiToken()));
    out.put(KvTierKeys.L3_TIMEOUT_CAP, ConfigValues.formatDuration(l3.timeoutCap()));
    out.put(KvTierKeys.L3_MODEL_ID, l3.modelId());
    out.put(KvTierKeys.L3_REPLICATED_KV, Boolean.toString(l3.replicatedKv()));
    out.putAll(backendProperties);
    return Collections.unmodifiableMap(out);
  }
}
