package io.kvtier.core.cache;

/**
 * The replicated side's only way to start rank-local L3 work: it starts puts, probes and fetches
 * and returns nothing readable (compare {@link CopySink}). Completion comes back only through
 * the agreed arguments of the commit calls.
 */
interface L3Sink {

  /** Queues the put of pages (by their tree page hashes) from host slots; pairs with the FIFO. */
  void put(byte[][] pageHashes, int[] hostSlots);

  /** The first {@code n} puts were committed. */
  void committedPuts(int n);

  /** Starts prefetch {@code sequence}'s probe of its candidate pages; its clock starts now. */
  void probe(long sequence, byte[][] pageHashes, long timeoutNanos);

  /** Starts fetching the first {@code pages} candidate pages into {@code hostSlots}. */
  void fetch(long sequence, byte[][] pageHashes, int pages, int[] hostSlots);

  /** Asks prefetch {@code sequence}'s work to stop. */
  void cancel(long sequence);

  /** Prefetch {@code sequence} left the pending list: drop its handles. */
  void forget(long sequence);
}
