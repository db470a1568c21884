package io.kvtier.core.config;

import io.kvtier.core.config.KvTierConfigBuilder.Setting;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import java.time.Duration;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Turns the merged raw settings into a {@link KvTierConfig}: parses each value, applies the
 * defaults, resolves pool sizes to pages and checks what depends on several keys. Every message
 * names the key, the value and, where it helps, the source the value came from.
 */
final class ConfigParser {

  private final Map<String, Setting> settings;

  ConfigParser(Map<String, Setting> settings) {
    this.settings = settings;
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
        value(KvTierKeys.MEMORY_LAYOUT, v -> ConfigNames.parse(MemoryLayout.class,
            "memory layout", v)).orElse(KvTierConfig.DEFAULT_MEMORY_LAYOUT);
    int devicePages = devicePages(layout);
    int hostPages = hostPages(layout, devicePages);
    CacheConfig cache =
        new CacheConfig(
            layout.pageSize(),
            devicePages,
            hostPages,
            value(KvTierKeys.WRITE_POLICY, WritePolicy::parse)
                .orElse(CacheConfig.DEFAULT_WRITE_POLICY),
            integer(KvTierKeys.WRITE_THROUGH_THRESHOLD,
                CacheConfig.DEFAULT_WRITE_THROUGH_THRESHOLD, 1),
            value(KvTierKeys.EVICTION_POLICY, EvictionPolicy::parse)
                .orElse(CacheConfig.DEFAULT_EVICTION_POLICY),
            integer(KvTierKeys.LOAD_BACK_THRESHOLD, CacheConfig.DEFAULT_LOAD_BACK_THRESHOLD, 1),
            integer(KvTierKeys.VOCAB_SIZE, CacheConfig.DEFAULT_VOCAB_SIZE, 1));
    int ranks = integer(KvTierKeys.RANKS, KvTierConfig.DEFAULT_RANKS, 1);
    int digestInterval =
        integer(KvTierKeys.DIGEST_INTERVAL, KvTierConfig.DEFAULT_DIGEST_INTERVAL, 0);
    Duration timeout =
        value(KvTierKeys.COLLECTIVE_TIMEOUT, v -> positive(KvTierKeys.COLLECTIVE_TIMEOUT, v))
            .orElse(KvTierConfig.DEFAULT_COLLECTIVE_TIMEOUT);

    L3Config l3 = l3();

    Map<String, String> backend = new LinkedHashMap<>();
    settings.forEach(
        (key, setting) -> {
          if (!KvTierKeys.isEngineKey(key)) {
            backend.put(key, setting.value());
          }
        });
    return new KvTierConfig(
        providers, autoOrders, layout, memoryLayout, cache, ranks, digestInterval, timeout,
        l3, backend);
  }

  private L3Config l3() {
    long bytes = value(KvTierKeys.L3_BYTES, v -> {
      long b = Units.parseBytes(KvTierKeys.L3_BYTES, v);
      if (b < 1) {
        throw new IllegalArgumentException(KvTierKeys.L3_BYTES + "=" + v + " must be positive");
      }
      return b;
    }).orElse(L3Config.DEFAULT_CAPACITY_BYTES);
    Duration base = value(KvTierKeys.L3_TIMEOUT_BASE, v -> positive(KvTierKeys.L3_TIMEOUT_BASE, v))
        .orElse(L3Config.DEFAULT_TIMEOUT_BASE);
    Duration perKi = value(KvTierKeys.L3_TIMEOUT_PER_KI_TOKEN,
        v -> Units.parseDuration(KvTierKeys.L3_TIMEOUT_PER_KI_TOKEN, v))
        .orElse(L3Config.DEFAULT_TIMEOUT_PER_KI_TOKEN);
    Duration cap = value(KvTierKeys.L3_TIMEOUT_CAP, v -> positive(KvTierKeys.L3_TIMEOUT_CAP, v))
        .orElse(L3Config.DEFAULT_TIMEOUT_CAP);
    if (cap.compareTo(base) < 0) {
      throw new IllegalArgumentException(KvTierKeys.L3_TIMEOUT_CAP + "="
          + Units.formatDuration(cap) + " is below " + KvTierKeys.L3_TIMEOUT_BASE + "="
          + Units.formatDuration(base) + ": raise the cap or lower the base");
    }
    String model = text(KvTierKeys.L3_MODEL_ID, L3Config.DEFAULT_MODEL_ID);
    if (model.isEmpty()) {
      throw new IllegalArgumentException(KvTierKeys.L3_MODEL_ID + " is blank: name the model,"
          + " for example llama-3-8b (it keeps the L3 pages of different models apart)");
    }
    return new L3Config(bytes,
        integer(KvTierKeys.L3_BACKUP_THRESHOLD, L3Config.DEFAULT_BACKUP_THRESHOLD, 0),
        integer(KvTierKeys.L3_PREFETCH_THRESHOLD, L3Config.DEFAULT_PREFETCH_THRESHOLD, 1),
        value(KvTierKeys.L3_PREFETCH_POLICY, L3PrefetchPolicy::parse)
            .orElse(L3Config.DEFAULT_PREFETCH_POLICY),
        base, perKi, cap, model,
        value(KvTierKeys.L3_REPLICATED_KV, v -> bool(KvTierKeys.L3_REPLICATED_KV, v))
            .orElse(false));
  }

  private static boolean bool(String key, String v) {
    String t = v.strip();
    if (t.equalsIgnoreCase("true")) {
      return true;
    }
    if (t.equalsIgnoreCase("false")) {
      return false;
    }
    throw new IllegalArgumentException(key + "='" + v + "' is not true or false");
  }

  private KvLayout layout() {
    int layers = integer(KvTierKeys.LAYERS, KvTierConfig.DEFAULT_LAYERS, 1);
    int kvHeads = integer(KvTierKeys.KV_HEADS, KvTierConfig.DEFAULT_KV_HEADS, 1);
    int headDim = integer(KvTierKeys.HEAD_DIM, KvTierConfig.DEFAULT_HEAD_DIM, 1);
    int dtypeBytes = integer(KvTierKeys.DTYPE_BYTES, KvTierConfig.DEFAULT_DTYPE_BYTES, 1);
    if (dtypeBytes > 8) {
      throw new IllegalArgumentException(
          KvTierKeys.DTYPE_BYTES + "=" + dtypeBytes + " must be between 1 and 8 (2 for fp16 or"
              + " bf16, 1 for fp8, 4 for fp32)");
    }
    int pageSize = integer(KvTierKeys.PAGE_SIZE, KvTierConfig.DEFAULT_PAGE_SIZE, 1);
    try {
      return new KvLayout(layers, kvHeads, headDim, dtypeBytes, pageSize);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "the KV page of %s=%d, %s=%d, %s=%d, %s=%d, %s=%d has more bytes than a long holds:"
              .formatted(KvTierKeys.LAYERS, layers, KvTierKeys.KV_HEADS, kvHeads,
                  KvTierKeys.HEAD_DIM, headDim, KvTierKeys.DTYPE_BYTES, dtypeBytes,
                  KvTierKeys.PAGE_SIZE, pageSize)
              + " make them smaller",
          e);
    }
  }

  private int devicePages(KvLayout layout) {
    if (settings.containsKey(KvTierKeys.DEVICE_BYTES)) {
      return pagesOfBytes(KvTierKeys.DEVICE_BYTES, layout);
    }
    return checkPool(KvTierKeys.DEVICE_PAGES, layout,
        integer(KvTierKeys.DEVICE_PAGES, KvTierConfig.DEFAULT_DEVICE_PAGES, 1));
  }

  private int hostPages(KvLayout layout, int devicePages) {
    if (settings.containsKey(KvTierKeys.HOST_BYTES)) {
      return pagesOfBytes(KvTierKeys.HOST_BYTES, layout);
    }
    if (settings.containsKey(KvTierKeys.HOST_PAGES)) {
      return checkPool(KvTierKeys.HOST_PAGES, layout, integer(KvTierKeys.HOST_PAGES, 0, 1));
    }
    double ratio =
        value(KvTierKeys.HOST_RATIO, v -> ratio(KvTierKeys.HOST_RATIO, v))
            .orElse(KvTierConfig.DEFAULT_HOST_RATIO);
    // Floor: a ratio asks for "about this much more", and a page more than asked for could
    // overflow the host memory it was sized for.
    double pages = Math.floor(devicePages * ratio);
    if (pages > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          KvTierKeys.HOST_RATIO + "=" + ratio + " x " + devicePages + " device pages = " + pages
              + " host pages, more than the most pages of a pool (" + Integer.MAX_VALUE
              + "): lower the ratio or the device pool");
    }
    return checkPool(KvTierKeys.HOST_RATIO, layout, (int) pages);
  }

  private int pagesOfBytes(String key, KvLayout layout) {
    long bytes = value(key, v -> Units.parseBytes(key, v)).orElseThrow();
    long pageBytes = layout.pageBytes();
    String text = settings.get(key).value();
    if (bytes < pageBytes) {
      throw new IllegalArgumentException(
          key + "=" + text + " (" + bytes + " bytes) is less than one page of " + pageBytes
              + " bytes: set at least " + Units.formatBytes(pageBytes));
    }
    if (bytes % pageBytes != 0) {
      long below = bytes - bytes % pageBytes;
      throw new IllegalArgumentException(
          key + "=" + text + " (" + bytes + " bytes) is not a multiple of the page size of "
              + pageBytes + " bytes (2 x kv-heads x head-dim x dtype-bytes x page-size x"
              + " layers): set a multiple such as " + below + " or " + (below + pageBytes)
              + ", or set the pool in pages");
    }
    long pages = bytes / pageBytes;
    if (pages > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          key + "=" + text + " is " + pages + " pages, more than the most pages of a pool ("
              + Integer.MAX_VALUE + "): make it smaller or the pages larger");
    }
    return (int) pages;
  }

  private static int checkPool(String key, KvLayout layout, int pages) {
    if (pages < 1) {
      throw new IllegalArgumentException(key + " gives a pool of " + pages + " pages: it needs"
          + " at least 1");
    }
    try {
      layout.poolBytes(pages);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          key + " gives " + pages + " pages of " + layout.pageBytes() + " bytes, more bytes than"
              + " a long holds: make the pool or the page smaller",
          e);
    }
    return pages;
  }

  private String text(String key, String fallback) {
    return value(key, String::strip).orElse(fallback);
  }

  private int integer(String key, int fallback, int min) {
    Optional<Integer> parsed =
        value(
            key,
            v -> {
              int n;
              try {
                n = Integer.parseInt(v.strip());
              } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                    key + "='" + v + "' is not a whole number (from " + min + " to "
                        + Integer.MAX_VALUE + ")");
              }
              if (n < min) {
                throw new IllegalArgumentException(
                    key + "=" + n + " must be >= " + min
                        + (min == 0 ? " (0 turns it off)" : ""));
              }
              return n;
            });
    return parsed.orElse(fallback);
  }

  private static double ratio(String key, String v) {
    double ratio;
    try {
      ratio = Double.parseDouble(v.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + "='" + v + "' is not a number, such as 2 or 2.5");
    }
    if (!(ratio > 1) || Double.isInfinite(ratio)) {
      throw new IllegalArgumentException(
          key + "=" + v + " must be a finite number above 1: the host pool backs up the device"
              + " pool and must be larger; set " + KvTierKeys.HOST_PAGES + " for an exact size");
    }
    return ratio;
  }

  private static Duration positive(String key, String v) {
    Duration d = Units.parseDuration(key, v);
    if (d.isZero()) {
      throw new IllegalArgumentException(key + "=" + v + " must be positive");
    }
    return d;
  }

  /** Parses one key if set; a failure names where the value came from. */
  private <T> Optional<T> value(String key, Function<String, T> parser) {
    Setting setting = settings.get(key);
    if (setting == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(parser.apply(setting.value()));
    } catch (IllegalArgumentException e) {
      String message =
          e.getMessage().startsWith(key) ? e.getMessage() : key + ": " + e.getMessage();
      throw new IllegalArgumentException(message + " [from " + setting.origin() + "]", e);
    }
  }
}
