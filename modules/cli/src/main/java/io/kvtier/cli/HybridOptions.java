package io.kvtier.cli;

import io.kvtier.cli.model.LayerMix;
import java.util.List;

/**
 * {@code --layer-mix} and {@code --snapshot-interval} of {@code kvtier simulate} and {@code
 * kvtier replay} (docs/HYBRID.md §8): what the cache does for a layer mix. A mix with a recurrent
 * layer takes recurrent-state snapshots of {@link #SNAPSHOT_SLOTS} page slot (the tiny model's
 * state of every recurrent layer fits one page's layer blocks, HYBRID.md §5); SWA layers keep
 * every page in this release, so a mix without a recurrent layer makes the cache's decisions of
 * full attention (usable = matched). Every error names the option and says what to give.
 */
final class HybridOptions {
  /** Page slots of one snapshot for a mix with a recurrent layer. */
  static final int SNAPSHOT_SLOTS = 1;

  /** The default pages between two interval snapshots: CacheConfig's. */
  static final int DEFAULT_INTERVAL =
      io.kvtier.core.config.CacheConfig.DEFAULT_SNAPSHOT_INTERVAL_PAGES;

  private HybridOptions() {}

  /**
   * The options as the cache takes them.
   *
   * @param text the mix as {@link LayerMix#toString()} writes it, empty for all full attention
   *     (no {@code --layer-mix}, or one of full layers only: the same cache and L3 keys)
   * @param hasRecurrent whether the mix has a recurrent layer
   * @param snapshotSlots page slots per snapshot, 0 without a recurrent layer
   * @param snapshotIntervalPages pages between interval snapshots ({@link #DEFAULT_INTERVAL}
   *     when no interval applies)
   */
  record Mix(String text, boolean hasRecurrent, int snapshotSlots, int snapshotIntervalPages) {

    /**
     * How the summary names the mix.
     *
     * @return the mix, or {@code full attention} for an empty one
     */
    String describe() {
      return text.isEmpty() ? "full attention" : text;
    }
  }

  /**
   * The parsed mix, for one snapshot interval.
   *
   * @param layerMix {@code --layer-mix}, null if absent
   * @param interval {@code --snapshot-interval}, null if absent
   * @return the mix
   * @throws IllegalArgumentException naming the option, the value and the fix
   */
  static Mix mix(String layerMix, Integer interval) {
    List<Integer> intervals = interval == null ? null : List.of(interval);
    return mix(layerMix, intervals, interval == null ? null : String.valueOf(interval)).get(0);
  }

  /**
   * The parsed mix, once per snapshot interval of a sweep.
   *
   * @param layerMix {@code --layer-mix}, null if absent
   * @param intervals the values of {@code --snapshot-interval}, null if absent
   * @param intervalText {@code --snapshot-interval} as given, for the messages
   * @return one mix per interval, in order (one mix when no interval applies)
   * @throws IllegalArgumentException naming the option, the value and the fix
   */
  static List<Mix> mix(String layerMix, List<Integer> intervals, String intervalText) {
    LayerMix mix = layerMix == null ? null : LayerMix.parse(layerMix, "--layer-mix");
    boolean recurrent = mix != null && mix.hasRecurrent();
    String text = mix == null || mix.allFull() ? "" : mix.toString();
    if (intervals != null) {
      for (int k : intervals) {
        if (k < 1) {
          throw new IllegalArgumentException(
              "--snapshot-interval="
                  + intervalText
                  + " is out of range: give 1 or more (pages between two recurrent-state"
                  + " snapshots)");
        }
      }
      if (!recurrent) {
        throw new IllegalArgumentException(
            "--snapshot-interval="
                + intervalText
                + " sets how often recurrent layers snapshot their state, but "
                + (mix == null
                    ? "no --layer-mix is given (full attention only)"
                    : "--layer-mix " + mix + " has no recurrent layer")
                + ": there is nothing to snapshot; drop --snapshot-interval, or give a mix with"
                + " a recurrent layer such as --layer-mix full,recurrent");
      }
    }
    if (!recurrent) {
      return List.of(new Mix(text, false, 0, DEFAULT_INTERVAL));
    }
    List<Integer> ks = intervals == null ? List.of(DEFAULT_INTERVAL) : intervals;
    return ks.stream().map(k -> new Mix(text, true, SNAPSHOT_SLOTS, k)).toList();
  }
}
