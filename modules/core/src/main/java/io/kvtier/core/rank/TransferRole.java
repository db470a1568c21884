package io.kvtier.core.rank;

/**
 * A request's part in moving a prompt's KV from one replica to another through the shared L3
 * store (prefill/decode disaggregation, docs/SERVE.md "Prefill and decode replicas"). Replicated:
 * rank 0 broadcasts it with the request ({@link TickCommands}).
 */
public enum TransferRole {
  /** An ordinary request. */
  NONE,
  /**
   * The prefill side: at the request's end every full page of its prompt is backed up to the
   * host and written to L3 whatever the write thresholds, its pages locked until that write's
   * agreed commit, when {@link RequestListener#published} reports the pages stored and {@link
   * RequestListener#ended} follows.
   */
  PUBLISH,
  /**
   * The decode side: the request's L3 prefetch is started whatever the prefetch threshold, and
   * waits until every rank has fetched the pages or failed, bounded by the L3 timeout, whatever
   * the engine's prefetch policy. Pages it does not find are computed, never an error.
   */
  AWAIT
}
