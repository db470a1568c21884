package io.kvtier.core.cache;

import io.kvtier.core.config.L3Config;
import java.util.BitSet;
import java.util.Objects;
import java.util.Optional;

/**
 * The L3 tier of a cache with a store: the replicated controller ({@link L3Tier}, which sees the
 * rank-local side only as a write-only {@link L3Sink}) and the rank-local progress ({@link
 * L3Progress}), held as such here only. Its rank-local exits are the ready prefix, the failure
 * set and the prefetch values that the rank protocol reduces before it hands them back to the
 * commits.
 */
final class L3Room implements L3Port {
  private final L3Tier tier;
  private final L3Progress progress;

  /** The outcome of the last admitted request's prefetch, for {@link #admittedPrefetch}. */
  private PrefetchOutcome lastOutcome;

  L3Room(L3Tier tier, L3Progress progress) {
    this.tier = tier;
    this.progress = progress;
  }

  /**
   * The tier of a cache built with {@code setup}, over its host pool, for snapshots of {@code
   * snapshotSlots} page slots (0: the model has none).
   */
  static L3Room of(
      L3Setup setup,
      io.kvtier.spi.HostMemory host,
      HostChecksums sums,
      CacheTree tree,
      PoolLedger ledger,
      Evictor evictor,
      int snapshotSlots) {
    L3Progress progress = new L3Progress(setup, host, sums);
    return new L3Room(
        new L3Tier(setup.config(), tree, ledger, evictor, progress, snapshotSlots), progress);
  }

  L3Tier tier() {
    return tier;
  }

  L3Progress progress() {
    return progress;
  }

  @Override
  public boolean present() {
    return true;
  }

  @Override
  public Optional<L3Config> config() {
    return Optional.of(tier.config);
  }

  @Override
  public void maybeWrite(RadixNode node) {
    tier.maybeWrite(node);
  }

  @Override
  public void forceWrite(RadixNode node) {
    tier.forceWrite(node);
  }

  @Override
  public void checkAdmittable(long requestId) {
    Prefetch p = tier.prefetches.byRequest.get(requestId);
    if (p != null && p.state != Prefetch.State.DONE) {
      throw new IllegalStateException(
          "admit of request id="
              + requestId
              + ": its L3 prefetch"
              + " is still "
              + p.state
              + "; admit it once prefetchState says DONE, or cancel it");
    }
  }

  @Override
  public void admitted(long requestId) {
    PrefetchOutcome outcome = tier.take(requestId);
    if (outcome != null) {
      lastOutcome = outcome;
    }
  }

  @Override
  public Optional<PrefetchOutcome> admittedPrefetch(long requestId) {
    PrefetchOutcome o = lastOutcome;
    return o != null && o.requestId() == requestId ? Optional.of(o) : Optional.empty();
  }

  @Override
  public boolean start(
      long requestId,
      long namespace,
      int[] tokens,
      int aligned,
      RadixNode anchor,
      boolean awaitTransfer) {
    return tier.start(requestId, namespace, tokens, aligned, anchor, awaitTransfer);
  }

  @Override
  public RankCache.PrefetchState state(long requestId) {
    Prefetch p = tier.prefetches.byRequest.get(requestId);
    if (p == null) {
      return RankCache.PrefetchState.NONE;
    }
    return p.state == Prefetch.State.DONE
        ? RankCache.PrefetchState.DONE
        : RankCache.PrefetchState.RUNNING;
  }

  @Override
  public void cancel(long requestId) {
    tier.cancel(requestId);
  }

  @Override
  public int outstanding() {
    return tier.outstanding();
  }

  @Override
  public int pendingWrites() {
    return tier.writes.queue.size();
  }

  @Override
  public int pendingPrefetches() {
    return tier.prefetches.pending.size();
  }

  @Override
  public int readyWritePrefix() {
    return progress.readyPutPrefix();
  }

  @Override
  public BitSet localWriteFailures(int n) {
    return progress.putFailures(n);
  }

  @Override
  public void commitWrites(int n, BitSet failed) {
    tier.commitWrites(n, failed);
  }

  @Override
  public void localPrefetchProgress(long[] into, int offset) {
    Objects.checkFromIndexSize(
        offset, L3Tier.PREFETCH_WIDTH * tier.prefetches.pending.size(), into.length);
    progress.prefetchProgress(tier.prefetches.pending, into, offset);
  }

  @Override
  public void commitPrefetches(long[] agreed, int offset, int count) {
    tier.commitPrefetches(agreed, offset, count);
  }

  @Override
  public L3Stats stats() {
    return tier.stats();
  }

  @Override
  public Optional<L3Room> room() {
    return Optional.of(this);
  }
}
