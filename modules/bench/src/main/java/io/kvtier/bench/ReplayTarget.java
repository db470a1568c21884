package io.kvtier.bench;

import java.util.Objects;

/**
 * A prefix cache that a benchmark replays a trace through, one request at a time. Each request is
 * a full serving step with an empty output: match the prompt's cached prefix and lock it, allocate
 * slots for the uncached rest (evicting when short), insert the prompt, free the slots the tree
 * already had, unlock. Implementations: {@link ReferenceRadixCache} (SGLang's semantics, the peer
 * baseline), and an adapter of kvtier's engine.
 */
public interface ReplayTarget {

  /**
   * A short name for reports.
   *
   * @return the name, for example {@code reference}
   */
  String name();

  /** Empties the cache: every slot free, no node but the root. */
  void reset();

  /**
   * Serves one request.
   *
   * @param prompt the prompt's token ids; not modified, and not retained beyond the call
   * @return the number of prompt tokens that were cached (matched) before the request's insert
   */
  long replay(int[] prompt);

  /**
   * Serves every prompt in order and sums up.
   *
   * @param prompts the prompts
   * @return the totals
   */
  default ReplayResult replayAll(int[][] prompts) {
    Objects.requireNonNull(prompts, "prompts");
    long tokens = 0;
    long cached = 0;
    for (int[] p : prompts) {
      tokens += p.length;
      cached += replay(p);
    }
    return new ReplayResult(prompts.length, tokens, cached);
  }

  /**
   * The totals of a replay.
   *
   * @param requests requests served, at least 0
   * @param promptTokens prompt tokens over all requests, at least 0
   * @param cachedTokens of those, the ones matched in the cache, at most {@code promptTokens}
   */
  record ReplayResult(long requests, long promptTokens, long cachedTokens) {

    /** Validates the fields. */
    public ReplayResult {
      if (requests < 0 || promptTokens < 0 || cachedTokens < 0 || cachedTokens > promptTokens) {
        throw new IllegalArgumentException(
            ("requests=%d promptTokens=%d cachedTokens=%d must be >= 0 with cachedTokens <="
                    + " promptTokens")
                .formatted(requests, promptTokens, cachedTokens));
      }
    }

    /**
     * The hit ratio.
     *
     * @return {@code cachedTokens / promptTokens}, or 0 for an empty replay
     */
    public double hitRatio() {
      return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
    }
  }
}
