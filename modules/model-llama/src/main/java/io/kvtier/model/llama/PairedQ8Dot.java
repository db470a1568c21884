package io.kvtier.model.llama;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * A Q8_0 weight row against eight positions, two positions to a 512-bit vector, with the bits of
 * {@link Kernels#dot} for each position.
 *
 * <p>Design note: {@link Kernels#dotQ8_0} keeps eight float lanes per position (lane {@code l}
 * sums weights {@code l, l+8, l+16, l+24} of each block, scales by the block, then the lanes are
 * summed in order). Two positions' inputs, laid side by side in 8-float chunks ({@link
 * #interleave}), fill the 16 lanes of one 512-bit vector; each weight chunk is widened once into
 * both halves. Every lane then sees exactly the operations of the 256-bit kernel in the same
 * order, so a position's value does not change with the batch it is in, and each multiply-add
 * instruction does twice the work. Why: the products of a Q8_0 prefill were about 70% of its time;
 * in a one-thread loop over a 1536 x 576 matrix and 128 positions this kernel ran 22-31 GMAC/s
 * against 12-21 for {@link Kernels#dot4}, whose tiles of 1 row x 8 or 2 rows x 4 positions at 256
 * bits were no faster, and a prefill's median rose by a third (docs/PERFORMANCE.md, "Q8_0
 * prefill: pairs of positions in 512-bit vectors"). Used only where 512-bit vectors are native
 * ({@link #AVAILABLE}): elsewhere the Vector API would emulate them.
 */
final class PairedQ8Dot {
  private PairedQ8Dot() {}

  /** Whether this machine runs 512-bit float vectors natively. */
  static final boolean AVAILABLE = FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512;

  /** Positions per call of {@link #dot8}. */
  static final int POSITIONS = 8;

  private static final VectorSpecies<Float> F = FloatVector.SPECIES_512;
  private static final VectorSpecies<Byte> B128 = ByteVector.SPECIES_128;
  private static final ValueLayout.OfShort SHORT_LE =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** Bytes 0-7 of 16 into both halves: a weight chunk for both positions of a pair. */
  private static final VectorShuffle<Byte> FIRST_CHUNK =
      VectorShuffle.fromValues(B128, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);

  private static final VectorShuffle<Byte> SECOND_CHUNK =
      VectorShuffle.fromValues(B128, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);

  /**
   * The first {@code positions} (even) positions of {@code in} ({@code n} values each) in pairs:
   * pair {@code k} starts at {@code k * 2n} (where its first position starts in {@code in}), and
   * within it chunk {@code c} of 8 values of the first position, then chunk {@code c} of the
   * second, at {@code 16c}.
   */
  static float[] interleave(float[] in, int positions, int n) {
    if (positions % 2 != 0 || n % 8 != 0) {
      throw new IllegalArgumentException(
          "positions=" + positions + " must be even and n=" + n + " a multiple of 8");
    }
    float[] pairs = new float[positions * n];
    for (int p = 0; p < positions; p += 2) {
      int from = p * n;
      for (int c = 0; c < n; c += 8) {
        System.arraycopy(in, from + c, pairs, from + 2 * c, 8);
        System.arraycopy(in, from + n + c, pairs, from + 2 * c + 8, 8);
      }
    }
    return pairs;
  }

  /**
   * {@code out[outAt + k * outStride] = Kernels.dot(position k, Q8_0 row at byte rowOffset)} for
   * the 8 positions whose pairs start at {@code pairs[pairsAt]} (see {@link #interleave}), bit for
   * bit; {@code n} is a multiple of 32.
   */
  static void dot8(
      float[] pairs,
      int pairsAt,
      MemorySegment data,
      long rowOffset,
      int n,
      float[] out,
      int outAt,
      int outStride) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    int pairStride = 2 * n;
    int blocks = n / 32;
    for (int b = 0; b < blocks; b++) {
      long block = rowOffset + 34L * b;
      FloatVector d = FloatVector.broadcast(F, Float.float16ToFloat(data.get(SHORT_LE, block)));
      ByteVector q01 = ByteVector.fromMemorySegment(B128, data, block + 2, ByteOrder.LITTLE_ENDIAN);
      ByteVector q23 =
          ByteVector.fromMemorySegment(B128, data, block + 18, ByteOrder.LITTLE_ENDIAN);
      FloatVector w0 =
          (FloatVector) q01.rearrange(FIRST_CHUNK).convertShape(VectorOperators.B2F, F, 0);
      FloatVector w1 =
          (FloatVector) q01.rearrange(SECOND_CHUNK).convertShape(VectorOperators.B2F, F, 0);
      FloatVector w2 =
          (FloatVector) q23.rearrange(FIRST_CHUNK).convertShape(VectorOperators.B2F, F, 0);
      FloatVector w3 =
          (FloatVector) q23.rearrange(SECOND_CHUNK).convertShape(VectorOperators.B2F, F, 0);
      // Written out, with no helper taking or returning a vector: such a helper was not inlined
      // and boxed every vector (one-thread loop: 3 against 17 GMAC/s).
      int x = pairsAt + 64 * b;
      FloatVector p = FloatVector.zero(F);
      p = FloatVector.fromArray(F, pairs, x).fma(w0, p);
      p = FloatVector.fromArray(F, pairs, x + 16).fma(w1, p);
      p = FloatVector.fromArray(F, pairs, x + 32).fma(w2, p);
      p = FloatVector.fromArray(F, pairs, x + 48).fma(w3, p);
      a0 = p.fma(d, a0);
      x += pairStride;
      p = FloatVector.zero(F);
      p = FloatVector.fromArray(F, pairs, x).fma(w0, p);
      p = FloatVector.fromArray(F, pairs, x + 16).fma(w1, p);
      p = FloatVector.fromArray(F, pairs, x + 32).fma(w2, p);
      p = FloatVector.fromArray(F, pairs, x + 48).fma(w3, p);
      a1 = p.fma(d, a1);
      x += pairStride;
      p = FloatVector.zero(F);
      p = FloatVector.fromArray(F, pairs, x).fma(w0, p);
      p = FloatVector.fromArray(F, pairs, x + 16).fma(w1, p);
      p = FloatVector.fromArray(F, pairs, x + 32).fma(w2, p);
      p = FloatVector.fromArray(F, pairs, x + 48).fma(w3, p);
      a2 = p.fma(d, a2);
      x += pairStride;
      p = FloatVector.zero(F);
      p = FloatVector.fromArray(F, pairs, x).fma(w0, p);
      p = FloatVector.fromArray(F, pairs, x + 16).fma(w1, p);
      p = FloatVector.fromArray(F, pairs, x + 32).fma(w2, p);
      p = FloatVector.fromArray(F, pairs, x + 48).fma(w3, p);
      a3 = p.fma(d, a3);
    }
    // Each half's lanes summed in lane order, as Kernels.sumLanes sums one position's; written
    // here rather than in a helper taking a vector, which was not inlined (4% of a prefill's
    // samples in its bounds checks)
    float[] lanes = new float[4 * F.length()];
    a0.intoArray(lanes, 0);
    a1.intoArray(lanes, 16);
    a2.intoArray(lanes, 32);
    a3.intoArray(lanes, 48);
    for (int k = 0; k < POSITIONS; k++) {
      float sum = 0f;
      for (int l = 8 * k; l < 8 * k + 8; l++) {
        sum += lanes[l];
      }
      out[outAt + k * outStride] = sum;
    }
  }
}
