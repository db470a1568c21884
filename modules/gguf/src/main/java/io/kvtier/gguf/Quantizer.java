package io.kvtier.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * ggml's reference quantizers ({@code quantize_row_*_ref}) for the types a writer of synthetic
 * models needs: the same rounding as llama.cpp, so a file written here holds the bits
 * {@code llama-quantize} would write from the same floats.
 */
final class Quantizer {
  private static final ValueLayout.OfShort SHORT =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfFloat FLOAT =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private Quantizer() {}

  static void quantize(
      GgufTensorType type, float[] src, int from, int count, MemorySegment dst, long at) {
    switch (type) {
      case F32 -> {
        for (int i = 0; i < count; i++) {
          dst.set(FLOAT, at + 4L * i, src[from + i]);
        }
      }
      case F16 -> {
        for (int i = 0; i < count; i++) {
          dst.set(SHORT, at + 2L * i, Float.floatToFloat16(src[from + i]));
        }
      }
      case BF16 -> {
        for (int i = 0; i < count; i++) {
          dst.set(SHORT, at + 2L * i, toBf16(src[from + i]));
        }
      }
      case Q8_0 -> {
        for (int b = 0; b < count / 32; b++) {
          q8_0(src, from + 32 * b, dst, at + 34L * b);
        }
      }
      case Q4_0 -> {
        for (int b = 0; b < count / 32; b++) {
          q4_0(src, from + 32 * b, dst, at + 18L * b);
        }
      }
      default ->
          throw new GgufUnsupportedException(
              "quantizing to "
                  + type
                  + " is not supported;"
                  + " supported: F32, F16, BF16, Q8_0, Q4_0");
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
    float amax = 0;
    float max = 0;
    for (int j = 0; j < 32; j++) {
      float v = x[from + j];
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
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
}
