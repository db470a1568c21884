package io.kvtier.simulator.replay;

import java.util.Locale;

/**
 * The counters of a {@link ReplayResult}, read by name ({@link ReplayResult#get}). Adding a
 * counter is adding a constant (and setting it where a configuration's replay ends).
 */
public enum ReplayCounter {
  /** Requests replayed. */
  REQUESTS,
  /** Their prompt tokens. */
  PROMPT_TOKENS,
  /** Prompt tokens found on the device. */
  DEVICE_HIT_TOKENS,
  /** Prompt tokens loaded back from the host (not counting L3 ones). */
  HOST_HIT_TOKENS,
  /** Prompt tokens the L3 store supplied. */
  L3_HIT_TOKENS,
  /** Requests with at least one device hit token. */
  DEVICE_HIT_REQUESTS,
  /** Requests with at least one host hit token. */
  HOST_HIT_REQUESTS,
  /** Requests with at least one L3 hit token. */
  L3_HIT_REQUESTS,
  /** Requests with at least one hit token in any tier. */
  HIT_REQUESTS,
  /** Host-to-device load-backs committed. */
  LOAD_BACKS,
  /** Device pages freed by eviction. */
  DEVICE_EVICTION_PAGES,
  /** Host pages freed by eviction. */
  HOST_EVICTION_PAGES,
  /** Device-to-host backups committed. */
  BACKUPS,
  /** Pages written to the L3 store. */
  L3_PAGES_WRITTEN,
  /**
   * Requests whose prompt needs more pages than the whole device holds; replayed as misses and not
   * cached.
   */
  REJECTED_REQUESTS,
  /** Wall-clock time of the replay itself (the trace was prepared before). */
  NANOS,
  /**
   * CPU time of the thread that ran it, the measure of speed per core on a machine that other work
   * shares (0 where the JVM cannot measure thread CPU time).
   */
  CPU_NANOS,
  /**
   * The part of {@code deviceHitTokens} that requests could resume from (HYBRID.md §5, §8): with
   * recurrent-state snapshots a match is usable only up to its deepest snapshot; without them every
   * hit token. Its prefill is saved; the rest of the match is computed again.
   */
  USABLE_DEVICE_HIT_TOKENS,
  /** The usable part of {@code hostHitTokens}. */
  USABLE_HOST_HIT_TOKENS,
  /** The usable part of {@code l3HitTokens}. */
  USABLE_L3_HIT_TOKENS;

  private final String key = key(name());

  /**
   * The counter's name in JSON and CSV: the constant in lower camel case.
   *
   * @return for example {@code deviceHitTokens}
   */
  public String key() {
    return key;
  }

  private static String key(String constant) {
    String[] words = constant.toLowerCase(Locale.ROOT).split("_");
    StringBuilder key = new StringBuilder(words[0]);
    for (int i = 1; i < words.length; i++) {
      key.append(Character.toUpperCase(words[i].charAt(0))).append(words[i], 1, words[i].length());
    }
    return key.toString();
  }
}
