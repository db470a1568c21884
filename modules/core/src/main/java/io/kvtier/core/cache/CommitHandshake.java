package io.kvtier.core.cache;

import java.util.BitSet;
import java.util.Objects;

/**
 * The cache's {@link CommitPort}: the commit protocol's answers and commits, with the checks the
 * cache's other entry points make (arguments, and the engine's schedule once it is bound).
 */
final class CommitHandshake implements CommitPort {
  private final RankCache cache;
  private final CommitProtocol protocol;
  private final Backups backups;
  private final LoadBacks loadBacks;
  private final L3Port l3;

  CommitHandshake(
      RankCache cache, CommitProtocol protocol, Backups backups, LoadBacks loadBacks, L3Port l3) {
    this.cache = cache;
    this.protocol = protocol;
    this.backups = backups;
    this.loadBacks = loadBacks;
    this.l3 = l3;
  }

  @Override
  public int outstandingOperations() {
    return protocol.outstanding();
  }

  @Override
  public int pendingWrites() {
    return backups.writes.size();
  }

  @Override
  public int pendingLoads() {
    return loadBacks.loads.size();
  }

  @Override
  public int pendingL3Writes() {
    return l3.pendingWrites();
  }

  @Override
  public int pendingPrefetches() {
    return l3.pendingPrefetches();
  }

  @Override
  public int readyWritePrefix() {
    return protocol.readyWritePrefix();
  }

  @Override
  public int readyLoadPrefix() {
    return protocol.readyLoadPrefix();
  }

  @Override
  public int readyL3WritePrefix() {
    return l3.readyWritePrefix();
  }

  @Override
  public BitSet localWriteFailures(int n) {
    return protocol.localWriteFailures(n);
  }

  @Override
  public BitSet localLoadFailures(int n) {
    return protocol.localLoadFailures(n);
  }

  @Override
  public BitSet localL3WriteFailures(int n) {
    return l3.localWriteFailures(n);
  }

  @Override
  public void localPrefetchProgress(long[] into, int offset) {
    l3.localPrefetchProgress(Objects.requireNonNull(into, "into"), offset);
  }

  @Override
  public void commitLoads(int n, BitSet failed) {
    cache.schedule().checkMutation("commits().commitLoads");
    protocol.commitLoads(n, Objects.requireNonNull(failed, "failed"));
  }

  @Override
  public void commitWrites(int n, BitSet failed) {
    cache.schedule().checkMutation("commits().commitWrites");
    protocol.commitWrites(n, Objects.requireNonNull(failed, "failed"));
  }

  @Override
  public void commitL3Writes(int n, BitSet failed) {
    cache.schedule().checkMutation("commits().commitL3Writes");
    l3.commitWrites(n, Objects.requireNonNull(failed, "failed"));
  }

  @Override
  public void commitPrefetches(long[] agreed, int offset, int count) {
    cache.schedule().checkMutation("commits().commitPrefetches");
    l3.commitPrefetches(Objects.requireNonNull(agreed, "agreed"), offset, count);
  }

  @Override
  public void commitWrites(int n) {
    cache.schedule().checkSingleRank("commits().commitWrites(int)", "commitWrites(int, BitSet)");
    protocol.commitWrites(n, protocol.localWriteFailures(n));
  }

  @Override
  public void commitLoads(int n) {
    cache.schedule().checkSingleRank("commits().commitLoads(int)", "commitLoads(int, BitSet)");
    protocol.commitLoads(n, protocol.localLoadFailures(n));
  }
}
