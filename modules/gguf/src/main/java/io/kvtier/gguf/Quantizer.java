package io.kvtier.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Quantizers for the types a writer of synthetic models needs. F16, BF16 and the blocks of 32
 * (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) follow ggml's reference quantizers ({@code
 * quantize_row_*_ref}): the same rounding as llama.cpp, so a file written here holds the bits
 * {@code llama-quantize} would write from the same floats. The K-quants (Q2_K to Q6_K) use a
 * plain min/max rounding instead of ggml's searched scales ({@code make_qkx2_quants}, {@code
 * make_qx_quants}): valid blocks that any reader dequantizes alike, a little less accurate than
 * llama-quantize's, which is all a synthetic model needs. IQ4_NL and IQ4_XS pick each weight's
 * nearest table level against a least-squares block scale, without ggml's scale search.
 */
final class Quantizer {
  private static final ValueLayout.OfShort SHORT =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt INT =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfFloat FLOAT =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** The midpoints between neighbouring IQ4 levels: level i is the nearest up to midpoint i. */
  private static final float[] IQ4_MIDPOINTS = new float[15];

  static {
    for (int i = 0; i < 15; i++) {
      IQ4_MIDPOINTS[i] = (GgufTensorType.iq4Value(i) + GgufTensorType.iq4Value(i + 1)) / 2f;
    }
  }

  private Quantizer() {}

  static void quantize(
      GgufTensorType type, float[] src, int from, int count, MemorySegment dst, long at) {
    // one block at a time, as GgufTensorType.dequantize reads them (a float type's block is one
    // weight)
    int size = type.blockSize();
    long bytes = type.blockBytes();
    for (int b = 0; b < count / size; b++) {
      int x = from + size * b;
      long y = at + bytes * b;
      switch (type) {
        case F32 -> dst.set(FLOAT, y, src[x]);
        case F16 -> dst.set(SHORT, y, Float.floatToFloat16(src[x]));
        case BF16 -> dst.set(SHORT, y, toBf16(src[x]));
        case Q8_0 -> q8_0(src, x, dst, y);
        case Q4_0 -> q4_0(src, x, dst, y);
        case Q4_1 -> q4_1(src, x, dst, y);
        case Q5_0 -> q5_0(src, x, dst, y);
        case Q5_1 -> q5_1(src, x, dst, y);
        case Q2_K -> q2K(src, x, dst, y);
        case Q3_K -> q3K(src, x, dst, y);
        case Q4_K -> kQuant(src, x, dst, y, 15);
        case Q5_K -> kQuant(src, x, dst, y, 31);
        case Q6_K -> q6K(src, x, dst, y);
        case IQ4_NL -> iq4Nl(src, x, dst, y);
        case IQ4_XS -> iq4Xs(src, x, dst, y);
      }
    }
  }

  /** ggml's fp32-to-bf16: round to nearest even, NaN kept quiet. */
  static short toBf16(float f) {
    int u = Float.floatToRawIntBits(f);
    if ((u & 0x7fff_ffff) > 0x7f80_0000) {
      return (short) ((u >>> 16) | 64);
    }
    return (short) ((u + (0x7fff + ((u >>> 16) & 1))) >>> 16);
  }

  /**
   * The value of {@code v[from..from+n)} with the largest magnitude, its sign kept (the first of
   * equal magnitudes; 0 if all are 0): the value Q4_0, Q5_0 and the IQ4 types map onto their
   * lowest level.
   */
  private static float largestMagnitude(float[] v, int from, int n) {
    float max = 0;
    for (int j = 0; j < n; j++) {
      if (Math.abs(v[from + j]) > Math.abs(max)) {
        max = v[from + j];
      }
    }
    return max;
  }

  /** C's roundf: halves away from zero (exact in double for any float). */
  private static int roundf(float v) {
    double r = Math.floor(Math.abs((double) v) + 0.5);
    return (int) (v < 0 ? -r : r);
  }

  private static void q8_0(float[] x, int from, MemorySegment dst, long at) {
    float amax = 0;
    for (int j = 0; j < 32; j++) {
      amax = Math.max(amax, Math.abs(x[from + j]));
    }
    float d = amax / 127f;
    float id = d != 0 ? 1f / d : 0f;
    dst.set(SHORT, at, Float.floatToFloat16(d));
    for (int j = 0; j < 32; j++) {
      dst.set(ValueLayout.JAVA_BYTE, at + 2 + j, (byte) roundf(x[from + j] * id));
    }
  }

  private static void q4_0(float[] x, int from, MemorySegment dst, long at) {
    float max = largestMagnitude(x, from, 32);
    float d = max / -8f;
    float id = d != 0 ? 1f / d : 0f;
    dst.set(SHORT, at, Float.floatToFloat16(d));
    for (int j = 0; j < 16; j++) {
      // C truncates (int8_t)(x + 8.5f) toward zero, then caps at 15
      int q0 = Math.min(15, (byte) (int) (x[from + j] * id + 8.5f));
      int q1 = Math.min(15, (byte) (int) (x[from + 16 + j] * id + 8.5f));
      dst.set(ValueLayout.JAVA_BYTE, at + 2 + j, (byte) (q0 | q1 << 4));
    }
  }

  private static void q4_1(float[] x, int from, MemorySegment dst, long at) {
    float min = Float.MAX_VALUE;
    float max = -Float.MAX_VALUE;
    for (int j = 0; j < 32; j++) {
      min = Math.min(min, x[from + j]);
      max = Math.max(max, x[from + j]);
    }
    float d = (max - min) / 15f;
    float id = d != 0 ? 1f / d : 0f;
    dst.set(SHORT, at, Float.floatToFloat16(d));
    dst.set(SHORT, at + 2, Float.floatToFloat16(min));
    for (int j = 0; j < 16; j++) {
      // C truncates (int8_t)(x + 0.5f) toward zero, then caps at 15
      int q0 = Math.min(15, (byte) (int) ((x[from + j] - min) * id + 0.5f));
      int q1 = Math.min(15, (byte) (int) ((x[from + 16 + j] - min) * id + 0.5f));
      dst.set(ValueLayout.JAVA_BYTE, at + 4 + j, (byte) (q0 | q1 << 4));
    }
  }

  private static void q5_0(float[] x, int from, MemorySegment dst, long at) {
    float max = largestMagnitude(x, from, 32);
    float d = max / -16f;
    float id = d != 0 ? 1f / d : 0f;
    dst.set(SHORT, at, Float.floatToFloat16(d));
    int[] q = new int[32];
    for (int j = 0; j < 32; j++) {
      // C truncates (int8_t)(x + 16.5f) toward zero, then caps at 31
      q[j] = Math.min(31, (byte) (int) (x[from + j] * id + 16.5f));
    }
    put5(q, dst, at + 2);
  }

  private static void q5_1(float[] x, int from, MemorySegment dst, long at) {
    float min = Float.MAX_VALUE;
    float max = -Float.MAX_VALUE;
    for (int j = 0; j < 32; j++) {
      min = Math.min(min, x[from + j]);
      max = Math.max(max, x[from + j]);
    }
    float d = (max - min) / 31f;
    float id = d != 0 ? 1f / d : 0f;
    dst.set(SHORT, at, Float.floatToFloat16(d));
    dst.set(SHORT, at + 2, Float.floatToFloat16(min));
    int[] q = new int[32];
    for (int j = 0; j < 32; j++) {
      // C converts (uint8_t)(x + 0.5f), no cap: at most 31 for values within [min, max]
      q[j] = (int) ((x[from + j] - min) * id + 0.5f) & 0xFF;
    }
    put5(q, dst, at + 4);
  }

  /** Q5_0's and Q5_1's qh (bit j: weight j's fifth bit) and then the 16 bytes of low 4 bits. */
  private static void put5(int[] q, MemorySegment dst, long at) {
    int qh = 0;
    for (int j = 0; j < 32; j++) {
      qh |= ((q[j] >> 4) & 1) << j;
    }
    dst.set(INT, at, qh);
    for (int j = 0; j < 16; j++) {
      dst.set(ValueLayout.JAVA_BYTE, at + 4 + j, (byte) ((q[j] & 0xF) | (q[j + 16] & 0xF) << 4));
    }
  }

  /**
   * One Q2_K super-block: each sub-block of 16 maps [min(0, lowest), highest] onto 0..3; the
   * sixteen scales and mins are rounded to 4 bits against the f16 super-block scales d and dmin.
   */
  private static void q2K(float[] x, int from, MemorySegment dst, long at) {
    float[] scales = new float[16];
    float[] mins = new float[16];
    for (int s = 0; s < 16; s++) {
      float lo = 0;
      float hi = 0;
      for (int l = 0; l < 16; l++) {
        lo = Math.min(lo, x[from + 16 * s + l]);
        hi = Math.max(hi, x[from + 16 * s + l]);
      }
      scales[s] = (hi - lo) / 3f;
      mins[s] = -lo;
    }
    float d = Float.float16ToFloat(Float.floatToFloat16(max(scales) / 15f));
    float dmin = Float.float16ToFloat(Float.floatToFloat16(max(mins) / 15f));
    dst.set(SHORT, at + 80, Float.floatToFloat16(d));
    dst.set(SHORT, at + 82, Float.floatToFloat16(dmin));
    int[] q = new int[256];
    for (int s = 0; s < 16; s++) {
      int sc = d > 0 ? Math.min(15, roundf(scales[s] / d)) : 0;
      int m = dmin > 0 ? Math.min(15, roundf(mins[s] / dmin)) : 0;
      // sub-block s is pair s: weights 128n + 32j + 16h + l sit in pair 8n + 2j + h
      dst.set(ValueLayout.JAVA_BYTE, at + s, (byte) (sc | m << 4));
      float step = d * sc;
      float offset = dmin * m;
      for (int l = 0; l < 16; l++) {
        int i = 16 * s + l;
        q[i] = step > 0 ? Math.clamp(roundf((x[from + i] + offset) / step), 0, 3) : 0;
      }
    }
    putLow2(q, dst, at + 16);
  }

  /**
   * One Q3_K super-block: each sub-block of 16 maps its largest magnitude to 4 steps (q from -4
   * to 3); the sixteen scales are rounded to signed 6 bits against the f16 super-block scale d.
   */
  private static void q3K(float[] x, int from, MemorySegment dst, long at) {
    float[] scales = new float[16];
    float amax = 0;
    for (int s = 0; s < 16; s++) {
      float m = 0;
      for (int l = 0; l < 16; l++) {
        m = Math.max(m, Math.abs(x[from + 16 * s + l]));
      }
      scales[s] = m / 4f;
      amax = Math.max(amax, scales[s]);
    }
    float d = Float.float16ToFloat(Float.floatToFloat16(amax / 31f));
    dst.set(SHORT, at + 108, Float.floatToFloat16(d));
    int[] sc = new int[16];
    int[] q = new int[256];
    for (int s = 0; s < 16; s++) {
      sc[s] = d > 0 ? Math.min(31, roundf(scales[s] / d)) : 0;
      float step = d * sc[s];
      for (int l = 0; l < 16; l++) {
        int i = 16 * s + l;
        q[i] = (step > 0 ? Math.clamp(roundf(x[from + i] / step), -4, 3) : 0) + 4;
      }
    }
    // the scales stored as sc + 32: low nibbles in bytes 0-7 (scales 0-7) and the high nibbles
    // of the same bytes (scales 8-15), top 2 bits of scale k at bits 2(k / 4) of byte 8 + k % 4
    byte[] packed = new byte[12];
    for (int k = 0; k < 16; k++) {
      int v = sc[k] + 32;
      packed[k % 8] |= (byte) ((v & 0xF) << (k < 8 ? 0 : 4));
      packed[8 + k % 4] |= (byte) (((v >> 4) & 3) << (2 * (k / 4)));
    }
    MemorySegment.copy(packed, 0, dst, ValueLayout.JAVA_BYTE, at + 96, 12);
    // the third bit of weight w at bit w / 32 of hmask byte w % 32
    for (int l = 0; l < 32; l++) {
      int h = 0;
      for (int b = 0; b < 8; b++) {
        h |= ((q[32 * b + l] >> 2) & 1) << b;
      }
      dst.set(ValueLayout.JAVA_BYTE, at + l, (byte) h);
    }
    putLow2(q, dst, at + 32);
  }

  /** The low 2 bits of 256 q: weight 128n + 32j + l at bits 2j of byte 32n + l. */
  private static void putLow2(int[] q, MemorySegment dst, long at) {
    for (int n = 0; n < 2; n++) {
      for (int l = 0; l < 32; l++) {
        int b = 0;
        for (int j = 0; j < 4; j++) {
          b |= (q[128 * n + 32 * j + l] & 3) << (2 * j);
        }
        dst.set(ValueLayout.JAVA_BYTE, at + 32L * n + l, (byte) b);
      }
    }
  }

  /**
   * One Q4_K ({@code top} 15) or Q5_K ({@code top} 31) super-block: each sub-block of 32 maps
   * [min(0, lowest), highest] onto 0..top; the eight scales and mins are rounded to 6 bits
   * against the f16 super-block scales d and dmin. Q5_K's fifth bits go to its 32 qh bytes.
   */
  private static void kQuant(float[] x, int from, MemorySegment dst, long at, int top) {
    float[] scales = new float[8];
    float[] mins = new float[8];
    for (int j = 0; j < 8; j++) {
      float lo = 0;
      float hi = 0;
      for (int l = 0; l < 32; l++) {
        float v = x[from + 32 * j + l];
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      scales[j] = (hi - lo) / top;
      mins[j] = -lo;
    }
    float d = Float.float16ToFloat(Float.floatToFloat16(max(scales) / 63f));
    float dmin = Float.float16ToFloat(Float.floatToFloat16(max(mins) / 63f));
    int[] sc = new int[8];
    int[] m = new int[8];
    for (int j = 0; j < 8; j++) {
      sc[j] = d > 0 ? Math.min(63, roundf(scales[j] / d)) : 0;
      m[j] = dmin > 0 ? Math.min(63, roundf(mins[j] / dmin)) : 0;
    }
    dst.set(SHORT, at, Float.floatToFloat16(d));
    dst.set(SHORT, at + 2, Float.floatToFloat16(dmin));
    for (int j = 0; j < 4; j++) {
      dst.set(ValueLayout.JAVA_BYTE, at + 4 + j, (byte) ((sc[j] & 63) | (sc[j + 4] >> 4) << 6));
      dst.set(ValueLayout.JAVA_BYTE, at + 8 + j, (byte) ((m[j] & 63) | (m[j + 4] >> 4) << 6));
      dst.set(
          ValueLayout.JAVA_BYTE, at + 12 + j, (byte) ((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4));
    }
    int[] q = new int[256];
    for (int j = 0; j < 8; j++) {
      float step = d * sc[j];
      float offset = dmin * m[j];
      for (int l = 0; l < 32; l++) {
        int i = 32 * j + l;
        q[i] = step > 0 ? Math.clamp(roundf((x[from + i] + offset) / step), 0, top) : 0;
      }
    }
    long qs = at + (top == 15 ? 16 : 48);
    for (int g = 0; g < 4; g++) {
      for (int l = 0; l < 32; l++) {
        int lo = q[64 * g + l];
        int hi = q[64 * g + 32 + l];
        dst.set(ValueLayout.JAVA_BYTE, qs + 32L * g + l, (byte) ((lo & 0xF) | (hi & 0xF) << 4));
      }
    }
    if (top == 31) {
      for (int l = 0; l < 32; l++) {
        int h = 0;
        for (int g = 0; g < 4; g++) {
          h |=
              ((q[64 * g + l] >> 4) & 1) << (2 * g)
                  | ((q[64 * g + 32 + l] >> 4) & 1) << (2 * g + 1);
        }
        dst.set(ValueLayout.JAVA_BYTE, at + 16 + l, (byte) h);
      }
    }
  }

  /**
   * One Q6_K super-block: each sub-block of 16 maps its largest magnitude to 31; the sixteen
   * scales are rounded to int8 against the f16 super-block scale d.
   */
  private static void q6K(float[] x, int from, MemorySegment dst, long at) {
    float[] scales = new float[16];
    for (int s = 0; s < 16; s++) {
      float amax = 0;
      for (int l = 0; l < 16; l++) {
        amax = Math.max(amax, Math.abs(x[from + 16 * s + l]));
      }
      scales[s] = amax / 31f;
    }
    float d = Float.float16ToFloat(Float.floatToFloat16(max(scales) / 127f));
    int[] q = new int[256];
    for (int s = 0; s < 16; s++) {
      int sc = d > 0 ? Math.min(127, roundf(scales[s] / d)) : 0;
      dst.set(ValueLayout.JAVA_BYTE, at + 192 + s, (byte) sc);
      float step = d * sc;
      for (int l = 0; l < 16; l++) {
        int i = 16 * s + l;
        q[i] = (step > 0 ? Math.clamp(roundf(x[from + i] / step), -32, 31) : 0) + 32;
      }
    }
    dst.set(SHORT, at + 208, Float.floatToFloat16(d));
    for (int h = 0; h < 2; h++) {
      for (int l = 0; l < 32; l++) {
        int y = 128 * h + l;
        int q1 = q[y];
        int q2 = q[y + 32];
        int q3 = q[y + 64];
        int q4 = q[y + 96];
        dst.set(ValueLayout.JAVA_BYTE, at + 64L * h + l, (byte) ((q1 & 0xF) | (q3 & 0xF) << 4));
        dst.set(
            ValueLayout.JAVA_BYTE, at + 64L * h + 32 + l, (byte) ((q2 & 0xF) | (q4 & 0xF) << 4));
        dst.set(
            ValueLayout.JAVA_BYTE,
            at + 128 + 32L * h + l,
            (byte) ((q1 >> 4) | (q2 >> 4) << 2 | (q3 >> 4) << 4 | (q4 >> 4) << 6));
      }
    }
  }

  private static float max(float[] values) {
    float m = 0;
    for (float v : values) {
      m = Math.max(m, v);
    }
    return m;
  }

  /** One IQ4_NL block: its least-squares scale, then each weight's nearest level against it. */
  private static void iq4Nl(float[] x, int from, MemorySegment dst, long at) {
    float d = Float.float16ToFloat(Float.floatToFloat16(iq4Scale(x, from)));
    dst.set(SHORT, at, Float.floatToFloat16(d));
    putIq4(x, from, d, dst, at + 2);
  }

  /**
   * One IQ4_XS super-block: each sub-block of 32 takes its least-squares scale, rounded to a
   * signed 6 bits against the f16 super-block scale d (the largest magnitude at -32 steps, as
   * ggml does), and each weight its nearest level against the rounded scale.
   */
  private static void iq4Xs(float[] x, int from, MemorySegment dst, long at) {
    float[] scales = new float[8];
    for (int j = 0; j < 8; j++) {
      scales[j] = iq4Scale(x, from + 32 * j);
    }
    float max = largestMagnitude(scales, 0, 8);
    // a zero super-block keeps d = +0, so that its weights come back +0, not -0
    float d = max == 0 ? 0 : Float.float16ToFloat(Float.floatToFloat16(max / -32f));
    dst.set(SHORT, at, Float.floatToFloat16(d));
    int high = 0;
    byte[] low = new byte[4];
    for (int j = 0; j < 8; j++) {
      int l = d != 0 ? Math.clamp(roundf(scales[j] / d), -32, 31) : 0;
      int ls = l + 32;
      low[j / 2] |= (byte) ((ls & 0xF) << (4 * (j % 2)));
      high |= (ls >> 4) << (2 * j);
      putIq4(x, from + 32 * j, d * l, dst, at + 8 + 16L * j);
    }
    dst.set(SHORT, at + 2, (short) high);
    MemorySegment.copy(low, 0, dst, ValueLayout.JAVA_BYTE, at + 4, 4);
  }

  /**
   * The scale of 32 weights against the IQ4 levels: the largest magnitude mapped onto level -127
   * (so its sign picks which end of the table it takes), each weight's nearest level, then the
   * least-squares scale for those levels.
   */
  private static float iq4Scale(float[] x, int from) {
    float max = largestMagnitude(x, from, 32);
    if (max == 0) {
      return 0;
    }
    float d = max / -127f;
    double xv = 0;
    double vv = 0;
    for (int j = 0; j < 32; j++) {
      int v = GgufTensorType.iq4Value(nearestIq4(x[from + j] / d));
      xv += (double) x[from + j] * v;
      vv += (double) v * v;
    }
    return (float) (xv / vv);
  }

  /** 16 bytes of indices for 32 weights against {@code d}: weight i's low nibble, i + 16's high. */
  private static void putIq4(float[] x, int from, float d, MemorySegment dst, long at) {
    for (int j = 0; j < 16; j++) {
      int q0 = d != 0 ? nearestIq4(x[from + j] / d) : 8;
      int q1 = d != 0 ? nearestIq4(x[from + 16 + j] / d) : 8;
      dst.set(ValueLayout.JAVA_BYTE, at + j, (byte) (q0 | q1 << 4));
    }
  }

  /**
   * The index of the IQ4 level nearest {@code v}, the lower on a tie: the count of midpoints
   * below it, counted without a branch (a scan or binary search that branched on each weight made
   * writing a model twenty times slower than Q4_0's, mispredicting on random weights).
   */
  private static int nearestIq4(float v) {
    int index = 0;
    for (float midpoint : IQ4_MIDPOINTS) {
      index += v > midpoint ? 1 : 0;
    }
    return index;
  }
}
