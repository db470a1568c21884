package io.kvtier.core.cache;

import io.kvtier.core.config.L3Config;
import java.util.BitSet;
import java.util.Optional;

/** The L3 tier of a cache without one: nothing is stored, nothing is pending. */
final class NoL3 implements L3Port {
  @Override
  public boolean present() {
    return false;
  }

  @Override
  public Optional<L3Config> config() {
    return Optional.empty();
  }

  @Override
  public void maybeWrite(RadixNode node) {}

  @Override
  public void forceWrite(RadixNode node) {}

  @Override
  public void checkAdmittable(long requestId) {}

  @Override
  public void admitted(long requestId) {}

  @Override
  public Optional<PrefetchOutcome> admittedPrefetch(long requestId) {
    return Optional.empty();
  }

  @Override
  public boolean start(
      long requestId,
      long namespace,
      int[] tokens,
      int aligned,
      RadixNode anchor,
      boolean awaitTransfer) {
    return false;
  }

  @Override
  public RankCache.PrefetchState state(long requestId) {
    return RankCache.PrefetchState.NONE;
  }

  @Override
  public void cancel(long requestId) {}

  @Override
  public int outstanding() {
    return 0;
  }

  @Override
  public int pendingWrites() {
    return 0;
  }

  @Override
  public int pendingPrefetches() {
    return 0;
  }

  @Override
  public int readyWritePrefix() {
    return 0;
  }

  @Override
  public BitSet localWriteFailures(int n) {
    return new BitSet();
  }

  @Override
  public void commitWrites(int n, BitSet failed) {
    if (n != 0) {
      throw new IllegalArgumentException("cannot commit " + n + " L3 writes: no L3 tier");
    }
  }

  @Override
  public void localPrefetchProgress(long[] into, int offset) {}

  @Override
  public void commitPrefetches(long[] agreed, int offset, int count) {
    if (count != 0) {
      throw new IllegalArgumentException("cannot commit " + count + " prefetches: no L3 tier");
    }
  }

  @Override
  public L3Stats stats() {
    return L3Stats.NONE;
  }

  @Override
  public Optional<L3Room> room() {
    return Optional.empty();
  }
}
