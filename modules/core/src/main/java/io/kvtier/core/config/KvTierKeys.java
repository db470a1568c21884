package io.kvtier.core.config;

import io.kvtier.spi.config.ConfigValues;
import java.util.List;
import java.util.Optional;

/**
 * The configuration keys of the engine, namespace {@code kvtier.}. Keys of other namespaces
 * belong to providers (for example {@code sim.}) and are handed to them.
 */
public final class KvTierKeys {
  private KvTierKeys() {}

  /** The namespace of the engine's keys, without its dot. */
  public static final String NAMESPACE = "kvtier";

  /** The namespace of the engine's keys, with its dot. */
  public static final String PREFIX = NAMESPACE + ".";

  /** The device provider: a name or {@code auto}. */
  public static final String DEVICE = "kvtier.device";

  /** The host provider: a name or {@code auto}. */
  public static final String HOST = "kvtier.host";

  /** The collective provider: a name or {@code auto}. */
  public static final String COLLECTIVE = "kvtier.collective";

  /** The L3 store provider: a name, {@code auto} or {@code none}. */
  public static final String STORE = "kvtier.store";

  /**
   * How the ranks split the model: {@code tp} (a share of the KV heads each, the default) or
   * {@code cp} (a share of every sequence's positions each); see {@link Parallelism}.
   */
  public static final String PARALLEL = "kvtier.parallel";

  /** Under {@code kvtier.parallel=cp}, consecutive positions per rank turn (default 1). */
  public static final String CP_INTERLEAVE = "kvtier.cp-interleave";

  /** Transformer layers. */
  public static final String LAYERS = "kvtier.layers";

  /** KV heads held by one rank. */
  public static final String KV_HEADS = "kvtier.kv-heads";

  /** Elements per head. */
  public static final String HEAD_DIM = "kvtier.head-dim";

  /** Bytes per element. */
  public static final String DTYPE_BYTES = "kvtier.dtype-bytes";

  /** Tokens per page. */
  public static final String PAGE_SIZE = "kvtier.page-size";

  /** Device pool size in pages; excludes {@link #DEVICE_BYTES}. */
  public static final String DEVICE_PAGES = "kvtier.device-pages";

  /** Device pool size in bytes (a multiple of the page bytes); excludes {@link #DEVICE_PAGES}. */
  public static final String DEVICE_BYTES = "kvtier.device-bytes";

  /** Host pool size in pages; excludes the other host sizes. */
  public static final String HOST_PAGES = "kvtier.host-pages";

  /** Host pool size relative to the device pool, above 1; excludes the other host sizes. */
  public static final String HOST_RATIO = "kvtier.host-ratio";

  /** Host pool size in bytes (a multiple of the page bytes); excludes the other host sizes. */
  public static final String HOST_BYTES = "kvtier.host-bytes";

  /** Block order of both pools: {@code layer_first} or {@code page_first}. */
  public static final String MEMORY_LAYOUT = "kvtier.memory-layout";

  /** When device pages are backed up to the host. */
  public static final String WRITE_POLICY = "kvtier.write-policy";

  /** Hits that trigger a backup under selective write-through. */
  public static final String WRITE_THROUGH_THRESHOLD = "kvtier.write-through-threshold";

  /** Eviction order of both tiers. */
  public static final String EVICTION_POLICY = "kvtier.eviction-policy";

  /** The fewest pages worth loading back from the host. */
  public static final String LOAD_BACK_THRESHOLD = "kvtier.load-back-threshold";

  /** Token ids must be below it. */
  public static final String VOCAB_SIZE = "kvtier.vocab-size";

  /**
   * Page slots of one recurrent-state snapshot (HYBRID.md §5); 0 (default) = the model has no
   * recurrent state.
   */
  public static final String SNAPSHOT_SLOTS = "kvtier.snapshot-slots";

  /** Pages between two interval snapshots of a request's recurrent state. */
  public static final String SNAPSHOT_INTERVAL_PAGES = "kvtier.snapshot-interval-pages";

  /** Ranks in the group. */
  public static final String RANKS = "kvtier.ranks";

  /** Ticks between replica digest checks; 0 turns them off. */
  public static final String DIGEST_INTERVAL = "kvtier.digest-interval";

  /** How long one collective call may wait before it fails. */
  public static final String COLLECTIVE_TIMEOUT = "kvtier.collective-timeout";

  /** The most bytes of page data the L3 store keeps. */
  public static final String L3_BYTES = "kvtier.l3-bytes";

  /** Hits after which a host-committed node is written to L3; 0 writes at the host commit. */
  public static final String L3_BACKUP_THRESHOLD = "kvtier.l3-backup-threshold";

  /** The fewest tokens of an L3 hit worth prefetching. */
  public static final String L3_PREFETCH_THRESHOLD = "kvtier.l3-prefetch-threshold";

  /** When a prefetch stops waiting: {@code best_effort}, {@code wait_complete}, {@code timeout}. */
  public static final String L3_PREFETCH_POLICY = "kvtier.l3-prefetch-policy";

  /** The timeout of a prefetch of no tokens. */
  public static final String L3_TIMEOUT_BASE = "kvtier.l3-timeout-base";

  /** What each 1024 tokens add to a prefetch's timeout. */
  public static final String L3_TIMEOUT_PER_KI_TOKEN = "kvtier.l3-timeout-per-ki-token";

  /** The longest prefetch timeout. */
  public static final String L3_TIMEOUT_CAP = "kvtier.l3-timeout-cap";

  /** The model's identity, part of every L3 key. */
  public static final String L3_MODEL_ID = "kvtier.l3-model-id";

  /** Whether every rank holds the same KV (MLA): one writer, keys without the rank. */
  public static final String L3_REPLICATED_KV = "kvtier.l3-replicated-kv";

  /** Every key, in documentation order. */
  public static final List<String> ALL =
      List.of(
          DEVICE,
          HOST,
          COLLECTIVE,
          STORE,
          LAYERS,
          KV_HEADS,
          HEAD_DIM,
          DTYPE_BYTES,
          PAGE_SIZE,
          DEVICE_PAGES,
          DEVICE_BYTES,
          HOST_PAGES,
          HOST_RATIO,
          HOST_BYTES,
          MEMORY_LAYOUT,
          WRITE_POLICY,
          WRITE_THROUGH_THRESHOLD,
          EVICTION_POLICY,
          LOAD_BACK_THRESHOLD,
          VOCAB_SIZE,
          SNAPSHOT_SLOTS,
          SNAPSHOT_INTERVAL_PAGES,
          RANKS,
          PARALLEL,
          CP_INTERLEAVE,
          DIGEST_INTERVAL,
          COLLECTIVE_TIMEOUT,
          L3_BYTES,
          L3_BACKUP_THRESHOLD,
          L3_PREFETCH_THRESHOLD,
          L3_PREFETCH_POLICY,
          L3_TIMEOUT_BASE,
          L3_TIMEOUT_PER_KI_TOKEN,
          L3_TIMEOUT_CAP,
          L3_MODEL_ID,
          L3_REPLICATED_KV);

  /**
   * Keys of which at most one may be set in one source, because each gives the same size a
   * different way. A source that sets one of a group overrides whichever one a lower-precedence
   * source set.
   */
  public static final List<List<String>> ALTERNATIVES =
      List.of(List.of(DEVICE_PAGES, DEVICE_BYTES), List.of(HOST_PAGES, HOST_RATIO, HOST_BYTES));

  /**
   * The prefix of the KV event publishers' keys ({@code io.kvtier.events}): in the {@code
   * kvtier.} namespace for the user, but not the engine's; they are passed through with the
   * providers' keys, so that the engine's reader does not refuse them.
   */
  public static final String EVENTS_PREFIX = PREFIX + "events.";

  /**
   * Whether {@code key} is in the engine's namespace.
   *
   * @param key a configuration key
   * @return true if it starts with {@value #PREFIX}, and not with {@value #EVENTS_PREFIX}
   */
  public static boolean isEngineKey(String key) {
    return key.startsWith(PREFIX) && !key.startsWith(EVENTS_PREFIX);
  }

  /**
   * The known key closest in spelling to {@code key}, to suggest a fix for a typo.
   *
   * @param key an unknown key
   * @return the closest key, or empty if none is close
   */
  public static Optional<String> closest(String key) {
    return ConfigValues.closest(key, ALL);
  }
}
