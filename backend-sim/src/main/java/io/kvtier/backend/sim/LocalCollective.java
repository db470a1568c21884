package io.kvtier.backend.sim;

import io.kvtier.spi.Collective;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.Objects;

/** One rank's handle on a {@link LocalGroup}. Its calls come from one thread at a time. */
final class LocalCollective implements Collective {

  private final LocalGroup group;
  private final int rank;
  private final long watchdogNanos;
  private long sequence;

  LocalCollective(LocalGroup group, int rank, Duration watchdog) {
    this.group = group;
    this.rank = rank;
    long nanos;
    try {
      nanos = watchdog.toNanos();
    } catch (ArithmeticException e) {
      nanos = Long.MAX_VALUE;
    }
    this.watchdogNanos = nanos;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return group.worldSize();
  }

  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(values, "values");
    Objects.requireNonNull(tag, "tag");
    LocalCall call = new LocalCall(LocalCall.Kind.of(op), tag, sequence++, values.length);
    long[] reduced = (long[]) group.arrive(rank, call, values, watchdogNanos);
    return reduced.clone();
  }

  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    return broadcast(root, payload, tag, watchdogNanos, false);
  }

  private byte[] broadcast(
      int root, byte[] payload, String tag, long waitNanos, boolean watchLiveness) {
    Objects.requireNonNull(tag, "tag");
    if (root < 0 || root >= size()) {
      throw new IllegalArgumentException(
          "root="
              + root
              + " must be a rank in [0, "
              + size()
              + ") of group '"
              + group.name()
              + "'");
    }
    if (root == rank) {
      Objects.requireNonNull(payload, "payload must not be null on the root rank");
    }
    LocalCall call = new LocalCall(LocalCall.Kind.BROADCAST, tag, sequence++, root);
    byte[] sent =
        (byte[]) group.arrive(rank, call, root == rank ? payload : null, waitNanos, watchLiveness);
    return sent.clone();
  }

  /**
   * The broadcast with no watchdog: ends when the round completes, or when the group breaks,
   * which includes a rank found gone (its thread ended without closing its handle) while this one
   * waits for it.
   */
  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    return broadcast(root, payload, tag, Long.MAX_VALUE, true);
  }

  @Override
  public void barrier(String tag) {
    Objects.requireNonNull(tag, "tag");
    group.arrive(
        rank, new LocalCall(LocalCall.Kind.BARRIER, tag, sequence++, 0), null, watchdogNanos);
  }

  @Override
  public void close() {
    group.leave(rank);
  }

  @Override
  public String toString() {
    return "LocalCollective[group=" + group.name() + ", rank=" + rank + "/" + size() + "]";
  }
}
