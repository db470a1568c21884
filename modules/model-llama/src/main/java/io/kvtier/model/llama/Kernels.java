package io.kvtier.model.llama;

import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufUnsupportedException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
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

  /** The weight types {@link #dot} reads (Q4_K and Q6_K are read by kvtier-gguf only). */
  public static final Set<GgufTensorType> SUPPORTED_TYPES =
      Collections.unmodifiableSet(
          EnumSet.of(
              GgufTensorType.F32,
              GgufTensorType.F16,
              GgufTensorType.BF16,
              GgufTensorType.Q8_0,
              GgufTensorType.Q4_0));

  /** Fixed rather than preferred, so results do not change with the machine's vector width. */
  static final VectorSpecies<Float> F = FloatVector.SPECIES_256;

  private static final VectorSpecies<Byte> B64 = ByteVector.SPECIES_64;
  private static final VectorSpecies<Byte> B128 = ByteVector.SPECIES_128;
  private static final ValueLayout.OfFloat FLOAT_LE =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
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
      default ->
          throw new GgufUnsupportedException(
              "tensor type " + type + " has no dot kernel yet; supported: " + SUPPORTED_TYPES);
    };
  }

  static float dotF32(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    int i = 0;
    int bound = F.loopBound(n);
    for (; i < bound; i += F.length()) {
      FloatVector w = FloatVector.fromMemorySegment(F, data, at + 4L * i, ByteOrder.LITTLE_ENDIAN);
      acc = FloatVector.fromArray(F, x, xo + i).fma(w, acc);
    }
    float sum = sumLanes(acc);
    for (; i < n; i++) {
      sum += x[xo + i] * data.get(FLOAT_LE, at + 4L * i);
    }
    return sum;
  }

  /** Dot of two float arrays, in the same fixed order as {@link #dotF32}. */
  public static float dot(float[] a, int ao, float[] b, int bo, int n) {
    FloatVector acc = FloatVector.zero(F);
    int i = 0;
    int bound = F.loopBound(n);
    for (; i < bound; i += F.length()) {
      acc = FloatVector.fromArray(F, a, ao + i).fma(FloatVector.fromArray(F, b, bo + i), acc);
    }
    float sum = sumLanes(acc);
    for (; i < n; i++) {
      sum += a[ao + i] * b[bo + i];
    }
    return sum;
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

  /** Q4_0 blocks: 2-byte f16 scale, then 16 bytes (low nibbles weights 0-15, high 16-31). */
  static float dotQ4_0(float[] x, int xo, MemorySegment data, long at, int n) {
    FloatVector acc = FloatVector.zero(F);
    int blocks = n / 32;
    for (int b = 0; b < blocks; b++) {
      long block = at + 18L * b;
      float d = Float.float16ToFloat(data.get(SHORT_LE, block));
      int xb = xo + 32 * b;
      ByteVector packed =
          ByteVector.fromMemorySegment(B128, data, block + 2, ByteOrder.LITTLE_ENDIAN);
      ByteVector low = packed.and((byte) 0xF).sub((byte) 8);
      ByteVector high = packed.lanewise(VectorOperators.ASHR, 4).and((byte) 0xF).sub((byte) 8);
      FloatVector part = FloatVector.zero(F);
      part = FloatVector.fromArray(F, x, xb).fma(widen(low, 0), part);
      part = FloatVector.fromArray(F, x, xb + 8).fma(widen(low, 1), part);
      part = FloatVector.fromArray(F, x, xb + 16).fma(widen(high, 0), part);
      part = FloatVector.fromArray(F, x, xb + 24).fma(widen(high, 1), part);
      acc = part.fma(FloatVector.broadcast(F, d), acc);
    }
    return sumLanes(acc);
  }

  private static FloatVector widen(ByteVector bytes, int part) {
    return (FloatVector) bytes.convertShape(VectorOperators.B2F, F, part);
  }

  /**
   * Lanes summed in lane order. Why not {@code reduceLanes(ADD)}: its float order is unspecified
   * and differs between the intrinsic and the interpreter's fallback, which broke bit-identity of
   * one position computed early (interpreted) and late (compiled) in KernelsTest.
   */
  private static float sumLanes(FloatVector acc) {
    float[] lanes = new float[F.length()];
    acc.intoArray(lanes, 0);
    float sum = 0f;
    for (float lane : lanes) {
      sum += lane;
    }
    return sum;
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
    int half = ropeDims / 2;
    for (int i = 0; i < half; i++) {
      double theta = position * Math.pow(base, -2.0 * i / ropeDims);
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
