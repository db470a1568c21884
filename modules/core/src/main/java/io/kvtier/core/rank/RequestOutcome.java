package io.kvtier.core.rank;

/** How a request left a {@link RankEngine}, as {@link RequestListener#ended} reports it. */
public enum RequestOutcome {
  /** Step 5: it computed and generated everything; its tokens were inserted into the cache. */
  FINISHED,
  /** Step 1: a command aborted it, waiting or running. */
  ABORTED,
  /**
   * Step 1 or 3: it was dropped, with its reason told to {@link RequestListener#rejected}: in
   * step 1 when it cannot enter (a token outside the vocabulary, too long, an id that a live
   * request has: that one goes on, and the listener hears this one's rejection and end under the
   * same id), in step 3 when it can
   * never get its pages (larger than the device pool can free).
   */
  REJECTED,
  /** Step 4: a load-back its prefix needed failed to copy, so it was aborted. */
  LOAD_FAILED
}
