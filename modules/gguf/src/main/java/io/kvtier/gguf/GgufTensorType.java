package io.kvtier.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * The tensor types this library reads, with ggml's type code and block layout. A block holds
 * {@link #blockSize()} weights in {@link #blockBytes()} bytes; a row's length must be a multiple
 * of the block size. Block layouts follow ggml's {@code ggml-common.h}:
 * <ul>
 *   <li>Q8_0: f16 scale d, then 32 int8 q; weight = q * d.
 *   <li>Q4_0: f16 scale d, then 16 bytes; low nibbles are weights 0-15, high nibbles 16-31;
 *       weight = (q - 8) * d.
 *   <li>Q4_1: f16 scale d, f16 min m, then 16 bytes laid out as Q4_0's; weight = q * d + m.
 *   <li>Q5_0: f16 scale d, 4 bytes qh (a little-endian u32 whose bit j is weight j's fifth bit),
 *       then 16 bytes of low 4 bits laid out as Q4_0's; weight = (q - 16) * d.
 *   <li>Q5_1: f16 scale d, f16 min m, then qh and the 16 bytes as Q5_0; weight = q * d + m.
 *   <li>Q2_K: 256 weights: 16 bytes of 4-bit scales (low nibble) and mins (high), one pair per 16
 *       weights, 64 bytes of 2-bit q, f16 d, f16 dmin; weight {@code 128n + 32j + l} is bits
 *       {@code 2j} of q byte {@code 32n + l}, its pair {@code 8n + 2j + l / 16}; weight = d * scale
 *       * q - dmin * min.
 *   <li>Q3_K: 256 weights: 32 bytes hmask, 64 bytes of 2-bit low q laid out as Q2_K's, 12 bytes
 *       of sixteen packed 6-bit scales, f16 d; bit {@code w / 32} of hmask byte {@code w % 32} is
 *       weight w's third bit; weight = d * (scale - 32) * (q - 4).
 *   <li>Q4_K: 256 weights: f16 d, f16 dmin, 12 bytes of packed 6-bit scales and mins for eight
 *       sub-blocks of 32, then 128 bytes of nibbles (per 64 weights: 32 bytes, low nibbles first);
 *       weight = d * scale * q - dmin * min.
 *   <li>Q5_K: 256 weights: f16 d, f16 dmin, the 12 scale bytes of Q4_K, 32 bytes qh, then 128
 *       bytes of low 4 bits laid out as Q4_K's; bit {@code 2g} of qh byte {@code l} is the fifth
 *       bit of weight {@code 64g + l}, bit {@code 2g + 1} of weight {@code 64g + 32 + l};
 *       weight = d * scale * q - dmin * min.
 *   <li>Q6_K: 256 weights: 128 bytes of low 4 bits, 64 bytes of high 2 bits, 16 int8 scales (one
 *       per 16 weights), f16 d; weight = d * scale * (q - 32).
 *   <li>IQ4_NL: f16 scale d, then 16 bytes of 4-bit indices laid out as Q4_0's; weight = d *
 *       {@link #iq4Value(int) iq4Value}(q), a fixed non-linear table of 16 int8 levels.
 *   <li>IQ4_XS: 256 weights: f16 d, a little-endian u16 of high scale bits, 4 bytes of low scale
 *       nibbles, then 128 bytes: per sub-block of 32, 16 bytes of indices laid out as IQ4_NL's.
 *       Sub-block j's 6-bit scale is nibble {@code j % 2} of byte {@code j / 2} with bits {@code
 *       2j} of the u16 above it ({@link #scaleIq4Xs}); weight = d * (scale - 32) * iq4Value(q).
 * </ul>
 */
public enum GgufTensorType {
  /** 32-bit float. */
  F32(0, 1, 4),
  /** IEEE half precision. */
  F16(1, 1, 2),
  /** 4-bit blocks of 32 with an f16 scale and offset 8. */
  Q4_0(2, 32, 18),
  /** 4-bit blocks of 32 with an f16 scale and an f16 min. */
  Q4_1(3, 32, 20),
  /** 5-bit blocks of 32 with an f16 scale and offset 16 (llama.cpp's fallback for Q4_K). */
  Q5_0(6, 32, 22),
  /** 5-bit blocks of 32 with an f16 scale and an f16 min (llama.cpp's fallback for Q5_K). */
  Q5_1(7, 32, 24),
  /** 8-bit blocks of 32 with an f16 scale. */
  Q8_0(8, 32, 34),
  /** 2-bit super-blocks of 256 with 4-bit sub-block scales and mins. */
  Q2_K(10, 256, 84),
  /** 3-bit super-blocks of 256 with 6-bit sub-block scales. */
  Q3_K(11, 256, 110),
  /** 4-bit super-blocks of 256 with 6-bit sub-block scales and mins. */
  Q4_K(12, 256, 144),
  /** 5-bit super-blocks of 256 with 6-bit sub-block scales and mins. */
  Q5_K(13, 256, 176),
  /** 6-bit super-blocks of 256 with int8 sub-block scales. */
  Q6_K(14, 256, 210),
  /**
   * 4-bit indices into a non-linear table, blocks of 32 with an f16 scale (llama.cpp's fallback
   * for Q2_K, Q3_K and IQ4_XS where rows are not whole 256-weight super-blocks).
   */
  IQ4_NL(20, 32, 18),
  /** IQ4_NL's indices in super-blocks of 256 with 6-bit sub-block scales. */
  IQ4_XS(23, 256, 136),
  /** bfloat16: the upper half of an f32. */
  BF16(30, 1, 2);

  private static final ValueLayout.OfShort SHORT =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt INT =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfFloat FLOAT =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** The levels of IQ4_NL and IQ4_XS, index 0 to 15 (ggml's {@code kvalues_iq4nl}). */
  private static final byte[] IQ4_VALUES = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
  };

  private final int code;
  private final int blockSize;
  private final int blockBytes;

  GgufTensorType(int code, int blockSize, int blockBytes) {
    this.code = code;
    this.blockSize = blockSize;
    this.blockBytes = blockBytes;
  }

  /** ggml's code for this type. */
  public int code() {
    return code;
  }

  /** Weights per block (1 for the float types). */
  public int blockSize() {
    return blockSize;
  }

  /** Bytes per block. */
  public int blockBytes() {
    return blockBytes;
  }

  /**
   * The bytes that {@code elements} weights take.
   *
   * @throws GgufException if {@code elements} is not a multiple of the block size
   */
  public long bytesFor(long elements) {
    if (elements % blockSize != 0) {
      throw new GgufException(
          this
              + " stores weights in blocks of "
              + blockSize
              + "; "
              + elements
              + " weights is not a multiple of it");
    }
    return elements / blockSize * blockBytes;
  }

  /**
   * The type with ggml code {@code code}.
   *
   * @throws GgufUnsupportedException naming the code and the supported types
   */
  public static GgufTensorType ofCode(int code) {
    for (GgufTensorType t : values()) {
      if (t.code == code) {
        return t;
      }
    }
    throw new GgufUnsupportedException(
        "tensor type "
            + code
            + " ("
            + ggmlName(code)
            + ") is not supported; supported: "
            + supportedList());
  }

  static String supportedList() {
    return Arrays.stream(values()).map(t -> t + "=" + t.code).collect(Collectors.joining(", "));
  }

  private static String ggmlName(int code) {
    String[] names = {
      "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K",
      "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
      "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16"
    };
    return code >= 0 && code < names.length ? names[code] : "unknown";
  }

  /**
   * Dequantizes {@code count} weights starting at weight {@code first} of {@code data} (which
   * holds weights of this type from weight 0) into {@code out[outOffset..]}. {@code first} and
   * {@code count} must be multiples of the block size.
   */
  public void dequantize(MemorySegment data, long first, int count, float[] out, int outOffset) {
    if (first % blockSize != 0 || count % blockSize != 0) {
      throw new IllegalArgumentException(
          this
              + ": first="
              + first
              + " count="
              + count
              + " must be multiples of the block size "
              + blockSize);
    }
    long base = first / blockSize * blockBytes;
    int blocks = count / blockSize;
    for (int b = 0; b < blocks; b++) {
      long at = base + (long) b * blockBytes;
      int o = outOffset + b * blockSize;
      switch (this) {
        case F32 -> out[o] = data.get(FLOAT, at);
        case F16 -> out[o] = Float.float16ToFloat(data.get(SHORT, at));
        case BF16 -> out[o] = Float.intBitsToFloat((data.get(SHORT, at) & 0xFFFF) << 16);
        case Q8_0 -> dequantizeQ8_0(data, at, out, o);
        case Q4_0 -> dequantizeQ4_0(data, at, out, o);
        case Q4_1 -> dequantizeQ4_1(data, at, out, o);
        case Q5_0 -> dequantizeQ5(data, at, out, o, false);
        case Q5_1 -> dequantizeQ5(data, at, out, o, true);
        case Q2_K -> dequantizeQ2K(data, at, out, o);
        case Q3_K -> dequantizeQ3K(data, at, out, o);
        case Q4_K -> dequantizeK(data, at, out, o, false);
        case Q5_K -> dequantizeK(data, at, out, o, true);
        case Q6_K -> dequantizeQ6K(data, at, out, o);
        case IQ4_NL -> dequantizeIq4(data, at + 2, half(data, at), out, o);
        case IQ4_XS -> dequantizeIq4Xs(data, at, out, o);
      }
    }
  }

  /**
   * Quantizes {@code count} floats from {@code src[from..]} into {@code dst} at byte
   * {@code dstOffset}, for writing synthetic models: ggml's reference rounding ({@code
   * quantize_row_*_ref}) for the blocks of 32, a plain min/max rounding for the K-quants, the
   * nearest level against a least-squares scale for IQ4_NL and IQ4_XS (see {@link Quantizer}).
   * {@code count} must be a multiple of the block size.
   */
  public void quantize(float[] src, int from, int count, MemorySegment dst, long dstOffset) {
    if (count % blockSize != 0) {
      throw new IllegalArgumentException(
          this + ": count=" + count + " must be a multiple of the block size " + blockSize);
    }
    Objects.checkFromIndexSize(from, count, src.length);
    Objects.checkFromIndexSize(dstOffset, bytesFor(count), dst.byteSize());
    Quantizer.quantize(this, src, from, count, dst, dstOffset);
  }

  private static float half(MemorySegment data, long at) {
    return Float.float16ToFloat(data.get(SHORT, at));
  }

  private static int u8(MemorySegment data, long at) {
    return data.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
  }

  private static void dequantizeQ8_0(MemorySegment data, long at, float[] out, int o) {
    float d = half(data, at);
    for (int i = 0; i < 32; i++) {
      out[o + i] = data.get(ValueLayout.JAVA_BYTE, at + 2 + i) * d;
    }
  }

  private static void dequantizeQ4_0(MemorySegment data, long at, float[] out, int o) {
    float d = half(data, at);
    for (int i = 0; i < 16; i++) {
      int q = u8(data, at + 2 + i);
      out[o + i] = ((q & 0xF) - 8) * d;
      out[o + i + 16] = ((q >> 4) - 8) * d;
    }
  }

  private static void dequantizeQ4_1(MemorySegment data, long at, float[] out, int o) {
    float d = half(data, at);
    float m = half(data, at + 2);
    for (int i = 0; i < 16; i++) {
      int q = u8(data, at + 4 + i);
      out[o + i] = (q & 0xF) * d + m;
      out[o + i + 16] = (q >> 4) * d + m;
    }
  }

  /** Q5_0 ({@code withMin} false: weight (q - 16) * d) or Q5_1 (weight q * d + m). */
  private static void dequantizeQ5(
      MemorySegment data, long at, float[] out, int o, boolean withMin) {
    float d = half(data, at);
    float m = withMin ? half(data, at + 2) : 0f;
    long qhAt = at + (withMin ? 4 : 2);
    int qh = data.get(INT, qhAt);
    long qs = qhAt + 4;
    int offset = withMin ? 0 : 16;
    for (int i = 0; i < 16; i++) {
      int q = u8(data, qs + i);
      int q0 = ((q & 0xF) | ((qh >>> i) & 1) << 4) - offset;
      int q1 = ((q >> 4) | ((qh >>> (i + 16)) & 1) << 4) - offset;
      out[o + i] = withMin ? q0 * d + m : q0 * d;
      out[o + i + 16] = withMin ? q1 * d + m : q1 * d;
    }
  }

  private static void dequantizeQ2K(MemorySegment data, long at, float[] out, int o) {
    float d = half(data, at + 80);
    float dmin = half(data, at + 82);
    for (int w = 0; w < 256; w++) {
      int n = w / 128;
      int j = (w % 128) / 32;
      int l = w % 32;
      int pair = u8(data, at + 8 * n + 2 * j + l / 16);
      int q = (u8(data, at + 16 + 32 * n + l) >> (2 * j)) & 3;
      out[o + w] = d * (pair & 0xF) * q - dmin * (pair >> 4);
    }
  }

  private static void dequantizeQ3K(MemorySegment data, long at, float[] out, int o) {
    float d = half(data, at + 108);
    for (int w = 0; w < 256; w++) {
      int n = w / 128;
      int j = (w % 128) / 32;
      int l = w % 32;
      int low = (u8(data, at + 32 + 32 * n + l) >> (2 * j)) & 3;
      int high = (u8(data, at + l) >> (w / 32)) & 1;
      int scale = scaleK3(data, at + 96, 8 * n + 2 * j + l / 16);
      out[o + w] = d * (scale - 32) * ((low | high << 2) - 4);
    }
  }

  /**
   * Scale {@code k} (0 to 15, one per 16 weights) of a Q3_K block, 0 to 63, from the 12 packed
   * bytes at {@code scales} (the block's start + 96): its low 4 bits are the low nibble of byte
   * {@code k} for {@code k < 8}, else the high nibble of byte {@code k - 8}; its top 2 bits are
   * bits {@code 2(k / 4)} of byte {@code 8 + k % 4} (ggml's {@code kmask} unpacking). The Q3_K
   * kernels call it between vector operations: it reads the bytes itself, since through {@link
   * #u8} it was not inlined there and the kernels' live vectors were boxed around every call (28
   * KB a row of 1,536 in QuantizedDotBenchmark).
   */
  public static int scaleK3(MemorySegment data, long scales, int k) {
    int low = (data.get(ValueLayout.JAVA_BYTE, scales + (k & 7)) & 0xFF) >> (k < 8 ? 0 : 4);
    int top = (data.get(ValueLayout.JAVA_BYTE, scales + 8 + (k & 3)) >> (2 * (k >> 2))) & 3;
    return (low & 0xF) | top << 4;
  }

  /** Q4_K ({@code five} false) or Q5_K, whose fifth bits come from its 32 qh bytes. */
  private static void dequantizeK(MemorySegment data, long at, float[] out, int o, boolean five) {
    float d = half(data, at);
    float dmin = half(data, at + 2);
    long scales = at + 4;
    long qh = at + 16;
    long qs = at + (five ? 48 : 16);
    for (int group = 0; group < 4; group++) {
      int j = group * 2;
      float d1 = d * scaleK4(data, scales, j, false);
      float m1 = dmin * scaleK4(data, scales, j, true);
      float d2 = d * scaleK4(data, scales, j + 1, false);
      float m2 = dmin * scaleK4(data, scales, j + 1, true);
      for (int l = 0; l < 32; l++) {
        int q = u8(data, qs + group * 32L + l);
        int h = five ? u8(data, qh + l) : 0;
        int lo = (q & 0xF) | ((h >> j) & 1) << 4;
        int hi = (q >> 4) | ((h >> (j + 1)) & 1) << 4;
        out[o + group * 64 + l] = d1 * lo - m1;
        out[o + group * 64 + 32 + l] = d2 * hi - m2;
      }
    }
  }

  /**
   * Sub-block {@code j}'s 6-bit scale ({@code min} false) or min of a Q4_K block, from the 12
   * packed bytes at {@code scales} (the block's start + 4): ggml's {@code get_scale_min_k4}.
   *
   * @param data the tensor's bytes
   * @param scales where the block's packed scales start
   * @param j the sub-block, 0 to 7
   * @param min whether to read the min rather than the scale
   * @return 0 to 63
   */
  public static int scaleK4(MemorySegment data, long scales, int j, boolean min) {
    if (j < 4) {
      return u8(data, scales + j + (min ? 4 : 0)) & 63;
    }
    if (!min) {
      return (u8(data, scales + j + 4) & 0xF) | ((u8(data, scales + j - 4) >> 6) << 4);
    }
    return (u8(data, scales + j + 4) >> 4) | ((u8(data, scales + j) >> 6) << 4);
  }

  private static void dequantizeQ6K(MemorySegment data, long at, float[] out, int o) {
    float d = half(data, at + 208);
    for (int half = 0; half < 2; half++) {
      long ql = at + half * 64L;
      long qh = at + 128 + half * 32L;
      long sc = at + 192 + half * 8L;
      int y = o + half * 128;
      for (int l = 0; l < 32; l++) {
        int is = l / 16;
        int h = u8(data, qh + l);
        int lo0 = u8(data, ql + l);
        int lo32 = u8(data, ql + 32 + l);
        int q1 = ((lo0 & 0xF) | ((h & 3) << 4)) - 32;
        int q2 = ((lo32 & 0xF) | (((h >> 2) & 3) << 4)) - 32;
        int q3 = ((lo0 >> 4) | (((h >> 4) & 3) << 4)) - 32;
        int q4 = ((lo32 >> 4) | (((h >> 6) & 3) << 4)) - 32;
        out[y + l] = d * data.get(ValueLayout.JAVA_BYTE, sc + is) * q1;
        out[y + l + 32] = d * data.get(ValueLayout.JAVA_BYTE, sc + is + 2) * q2;
        out[y + l + 64] = d * data.get(ValueLayout.JAVA_BYTE, sc + is + 4) * q3;
        out[y + l + 96] = d * data.get(ValueLayout.JAVA_BYTE, sc + is + 6) * q4;
      }
    }
  }

  /**
   * Level {@code index} (0 to 15) of IQ4_NL and IQ4_XS: -127, -104, -83, -65, -49, -35, -22, -10,
   * 1, 13, 25, 38, 53, 69, 89, 113.
   */
  public static byte iq4Value(int index) {
    return IQ4_VALUES[index];
  }

  /**
   * Sub-block {@code j}'s scale (0 to 63; the weight's factor is {@code scale - 32}) of the
   * IQ4_XS block at {@code block}: its low 4 bits are nibble {@code j % 2} of byte {@code 4 + j /
   * 2}, its top 2 bits bits {@code 2j} of the little-endian u16 at byte 2 (ggml's unpacking).
   * Reads its bytes itself so that it inlines into the kernels (see {@link #scaleK3}).
   */
  public static int scaleIq4Xs(MemorySegment data, long block, int j) {
    int low = (data.get(ValueLayout.JAVA_BYTE, block + 4 + (j >> 1)) >> (4 * (j & 1))) & 0xF;
    int top = (data.get(SHORT, block + 2) >> (2 * j)) & 3;
    return low | top << 4;
  }

  /** 32 weights of 16 IQ4_NL-laid-out index bytes at {@code qs}, each {@code d * level}. */
  private static void dequantizeIq4(MemorySegment data, long qs, float d, float[] out, int o) {
    for (int i = 0; i < 16; i++) {
      int q = u8(data, qs + i);
      out[o + i] = d * IQ4_VALUES[q & 0xF];
      out[o + i + 16] = d * IQ4_VALUES[q >> 4];
    }
  }

  private static void dequantizeIq4Xs(MemorySegment data, long at, float[] out, int o) {
    float d = half(data, at);
    for (int j = 0; j < 8; j++) {
      dequantizeIq4(data, at + 8 + 16L * j, d * (scaleIq4Xs(data, at, j) - 32), out, o + 32 * j);
    }
  }
}
