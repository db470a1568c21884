package io.kvtier.serving;

/**
 * What a request's part in a prompt KV transfer between replicas did ({@link
 * GenerationEngine.GenerationRequest#transfer()}, docs/SERVE.md "Prefill and decode replicas").
 *
 * @param pagesPublished the prefill side: prompt pages its publish left in the L3 store (fewer
 *     than its full pages when a write failed), -1 for a request that published nothing
 * @param pagesExpected the decode side: pages its handle named, -1 for a request without a handle
 * @param pagesFetched the decode side: pages of its prompt fetched from the L3 store
 * @param pagesRecomputed the decode side: pages of its handle found in no tier and computed
 * @param nanos the prefill side: from the end of its prompt to the publish's agreed end; the
 *     decode side: from its submission to its admission (the wait for the handle's pages)
 */
public record TransferOutcome(
    int pagesPublished, int pagesExpected, int pagesFetched, int pagesRecomputed, long nanos) {
  /** No transfer. */
  public static final TransferOutcome NONE = new TransferOutcome(-1, -1, 0, 0, 0);

  /**
   * Whether this is the prefill side's outcome.
   *
   * @return true if the request published
   */
  public boolean published() {
    return pagesPublished >= 0;
  }

  /**
   * Whether this is the decode side's outcome.
   *
   * @return true if the request had a handle
   */
  public boolean awaited() {
    return pagesExpected >= 0;
  }
}
