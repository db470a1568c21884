package io.kvtier.simulator;

import java.util.Locale;

/**
 * The counters of a {@link SimulationResult}, read by name ({@link SimulationResult#get}).
 * Replicated ones come from rank 0 (equal on every rank of a healthy run); {@link
 * #KV_VERIFIED_PAGES}, {@link #KV_MISMATCHES}, {@link #LEAKED_PAGES} and the snapshot checks are
 * summed over ranks. Adding a counter is adding a constant (and setting it where the simulator
 * builds its result).
 */
public enum SimulationCounter {
  /** Requests that arrived. */
  REQUESTS,
  /** Requests finished. */
  FINISHED,
  /** Requests aborted by a command. */
  ABORTED,
  /** Requests dropped because they could never get their pages. */
  REJECTED,
  /** Requests ended because a load-back they needed failed ({@code --on-load-failure fail}). */
  LOAD_FAILURE_ABORTS,
  /** Requests whose load-back failed and that went back to the queue to be recomputed. */
  LOAD_FAILURE_RECOMPUTES,
  /** Tokens those failed load-backs were to bring back, recomputed (or fetched) instead. */
  LOAD_FAILURE_LOST_TOKENS,
  /** Ticks run, the drain included. */
  TICKS,
  /** Prompt tokens of admitted requests. */
  PROMPT_TOKENS,
  /** Tokens whose KV the model computed: prefill and decode. */
  COMPUTED_TOKENS,
  /**
   * The prompt tokens among {@link #COMPUTED_TOKENS}; the rest are decode tokens. The prompt
   * tokens are the reused ones, these, and those that requests aborted before their prefill ended
   * never reached.
   */
  PREFILL_TOKENS,
  /**
   * Requests of the workload that never arrived: the input ended at {@link
   * SimulationConfig#ticks()} or {@link SimulationConfig#requests()}, or the run stopped, before
   * the workload was replayed to its end.
   */
  UNREAD_REQUESTS,
  /** Collective desyncs and watchdog timeouts (a run stops at the first). */
  DESYNCS,
  /**
   * Device and host pages neither free nor evictable after the drain; 0 when the run stopped
   * before the end of its drain (any failure but {@link SimulationFailure#LEAK} and {@link
   * SimulationFailure#REPLICA_DIVERGENCE}: a failed rank, a desync, a timeout): the pages of the
   * requests in flight are not leaks.
   */
  LEAKED_PAGES,
  /** Pages whose KV the model checked after a load-back. */
  KV_VERIFIED_PAGES,
  /** Checked pages whose KV was wrong. */
  KV_MISMATCHES,
  /**
   * Host blocks (page, layer) whose bytes no longer matched their CRC32C when a load-back or an
   * L3 write read them, summed over ranks: each failed its load (docs/CACHE.md, "Verified
   * restores"). Not a failed check: {@code --flip-probability} injects exactly these.
   */
  HOST_CHECKSUM_MISMATCHES,
  /**
   * Resumes from a recurrent-state snapshot that the model checked (a request's first step from a
   * position above 0); 0 without snapshots.
   */
  SNAPSHOTS_VERIFIED,
  /** Checked resumes whose state was wrong or missing. */
  SNAPSHOT_MISMATCHES,
  /**
   * Pages reserved for an L3 prefetch and not taken: some rank had not fetched them by the
   * decision (slow, failed, lost, or damaged in its store); replicated. The request computes
   * those tokens instead.
   */
  L3_PAGES_MISSED,
  /** L3 prefetches decided because some rank gave up waiting (timeout); replicated. */
  L3_PREFETCHES_TIMED_OUT,
  /**
   * Pages the L3 stores found damaged by their own CRC32C and answered as a miss, summed over
   * ranks (the stores' {@code corrupt} counters). Not a failed check: {@code
   * --l3-flip-probability} injects exactly these.
   */
  L3_CORRUPT_PAGES,
  /** Bits the fault injector flipped in stored L3 pages, summed over ranks. */
  L3_FLIPS_INJECTED;

  private final String key = key(name());

  /**
   * The counter's name in JSON and tables: the constant in lower camel case.
   *
   * @return for example {@code loadFailureAborts}
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
