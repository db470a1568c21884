package io.kvtier.model.llama;

import io.kvtier.gguf.GgufTensorType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The numeric kernels of the forward pass.
 *
 * <p>Design note: every kernel sums in one order fixed by its inputs' lengths only (vector lanes
 * of a fixed 256-bit species, then the lane reduction, then a scalar tail), never by the batch it
 * was called from or the thread it ran on. That is what makes a position's logits identical
 * whether it was computed alone, in a prefill batch, or from cached K/V (MODELS.md's exactness
 * rule). The weight dots read one row in place from the mapped file; quantized rows are never
 * dequantized into a heap matrix.
 */
public final class Kernels {
  private Kernels() {}

  /** The weight types {@link #dot} reads. */
  public static final Set<GgufTensorType> SUPPORTED_TYPES =
      Collections.unmodifiableSet(
          EnumSet.of(
              GgufTensorType.F32,
              GgufTensorType.F16,
              GgufTensorType.BF16,
              GgufTensorType.Q8_0,
              GgufTensorType.Q4_0,
              GgufTensorType.Q4_1,
              GgufTensorType.Q5_0,
              GgufTensorType.Q5_1,
              GgufTensorType.Q2_K,
              GgufTensorType.Q3_K,
              GgufTensorType.Q4_K,
              GgufTensorType.Q5_K,
              GgufTensorType.Q6_K,
              GgufTensorType.IQ4_NL,
              GgufTensorType.IQ4_XS));

  /** Fixed rather than preferred, so results do not change with the machine's vector width. */
  static final VectorSpecies<Float> F = FloatVector.SPECIES_256;

  private static final VectorSpecies<Byte> B64 = ByteVector.SPECIES_64;
  private static final VectorSpecies<Byte> B128 = ByteVector.SPECIES_128;
  private static final VectorSpecies<Byte> B256 = ByteVector.SPECIES_256;

  /** IQ4_NL's and IQ4_XS's 16 levels ({@link GgufTensorType#iq4Value}), for the lookups. */
  private static final byte[] IQ4_LEVELS = new byte[16];

  /**
   * Each thread's room for the lanes of four accumulators, which the large kernels store here and
   * sum with {@link #sumLanes(float[], int)} (see {@link #sumLanes(FloatVector)}).
   */
  private static final ThreadLocal<float[]> LANES = ThreadLocal.withInitial(() -> new float[32]);

  /** Q4_0's levels, index - 8, for {@link #dot4Lookup}. */
  private static final byte[] Q4_0_LEVELS = new byte[16];

  static {
    for (int i = 0; i < 16; i++) {
      IQ4_LEVELS[i] = GgufTensorType.iq4Value(i);
      Q4_0_LEVELS[i] = (byte) (i - 8);
    }
  }

  private static final ValueLayout.OfFloat FLOAT_LE =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt INT_LE =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfShort SHORT_LE =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /**
   * The dot product of {@code x[xOffset..xOffset+n)} with the {@code n} weights of type
   * {@code type} starting at byte {@code rowOffset} of {@code data}.
   *
   * @throws IllegalArgumentException if {@code n} is not a multiple of the type's block size
   */
  public static float dot(
      float[] x, int xOffset, MemorySegment data, long rowOffset, GgufTensorType type, int n) {
    if (n % type.blockSize() != 0) {
      throw new IllegalArgumentException(
          type + ": row length=" + n + " is not a multiple of the block size " + type.blockSize());
    }
    return switch (type) {
      case F32 -> dotF32(x, xOffset, data, rowOffset, n);
      case F16 -> dotF16(x, xOffset, data, rowOffset, n);
      case BF16 -> dotBF16(x, xOffset, data, rowOffset, n);
      case Q8_0 -> dotQ8_0(x, xOffset, data, rowOffset, n);
      case Q4_0 -> dotQ4_0(x, xOffset, data, rowOffset, n);
      case Q4_1, Q5_0, Q5_1 -> dotBlock32(x, xOffset, data, rowOffset, type, n);
      case Q2_K -> dotQ2K(x, xOffset, data, rowOffset, n);
      case Q3_K -> dotQ3K(x, xOffset, data, rowOffset, n);
      case Q4_K -> dotK(x, xOffset, data, rowOffset, n, false);
      case Q5_K -> dotK(x, xOffset, data, rowOffset, n, true);
      case Q6_K -> dotQ6K(x, xOffset, data, rowOffset, n);
      case IQ4_NL -> dotIq4(x, xOffset, data, rowOffset, n, false);
      case IQ4_XS -> dotIq4(x, xOffset, data, rowOffset, n, true);
    };
  }

  /**
   * F32 weights: four accumulators of 8 lanes, chunk {@code c} of 8 values into accumulator
   * {@code c % 4}, then {@code (a0 + a1) + (a2 + a3)} lane by lane, the lanes in order, the tail
   * last. Why four (was one): one accumulator made each row a chain of dependent multiply-adds,
   * and a decode step, which reads every F32 weight once, streamed at 11-17 GB/s on one core
   * against 20-27 with four (docs/PERFORMANCE.md, "F32 decode: four accumulators").
   */
  static float dotF32(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    int i = 0;
    int width = F.length();
    for (; i + 4 * width <= n; i += 4 * width) {
      long w = at + 4L * i;
      a0 = FloatVector.fromArray(F, x, xo + i).fma(fromF32(data, w), a0);
      a1 = FloatVector.fromArray(F, x, xo + i + width).fma(fromF32(data, w + 4L * width), a1);
      a2 = FloatVector.fromArray(F, x, xo + i + 2 * width).fma(fromF32(data, w + 8L * width), a2);
      a3 = FloatVector.fromArray(F, x, xo + i + 3 * width).fma(fromF32(data, w + 12L * width), a3);
    }
    // The chunks left (up to three) go on where the loop stopped: chunk c to accumulator c % 4.
    if (i + width <= n) {
      a0 = FloatVector.fromArray(F, x, xo + i).fma(fromF32(data, at + 4L * i), a0);
      i += width;
      if (i + width <= n) {
        a1 = FloatVector.fromArray(F, x, xo + i).fma(fromF32(data, at + 4L * i), a1);
        i += width;
        if (i + width <= n) {
          a2 = FloatVector.fromArray(F, x, xo + i).fma(fromF32(data, at + 4L * i), a2);
          i += width;
        }
      }
    }
    float sum = sumLanes(a0.add(a1).add(a2.add(a3)));
    for (; i < n; i++) {
      sum += x[xo + i] * data.get(FLOAT_LE, at + 4L * i);
    }
    return sum;
  }

  private static FloatVector fromF32(MemorySegment data, long at) {
    return FloatVector.fromMemorySegment(F, data, at, ByteOrder.LITTLE_ENDIAN);
  }

  /** Dot of two float arrays, in the same fixed order as {@link #dotF32}. */
  public static float dot(float[] a, int ao, float[] b, int bo, int n) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    int i = 0;
    int width = F.length();
    for (; i + 4 * width <= n; i += 4 * width) {
      a0 = FloatVector.fromArray(F, a, ao + i).fma(FloatVector.fromArray(F, b, bo + i), a0);
      a1 =
          FloatVector.fromArray(F, a, ao + i + width)
              .fma(FloatVector.fromArray(F, b, bo + i + width), a1);
      a2 =
          FloatVector.fromArray(F, a, ao + i + 2 * width)
              .fma(FloatVector.fromArray(F, b, bo + i + 2 * width), a2);
      a3 =
          FloatVector.fromArray(F, a, ao + i + 3 * width)
              .fma(FloatVector.fromArray(F, b, bo + i + 3 * width), a3);
    }
    if (i + width <= n) {
      a0 = FloatVector.fromArray(F, a, ao + i).fma(FloatVector.fromArray(F, b, bo + i), a0);
      i += width;
      if (i + width <= n) {
        a1 = FloatVector.fromArray(F, a, ao + i).fma(FloatVector.fromArray(F, b, bo + i), a1);
        i += width;
        if (i + width <= n) {
          a2 = FloatVector.fromArray(F, a, ao + i).fma(FloatVector.fromArray(F, b, bo + i), a2);
          i += width;
        }
      }
    }
    float sum = sumLanes(a0.add(a1).add(a2.add(a3)));
    for (; i < n; i++) {
      sum += a[ao + i] * b[bo + i];
    }
    return sum;
  }

  /**
   * {@code y[yo + i] += a * x[xo + i]} for {@code i < n}: a multiply, then an add, per value
   * (never fused), so a sum built by calls over {@code t} in order is the bits of the scalar loop
   * {@code sum += a_t * x_t[i]} whatever the lanes.
   */
  public static void addScaled(float[] y, int yo, float[] x, int xo, int n, float a) {
    int i = 0;
    int width = F.length();
    for (; i + width <= n; i += width) {
      FloatVector.fromArray(F, y, yo + i)
          .add(FloatVector.fromArray(F, x, xo + i).mul(a))
          .intoArray(y, yo + i);
    }
    for (; i < n; i++) {
      y[yo + i] += a * x[xo + i];
    }
  }

  // F16 and BF16: widened eight at a time into a small buffer, then the F32 lane order.
  static float dotF16(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    float[] w = new float[F.length()];
    int i = 0;
    int bound = F.loopBound(n);
    for (; i < bound; i += F.length()) {
      for (int j = 0; j < w.length; j++) {
        w[j] = Float.float16ToFloat(data.get(SHORT_LE, at + 2L * (i + j)));
      }
      acc = FloatVector.fromArray(F, x, xo + i).fma(FloatVector.fromArray(F, w, 0), acc);
    }
    float sum = sumLanes(acc);
    for (; i < n; i++) {
      sum += x[xo + i] * Float.float16ToFloat(data.get(SHORT_LE, at + 2L * i));
    }
    return sum;
  }

  static float dotBF16(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    float[] w = new float[F.length()];
    int i = 0;
    int bound = F.loopBound(n);
    for (; i < bound; i += F.length()) {
      for (int j = 0; j < w.length; j++) {
        w[j] = Float.intBitsToFloat((data.get(SHORT_LE, at + 2L * (i + j)) & 0xFFFF) << 16);
      }
      acc = FloatVector.fromArray(F, x, xo + i).fma(FloatVector.fromArray(F, w, 0), acc);
    }
    float sum = sumLanes(acc);
    for (; i < n; i++) {
      sum += x[xo + i] * Float.intBitsToFloat((data.get(SHORT_LE, at + 2L * i) & 0xFFFF) << 16);
    }
    return sum;
  }

  /** Q8_0 blocks: 2-byte f16 scale, then 32 signed bytes; x·q per block, scaled, accumulated. */
  static float dotQ8_0(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    int blocks = n / 32;
    for (int b = 0; b < blocks; b++) {
      long block = at + 34L * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      int xb = xo + 32 * b;
      FloatVector part = FloatVector.zero(F);
      for (int j = 0; j < 32; j += 8) {
        FloatVector q =
            (FloatVector)
                ByteVector.fromMemorySegment(B64, data, block + 2 + j, ByteOrder.LITTLE_ENDIAN)
                    .convertShape(VectorOperators.B2F, F, 0);
        part = FloatVector.fromArray(F, x, xb + j).fma(q, part);
      }
      acc = part.fma(FloatVector.broadcast(F, d), acc);
    }
    return sumLanes(acc);
  }

  /**
   * Q4_0 blocks: 2-byte f16 scale, then 16 bytes (low nibbles weights 0-15, high 16-31). Run
   * {@code j} of 8 weights (weights {@code 8j} to {@code 8j + 7}) is bytes {@code 8(j % 2)} to
   * {@code 8(j % 2) + 7}, low nibbles for {@code j < 2}, high ones after. Its four-position dot
   * is {@link #dot4Lookup}'s with the levels -8 to 7 (the same bits).
   *
   * <p>Every quantized kernel is written out in place: no helper of ours takes or returns a vector.
   * Such helpers (a block's products for one position, a run's bytes widened to floats) were
   * compiled on their own once the kernel that called them had grown past the compiler's inlining
   * budget, and every vector they returned was boxed on the heap: for a row of 1,536, 21.8 KB of
   * garbage per Q4_0 four-position dot and 4.7 KB per Q4_K dot, which took 897 ns against Q8_0's
   * 106 (QuantizedDotBenchmark; docs/PERFORMANCE.md, "Quantized kernels without boxing"). Only
   * {@link #dotQ6K} still widens parts of a wider vector ({@link #widen}); it measured faster so.
   */
  static float dotQ4_0(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    int blocks = n / 32;
    for (int b = 0; b < blocks; b++) {
      long block = at + 18L * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      int xb = xo + 32 * b;
      FloatVector part = FloatVector.zero(F);
      for (int j = 0; j < 4; j++) {
        ByteVector q =
            ByteVector.fromMemorySegment(
                    B64, data, block + 2 + 8 * (j & 1), ByteOrder.LITTLE_ENDIAN)
                .lanewise(VectorOperators.LSHR, 4 * (j >> 1))
                .and((byte) 0xF)
                .sub((byte) 8);
        part =
            FloatVector.fromArray(F, x, xb + 8 * j)
                .fma((FloatVector) q.convertShape(VectorOperators.B2F, F, 0), part);
      }
      acc = part.fma(FloatVector.broadcast(F, d), acc);
    }
    return sumLanes(acc);
  }

  /**
   * Q4_1 (f16 d, f16 m, 16 bytes; a weight is {@code q * d + m}), Q5_0 (f16 d, 4 bytes qh, 16
   * bytes; a weight is {@code (q - 16) * d}) and Q5_1 (f16 d, f16 m, qh, 16 bytes; a weight is
   * {@code q * d + m}). The 16 bytes hold the low 4 bits as Q4_0's do; bit j of the little-endian
   * qh is weight j's fifth bit, set in the byte lanes through a lane mask. A block adds {@code d
   * * (x . q)}, and with a min {@code m * sum(x)} after it, both sums in lanes.
   */
  static float dotBlock32(
      float[] x, int xo, MemorySegment data, long at, GgufTensorType type, int n) {
    FloatVector acc = FloatVector.zero(F);
    boolean withMin = type != GgufTensorType.Q5_0;
    boolean five = type != GgufTensorType.Q4_1;
    byte offset = (byte) (withMin ? 0 : 16);
    long nibbleOffset = block32Nibbles(type);
    long blockBytes = type.blockBytes();
    int blocks = n / 32;
    for (int b = 0; b < blocks; b++) {
      long block = at + blockBytes * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      long nibbles = block + nibbleOffset;
      int qh = five ? data.get(INT_LE, nibbles - 4) : 0;
      int xb = xo + 32 * b;
      FloatVector part = FloatVector.zero(F);
      FloatVector sum = FloatVector.zero(F);
      for (int j = 0; j < 4; j++) {
        ByteVector q =
            ByteVector.fromMemorySegment(B64, data, nibbles + 8 * (j & 1), ByteOrder.LITTLE_ENDIAN)
                .lanewise(VectorOperators.LSHR, 4 * (j >> 1))
                .and((byte) 0xF)
                .lanewise(
                    VectorOperators.OR,
                    (byte) 0x10,
                    VectorMask.fromLong(B64, (qh >>> (8 * j)) & 0xFF))
                .sub(offset);
        FloatVector xv = FloatVector.fromArray(F, x, xb + 8 * j);
        part = xv.fma((FloatVector) q.convertShape(VectorOperators.B2F, F, 0), part);
        sum = sum.add(xv);
      }
      acc = part.fma(FloatVector.broadcast(F, d), acc);
      if (withMin) {
        float m = Float.float16ToFloat(data.get(SHORT_LE, block + 2));
        acc = sum.fma(FloatVector.broadcast(F, m), acc);
      }
    }
    return sumLanes(acc);
  }

  /** {@link #dotBlock32} for four positions, each run of a block unpacked once: the same bits. */
  private static void dot4Block32(
      float[] x,
      int xo,
      int xs,
      MemorySegment data,
      long at,
      GgufTensorType type,
      int n,
      float[] out,
      int oo,
      int os) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    boolean withMin = type != GgufTensorType.Q5_0;
    boolean five = type != GgufTensorType.Q4_1;
    byte offset = (byte) (withMin ? 0 : 16);
    long nibbleOffset = block32Nibbles(type);
    long blockBytes = type.blockBytes();
    int blocks = n / 32;
    for (int b = 0; b < blocks; b++) {
      long block = at + blockBytes * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      long nibbles = block + nibbleOffset;
      int qh = five ? data.get(INT_LE, nibbles - 4) : 0;
      int xb = xo + 32 * b;
      FloatVector p0 = FloatVector.zero(F);
      FloatVector p1 = FloatVector.zero(F);
      FloatVector p2 = FloatVector.zero(F);
      FloatVector p3 = FloatVector.zero(F);
      FloatVector s0 = FloatVector.zero(F);
      FloatVector s1 = FloatVector.zero(F);
      FloatVector s2 = FloatVector.zero(F);
      FloatVector s3 = FloatVector.zero(F);
      for (int j = 0; j < 4; j++) {
        FloatVector w =
            (FloatVector)
                ByteVector.fromMemorySegment(
                        B64, data, nibbles + 8 * (j & 1), ByteOrder.LITTLE_ENDIAN)
                    .lanewise(VectorOperators.LSHR, 4 * (j >> 1))
                    .and((byte) 0xF)
                    .lanewise(
                        VectorOperators.OR,
                        (byte) 0x10,
                        VectorMask.fromLong(B64, (qh >>> (8 * j)) & 0xFF))
                    .sub(offset)
                    .convertShape(VectorOperators.B2F, F, 0);
        int xj = xb + 8 * j;
        FloatVector x0 = FloatVector.fromArray(F, x, xj);
        FloatVector x1 = FloatVector.fromArray(F, x, xj + xs);
        FloatVector x2 = FloatVector.fromArray(F, x, xj + 2 * xs);
        FloatVector x3 = FloatVector.fromArray(F, x, xj + 3 * xs);
        p0 = x0.fma(w, p0);
        p1 = x1.fma(w, p1);
        p2 = x2.fma(w, p2);
        p3 = x3.fma(w, p3);
        s0 = s0.add(x0);
        s1 = s1.add(x1);
        s2 = s2.add(x2);
        s3 = s3.add(x3);
      }
      FloatVector dv = FloatVector.broadcast(F, d);
      a0 = p0.fma(dv, a0);
      a1 = p1.fma(dv, a1);
      a2 = p2.fma(dv, a2);
      a3 = p3.fma(dv, a3);
      if (withMin) {
        FloatVector mv =
            FloatVector.broadcast(F, Float.float16ToFloat(data.get(SHORT_LE, block + 2)));
        a0 = s0.fma(mv, a0);
        a1 = s1.fma(mv, a1);
        a2 = s2.fma(mv, a2);
        a3 = s3.fma(mv, a3);
      }
    }
    // through an array, not sumLanes (see sumLanes)
    float[] lanes = LANES.get();
    a0.intoArray(lanes, 0);
    a1.intoArray(lanes, 8);
    a2.intoArray(lanes, 16);
    a3.intoArray(lanes, 24);
    sumLanes4(lanes, out, oo, os);
  }

  /** Where a Q4_1, Q5_0 or Q5_1 block's 16 bytes of low 4 bits start. */
  private static long block32Nibbles(GgufTensorType type) {
    return switch (type) {
      case Q4_1 -> 4;
      case Q5_0 -> 6;
      default -> 8;
    };
  }

  /**
   * Q2_K super-blocks of 256 weights (84 bytes: 16 scale-and-min bytes, 64 bytes of 2-bit q, f16
   * d, f16 dmin). Sub-block {@code s} of 16 weights has the pair in byte {@code s} (scale in the
   * low nibble, min in the high) and its q in bits {@code 2j} of bytes {@code 32n + 16h} to
   * {@code 32n + 16h + 15}, where {@code s = 8n + 2j + h}; it adds {@code (d * scale) * (x . q) -
   * (dmin * min) * sum(x)}, sub-block by sub-block in order.
   */
  static float dotQ2K(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    int blocks = n / 256;
    for (int b = 0; b < blocks; b++) {
      long block = at + 84L * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block + 80));
      float dmin = Float.float16ToFloat(data.get(SHORT_LE, block + 82));
      int xb = xo + 256 * b;
      for (int s = 0; s < 16; s++) {
        long qs = block + 16 + 32 * (s >> 3) + 16 * (s & 1);
        int shift = 2 * ((s & 7) >> 1);
        FloatVector part = FloatVector.zero(F);
        FloatVector sum = FloatVector.zero(F);
        for (int c = 0; c < 2; c++) {
          ByteVector q =
              ByteVector.fromMemorySegment(B64, data, qs + 8 * c, ByteOrder.LITTLE_ENDIAN)
                  .lanewise(VectorOperators.LSHR, shift)
                  .and((byte) 3);
          FloatVector xv = FloatVector.fromArray(F, x, xb + 16 * s + 8 * c);
          part = xv.fma((FloatVector) q.convertShape(VectorOperators.B2F, F, 0), part);
          sum = sum.add(xv);
        }
        int pair = data.get(ValueLayout.JAVA_BYTE, block + s) & 0xFF;
        float scale = d * (pair & 0xF);
        float min = dmin * (pair >> 4);
        acc =
            sum.fma(FloatVector.broadcast(F, -min), part.fma(FloatVector.broadcast(F, scale), acc));
      }
    }
    return sumLanes(acc);
  }

  /**
   * Q3_K super-blocks of 256 weights (110 bytes: 32 bytes hmask, 64 bytes of 2-bit low q laid out
   * as {@link #dotQ2K}'s, 12 bytes of sixteen 6-bit scales, f16 d). Sub-block {@code s} of 16
   * weights takes its third bits from bit {@code s / 2} of hmask bytes {@code 16h} to {@code 16h
   * + 15} ({@code h = s % 2}); a weight is {@code d * (scale - 32) * (q - 4)}, and a sub-block adds
   * {@code (d * (scale - 32)) * (x . (q - 4))}, in order.
   */
  static float dotQ3K(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    int blocks = n / 256;
    for (int b = 0; b < blocks; b++) {
      long block = at + 110L * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block + 108));
      int xb = xo + 256 * b;
      for (int s = 0; s < 16; s++) {
        long qs = block + 32 + 32 * (s >> 3) + 16 * (s & 1);
        long hmask = block + 16 * (s & 1);
        int shift = 2 * ((s & 7) >> 1);
        float scale = d * (GgufTensorType.scaleK3(data, block + 96, s) - 32);
        FloatVector part = FloatVector.zero(F);
        for (int c = 0; c < 2; c++) {
          ByteVector q =
              ByteVector.fromMemorySegment(B64, data, qs + 8 * c, ByteOrder.LITTLE_ENDIAN)
                  .lanewise(VectorOperators.LSHR, shift)
                  .and((byte) 3)
                  .or(
                      ByteVector.fromMemorySegment(
                              B64, data, hmask + 8 * c, ByteOrder.LITTLE_ENDIAN)
                          .lanewise(VectorOperators.LSHR, s >> 1)
                          .and((byte) 1)
                          .lanewise(VectorOperators.LSHL, 2))
                  .sub((byte) 4);
          part =
              FloatVector.fromArray(F, x, xb + 16 * s + 8 * c)
                  .fma((FloatVector) q.convertShape(VectorOperators.B2F, F, 0), part);
        }
        acc = part.fma(FloatVector.broadcast(F, scale), acc);
      }
    }
    return sumLanes(acc);
  }

  /**
   * {@link #dotQ2K} ({@code three} false) or {@link #dotQ3K} for four positions, each run of a
   * sub-block unpacked and widened once: the same bits as four single dots.
   */
  private static void dot4Q2Q3K(
      float[] x,
      int xo,
      int xs,
      MemorySegment data,
      long at,
      int n,
      boolean three,
      float[] out,
      int oo,
      int os) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    long blockBytes = three ? 110 : 84;
    byte thirdBit = (byte) (three ? 1 : 0);
    byte offset = (byte) (three ? 4 : 0);
    int blocks = n / 256;
    for (int b = 0; b < blocks; b++) {
      long block = at + blockBytes * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block + (three ? 108 : 80)));
      float dmin = three ? 0f : Float.float16ToFloat(data.get(SHORT_LE, block + 82));
      int xb = xo + 256 * b;
      for (int s = 0; s < 16; s++) {
        long qs = block + (three ? 32 : 16) + 32 * (s >> 3) + 16 * (s & 1);
        // Q2_K has no third bits: it reads its own q bytes there and masks them to nothing
        long hmask = three ? block + 16 * (s & 1) : qs;
        int shift = 2 * ((s & 7) >> 1);
        float scale;
        float min;
        if (three) {
          scale = d * (GgufTensorType.scaleK3(data, block + 96, s) - 32);
          min = 0f;
        } else {
          int pair = data.get(ValueLayout.JAVA_BYTE, block + s) & 0xFF;
          scale = d * (pair & 0xF);
          min = dmin * (pair >> 4);
        }
        FloatVector p0 = FloatVector.zero(F);
        FloatVector p1 = FloatVector.zero(F);
        FloatVector p2 = FloatVector.zero(F);
        FloatVector p3 = FloatVector.zero(F);
        FloatVector s0 = FloatVector.zero(F);
        FloatVector s1 = FloatVector.zero(F);
        FloatVector s2 = FloatVector.zero(F);
        FloatVector s3 = FloatVector.zero(F);
        for (int c = 0; c < 2; c++) {
          FloatVector w =
              (FloatVector)
                  ByteVector.fromMemorySegment(B64, data, qs + 8 * c, ByteOrder.LITTLE_ENDIAN)
                      .lanewise(VectorOperators.LSHR, shift)
                      .and((byte) 3)
                      .or(
                          ByteVector.fromMemorySegment(
                                  B64, data, hmask + 8 * c, ByteOrder.LITTLE_ENDIAN)
                              .lanewise(VectorOperators.LSHR, s >> 1)
                              .and(thirdBit)
                              .lanewise(VectorOperators.LSHL, 2))
                      .sub(offset)
                      .convertShape(VectorOperators.B2F, F, 0);
          int xc = xb + 16 * s + 8 * c;
          FloatVector x0 = FloatVector.fromArray(F, x, xc);
          FloatVector x1 = FloatVector.fromArray(F, x, xc + xs);
          FloatVector x2 = FloatVector.fromArray(F, x, xc + 2 * xs);
          FloatVector x3 = FloatVector.fromArray(F, x, xc + 3 * xs);
          p0 = x0.fma(w, p0);
          p1 = x1.fma(w, p1);
          p2 = x2.fma(w, p2);
          p3 = x3.fma(w, p3);
          s0 = s0.add(x0);
          s1 = s1.add(x1);
          s2 = s2.add(x2);
          s3 = s3.add(x3);
        }
        FloatVector sv = FloatVector.broadcast(F, scale);
        a0 = p0.fma(sv, a0);
        a1 = p1.fma(sv, a1);
        a2 = p2.fma(sv, a2);
        a3 = p3.fma(sv, a3);
        if (!three) {
          FloatVector mv = FloatVector.broadcast(F, -min);
          a0 = s0.fma(mv, a0);
          a1 = s1.fma(mv, a1);
          a2 = s2.fma(mv, a2);
          a3 = s3.fma(mv, a3);
        }
      }
    }
    // sumLanes called, though its calls box (192 bytes a row): with the lanes through LANES or
    // read in place, as the larger kernels do, Q3_K's dot measured 1.2 to 1.8 times slower (745
    // against 863 to 1,361 ns a row); why was not found
    out[oo] = sumLanes(a0);
    out[oo + os] = sumLanes(a1);
    out[oo + 2 * os] = sumLanes(a2);
    out[oo + 3 * os] = sumLanes(a3);
  }

  /**
   * Q4_K super-blocks of 256 weights (144 bytes: f16 d, f16 dmin, 12 bytes of packed 6-bit
   * sub-block scales and mins, 128 bytes of nibbles, per 64 weights 32 bytes whose low nibbles
   * are the first 32 and high nibbles the next 32) and Q5_K's (176 bytes: the same with 32 bytes
   * qh before the nibbles; bit {@code s} of qh byte {@code l} is the fifth bit of weight {@code
   * l} of sub-block {@code s}). A weight is {@code d * scale * q - dmin * min}, so a sub-block of
   * 32 adds {@code (d * scale) * (x . q) - (dmin * min) * sum(x)}: both sums in lanes, then the
   * two scaled adds, sub-block by sub-block in order. Q4_K reads its fifth bits from its own
   * nibbles and masks them to nothing, so both types run the same code.
   */
  static float dotK(float[] x, int xo, MemorySegment data, long at, int n, boolean five) {
    FloatVector acc = FloatVector.zero(F);
    long blockBytes = five ? 176 : 144;
    long nibbleOffset = five ? 48 : 16;
    byte fifth = (byte) (five ? 1 : 0);
    int blocks = n / 256;
    for (int b = 0; b < blocks; b++) {
      long block = at + blockBytes * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      float dmin = Float.float16ToFloat(data.get(SHORT_LE, block + 2));
      long scales = block + 4;
      int xb = xo + 256 * b;
      for (int s = 0; s < 8; s++) { // sub-block s: the low (s even) or high nibbles of 32 bytes
        long qs = block + nibbleOffset + 32L * (s >> 1);
        long qh = five ? block + 16 : qs;
        FloatVector part = FloatVector.zero(F);
        FloatVector sum = FloatVector.zero(F);
        for (int k = 0; k < 4; k++) {
          ByteVector q =
              ByteVector.fromMemorySegment(B64, data, qs + 8 * k, ByteOrder.LITTLE_ENDIAN)
                  .lanewise(VectorOperators.LSHR, 4 * (s & 1))
                  .and((byte) 0xF)
                  .or(
                      ByteVector.fromMemorySegment(B64, data, qh + 8 * k, ByteOrder.LITTLE_ENDIAN)
                          .lanewise(VectorOperators.LSHR, s)
                          .and(fifth)
                          .lanewise(VectorOperators.LSHL, 4));
          FloatVector xv = FloatVector.fromArray(F, x, xb + 32 * s + 8 * k);
          part = xv.fma((FloatVector) q.convertShape(VectorOperators.B2F, F, 0), part);
          sum = sum.add(xv);
        }
        float scale = d * GgufTensorType.scaleK4(data, scales, s, false);
        float min = dmin * GgufTensorType.scaleK4(data, scales, s, true);
        acc =
            sum.fma(FloatVector.broadcast(F, -min), part.fma(FloatVector.broadcast(F, scale), acc));
      }
    }
    return sumLanes(acc);
  }

  /** {@link #dotK} for four positions, each run of a sub-block unpacked once: the same bits. */
  private static void dot4K(
      float[] x,
      int xo,
      int xs,
      MemorySegment data,
      long at,
      int n,
      boolean five,
      float[] out,
      int oo,
      int os) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    long blockBytes = five ? 176 : 144;
    long nibbleOffset = five ? 48 : 16;
    byte fifth = (byte) (five ? 1 : 0);
    int blocks = n / 256;
    for (int b = 0; b < blocks; b++) {
      long block = at + blockBytes * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      float dmin = Float.float16ToFloat(data.get(SHORT_LE, block + 2));
      long scales = block + 4;
      int xb = xo + 256 * b;
      for (int s = 0; s < 8; s++) {
        long qs = block + nibbleOffset + 32L * (s >> 1);
        long qh = five ? block + 16 : qs;
        FloatVector p0 = FloatVector.zero(F);
        FloatVector p1 = FloatVector.zero(F);
        FloatVector p2 = FloatVector.zero(F);
        FloatVector p3 = FloatVector.zero(F);
        FloatVector s0 = FloatVector.zero(F);
        FloatVector s1 = FloatVector.zero(F);
        FloatVector s2 = FloatVector.zero(F);
        FloatVector s3 = FloatVector.zero(F);
        for (int k = 0; k < 4; k++) {
          FloatVector w =
              (FloatVector)
                  ByteVector.fromMemorySegment(B64, data, qs + 8 * k, ByteOrder.LITTLE_ENDIAN)
                      .lanewise(VectorOperators.LSHR, 4 * (s & 1))
                      .and((byte) 0xF)
                      .or(
                          ByteVector.fromMemorySegment(
                                  B64, data, qh + 8 * k, ByteOrder.LITTLE_ENDIAN)
                              .lanewise(VectorOperators.LSHR, s)
                              .and(fifth)
                              .lanewise(VectorOperators.LSHL, 4))
                      .convertShape(VectorOperators.B2F, F, 0);
          int xk = xb + 32 * s + 8 * k;
          FloatVector x0 = FloatVector.fromArray(F, x, xk);
          FloatVector x1 = FloatVector.fromArray(F, x, xk + xs);
          FloatVector x2 = FloatVector.fromArray(F, x, xk + 2 * xs);
          FloatVector x3 = FloatVector.fromArray(F, x, xk + 3 * xs);
          p0 = x0.fma(w, p0);
          p1 = x1.fma(w, p1);
          p2 = x2.fma(w, p2);
          p3 = x3.fma(w, p3);
          s0 = s0.add(x0);
          s1 = s1.add(x1);
          s2 = s2.add(x2);
          s3 = s3.add(x3);
        }
        FloatVector scale =
            FloatVector.broadcast(F, d * GgufTensorType.scaleK4(data, scales, s, false));
        FloatVector min =
            FloatVector.broadcast(F, -(dmin * GgufTensorType.scaleK4(data, scales, s, true)));
        a0 = s0.fma(min, p0.fma(scale, a0));
        a1 = s1.fma(min, p1.fma(scale, a1));
        a2 = s2.fma(min, p2.fma(scale, a2));
        a3 = s3.fma(min, p3.fma(scale, a3));
      }
    }
    // through an array, not sumLanes (see sumLanes)
    float[] lanes = LANES.get();
    a0.intoArray(lanes, 0);
    a1.intoArray(lanes, 8);
    a2.intoArray(lanes, 16);
    a3.intoArray(lanes, 24);
    sumLanes4(lanes, out, oo, os);
  }

  /**
   * Q6_K super-blocks of 256 weights (210 bytes: 128 bytes of low 4 bits, 64 of high 2 bits, 16
   * int8 scales, one per 16 weights, f16 d); a weight is {@code d * scale * (q - 32)}. Per half
   * of 128 weights, four runs of 32 (weights {@code l + 32k}) are unpacked from the same 64 low
   * and 32 high bytes as byte lanes; each 16 weights add {@code (d * scale) * (x . q)}, in weight
   * order.
   */
  static float dotQ6K(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    int blocks = n / 256;
    for (int b = 0; b < blocks; b++) {
      long block = at + 210L * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block + 208));
      int xb = xo + 256 * b;
      for (int h = 0; h < 2; h++) {
        long ql = block + 64L * h;
        ByteVector lo0 = ByteVector.fromMemorySegment(B256, data, ql, ByteOrder.LITTLE_ENDIAN);
        ByteVector lo32 =
            ByteVector.fromMemorySegment(B256, data, ql + 32, ByteOrder.LITTLE_ENDIAN);
        ByteVector hi =
            ByteVector.fromMemorySegment(
                B256, data, block + 128 + 32L * h, ByteOrder.LITTLE_ENDIAN);
        long scales = block + 192 + 8L * h;
        for (int k = 0; k < 4; k++) {
          ByteVector low = k % 2 == 0 ? lo0 : lo32;
          ByteVector nibble =
              k < 2 ? low.and((byte) 0xF) : low.lanewise(VectorOperators.ASHR, 4).and((byte) 0xF);
          ByteVector top =
              hi.lanewise(VectorOperators.ASHR, 2 * k)
                  .and((byte) 3)
                  .lanewise(VectorOperators.LSHL, 4);
          ByteVector q = nibble.or(top).sub((byte) 32);
          int xk = xb + 128 * h + 32 * k;
          for (int s = 0; s < 2; s++) {
            FloatVector part = FloatVector.zero(F);
            part = FloatVector.fromArray(F, x, xk + 16 * s).fma(widen(q, 2 * s), part);
            part = FloatVector.fromArray(F, x, xk + 16 * s + 8).fma(widen(q, 2 * s + 1), part);
            float scale = d * data.get(ValueLayout.JAVA_BYTE, scales + 2 * k + s);
            acc = part.fma(FloatVector.broadcast(F, scale), acc);
          }
        }
      }
    }
    // through an array, not sumLanes (see sumLanes)
    float[] lanes = LANES.get();
    acc.intoArray(lanes, 0);
    return sumLanes(lanes, 0);
  }

  /** {@link #dotQ6K} for four positions, each run unpacked and widened once: the same bits. */
  private static void dot4Q6K(
      float[] x, int xo, int xs, MemorySegment data, long at, int n, float[] out, int oo, int os) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    int blocks = n / 256;
    for (int b = 0; b < blocks; b++) {
      long block = at + 210L * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block + 208));
      int xb = xo + 256 * b;
      for (int h = 0; h < 2; h++) {
        long ql = block + 64L * h;
        ByteVector lo0 = ByteVector.fromMemorySegment(B256, data, ql, ByteOrder.LITTLE_ENDIAN);
        ByteVector lo32 =
            ByteVector.fromMemorySegment(B256, data, ql + 32, ByteOrder.LITTLE_ENDIAN);
        ByteVector hi =
            ByteVector.fromMemorySegment(
                B256, data, block + 128 + 32L * h, ByteOrder.LITTLE_ENDIAN);
        long scales = block + 192 + 8L * h;
        for (int k = 0; k < 4; k++) {
          ByteVector low = k % 2 == 0 ? lo0 : lo32;
          ByteVector nibble =
              k < 2 ? low.and((byte) 0xF) : low.lanewise(VectorOperators.ASHR, 4).and((byte) 0xF);
          ByteVector top =
              hi.lanewise(VectorOperators.ASHR, 2 * k)
                  .and((byte) 3)
                  .lanewise(VectorOperators.LSHL, 4);
          ByteVector q = nibble.or(top).sub((byte) 32);
          int xk = xb + 128 * h + 32 * k;
          for (int s = 0; s < 2; s++) {
            FloatVector w0 = widen(q, 2 * s);
            FloatVector w1 = widen(q, 2 * s + 1);
            int xs0 = xk + 16 * s;
            FloatVector scale =
                FloatVector.broadcast(F, d * data.get(ValueLayout.JAVA_BYTE, scales + 2 * k + s));
            FloatVector p0 = FloatVector.fromArray(F, x, xs0).fma(w0, FloatVector.zero(F));
            FloatVector p1 = FloatVector.fromArray(F, x, xs0 + xs).fma(w0, FloatVector.zero(F));
            FloatVector p2 = FloatVector.fromArray(F, x, xs0 + 2 * xs).fma(w0, FloatVector.zero(F));
            FloatVector p3 = FloatVector.fromArray(F, x, xs0 + 3 * xs).fma(w0, FloatVector.zero(F));
            a0 = FloatVector.fromArray(F, x, xs0 + 8).fma(w1, p0).fma(scale, a0);
            a1 = FloatVector.fromArray(F, x, xs0 + xs + 8).fma(w1, p1).fma(scale, a1);
            a2 = FloatVector.fromArray(F, x, xs0 + 2 * xs + 8).fma(w1, p2).fma(scale, a2);
            a3 = FloatVector.fromArray(F, x, xs0 + 3 * xs + 8).fma(w1, p3).fma(scale, a3);
          }
        }
      }
    }
    // through an array, not sumLanes (see sumLanes)
    float[] lanes = LANES.get();
    a0.intoArray(lanes, 0);
    a1.intoArray(lanes, 8);
    a2.intoArray(lanes, 16);
    a3.intoArray(lanes, 24);
    sumLanes4(lanes, out, oo, os);
  }

  /**
   * The dots of one weight row with four inputs at once: {@code out[outAt + k * outStride] =
   * dot(x, xo + k * xStride, data, rowOffset, type, n)} for {@code k < 4}, each bit for bit what
   * {@link #dot} returns. Why: a prefill batch multiplies every weight row by many positions, and
   * widening a quantized block to floats costs more than the multiply-adds it feeds; widened once
   * for four positions, the prefill of smollm-135m Q8_0 ran about twice as fast (best of 5 runs,
   * 94 to 190 tokens/s on 2 cores; docs/PERFORMANCE.md, "Llama runner against llama.cpp"). Each
   * position keeps its own accumulators and the single dot's order of operations, so batching
   * changes no bit.
   */
  public static void dot4(
      float[] x,
      int xo,
      int xStride,
      MemorySegment data,
      long rowOffset,
      GgufTensorType type,
      int n,
      float[] out,
      int outAt,
      int outStride) {
    if (n % type.blockSize() != 0) {
      throw new IllegalArgumentException(
          type + ": row length=" + n + " is not a multiple of the block size " + type.blockSize());
    }
    switch (type) {
      case F32 -> dot4F32(x, xo, xStride, data, rowOffset, n, out, outAt, outStride);
      case F16, BF16 -> dot4Half(x, xo, xStride, data, rowOffset, type, n, out, outAt, outStride);
      case Q8_0 -> dot4Q8_0(x, xo, xStride, data, rowOffset, n, out, outAt, outStride);
      case Q4_0 ->
          dot4Lookup(x, xo, xStride, data, rowOffset, n, Q4_0_LEVELS, false, out, outAt, outStride);
      case Q4_1, Q5_0, Q5_1 ->
          dot4Block32(x, xo, xStride, data, rowOffset, type, n, out, outAt, outStride);
      case Q4_K, Q5_K ->
          dot4K(
              x,
              xo,
              xStride,
              data,
              rowOffset,
              n,
              type == GgufTensorType.Q5_K,
              out,
              outAt,
              outStride);
      case Q6_K -> dot4Q6K(x, xo, xStride, data, rowOffset, n, out, outAt, outStride);
      case IQ4_NL, IQ4_XS ->
          dot4Lookup(
              x,
              xo,
              xStride,
              data,
              rowOffset,
              n,
              IQ4_LEVELS,
              type == GgufTensorType.IQ4_XS,
              out,
              outAt,
              outStride);
      case Q2_K, Q3_K ->
          dot4Q2Q3K(
              x,
              xo,
              xStride,
              data,
              rowOffset,
              n,
              type == GgufTensorType.Q3_K,
              out,
              outAt,
              outStride);
    }
  }

  /**
   * IQ4_NL (blocks of 32: f16 d, 16 bytes of indices laid out as Q4_0's) and IQ4_XS ({@code xs};
   * super-blocks of 256: f16 d, the packed 6-bit scales, then per 32 weights 16 bytes as
   * IQ4_NL's, scaled by {@code d * (scale - 32)}). A weight is its scale times the table level its
   * 4-bit index names: the 16 index bytes are read as one 128-bit vector, masked or shifted to
   * the indices of weights 0-15 and 16-31, looked up in the 16 levels with one {@code selectFrom}
   * each (a byte shuffle), and widened eight lanes at a time. A run of 32 adds {@code scale * (x .
   * levels)}.
   */
  static float dotIq4(float[] x, int xo, MemorySegment data, long at, int n, boolean xs) {
    ByteVector levels = ByteVector.fromArray(B128, IQ4_LEVELS, 0);
    FloatVector acc = FloatVector.zero(F);
    int runs = n / 32;
    for (int r = 0; r < runs; r++) {
      long block = xs ? at + 136L * (r >> 3) : at + 18L * r;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      if (xs) {
        d *= GgufTensorType.scaleIq4Xs(data, block, r & 7) - 32;
      }
      ByteVector q =
          ByteVector.fromMemorySegment(
              B128, data, xs ? block + 8 + 16L * (r & 7) : block + 2, ByteOrder.LITTLE_ENDIAN);
      ByteVector low = q.and((byte) 0xF).selectFrom(levels);
      ByteVector high = q.lanewise(VectorOperators.LSHR, 4).and((byte) 0xF).selectFrom(levels);
      int xr = xo + 32 * r;
      FloatVector part =
          FloatVector.fromArray(F, x, xr)
              .mul((FloatVector) low.convertShape(VectorOperators.B2F, F, 0));
      part =
          FloatVector.fromArray(F, x, xr + 8)
              .fma((FloatVector) low.convertShape(VectorOperators.B2F, F, 1), part);
      part =
          FloatVector.fromArray(F, x, xr + 16)
              .fma((FloatVector) high.convertShape(VectorOperators.B2F, F, 0), part);
      part =
          FloatVector.fromArray(F, x, xr + 24)
              .fma((FloatVector) high.convertShape(VectorOperators.B2F, F, 1), part);
      acc = part.fma(FloatVector.broadcast(F, d), acc);
    }
    // through an array, not sumLanes (see sumLanes)
    float[] lanes = LANES.get();
    acc.intoArray(lanes, 0);
    return sumLanes(lanes, 0);
  }

  /**
   * Four positions against a row whose weights are 4-bit indices into {@code table}, laid out as
   * IQ4_NL's ({@code superBlocks} false: blocks of 32 with an f16 scale; Q4_0 is that layout with
   * the levels -8 to 7) or IQ4_XS's: in {@link #dotIq4}'s order, and in {@link #dotQ4_0}'s for
   * Q4_0 (whose first product is an fma onto zero rather than a product: the two differ at most in
   * the sign of a zero partial sum, which the accumulator, starting at +0, never keeps), so each
   * position gets its single dot's bits. Each run of 32 is read once, as 16 bytes, for the four
   * positions: for Q4_0 about 1.5 times faster than its own kernel, which read eight bytes per run
   * of eight (QuantizedDotBenchmark: 496 to 499 against 320 to 372 ns a row of 1,536).
   */
  private static void dot4Lookup(
      float[] x,
      int xo,
      int xs,
      MemorySegment data,
      long at,
      int n,
      byte[] table,
      boolean superBlocks,
      float[] out,
      int oo,
      int os) {
    ByteVector levels = ByteVector.fromArray(B128, table, 0);
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    int runs = n / 32;
    for (int r = 0; r < runs; r++) {
      long block = superBlocks ? at + 136L * (r >> 3) : at + 18L * r;
      float scale = Float.float16ToFloat(data.get(SHORT_LE, block));
      if (superBlocks) {
        scale *= GgufTensorType.scaleIq4Xs(data, block, r & 7) - 32;
      }
      FloatVector d = FloatVector.broadcast(F, scale);
      ByteVector q =
          ByteVector.fromMemorySegment(
              B128,
              data,
              superBlocks ? block + 8 + 16L * (r & 7) : block + 2,
              ByteOrder.LITTLE_ENDIAN);
      ByteVector low = q.and((byte) 0xF).selectFrom(levels);
      ByteVector high = q.lanewise(VectorOperators.LSHR, 4).and((byte) 0xF).selectFrom(levels);
      int xr = xo + 32 * r;
      FloatVector w = (FloatVector) low.convertShape(VectorOperators.B2F, F, 0);
      FloatVector p0 = FloatVector.fromArray(F, x, xr).mul(w);
      FloatVector p1 = FloatVector.fromArray(F, x, xr + xs).mul(w);
      FloatVector p2 = FloatVector.fromArray(F, x, xr + 2 * xs).mul(w);
      FloatVector p3 = FloatVector.fromArray(F, x, xr + 3 * xs).mul(w);
      w = (FloatVector) low.convertShape(VectorOperators.B2F, F, 1);
      p0 = FloatVector.fromArray(F, x, xr + 8).fma(w, p0);
      p1 = FloatVector.fromArray(F, x, xr + 8 + xs).fma(w, p1);
      p2 = FloatVector.fromArray(F, x, xr + 8 + 2 * xs).fma(w, p2);
      p3 = FloatVector.fromArray(F, x, xr + 8 + 3 * xs).fma(w, p3);
      w = (FloatVector) high.convertShape(VectorOperators.B2F, F, 0);
      p0 = FloatVector.fromArray(F, x, xr + 16).fma(w, p0);
      p1 = FloatVector.fromArray(F, x, xr + 16 + xs).fma(w, p1);
      p2 = FloatVector.fromArray(F, x, xr + 16 + 2 * xs).fma(w, p2);
      p3 = FloatVector.fromArray(F, x, xr + 16 + 3 * xs).fma(w, p3);
      w = (FloatVector) high.convertShape(VectorOperators.B2F, F, 1);
      p0 = FloatVector.fromArray(F, x, xr + 24).fma(w, p0);
      p1 = FloatVector.fromArray(F, x, xr + 24 + xs).fma(w, p1);
      p2 = FloatVector.fromArray(F, x, xr + 24 + 2 * xs).fma(w, p2);
      p3 = FloatVector.fromArray(F, x, xr + 24 + 3 * xs).fma(w, p3);
      a0 = p0.fma(d, a0);
      a1 = p1.fma(d, a1);
      a2 = p2.fma(d, a2);
      a3 = p3.fma(d, a3);
    }
    // through an array, not sumLanes (see sumLanes)
    float[] lanes = LANES.get();
    a0.intoArray(lanes, 0);
    a1.intoArray(lanes, 8);
    a2.intoArray(lanes, 16);
    a3.intoArray(lanes, 24);
    sumLanes4(lanes, out, oo, os);
  }

  /** Four positions against one F32 row, each in {@link #dotF32}'s order (the same bits). */
  private static void dot4F32(
      float[] x, int xo, int xs, MemorySegment data, long at, int n, float[] out, int oo, int os) {
    for (int k = 0; k < 4; k += 2) {
      dot2F32(x, xo + k * xs, xs, data, at, n, out, oo + k * os, os);
    }
  }

  /**
   * Two positions against one F32 row in {@link #dotF32}'s order: eight accumulators, each row
   * chunk loaded once for both. Two at a time rather than four: sixteen accumulators and the row's
   * four chunks left too few vector registers on 256-bit machines.
   */
  private static void dot2F32(
      float[] x, int xo, int xs, MemorySegment data, long at, int n, float[] out, int oo, int os) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    FloatVector b0 = FloatVector.zero(F);
    FloatVector b1 = FloatVector.zero(F);
    FloatVector b2 = FloatVector.zero(F);
    FloatVector b3 = FloatVector.zero(F);
    int xb = xo + xs;
    int i = 0;
    int width = F.length();
    for (; i + 4 * width <= n; i += 4 * width) {
      long w = at + 4L * i;
      FloatVector w0 = fromF32(data, w);
      FloatVector w1 = fromF32(data, w + 4L * width);
      FloatVector w2 = fromF32(data, w + 8L * width);
      FloatVector w3 = fromF32(data, w + 12L * width);
      a0 = FloatVector.fromArray(F, x, xo + i).fma(w0, a0);
      b0 = FloatVector.fromArray(F, x, xb + i).fma(w0, b0);
      a1 = FloatVector.fromArray(F, x, xo + i + width).fma(w1, a1);
      b1 = FloatVector.fromArray(F, x, xb + i + width).fma(w1, b1);
      a2 = FloatVector.fromArray(F, x, xo + i + 2 * width).fma(w2, a2);
      b2 = FloatVector.fromArray(F, x, xb + i + 2 * width).fma(w2, b2);
      a3 = FloatVector.fromArray(F, x, xo + i + 3 * width).fma(w3, a3);
      b3 = FloatVector.fromArray(F, x, xb + i + 3 * width).fma(w3, b3);
    }
    if (i + width <= n) {
      FloatVector w0 = fromF32(data, at + 4L * i);
      a0 = FloatVector.fromArray(F, x, xo + i).fma(w0, a0);
      b0 = FloatVector.fromArray(F, x, xb + i).fma(w0, b0);
      i += width;
      if (i + width <= n) {
        FloatVector w1 = fromF32(data, at + 4L * i);
        a1 = FloatVector.fromArray(F, x, xo + i).fma(w1, a1);
        b1 = FloatVector.fromArray(F, x, xb + i).fma(w1, b1);
        i += width;
        if (i + width <= n) {
          FloatVector w2 = fromF32(data, at + 4L * i);
          a2 = FloatVector.fromArray(F, x, xo + i).fma(w2, a2);
          b2 = FloatVector.fromArray(F, x, xb + i).fma(w2, b2);
          i += width;
        }
      }
    }
    float s0 = sumLanes(a0.add(a1).add(a2.add(a3)));
    float s1 = sumLanes(b0.add(b1).add(b2.add(b3)));
    for (; i < n; i++) {
      float w = data.get(FLOAT_LE, at + 4L * i);
      s0 += x[xo + i] * w;
      s1 += x[xb + i] * w;
    }
    out[oo] = s0;
    out[oo + os] = s1;
  }

  private static void dot4Half(
      float[] x,
      int xo,
      int xs,
      MemorySegment data,
      long at,
      GgufTensorType type,
      int n,
      float[] out,
      int oo,
      int os) {
    boolean bf16 = type == GgufTensorType.BF16;
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    float[] w = new float[F.length()];
    int i = 0;
    int bound = F.loopBound(n);
    for (; i < bound; i += F.length()) {
      for (int j = 0; j < w.length; j++) {
        w[j] = half(data.get(SHORT_LE, at + 2L * (i + j)), bf16);
      }
      FloatVector wv = FloatVector.fromArray(F, w, 0);
      a0 = FloatVector.fromArray(F, x, xo + i).fma(wv, a0);
      a1 = FloatVector.fromArray(F, x, xo + xs + i).fma(wv, a1);
      a2 = FloatVector.fromArray(F, x, xo + 2 * xs + i).fma(wv, a2);
      a3 = FloatVector.fromArray(F, x, xo + 3 * xs + i).fma(wv, a3);
    }
    float s0 = sumLanes(a0);
    float s1 = sumLanes(a1);
    float s2 = sumLanes(a2);
    float s3 = sumLanes(a3);
    for (; i < n; i++) {
      float wi = half(data.get(SHORT_LE, at + 2L * i), bf16);
      s0 += x[xo + i] * wi;
      s1 += x[xo + xs + i] * wi;
      s2 += x[xo + 2 * xs + i] * wi;
      s3 += x[xo + 3 * xs + i] * wi;
    }
    out[oo] = s0;
    out[oo + os] = s1;
    out[oo + 2 * os] = s2;
    out[oo + 3 * os] = s3;
  }

  private static float half(short bits, boolean bf16) {
    return bf16 ? Float.intBitsToFloat((bits & 0xFFFF) << 16) : Float.float16ToFloat(bits);
  }

  private static void dot4Q8_0(
      float[] x, int xo, int xs, MemorySegment data, long at, int n, float[] out, int oo, int os) {
    FloatVector a0 = FloatVector.zero(F);
    FloatVector a1 = FloatVector.zero(F);
    FloatVector a2 = FloatVector.zero(F);
    FloatVector a3 = FloatVector.zero(F);
    int blocks = n / 32;
    for (int b = 0; b < blocks; b++) {
      long block = at + 34L * b;
      FloatVector d = FloatVector.broadcast(F, Float.float16ToFloat(data.get(SHORT_LE, block)));
      int xb = xo + 32 * b;
      FloatVector p0 = FloatVector.zero(F);
      FloatVector p1 = FloatVector.zero(F);
      FloatVector p2 = FloatVector.zero(F);
      FloatVector p3 = FloatVector.zero(F);
      for (int j = 0; j < 32; j += 8) {
        FloatVector q =
            (FloatVector)
                ByteVector.fromMemorySegment(B64, data, block + 2 + j, ByteOrder.LITTLE_ENDIAN)
                    .convertShape(VectorOperators.B2F, F, 0);
        p0 = FloatVector.fromArray(F, x, xb + j).fma(q, p0);
        p1 = FloatVector.fromArray(F, x, xb + xs + j).fma(q, p1);
        p2 = FloatVector.fromArray(F, x, xb + 2 * xs + j).fma(q, p2);
        p3 = FloatVector.fromArray(F, x, xb + 3 * xs + j).fma(q, p3);
      }
      a0 = p0.fma(d, a0);
      a1 = p1.fma(d, a1);
      a2 = p2.fma(d, a2);
      a3 = p3.fma(d, a3);
    }
    out[oo] = sumLanes(a0);
    out[oo + os] = sumLanes(a1);
    out[oo + 2 * os] = sumLanes(a2);
    out[oo + 3 * os] = sumLanes(a3);
  }

  /**
   * Part {@code part} (eight lanes) of a byte vector, widened to {@link #F}. Only {@link #dotQ6K}
   * widens this way: its 256-bit runs cost 64 bytes of boxing per row of 1,536 (the other
   * kernels' did kilobytes, see {@link #dotQ4_0}), and reading its runs eight bytes at a time
   * instead made its dot 1.8 times slower.
   */
  private static FloatVector widen(ByteVector bytes, int part) {
    return (FloatVector) bytes.convertShape(VectorOperators.B2F, F, part);
  }

  /**
   * Lanes summed in lane order. Why not {@code reduceLanes(ADD)}: its float order is unspecified
   * and differs between the intrinsic and the interpreter's fallback, which broke bit-identity of
   * one position computed early (interpreted) and late (compiled) in KernelsTest. Why lane by
   * lane, not through a new array: C2 did not scalar-replace an array that {@code intoArray}
   * filled, so every dot allocated one, most of the served heap's garbage (JFR: 11 of 14 GB
   * sampled in a short serve of smollm-135m; docs/PERFORMANCE.md). The large kernels (Q4_K's,
   * Q5_K's, Q6_K's, the blocks of 32's four-position dot and the table lookups; not Q2_K's and
   * Q3_K's four-position dot, see there) do not call this: by their end C2 is past its node-count
   * cutoff ({@code NodeCountInliningCutoff} in {@code -XX:+PrintInlining}), so the call was not
   * inlined and each accumulator was boxed to reach it (64 bytes per accumulator per row). They
   * store their accumulators in each thread's {@link #LANES} ({@code intoArray} is force-inlined
   * whatever the cutoff) and sum them with {@link #sumLanes(float[], int)}, which takes no vector:
   * the same order, so the same bits. Lanes read in place at constant indices measured as fast, in
   * ten lines per accumulator; a loop over {@code lane(i)} made Q4_K's dot 1.2 times slower.
   */
  private static float sumLanes(FloatVector acc) {
    // F is 256 bits: eight lanes, each read with a constant index (a loop's variable index made
    // the method big enough that it was sometimes not inlined, and the vector was boxed to reach
    // it: 64 bytes per dot, under QuantizedDotBenchmark -prof gc)
    float sum = 0f;
    sum += acc.lane(0);
    sum += acc.lane(1);
    sum += acc.lane(2);
    sum += acc.lane(3);
    sum += acc.lane(4);
    sum += acc.lane(5);
    sum += acc.lane(6);
    sum += acc.lane(7);
    return sum;
  }

  /**
   * The lanes of a vector stored at {@code lanes[from..from+8)}, summed in {@link
   * #sumLanes(FloatVector)}'s order.
   */
  private static float sumLanes(float[] lanes, int from) {
    float sum = 0f;
    for (int i = 0; i < 8; i++) {
      sum += lanes[from + i];
    }
    return sum;
  }

  /** Four positions' lanes stored one after another in {@code lanes}, summed into {@code out}. */
  private static void sumLanes4(float[] lanes, float[] out, int oo, int os) {
    for (int k = 0; k < 4; k++) {
      out[oo + k * os] = sumLanes(lanes, 8 * k);
    }
  }

  /**
   * RMSNorm: {@code out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]} over {@code n} values; the
   * mean is summed in double, in index order, as ggml does.
   */
  public static void rmsNorm(
      float[] x, int xo, float[] weight, float eps, float[] out, int oo, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) {
      ss += (double) (x[xo + i] * x[xo + i]);
    }
    float scale = (float) (1.0 / Math.sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) {
      out[oo + i] = x[xo + i] * scale * weight[i];
    }
  }

  /**
   * Rotates one head of {@code headSize} values at {@code v[offset..]} for {@code position}: the
   * first {@code ropeDims} values, in adjacent pairs (2i, 2i+1) ("normal", llama) or in halves
   * (i, i + ropeDims/2) ("NeoX", qwen2); frequency {@code base^(-2i/ropeDims)}.
   */
  public static void rope(
      float[] v, int offset, int ropeDims, float position, float base, boolean neox) {
    rope(v, offset, ropeDims, position, base, neox, null);
  }

  /**
   * {@link #rope(float[], int, int, float, float, boolean)} with pair {@code i}'s angle divided by
   * {@code factors[i]} (a file's {@code rope_freqs.weight}, Llama 3.1's frequency scaling, as
   * llama.cpp's {@code ggml_rope_ext} divides by its frequency factors); null divides by none.
   */
  public static void rope(
      float[] v,
      int offset,
      int ropeDims,
      float position,
      float base,
      boolean neox,
      float[] factors) {
    int half = ropeDims / 2;
    for (int i = 0; i < half; i++) {
      double theta = position * Math.pow(base, -2.0 * i / ropeDims);
      if (factors != null) {
        theta /= factors[i];
      }
      float cos = (float) Math.cos(theta);
      float sin = (float) Math.sin(theta);
      int a = neox ? offset + i : offset + 2 * i;
      int b = neox ? offset + i + half : offset + 2 * i + 1;
      float x0 = v[a];
      float x1 = v[b];
      v[a] = x0 * cos - x1 * sin;
      v[b] = x0 * sin + x1 * cos;
    }
  }

  /** SiLU(x). */
  public static float silu(float x) {
    return x / (1f + (float) Math.exp(-x));
  }

  /** SwiGLU in place: {@code gate[i] = silu(gate[i]) * up[i]} for {@code n} values. */
  public static void swiglu(float[] gate, int go, float[] up, int uo, int n) {
    for (int i = 0; i < n; i++) {
      gate[go + i] = silu(gate[go + i]) * up[uo + i];
    }
  }

  /**
   * GELU as llama.cpp's CPU backend computes it for F32 ({@code ggml_vec_gelu_f32} with {@code
   * GGML_GELU_FP16}, which it defines): 0 at or below -10, {@code x} at or above 10, and between
   * them the tanh form {@code 0.5x(1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))} of {@code x}
   * rounded to binary16, itself rounded to binary16 ({@link #GELU_F16}, its table).
   */
  public static float gelu(float x) {
    if (x <= -10f) {
      return 0f;
    }
    if (x >= 10f) {
      return x;
    }
    return GELU_F16[Float.floatToFloat16(x) & 0xFFFF];
  }

  /** The tanh form of GELU in float arithmetic, as ggml's {@code ggml_gelu_f32}. */
  static float geluTanh(float x) {
    float sqrt2OverPi = 0.79788456080286535587989211986876f;
    float coefA = 0.044715f;
    return 0.5f * x * (1f + (float) Math.tanh(sqrt2OverPi * x * (1f + coefA * x * x)));
  }

  /** GELU of every binary16 value, rounded to binary16: ggml's {@code ggml_table_gelu_f16}. */
  private static final float[] GELU_F16 = geluTable();

  private static float[] geluTable() {
    float[] table = new float[1 << 16];
    for (int i = 0; i < table.length; i++) {
      float x = Float.float16ToFloat((short) i);
      table[i] = Float.float16ToFloat(Float.floatToFloat16(geluTanh(x)));
    }
    return table;
  }

  /** GEGLU in place: {@code gate[i] = gelu(gate[i]) * up[i]} for {@code n} values. */
  public static void geglu(float[] gate, int go, float[] up, int uo, int n) {
    for (int i = 0; i < n; i++) {
      gate[go + i] = gelu(gate[go + i]) * up[uo + i];
    }
  }

  /**
   * Soft cap in place: {@code v[i] = tanh(v[i] * (1/cap)) * cap} over {@code v[offset..offset+n)},
   * as llama.cpp's scale, tanh, scale (Gemma 2's attention scores and logits).
   */
  public static void softcap(float[] v, int offset, int n, float cap) {
    float inverse = 1f / cap;
    for (int i = offset; i < offset + n; i++) {
      v[i] = (float) Math.tanh(v[i] * inverse) * cap;
    }
  }

  /** Softmax in place over {@code v[offset..offset+n)}, max then sum in index order. */
  public static void softmax(float[] v, int offset, int n) {
    float max = Float.NEGATIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      max = Math.max(max, v[offset + i]);
    }
    float sum = 0f;
    for (int i = 0; i < n; i++) {
      float e = (float) Math.exp(v[offset + i] - max);
      v[offset + i] = e;
      sum += e;
    }
    float inv = 1f / sum;
    for (int i = 0; i < n; i++) {
      v[offset + i] *= inv;
    }
  }
}
