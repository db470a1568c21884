package io.kvtier.collective.mpi.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.ReduceOp;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The guard frame's logic without MPI: frames of several ranks reduced with MIN in Java, as
 * {@code MPI_Allreduce(MIN)} would.
 */
class MpiFrameTest {

  // Longer than the element-by-element limit, so that both ways of moving a payload are used.
  private static final int INLINE = 20;

  private static MemorySegment frame(MpiCall call, long[] inline, boolean max) {
    MemorySegment frame = MemorySegment.ofArray(new long[MpiFrame.HEADER_LONGS + INLINE]);
    MpiFrame.writeHeader(frame, MpiCall.sequenced(call.fingerprint(), call.sequence()));
    MpiFrame.writeInline(frame, inline, max, new long[INLINE]);
    return frame;
  }

  private static MemorySegment reduceMin(List<MemorySegment> frames) {
    long[] out = new long[MpiFrame.HEADER_LONGS + INLINE];
    java.util.Arrays.fill(out, Long.MAX_VALUE);
    for (MemorySegment f : frames) {
      for (int i = 0; i < out.length; i++) {
        out[i] = Math.min(out[i], f.getAtIndex(JAVA_LONG, i));
      }
    }
    return MemorySegment.ofArray(out);
  }

  private static MpiCall barrier(String tag, long seq) {
    return new MpiCall(MpiCall.Kind.BARRIER, 0, tag, seq);
  }

  @Test
  void identicalCallsAgree() {
    MpiCall call = barrier("sync", 7);
    MemorySegment reduced =
        reduceMin(
            List.of(
                frame(call, new long[0], false),
                frame(call, new long[0], false),
                frame(call, new long[0], false)));
    assertThat(MpiFrame.agrees(reduced)).isTrue();
  }

  @Test
  void anyDifferenceOnAnyRankDisagrees() {
    MpiCall base = new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 2, "sync", 5);
    List<MpiCall> variants =
        List.of(
            new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 2, "sync2", 5),
            new MpiCall(MpiCall.Kind.ALL_REDUCE_MAX, 2, "sync", 5),
            new MpiCall(MpiCall.Kind.ALL_REDUCE_SUM, 2, "sync", 5),
            new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 3, "sync", 5),
            new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 2, "sync", 6),
            new MpiCall(MpiCall.Kind.BARRIER, 2, "sync", 5),
            new MpiCall(MpiCall.Kind.BROADCAST, 2, "sync", 5));
    for (MpiCall odd : variants) {
      for (int oddRank = 0; oddRank < 3; oddRank++) {
        MemorySegment[] frames = new MemorySegment[3];
        for (int r = 0; r < 3; r++) {
          frames[r] = frame(r == oddRank ? odd : base, new long[] {r, -r}, false);
        }
        assertThat(MpiFrame.agrees(reduceMin(List.of(frames))))
            .as("%s on rank %d against %s", odd, oddRank, base)
            .isFalse();
      }
    }
  }

  @Test
  void inlineMinAndMaxRideInOneMinReduction() {
    Random random = new Random(42);
    for (int round = 0; round < 200; round++) {
      boolean max = random.nextBoolean();
      int ranks = 1 + random.nextInt(6);
      int length = random.nextInt(INLINE + 1);
      MpiCall call =
          new MpiCall(
              MpiCall.Kind.allReduce(max ? ReduceOp.MAX : ReduceOp.MIN), length, "t", round);
      long[] expected = null;
      MemorySegment[] frames = new MemorySegment[ranks];
      for (int r = 0; r < ranks; r++) {
        long[] values = new long[length];
        for (int i = 0; i < length; i++) {
          values[i] = random.nextInt(4) == 0 ? Long.MIN_VALUE : random.nextLong();
        }
        frames[r] = frame(call, values, max);
        if (expected == null) {
          expected = values.clone();
        } else {
          for (int i = 0; i < length; i++) {
            expected[i] = max ? Math.max(expected[i], values[i]) : Math.min(expected[i], values[i]);
          }
        }
      }
      MemorySegment reduced = reduceMin(List.of(frames));
      assertThat(MpiFrame.agrees(reduced)).isTrue();
      long[] got = new long[length];
      MpiFrame.readInline(reduced, got, max);
      assertThat(got).isEqualTo(expected);
    }
  }

  @Test
  void spreadNamesTheLowestAndHighestFingerprint() {
    long low = MpiCall.sequenced(barrier("a", 3).fingerprint(), 3);
    long high = MpiCall.sequenced(barrier("a", 9).fingerprint(), 9);
    MemorySegment reduced =
        reduceMin(
            List.of(
                frame(barrier("a", 3), new long[0], false),
                frame(barrier("a", 9), new long[0], false)));
    assertThat(MpiFrame.describeSpread(reduced))
        .isEqualTo(
            "fingerprints "
                + Long.toHexString(Math.min(low, high))
                + ".."
                + Long.toHexString(Math.max(low, high)));
  }

  @Test
  void sequenceNumbersOfOneCallNeverCollide() {
    long print = new MpiCall(MpiCall.Kind.ALL_REDUCE_MIN, 1, "tick", 0).fingerprint();
    java.util.Set<Long> seen = new java.util.HashSet<>();
    for (long seq = 0; seq < 100_000; seq++) {
      assertThat(seen.add(MpiCall.sequenced(print, seq))).as("seq %d", seq).isTrue();
    }
  }
}
