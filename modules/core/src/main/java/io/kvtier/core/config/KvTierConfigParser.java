package io.kvtier.core.config;

import io.kvtier.core.config.KvTierConfigBuilder.Setting;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.config.ConfigReader;
import io.kvtier.spi.config.ConfigValues;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns the merged raw settings into a {@link KvTierConfig}: parses each value with the SPI's
 * {@link ConfigReader}, applies the defaults, resolves pool sizes to pages and checks what
 * depends on several keys. Every message names the key, the value and, where it helps, the
 * source the value came from.
 */
final class KvTierConfigParser {

  private final Map<String, Setting> settings;
  private final ConfigReader reader;

  KvTierConfigParser(Map<String, Setting> settings) {
    this.settings = settings;
    Map<String, String> values = new LinkedHashMap<>();
    Map<String, String> origins = new LinkedHashMap<>();
    settings.forEach(
        (key, setting) -> {
          // kvtier.events.* share the namespace but are read by the events module.
          if (KvTierKeys.isEngineKey(key)) {
            values.put(key, setting.value());
            origins.put(key, setting.origin());
          }
        });
    this.reader = ConfigReader.of(KvTierKeys.NAMESPACE, values, origins);
  }

  KvTierConfig parse(Map<ProviderKind, List<String>> autoOrders) {
    Map<ProviderKind, String> providers = new EnumMap<>(ProviderKind.class);
    providers.put(ProviderKind.DEVICE, text(KvTierKeys.DEVICE, KvTierConfig.DEFAULT_DEVICE));
    providers.put(ProviderKind.HOST, text(KvTierKeys.HOST, KvTierConfig.DEFAULT_HOST));
    providers.put(
        ProviderKind.COLLECTIVE, text(KvTierKeys.COLLECTIVE, KvTierConfig.DEFAULT_COLLECTIVE));
    providers.put(ProviderKind.STORE, text(KvTierKeys.STORE, KvTierConfig.DEFAULT_STORE));

    KvLayout layout = layout();
    MemoryLayout memoryLayout =
        reader.getEnum(
            KvTierKeys.MEMORY_LAYOUT,
            MemoryLayout.class,
            "memory layout",
            KvTierConfig.DEFAULT_MEMORY_LAYOUT);
    int devicePages = devicePages(layout);
    int hostPages = hostPages(layout, devicePages);
    CacheConfig cache =
        new CacheConfig(
            layout.pageSize(),
            devicePages,
            hostPages,
            reader
                .get(KvTierKeys.WRITE_POLICY, WritePolicy::parse)
                .orElse(CacheConfig.DEFAULT_WRITE_POLICY),
            integer(
                KvTierKeys.WRITE_THROUGH_THRESHOLD, CacheConfig.DEFAULT_WRITE_THROUGH_THRESHOLD, 1),
            reader
                .get(KvTierKeys.EVICTION_POLICY, EvictionPolicy::parse)
                .orElse(CacheConfig.DEFAULT_EVICTION_POLICY),
            integer(KvTierKeys.LOAD_BACK_THRESHOLD, CacheConfig.DEFAULT_LOAD_BACK_THRESHOLD, 1),
            integer(KvTierKeys.VOCAB_SIZE, CacheConfig.DEFAULT_VOCAB_SIZE, 1),
            integer(KvTierKeys.SNAPSHOT_SLOTS, 0, 0),
            integer(
                KvTierKeys.SNAPSHOT_INTERVAL_PAGES,
                CacheConfig.DEFAULT_SNAPSHOT_INTERVAL_PAGES,
                1));
    int ranks = integer(KvTierKeys.RANKS, KvTierConfig.DEFAULT_RANKS, 1);
    Parallelism parallelism =
        Parallelism.parse(
            text(KvTierKeys.PARALLEL, Parallelism.TP.configName()),
            integer(KvTierKeys.CP_INTERLEAVE, 1, 1));
    int digestInterval =
        integer(KvTierKeys.DIGEST_INTERVAL, KvTierConfig.DEFAULT_DIGEST_INTERVAL, 0);
    Duration timeout =
        reader.getPositiveDuration(
            KvTierKeys.COLLECTIVE_TIMEOUT, KvTierConfig.DEFAULT_COLLECTIVE_TIMEOUT);

    L3Config l3 = l3();
    // The builder already refused unknown kvtier.* keys, naming their source; this catches a
    // key added to KvTierKeys but never read here.
    reader.checkUnknownKeys();

    Map<String, String> backend = new LinkedHashMap<>();
    settings.forEach(
        (key, setting) -> {
          if (!KvTierKeys.isEngineKey(key)) {
            backend.put(key, setting.value());
          }
        });
    return new KvTierConfig(
        providers,
        autoOrders,
        layout,
        memoryLayout,
        cache,
        ranks,
        parallelism,
        digestInterval,
        timeout,
        l3,
        backend);
  }

  private L3Config l3() {
    long bytes = reader.getPositiveBytes(KvTierKeys.L3_BYTES, L3Config.DEFAULT_CAPACITY_BYTES);
    Duration base =
        reader.getPositiveDuration(KvTierKeys.L3_TIMEOUT_BASE, L3Config.DEFAULT_TIMEOUT_BASE);
    Duration perKi =
        reader.getDuration(
            KvTierKeys.L3_TIMEOUT_PER_KI_TOKEN, L3Config.DEFAULT_TIMEOUT_PER_KI_TOKEN);
    Duration cap =
        reader.getPositiveDuration(KvTierKeys.L3_TIMEOUT_CAP, L3Config.DEFAULT_TIMEOUT_CAP);
    if (cap.compareTo(base) < 0) {
      throw new IllegalArgumentException(
          KvTierKeys.L3_TIMEOUT_CAP
              + "="
              + ConfigValues.formatDuration(cap)
              + " is below "
              + KvTierKeys.L3_TIMEOUT_BASE
              + "="
              + ConfigValues.formatDuration(base)
              + ": raise the cap or lower the base");
    }
    String model = text(KvTierKeys.L3_MODEL_ID, L3Config.DEFAULT_MODEL_ID);
    if (model.isEmpty()) {
      throw new IllegalArgumentException(
          KvTierKeys.L3_MODEL_ID
              + " is blank: name the model,"
              + " for example llama-3-8b (it keeps the L3 pages of different models apart)");
    }
    return new L3Config(
        bytes,
        integer(KvTierKeys.L3_BACKUP_THRESHOLD, L3Config.DEFAULT_BACKUP_THRESHOLD, 0),
        integer(KvTierKeys.L3_PREFETCH_THRESHOLD, L3Config.DEFAULT_PREFETCH_THRESHOLD, 1),
        reader
            .get(KvTierKeys.L3_PREFETCH_POLICY, L3PrefetchPolicy::parse)
            .orElse(L3Config.DEFAULT_PREFETCH_POLICY),
        base,
        perKi,
        cap,
        model,
        reader.getBoolean(KvTierKeys.L3_REPLICATED_KV, false));
  }

  private KvLayout layout() {
    int layers = integer(KvTierKeys.LAYERS, KvTierConfig.DEFAULT_LAYERS, 1);
    int kvHeads = integer(KvTierKeys.KV_HEADS, KvTierConfig.DEFAULT_KV_HEADS, 1);
    int headDim = integer(KvTierKeys.HEAD_DIM, KvTierConfig.DEFAULT_HEAD_DIM, 1);
    int dtypeBytes = integer(KvTierKeys.DTYPE_BYTES, KvTierConfig.DEFAULT_DTYPE_BYTES, 1);
    if (dtypeBytes > 8) {
      throw new IllegalArgumentException(
          KvTierKeys.DTYPE_BYTES
              + "="
              + dtypeBytes
              + " must be between 1 and 8 (2 for fp16 or"
              + " bf16, 1 for fp8, 4 for fp32)");
    }
    int pageSize = integer(KvTierKeys.PAGE_SIZE, KvTierConfig.DEFAULT_PAGE_SIZE, 1);
    try {
      return new KvLayout(layers, kvHeads, headDim, dtypeBytes, pageSize);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "the KV page of %s=%d, %s=%d, %s=%d, %s=%d, %s=%d has more bytes than a long holds:"
                  .formatted(
                      KvTierKeys.LAYERS,
                      layers,
                      KvTierKeys.KV_HEADS,
                      kvHeads,
                      KvTierKeys.HEAD_DIM,
                      headDim,
                      KvTierKeys.DTYPE_BYTES,
                      dtypeBytes,
                      KvTierKeys.PAGE_SIZE,
                      pageSize)
              + " make them smaller",
          e);
    }
  }

  private int devicePages(KvLayout layout) {
    if (reader.isSet(KvTierKeys.DEVICE_BYTES)) {
      return pagesOfBytes(KvTierKeys.DEVICE_BYTES, layout);
    }
    return checkPool(
        KvTierKeys.DEVICE_PAGES,
        layout,
        integer(KvTierKeys.DEVICE_PAGES, KvTierConfig.DEFAULT_DEVICE_PAGES, 1));
  }

  private int hostPages(KvLayout layout, int devicePages) {
    if (reader.isSet(KvTierKeys.HOST_BYTES)) {
      return pagesOfBytes(KvTierKeys.HOST_BYTES, layout);
    }
    if (reader.isSet(KvTierKeys.HOST_PAGES)) {
      return checkPool(KvTierKeys.HOST_PAGES, layout, integer(KvTierKeys.HOST_PAGES, 0, 1));
    }
    double ratio =
        reader
            .get(KvTierKeys.HOST_RATIO, v -> ratio(KvTierKeys.HOST_RATIO, v))
            .orElse(KvTierConfig.DEFAULT_HOST_RATIO);
    // Floor: a ratio asks for "about this much more", and a page more than asked for could
    // overflow the host memory it was sized for.
    double pages = Math.floor(devicePages * ratio);
    if (pages > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          KvTierKeys.HOST_RATIO
              + "="
              + ratio
              + " x "
              + devicePages
              + " device pages = "
              + pages
              + " host pages, more than the most pages of a pool ("
              + Integer.MAX_VALUE
              + "): lower the ratio or the device pool");
    }
    return checkPool(KvTierKeys.HOST_RATIO, layout, (int) pages);
  }

  private int pagesOfBytes(String key, KvLayout layout) {
    long bytes = reader.getBytes(key, 0);
    long pageBytes = layout.pageBytes();
    String text = settings.get(key).value();
    if (bytes < pageBytes) {
      throw new IllegalArgumentException(
          key
              + "="
              + text
              + " ("
              + bytes
              + " bytes) is less than one page of "
              + pageBytes
              + " bytes: set at least "
              + ConfigValues.formatBytes(pageBytes));
    }
    if (bytes % pageBytes != 0) {
      long below = bytes - bytes % pageBytes;
      throw new IllegalArgumentException(
          key
              + "="
              + text
              + " ("
              + bytes
              + " bytes) is not a multiple of the page size of "
              + pageBytes
              + " bytes (2 x kv-heads x head-dim x dtype-bytes x page-size x"
              + " layers): set a multiple such as "
              + below
              + " or "
              + (below + pageBytes)
              + ", or set the pool in pages");
    }
    long pages = bytes / pageBytes;
    if (pages > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          key
              + "="
              + text
              + " is "
              + pages
              + " pages, more than the most pages of a pool ("
              + Integer.MAX_VALUE
              + "): make it smaller or the pages larger");
    }
    return (int) pages;
  }

  private static int checkPool(String key, KvLayout layout, int pages) {
    if (pages < 1) {
      throw new IllegalArgumentException(
          key + " gives a pool of " + pages + " pages: it needs" + " at least 1");
    }
    try {
      layout.poolBytes(pages);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          key
              + " gives "
              + pages
              + " pages of "
              + layout.pageBytes()
              + " bytes, more bytes than"
              + " a long holds: make the pool or the page smaller",
          e);
    }
    return pages;
  }

  private String text(String key, String fallback) {
    return reader.getString(key, fallback);
  }

  private int integer(String key, int fallback, int min) {
    return reader.getInt(key, fallback, min, Integer.MAX_VALUE);
  }

  private static double ratio(String key, String v) {
    double ratio = ConfigValues.parseDouble(key, v);
    if (!(ratio > 1) || Double.isInfinite(ratio)) {
      throw new IllegalArgumentException(
          key
              + "="
              + v
              + " must be a finite number above 1: the host pool backs up the device"
              + " pool and must be larger; set "
              + KvTierKeys.HOST_PAGES
              + " for an exact size");
    }
    return ratio;
  }
}
