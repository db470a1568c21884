package io.kvtier.cli;

import io.kvtier.core.config.LayerMix;
import io.kvtier.spi.KvLayout;
import java.util.List;
import java.util.Locale;

/**
 * {@code --layer-mix}, {@code --snapshot-interval} and {@code --swa-cache} of {@code kvtier
 * simulate} and {@code kvtier replay} (docs/HYBRID.md §8): what the cache does for a layer mix.
 *
 * <ul>
 *   <li>{@code --swa-cache pages} (the default): SWA layers keep every page, so a mix without a
 *       recurrent layer makes the cache's decisions of full attention (usable = matched); a mix
 *       with one takes recurrent-state snapshots of {@link #SNAPSHOT_SLOTS} page slot (the tiny
 *       model's state of every recurrent layer fits one page's layer blocks, HYBRID.md §5).
 *   <li>{@code --swa-cache windows}: pages hold the full-attention layers' KV only ({@link
 *       LayerMix#pageLayers} of {@code true} blocks) and each SWA layer's last {@code W - 1}
 *       positions go into the snapshots with the recurrent states, so an SWA mix takes snapshots
 *       as a recurrent one does and a match is usable only at a snapshot. The slots of one
 *       snapshot come from the bytes ({@link #windowSlots}).
 * </ul>
 *
 * Every error names the option and says what to give.
 */
final class HybridOptions {
  /** Page slots of one snapshot for a mix with a recurrent layer and SWA pages. */
  static final int SNAPSHOT_SLOTS = 1;

  /** The default pages between two interval snapshots: CacheConfig's. */
  static final int DEFAULT_INTERVAL =
      io.kvtier.core.config.CacheConfig.DEFAULT_SNAPSHOT_INTERVAL_PAGES;

  /** {@code --swa-cache} without the option. */
  static final String PAGES = "pages";

  /** {@code --swa-cache windows}. */
  static final String WINDOWS = "windows";

  private HybridOptions() {}

  /**
   * The options as the cache takes them.
   *
   * @param text the mix as {@link LayerMix#toString()} writes it, empty for all full attention
   *     (no {@code --layer-mix}, or one of full layers only: the same cache and L3 keys)
   * @param hasRecurrent whether the mix has a recurrent layer
   * @param windowedSwa whether {@code --swa-cache windows} was given (the mix then has an SWA
   *     layer)
   * @param snapshotSlots page slots per snapshot, 0 when the mix takes none
   * @param snapshotIntervalPages pages between interval snapshots ({@link #DEFAULT_INTERVAL}
   *     when no interval applies)
   * @param pageLayers the layer blocks of a page of this mode ({@link LayerMix#pageLayers}), 1
   *     for all full attention
   * @param modelLayers the mix's layers, 1 for all full attention
   * @param layers the parsed mix as the simulator takes it; empty for all full attention
   */
  record Mix(
      String text,
      boolean hasRecurrent,
      boolean windowedSwa,
      int snapshotSlots,
      int snapshotIntervalPages,
      int pageLayers,
      int modelLayers,
      java.util.Optional<LayerMix> layers) {

    /**
     * How the summary names the mix.
     *
     * @return the mix, or {@code full attention} for an empty one
     */
    String describe() {
      return text.isEmpty() ? "full attention" : text;
    }

    /**
     * Whether requests take snapshots.
     *
     * @return {@code snapshotSlots() > 0}
     */
    boolean snapshots() {
      return snapshotSlots > 0;
    }

    /**
     * {@code --swa-cache} as it ran.
     *
     * @return {@link #WINDOWS} or {@link #PAGES}
     */
    String swaCache() {
      return windowedSwa ? WINDOWS : PAGES;
    }
  }

  /**
   * The parsed mix, for one snapshot interval, with SWA pages.
   *
   * @param layerMix {@code --layer-mix}, null if absent
   * @param interval {@code --snapshot-interval}, null if absent
   * @return the mix
   * @throws IllegalArgumentException naming the option, the value and the fix
   */
  static Mix mix(String layerMix, Integer interval) {
    return mix(layerMix, interval, null, null);
  }

  /**
   * The parsed mix, for one snapshot interval.
   *
   * @param layerMix {@code --layer-mix}, null if absent
   * @param interval {@code --snapshot-interval}, null if absent
   * @param swaCache {@code --swa-cache}, null if absent ({@link #PAGES})
   * @param shape the run's KV layout per rank (its page size, heads, head dimension and element
   *     bytes; its layer count is not read), for the slots of a windowed snapshot; may be null
   *     without {@code --swa-cache windows}
   * @return the mix
   * @throws IllegalArgumentException naming the option, the value and the fix
   */
  static Mix mix(String layerMix, Integer interval, String swaCache, KvLayout shape) {
    List<Integer> intervals = interval == null ? null : List.of(interval);
    return mix(
            layerMix,
            intervals,
            interval == null ? null : String.valueOf(interval),
            swaCache,
            shape)
        .get(0);
  }

  /**
   * The parsed mix, once per snapshot interval of a sweep.
   *
   * @param layerMix {@code --layer-mix}, null if absent
   * @param intervals the values of {@code --snapshot-interval}, null if absent
   * @param intervalText {@code --snapshot-interval} as given, for the messages
   * @param swaCache {@code --swa-cache}, null if absent ({@link #PAGES})
   * @param shape the run's KV layout per rank, for the slots of a windowed snapshot (see {@link
   *     #windowSlots}); may be null without {@code --swa-cache windows}
   * @return one mix per interval, in order (one mix when no interval applies)
   * @throws IllegalArgumentException naming the option, the value and the fix
   */
  static List<Mix> mix(
      String layerMix,
      List<Integer> intervals,
      String intervalText,
      String swaCache,
      KvLayout shape) {
    boolean windows = windows(swaCache);
    LayerMix mix = layerMix == null ? null : LayerMix.parse(layerMix, "--layer-mix");
    boolean recurrent = mix != null && mix.hasRecurrent();
    if (windows && (mix == null || !mix.hasSwa())) {
      throw new IllegalArgumentException(
          "--swa-cache windows keeps the KV of SWA layers as windows in the snapshots, but "
              + (mix == null
                  ? "no --layer-mix is given (full attention only)"
                  : "--layer-mix " + mix + " has no swa:W layer")
              + ": drop --swa-cache, or give a mix with an SWA layer such as --layer-mix"
              + " full,swa:64");
    }
    boolean snapshots = mix != null && mix.needsSnapshots(windows);
    String text = mix == null || mix.allFull() ? "" : mix.toString();
    if (intervals != null) {
      for (int k : intervals) {
        if (k < 1) {
          throw new IllegalArgumentException(
              "--snapshot-interval="
                  + intervalText
                  + " is out of range: give 1 or more (pages between two snapshots of recurrent"
                  + " states and SWA windows)");
        }
      }
      if (!snapshots) {
        throw new IllegalArgumentException(
            "--snapshot-interval="
                + intervalText
                + " sets how often the cache snapshots recurrent states (and SWA windows with"
                + " --swa-cache windows), but "
                + (mix == null
                    ? "no --layer-mix is given (full attention only)"
                    : "--layer-mix "
                        + mix
                        + " has no recurrent layer"
                        + (mix.hasSwa() ? " and --swa-cache is pages" : ""))
                + ": there is nothing to snapshot; drop --snapshot-interval, or give a mix with"
                + " a recurrent layer such as --layer-mix full,recurrent"
                + (mix != null && mix.hasSwa()
                    ? ", or keep SWA windows with --swa-cache windows"
                    : ""));
      }
    }
    int modelLayers = mix == null ? 1 : mix.size();
    java.util.Optional<LayerMix> typed =
        text.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(mix);
    int pageLayers = mix == null ? 1 : mix.pageLayers(windows);
    if (!snapshots) {
      return List.of(
          new Mix(text, false, false, 0, DEFAULT_INTERVAL, pageLayers, modelLayers, typed));
    }
    int slots = windows ? windowSlots(mix, shape) : SNAPSHOT_SLOTS;
    List<Integer> ks = intervals == null ? List.of(DEFAULT_INTERVAL) : intervals;
    return ks.stream()
        .map(k -> new Mix(text, recurrent, windows, slots, k, pageLayers, modelLayers, typed))
        .toList();
  }

  /**
   * {@code --swa-cache} parsed.
   *
   * @param swaCache the value, null for the default
   * @return true for {@link #WINDOWS}
   */
  static boolean windows(String swaCache) {
    if (swaCache == null) {
      return false;
    }
    return switch (swaCache.strip().toLowerCase(Locale.ROOT)) {
      case PAGES -> false;
      case WINDOWS -> true;
      default ->
          throw new IllegalArgumentException(
              "--swa-cache="
                  + swaCache
                  + " is not an SWA cache mode: give pages (SWA layers keep every page, the"
                  + " default) or windows (SWA layers keep their last W-1 positions in the"
                  + " snapshots)");
    };
  }

  /**
   * The page slots of one snapshot with SWA windows (docs/HYBRID.md §4): the bytes of a rank's
   * shard ({@link LayerMix#windowSnapshotBytes}: the recurrent states and each SWA layer's K and
   * V of {@code W - 1} positions) over the bytes of a page slot of this mode ({@link
   * LayerMix#pageLayers} of {@code true} layer blocks of {@code pageSize x 2 x vectorBytes}),
   * rounded up, at least 1. The shape gives the per-layer block of a rank: its heads, head
   * dimension, element bytes and page size; its layer count is not read, since the mix decides
   * the layers.
   *
   * @param mix the mix, with an SWA layer
   * @param shape the KV layout of one rank's pool
   * @return the slots, at least 1
   */
  static int windowSlots(LayerMix mix, KvLayout shape) {
    try {
      return mix.windowSnapshotSlots(shape);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--swa-cache windows: " + e.getMessage(), e);
    }
  }
}
