package io.kvtier.core.rank;

/** How a request left a {@link RankEngine}, as {@link RequestListener#ended} reports it. */
public enum RequestOutcome {
  /** Step 5: it computed and generated everything; its tokens were inserted into the cache. */
  FINISHED,
  /** Step 1: a command aborted it, waiting or running. */
  ABORTED,
  /** Step 3: it can never get its pages (larger than the device pool can free) and was dropped. */
  REJECTED,
  /** Step 4: a load-back its prefix needed failed to copy, so it was aborted. */
  LOAD_FAILED
}
