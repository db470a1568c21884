package io.kvtier.core.cache;

/**
 * What a finished L3 prefetch put into the tree for a request: host-only nodes covering {@code
 * tokens} tokens from {@code startToken}. The request's admission loads them to the device like
 * any host hit; a scheduler counts the part of that load-back inside this range as L3 hit.
 *
 * @param requestId the request
 * @param startToken where the prefetched range begins, from the root (a page multiple)
 * @param tokens tokens inserted (a page multiple), 0 when nothing was fetched
 */
public record PrefetchOutcome(long requestId, int startToken, int tokens) {

  /** Validates the fields. */
  public PrefetchOutcome {
    if (startToken < 0 || tokens < 0) {
      throw new IllegalArgumentException(
          "startToken=" + startToken + " tokens=" + tokens + " must be >= 0");
    }
  }

  /**
   * Tokens of {@code [from, to)} inside the prefetched range.
   *
   * @param from the first token of a range
   * @param to the end of the range
   * @return the overlap, at least 0
   */
  public int overlap(int from, int to) {
    return Math.max(0, Math.min(to, startToken + tokens) - Math.max(from, startToken));
  }
}
