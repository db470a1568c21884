package io.kvtier.core.rank;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.ForwardingCollective;
import io.kvtier.spi.ReduceOp;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.Objects;

/**
 * Makes any {@link Collective} check that every rank is at the same call (operation, tag, shape)
 * and sequence number before the call runs, so that ranks that took different decisions fail
 * with {@link CollectiveDesyncException} on every rank instead of entering mismatched
 * collectives (which MPI leaves undefined: usually a hang).
 *
 * <p>How: before each call, every rank all-reduces with MIN a fixed-shape header {@code [fp, ~fp,
 * seq, ~seq]}, where {@code fp} is a 64-bit fingerprint of the call. MIN of {@code ~x} is {@code
 * ~MAX(x)}, so one reduction yields both the minimum and the maximum of the fingerprint and of
 * the sequence number; they are equal iff all ranks agree. Because every guarded call starts with
 * the same header reduction, ranks at different calls still meet in a well-formed collective.
 * On a mismatch every rank sees the same reduced header, so every rank takes the same error path:
 * each rank in turn broadcasts a description of its call and recent history, and every rank
 * throws the same message naming all ranks' calls.
 *
 * <p>Cost: one extra 4-element reduction per call. Providers that check natively (the {@code
 * local} collective does) need not be wrapped.
 */
public final class GuardedCollective extends ForwardingCollective {
  private static final int HISTORY = 8;
  private static final String GUARD_TAG = "guard";

  private final Deque<String> history = new ArrayDeque<>();

  /** The guard's reduction, in place: one array for every call. */
  private final long[] header = new long[4];

  private long sequence;
  private boolean broken;

  /**
   * Wraps a collective.
   *
   * @param delegate the collective whose calls are checked
   */
  public GuardedCollective(Collective delegate) {
    super(delegate);
  }

  /**
   * The number of guarded calls made so far (the next call's sequence number).
   *
   * @return the sequence number
   */
  public long sequence() {
    return sequence;
  }

  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(values, "values");
    check("allReduce(" + op + ", length=" + values.length + ")", tag);
    return super.allReduce(op, values, tag);
  }

  /** The same guard as {@link #allReduce} (the forms may mix), then the delegate's own form. */
  @Override
  public void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
    Objects.requireNonNull(op, "op");
    Collective.checkIntoArguments(values, result);
    check("allReduce(" + op + ", length=" + values.length + ")", tag);
    super.allReduceInto(op, values, result, tag);
  }

  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    check("broadcast(root=" + root + ")", tag);
    return super.broadcast(root, payload, tag);
  }

  /**
   * The delegate's own unbounded wait, without the header reduction: the header would be the
   * call that waits, and it is bounded. Every rank of an idle group makes this call, so the
   * sequence numbers stay in step; whether the ranks agree on it is left to the delegate, which
   * must check calls natively (all providers here do) to offer an unbounded wait.
   */
  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    Objects.requireNonNull(tag, "tag");
    if (broken) {
      check("broadcast(root=" + root + ")", tag); // throws: the group is broken
    }
    byte[] result = delegate.awaitBroadcast(root, payload, tag);
    remember("awaitBroadcast(root=" + root + ") tag '" + tag + "' seq " + sequence);
    sequence++;
    return result;
  }

  @Override
  public void barrier(String tag) {
    check("barrier", tag);
    super.barrier(tag);
  }

  private void check(String call, String tag) {
    Objects.requireNonNull(tag, "tag");
    if (broken) {
      throw new CollectiveDesyncException(
          "rank "
              + rank()
              + ": collective group is broken by an earlier desync; call "
              + call
              + " tag '"
              + tag
              + "' refused");
    }
    String described = call + " tag '" + tag + "' seq " + sequence;
    long fp = fingerprint(call, tag);
    long[] reduced = header;
    reduced[0] = fp;
    reduced[1] = ~fp;
    reduced[2] = sequence;
    reduced[3] = ~sequence;
    delegate.allReduceInto(ReduceOp.MIN, reduced, reduced, GUARD_TAG);
    boolean agree =
        reduced[0] == ~reduced[1]
            && reduced[2] == ~reduced[3]
            && reduced[0] == fp
            && reduced[2] == sequence;
    remember(described);
    if (!agree) {
      broken = true;
      throw new CollectiveDesyncException(describeAll(described));
    }
    sequence++;
  }

  /** Every rank broadcasts its view in rank order; all ranks build the same message. */
  private String describeAll(String mine) {
    StringBuilder message =
        new StringBuilder("collective desync: ranks called different collectives:");
    byte[] own =
        (mine + "; recent: " + String.join(" | ", history)).getBytes(StandardCharsets.UTF_8);
    for (int r = 0; r < size(); r++) {
      byte[] line = delegate.broadcast(r, r == rank() ? own : null, GUARD_TAG);
      message
          .append("\n  rank ")
          .append(r)
          .append(": ")
          .append(new String(line, StandardCharsets.UTF_8));
    }
    return message.toString();
  }

  private void remember(String described) {
    if (history.size() == HISTORY) {
      history.removeFirst();
    }
    history.addLast(described);
  }

  /** FNV-1a over the call description and tag, then a SplitMix64 finalizer. */
  static long fingerprint(String call, String tag) {
    long h = 0xcbf29ce484222325L;
    for (byte b : (call + '\u0000' + tag).getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xFF;
      h *= 0x100000001b3L;
    }
    h = (h ^ (h >>> 30)) * 0xBF58476D1CE4E5B9L;
    h = (h ^ (h >>> 27)) * 0x94D049BB133111EBL;
    return h ^ (h >>> 31);
  }

  @Override
  public String toString() {
    return "GuardedCollective[rank="
        + rank()
        + ", size="
        + size()
        + ", seq="
        + sequence
        + ", recent="
        + Arrays.toString(history.toArray())
        + "]";
  }
}
