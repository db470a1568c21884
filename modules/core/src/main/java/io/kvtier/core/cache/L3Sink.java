package io.kvtier.core.cache;

/**
 * The replicated side's only way to start rank-local L3 work: it starts puts, probes and fetches
 * and returns nothing readable (compare {@link CopySink}). Completion comes back only through
 * the agreed arguments of the commit calls.
 */
interface L3Sink {

  /**
   * Queues the put of pages (by their tree page hashes) from host slots, and of the snapshots at
   * the ends of the pages named by {@code snapshotHashes} (each {@code snapshotSlots.length /
   * snapshotHashes.length} slots, in order); pairs with the FIFO. One put: it fails as a whole.
   */
  void put(byte[][] pageHashes, int[] hostSlots, byte[][] snapshotHashes, int[] snapshotSlots);

  /** The first {@code n} puts were committed. */
  void committedPuts(int n);

  /**
   * Starts prefetch {@code sequence}'s probe of its candidate pages, whose hashes and keys the
   * rank computes as far as it needs them; its clock starts now. With
   * {@code snapshotSlots > 0} the probe then looks for the deepest candidate end whose snapshot
   * the store has (HYBRID.md §6).
   */
  void probe(long sequence, CandidatePages candidates, int snapshotSlots, long timeoutNanos);

  /**
   * Probes prefetch {@code sequence}'s snapshots again, at candidate ends of at most {@code
   * bound} pages (the ranks' deepest ends differed); the clock runs on.
   */
  void reprobe(long sequence, int bound);

  /**
   * Starts fetching the first {@code pages} candidate pages into {@code hostSlots}, then, with
   * {@code snapshotSlots > 0}, the snapshot at the end of page {@code pages - 1} into the
   * {@code snapshotSlots} slots after them.
   */
  void fetch(long sequence, int pages, int[] hostSlots, int snapshotSlots);

  /** Asks prefetch {@code sequence}'s work to stop. */
  void cancel(long sequence);

  /** Prefetch {@code sequence} left the pending list: drop its handles. */
  void forget(long sequence);
}
