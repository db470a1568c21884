package io.kvtier.core.rank;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.ForwardingCollective;
import io.kvtier.spi.ReduceOp;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Logs every collective call a rank makes, so that a test (the simulator) or a debug run can
 * check that every rank issued the same collective sequence, and count calls per tag.
 *
 * <p>Kept per call: a running 64-bit hash of (operation, reduce op, array length or root, tag)
 * over the whole sequence, a count per tag, and the last {@value #HISTORY} calls. Two ranks have
 * issued the same sequence iff their counts and hashes are equal (up to hash collisions). A call
 * is logged before it is delegated, so a call that fails or hangs is the last one in the log.
 *
 * <p>Not thread-safe, like the collective it wraps: one thread per rank.
 */
public final class RecordingCollective extends ForwardingCollective {
  /** Calls kept in {@link #recentCalls()}. */
  public static final int HISTORY = 16;

  /**
   * One logged call.
   *
   * @param sequence the call's position in this rank's sequence, from 0
   * @param operation the operation with its shape, for example {@code allReduce(MIN, length=4)}
   * @param tag the call site
   */
  public record Call(long sequence, String operation, String tag) {
    @Override
    public String toString() {
      return "#" + sequence + " " + operation + " '" + tag + "'";
    }
  }

  private final ArrayDeque<Call> recent = new ArrayDeque<>(HISTORY);
  private final TreeMap<String, Long> byTag = new TreeMap<>();
  private final Digest schedule = new Digest(0x5CEDC0DEL);
  private long calls;
  private CollectiveException groupFailure;

  /**
   * Wraps a collective.
   *
   * @param delegate the collective that runs the calls
   */
  public RecordingCollective(Collective delegate) {
    super(delegate);
  }

  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(values, "values");
    log(1, op.ordinal(), values.length, tag);
    try {
      return super.allReduce(op, values, tag);
    } catch (CollectiveException e) {
      throw failed(e);
    }
  }

  /** Logged as {@link #allReduce} is (the forms may mix), then the delegate's own form. */
  @Override
  public void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
    Objects.requireNonNull(op, "op");
    Collective.checkIntoArguments(values, result);
    log(1, op.ordinal(), values.length, tag);
    try {
      super.allReduceInto(op, values, result, tag);
    } catch (CollectiveException e) {
      throw failed(e);
    }
  }

  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    log(2, 0, root, tag);
    try {
      return super.broadcast(root, payload, tag);
    } catch (CollectiveException e) {
      throw failed(e);
    }
  }

  /**
   * Logged as {@link #broadcast} is: the same call, only waited for without the watchdog, so an
   * idle wait leaves the schedule hash as a bounded broadcast would.
   */
  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    log(2, 0, root, tag);
    try {
      return delegate.awaitBroadcast(root, payload, tag);
    } catch (CollectiveException e) {
      throw failed(e);
    }
  }

  @Override
  public void barrier(String tag) {
    log(3, 0, 0, tag);
    try {
      super.barrier(tag);
    } catch (CollectiveException e) {
      throw failed(e);
    }
  }

  /** Notes a failure that the group itself reported through this handle, and returns it. */
  private CollectiveException failed(CollectiveException e) {
    groupFailure = e;
    return e;
  }

  /**
   * The last {@link CollectiveException} that the wrapped group threw through this handle, or
   * null: a failure of the group itself, which by the {@link Collective} contract broke the group
   * on every rank (every later call throws), unlike one that a caller's own collective or code
   * threw on its rank alone. The engine decides by it, never by an exception's type, whether a
   * failed step's cause already reached the other ranks.
   *
   * @return the failure, or null if none since {@link #forgetGroupFailure()}
   */
  CollectiveException groupFailure() {
    return groupFailure;
  }

  /** Forgets the failure {@link #groupFailure()} returns; the engine does it as a step begins. */
  void forgetGroupFailure() {
    groupFailure = null;
  }

  /**
   * The number of calls made so far.
   *
   * @return the count
   */
  public long calls() {
    return calls;
  }

  /**
   * The hash of the whole call sequence so far; equal on ranks that issued the same sequence.
   *
   * @return the hash
   */
  public long scheduleHash() {
    return schedule.value();
  }

  /**
   * Calls per tag, in tag order.
   *
   * @return a copy
   */
  public Map<String, Long> callsByTag() {
    return new TreeMap<>(byTag);
  }

  /**
   * The calls of one tag.
   *
   * @param tag the tag
   * @return the count, 0 if never called
   */
  public long calls(String tag) {
    return byTag.getOrDefault(tag, 0L);
  }

  /**
   * The last calls, oldest first.
   *
   * @return a copy of at most {@value #HISTORY} calls
   */
  public List<Call> recentCalls() {
    return List.copyOf(recent);
  }

  private void log(int kind, int op, int shape, String tag) {
    Objects.requireNonNull(tag, "tag");
    String operation =
        switch (kind) {
          case 1 -> "allReduce(" + ReduceOp.values()[op] + ", length=" + shape + ")";
          case 2 -> "broadcast(root=" + shape + ")";
          default -> "barrier";
        };
    if (recent.size() == HISTORY) {
      recent.removeFirst();
    }
    recent.addLast(new Call(calls, operation, tag));
    schedule.add(kind).add(op).add(shape).add(tag);
    byTag.merge(tag, 1L, Long::sum);
    calls++;
  }

  @Override
  public String toString() {
    return "RecordingCollective[rank=" + rank() + ", calls=" + calls + ", recent=" + recent + "]";
  }
}
