package io.kvtier.collective.mpi.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.kvtier.collective.mpi.MpiConfig;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.ReduceOp;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * This process's handle on {@code MPI_COMM_WORLD}. Every call starts with the {@link MpiFrame
 * guard frame}, which checks that all ranks make the same call and carries the payload of MIN/MAX
 * reductions and the size of a broadcast:
 *
 * <ul>
 *   <li>{@code allReduce(MIN|MAX)}: the frame only, when the frame's capacity holds the values
 *       (capacity predicted from the agreed calls by {@link MpiFrameCapacity}: after one pass of
 *       an engine's call sites, every call of at most {@code mpi.inline-longs} values);
 *       otherwise the frame, then {@code MPI_Allreduce} of the values;
 *   <li>{@code allReduce(SUM)}: the frame, then {@code MPI_Allreduce} of the values (MIN cannot
 *       fold a sum, and a second reduction op in one call would need a user-defined MPI op);
 *   <li>{@code broadcast}: the frame (the root's size in the first payload slot, the others
 *       contribute {@code Long.MAX_VALUE}), then {@code MPI_Bcast} of the bytes when not empty;
 *   <li>{@code barrier}: the frame, which no rank leaves before every rank has entered.
 * </ul>
 *
 * <p>A frame that disagrees fails every rank with {@link CollectiveDesyncException}, with the
 * message {@link MpiDesyncReport} gathers from every rank. Any failure breaks the handle: later
 * calls throw without calling MPI.
 *
 * <p>Hot path: no allocation but the result, no atomic read-modify-write, the fingerprint cached
 * per call site, buffers reused. Measured in docs/PERFORMANCE.md, "MPI allReduce latency": one
 * {@code MPI_Allreduce} per MIN/MAX instead of two took a 64-value call from 2.0-2.6x C to
 * 1.23-1.34x ({@code allReduce}) and 1.09-1.17x ({@code allReduceInto}, no result array); the
 * 2-long header (instead of 4 + 4 inline slots) made a 1-value call's frame 3 longs, not 8.
 */
final class MpiCollective implements Collective {

  /** The join frame's length in longs. */
  private static final int JOIN_LONGS = 5;

  /** The frame buffers' first size in longs: the join frame and small calls fit. */
  private static final int FIRST_FRAME_LONGS = 16;

  private final MpiLibrary library;
  private final MpiCallGate gate;
  private final MpiRuntime runtime;
  private final String group;
  private final int rank;
  private final int size;
  private final int inline;
  private final MpiFrameCapacity capacity;
  private final MpiWatchdog watchdog;
  private MemorySegment frameOut;
  private MemorySegment frameIn;
  private long[] scratch;
  private MemorySegment payloadOut = MemorySegment.NULL;
  private MemorySegment payloadIn = MemorySegment.NULL;
  private MemorySegment bytes = MemorySegment.NULL;
  private final MpiFingerprints fingerprints = new MpiFingerprints();
  private long sequence;
  private CollectiveException broken;
  private volatile boolean closed;

  MpiCollective(MpiRuntime runtime, String group, int inlineLongs, MpiWatchdog watchdog) {
    this.runtime = runtime;
    this.library = runtime.library();
    this.gate = runtime.gate();
    this.group = group;
    this.rank = runtime.rank();
    this.size = runtime.size();
    this.inline = inlineLongs;
    this.capacity = new MpiFrameCapacity(inlineLongs);
    // Automatic arenas: a close() racing a call on another thread must not free a buffer that C
    // is still writing; the garbage collector frees them once the handle is gone.
    this.frameOut = Arena.ofAuto().allocate(JAVA_LONG, FIRST_FRAME_LONGS);
    this.frameIn = Arena.ofAuto().allocate(JAVA_LONG, FIRST_FRAME_LONGS);
    this.scratch = new long[FIRST_FRAME_LONGS];
    this.watchdog = watchdog;
  }

  /**
   * The join's agreement, one fixed-shape reduction of {@code [ok, gf, ~gf, inline, ~inline]}
   * (ok = this rank's spec matches the MPI world, gf = the group name's fingerprint), so that a
   * rank whose spec or configuration differs fails the join on every rank alike, instead of
   * leaving the others in frames of another shape.
   *
   * @param specProblem why this rank's spec contradicts the MPI world, or null
   * @throws IllegalArgumentException on every rank when any rank disagrees
   */
  void agreeOnJoin(String specProblem) {
    MpiCall call = new MpiCall(MpiCall.Kind.JOIN, 0, group, 0);
    long groupPrint = call.fingerprint();
    long token = gate.enter(call);
    try {
      frameOut.setAtIndex(JAVA_LONG, 0, specProblem == null ? 1 : 0);
      frameOut.setAtIndex(JAVA_LONG, 1, groupPrint);
      frameOut.setAtIndex(JAVA_LONG, 2, ~groupPrint);
      frameOut.setAtIndex(JAVA_LONG, 3, inline);
      frameOut.setAtIndex(JAVA_LONG, 4, ~inline);
      library.allReduce(frameOut, frameIn, JOIN_LONGS, ReduceOp.MIN);
    } finally {
      gate.exit(token);
    }
    if (frameIn.getAtIndex(JAVA_LONG, 0) == 0) {
      throw new IllegalArgumentException(
          specProblem != null
              ? specProblem
              : "another rank's spec contradicts the MPI world (see that rank's error), so every"
                  + " rank fails to join the mpi group '"
                  + group
                  + "'");
    }
    long minInline = frameIn.getAtIndex(JAVA_LONG, 3);
    long maxInline = ~frameIn.getAtIndex(JAVA_LONG, 4);
    if (minInline != maxInline) {
      throw new IllegalArgumentException(
          "the ranks disagree on "
              + MpiConfig.INLINE_LONGS
              + " (values from "
              + minInline
              + " to "
              + maxInline
              + "; this rank: "
              + inline
              + "): set the same value on every rank");
    }
    if (frameIn.getAtIndex(JAVA_LONG, 1) != ~frameIn.getAtIndex(JAVA_LONG, 2)) {
      throw new IllegalArgumentException(
          "the ranks joined with different group names (this"
              + " rank: '"
              + group
              + "'): the mpi collective has one group per process,"
              + " MPI_COMM_WORLD, so give every rank the same group name");
    }
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public long[] allReduce(ReduceOp op, long[] values, String tag) {
    Objects.requireNonNull(values, "values");
    long[] result = new long[values.length];
    reduce(op, values, result, tag);
    return result;
  }

  /** Skips the result array of {@link #allReduce}: measured in docs/PERFORMANCE.md. */
  @Override
  public void allReduceInto(ReduceOp op, long[] values, long[] result, String tag) {
    Collective.checkIntoArguments(values, result);
    reduce(op, values, result, tag);
  }

  private void reduce(ReduceOp op, long[] values, long[] result, String tag) {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(tag, "tag");
    ensureUsable();
    int length = values.length;
    MpiCall.Kind kind = MpiCall.Kind.allReduce(op);
    long token = gate.enter(kind, length, tag, sequence);
    try {
      long print = fingerprints.of(kind, length, tag);
      int slots = capacity.next();
      // The same on every rank whose frame agrees: same op, same length, same capacity.
      boolean fused = op != ReduceOp.SUM && length <= slots;
      ensureFrame(slots);
      MpiFrame.writeHeader(frameOut, MpiCall.sequenced(print, sequence));
      if (fused) {
        MpiFrame.writeInline(frameOut, values, op == ReduceOp.MAX, scratch);
      }
      reduceFrame(slots);
      capacity.agreed(print, op == ReduceOp.SUM ? 0 : length);
      if (fused) {
        MpiFrame.readInline(frameIn, result, op == ReduceOp.MAX);
      } else if (length > 0) {
        ensurePayload(length);
        MemorySegment.copy(values, 0, payloadOut, JAVA_LONG, 0, length);
        library.allReduce(payloadOut, payloadIn, length, op);
        MemorySegment.copy(payloadIn, JAVA_LONG, 0, result, 0, length);
      }
      sequence++;
    } catch (CollectiveException e) {
      broken = e;
      throw e;
    } finally {
      gate.exit(token);
    }
  }

  @Override
  public byte[] broadcast(int root, byte[] payload, String tag) {
    return broadcast(root, payload, tag, false);
  }

  /**
   * The broadcast, hidden from the {@link MpiWatchdog}: nothing in the process bounds the wait.
   * MPI's own failure detection ends it: when a process of the job dies, the launcher ({@code
   * mpirun}) aborts every other one. Open MPI's blocking collectives poll while they wait, so a
   * rank waiting here keeps a core busy (set {@code --mca mpi_yield_when_idle 1} to yield it).
   */
  @Override
  public byte[] awaitBroadcast(int root, byte[] payload, String tag) {
    return broadcast(root, payload, tag, true);
  }

  private byte[] broadcast(int root, byte[] payload, String tag, boolean untimed) {
    Objects.requireNonNull(tag, "tag");
    ensureUsable();
    if (root < 0 || root >= size) {
      throw new IllegalArgumentException(
          "root=" + root + " must be a rank in [0, " + size + ") of the mpi group '" + group + "'");
    }
    if (root == rank) {
      Objects.requireNonNull(payload, "payload must not be null on the root rank");
    }
    long token = gate.enter(MpiCall.Kind.BROADCAST, root, tag, sequence);
    if (untimed) {
      gate.untimed(token);
    }
    try {
      long print = fingerprints.of(MpiCall.Kind.BROADCAST, root, tag);
      int slots = capacity.next();
      ensureFrame(slots);
      MpiFrame.writeHeader(frameOut, MpiCall.sequenced(print, sequence));
      frameOut.setAtIndex(
          JAVA_LONG, MpiFrame.HEADER_LONGS, root == rank ? payload.length : Long.MAX_VALUE);
      reduceFrame(slots);
      capacity.agreed(print, 1);
      int length = (int) frameIn.getAtIndex(JAVA_LONG, MpiFrame.HEADER_LONGS);
      byte[] result = new byte[length];
      if (length > 0) {
        ensureBytes(length);
        if (root == rank) {
          MemorySegment.copy(payload, 0, bytes, JAVA_BYTE, 0, length);
        }
        library.broadcastBytes(bytes, length, root);
        MemorySegment.copy(bytes, JAVA_BYTE, 0, result, 0, length);
      }
      sequence++;
      return result;
    } catch (CollectiveException e) {
      broken = e;
      throw e;
    } finally {
      gate.exit(token);
    }
  }

  @Override
  public void barrier(String tag) {
    Objects.requireNonNull(tag, "tag");
    ensureUsable();
    long token = gate.enter(MpiCall.Kind.BARRIER, 0, tag, sequence);
    try {
      long print = fingerprints.of(MpiCall.Kind.BARRIER, 0, tag);
      int slots = capacity.next();
      ensureFrame(slots);
      MpiFrame.writeHeader(frameOut, MpiCall.sequenced(print, sequence));
      reduceFrame(slots);
      capacity.agreed(print, 0);
      sequence++;
    } catch (CollectiveException e) {
      broken = e;
      throw e;
    } finally {
      gate.exit(token);
    }
  }

  /**
   * Reduces the frame and fails every rank alike when the ranks disagree; the call in progress
   * is the gate's current one.
   *
   * @param slots the frame's payload capacity, the same on every rank
   */
  private void reduceFrame(int slots) {
    library.allReduce(frameOut, frameIn, MpiFrame.HEADER_LONGS + slots, ReduceOp.MIN);
    if (!MpiFrame.agrees(frameIn)) {
      String spread = MpiFrame.describeSpread(frameIn);
      throw new CollectiveDesyncException(
          MpiDesyncReport.gather(library, gate, group, rank, size, gate.current(), spread));
    }
  }

  private void ensureFrame(int slots) {
    long longs = MpiFrame.HEADER_LONGS + (long) slots;
    if (frameOut.byteSize() < longs * Long.BYTES) {
      long grown = Long.highestOneBit(longs - 1) << 1;
      frameOut = Arena.ofAuto().allocate(JAVA_LONG, grown);
      frameIn = Arena.ofAuto().allocate(JAVA_LONG, grown);
      scratch = new long[(int) grown];
    }
  }

  private void ensurePayload(int length) {
    if (payloadOut.byteSize() < length * Long.BYTES) {
      long capacity = Math.max(64, Long.highestOneBit(length - 1L) << 1);
      payloadOut = Arena.ofAuto().allocate(JAVA_LONG, capacity);
      payloadIn = Arena.ofAuto().allocate(JAVA_LONG, capacity);
    }
  }

  private void ensureBytes(int length) {
    if (bytes.byteSize() < length) {
      long capacity = Math.max(4096, Long.highestOneBit(length - 1L) << 1);
      bytes = Arena.ofAuto().allocate(capacity, 8);
    }
  }

  private void ensureUsable() {
    if (closed) {
      throw new IllegalStateException(
          "the mpi collective of group '" + group + "' (rank " + rank + ") is closed");
    }
    if (broken != null) {
      String message =
          "the mpi collective of group '"
              + group
              + "' (rank "
              + rank
              + ") is broken by an earlier failure; no further calls: "
              + broken.getMessage();
      if (broken instanceof CollectiveDesyncException) {
        throw new CollectiveDesyncException(message);
      }
      throw new CollectiveException(message, broken);
    }
  }

  /**
   * The number of calls made so far, the next call's sequence number.
   *
   * @return the sequence number
   */
  long sequence() {
    return sequence;
  }

  /**
   * Moves this rank's sequence numbers ahead, as if it had made calls the others did not; for the
   * tests of the desync guard, since the public calls keep every rank's numbers in step.
   *
   * @param calls how many calls to skip
   */
  void skipSequenceForTests(long calls) {
    sequence += calls;
  }

  /**
   * The binding, for the benchmark's bare-downcall mode.
   *
   * @return the library
   */
  MpiLibrary library() {
    return library;
  }

  /** Leaves the group without calling MPI; the runtime finalizes MPI at exit. Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    watchdog.close();
    runtime.release(this);
  }

  @Override
  public String toString() {
    return "MpiCollective[group="
        + group
        + ", rank="
        + rank
        + "/"
        + size
        + ", seq="
        + sequence
        + (broken != null ? ", broken" : "")
        + (closed ? ", closed" : "")
        + "]";
  }
}
