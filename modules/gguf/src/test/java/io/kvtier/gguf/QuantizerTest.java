package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class QuantizerTest {
  private static final ValueLayout.OfShort SHORT =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  @ParameterizedTest
  @EnumSource(names = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"})
  void quantizeThenDequantizeStaysWithinTheTypesStep(GgufTensorType type) {
    Random random = new Random(11);
    float[] x = new float[256];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) random.nextGaussian();
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment data = arena.allocate(type.bytesFor(x.length));
      type.quantize(x, 0, x.length, data, 0);
      float[] y = new float[x.length];
      type.dequantize(data, 0, x.length, y, 0);
      for (int b = 0; b < x.length; b += 32) {
        float amax = 0;
        float lo = Float.MAX_VALUE;
        float hi = -Float.MAX_VALUE;
        for (int j = 0; j < 32; j++) {
          amax = Math.max(amax, Math.abs(x[b + j]));
          lo = Math.min(lo, x[b + j]);
          hi = Math.max(hi, x[b + j]);
        }
        // half a step of the block scale plus the f16 rounding of the scale (and min) itself; Q4_0
        // and Q5_0 cap q at 15 and 31, so a value opposite the signed maximum can be off by a
        // whole step; Q4_1 and Q5_1 step over [lowest, highest]
        float step =
            switch (type) {
              case F32 -> 0f;
              case F16 -> amax / 1024;
              case BF16 -> amax / 128;
              case Q8_0 -> amax / 127 / 2 + amax / 1024;
              case Q5_0 -> amax / 16 + amax / 1024;
              case Q4_1 -> (hi - lo) / 15 / 2 + (amax + hi - lo) / 1024;
              case Q5_1 -> (hi - lo) / 31 / 2 + (amax + hi - lo) / 1024;
              default -> amax / 8 + amax / 1024;
            };
        for (int j = 0; j < 32; j++) {
          assertThat(y[b + j]).as("%s weight %d", type, b + j).isCloseTo(x[b + j], within(step));
        }
      }
    }
  }

  @Test
  void q8_0RoundsHalvesAwayFromZeroAsC() {
    float[] x = new float[32];
    x[0] = 127f; // d = 1
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.49999997f;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(34);
      GgufTensorType.Q8_0.quantize(x, 0, 32, block, 0);
      assertThat(Float.float16ToFloat(block.get(SHORT, 0))).isEqualTo(1f);
      assertThat(block.get(ValueLayout.JAVA_BYTE, 3)).isEqualTo((byte) 3);
      assertThat(block.get(ValueLayout.JAVA_BYTE, 4)).isEqualTo((byte) -3);
      assertThat(block.get(ValueLayout.JAVA_BYTE, 5)).isEqualTo((byte) 0);
    }
  }

  @Test
  void q4_0TakesTheSignedMaximumAsMinusEight() {
    float[] x = new float[32];
    x[0] = -4f; // max by magnitude: d = -4 / -8 = 0.5, so -4 -> q 0
    x[1] = 3.5f; // 3.5 / 0.5 + 8.5 = 15.5 -> 15
    x[2] = 3.9f; // capped at 15
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(18);
      GgufTensorType.Q4_0.quantize(x, 0, 32, block, 0);
      assertThat(Float.float16ToFloat(block.get(SHORT, 0))).isEqualTo(0.5f);
      assertThat(block.get(ValueLayout.JAVA_BYTE, 2) & 0xF).isEqualTo(0);
      assertThat(block.get(ValueLayout.JAVA_BYTE, 3) & 0xF).isEqualTo(15);
      assertThat(block.get(ValueLayout.JAVA_BYTE, 4) & 0xF).isEqualTo(15);
      assertThat(block.get(ValueLayout.JAVA_BYTE, 2 + 5) & 0xF).isEqualTo(8); // zeros
    }
  }

  @Test
  void bf16RoundsToNearestEven() {
    assertThat(Quantizer.toBf16(Float.intBitsToFloat(0x3F80_8000))).isEqualTo((short) 0x3F80);
    assertThat(Quantizer.toBf16(Float.intBitsToFloat(0x3F81_8000))).isEqualTo((short) 0x3F82);
    assertThat(Quantizer.toBf16(Float.intBitsToFloat(0x3F80_8001))).isEqualTo((short) 0x3F81);
  }

  /**
   * Q4_K maps each sub-block of 32 onto 16 levels between its lowest (or 0) and highest value,
   * with 6-bit scales and mins, Q5_K onto 32 levels; Q6_K each sub-block of 16 onto 63 levels with int8 scales. A
   * weight comes back within half a level plus the rounding of the scales (at most half a
   * 6-bit or 8-bit step of the super-block scale, times the level).
   */
  @ParameterizedTest
  @EnumSource(names = {"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"})
  void kQuantsComeBackWithinTheirStep(GgufTensorType type) {
    boolean mins = type != GgufTensorType.Q6_K && type != GgufTensorType.Q3_K;
    float[] x = unevenRow(13);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment data = arena.allocate(type.bytesFor(x.length));
      type.quantize(x, 0, x.length, data, 0);
      float[] y = new float[x.length];
      type.dequantize(data, 0, x.length, y, 0);
      int sub = type == GgufTensorType.Q4_K || type == GgufTensorType.Q5_K ? 32 : 16;
      for (int b = 0; b < x.length; b += sub) {
        float lo = 0;
        float hi = 0;
        for (int j = 0; j < sub; j++) {
          lo = Math.min(lo, x[b + j]);
          hi = Math.max(hi, x[b + j]);
        }
        float range = mins ? hi - lo : 2 * Math.max(hi, -lo);
        float levels =
            switch (type) {
              case Q2_K -> 3;
              case Q3_K -> 8;
              case Q4_K -> 15;
              case Q5_K -> 31;
              default -> 62;
            };
        // half a level, plus the scale's and the min's rounding over the largest of the
        // super-block (bounded here by 5 sigma of the widest sub-block): 4 bits (Q2_K), 5 bits of
        // a signed 6 (Q3_K), 6 bits (Q4_K, Q5_K) or 7 of a signed 8 (Q6_K); Q3_K's largest
        // magnitude may sit a whole step out, at q = 4 capped to 3
        float tolerance =
            switch (type) {
              case Q2_K -> range / levels / 2 + 1.6f;
              case Q3_K -> range / levels + 0.45f;
              case Q6_K -> range / levels / 2 + 0.06f;
              default -> range / levels / 2 + 0.35f;
            };
        for (int j = 0; j < sub; j++) {
          assertThat(y[b + j])
              .as("%s weight %d", type, b + j)
              .isCloseTo(x[b + j], within(tolerance));
        }
      }
    }
  }

  @Test
  void q6_KOfAZeroBlockIsZero() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment data = arena.allocate(210);
      GgufTensorType.Q6_K.quantize(new float[256], 0, 256, data, 0);
      float[] y = new float[256];
      GgufTensorType.Q6_K.dequantize(data, 0, 256, y, 0);
      assertThat(y).containsOnly(0f);
    }
  }

  /**
   * IQ4_NL and IQ4_XS: each weight takes the level nearest it against its block's scale (about
   * the block's largest magnitude over 127). The widest gap between two levels is 24 steps
   * (89 to 113), so a weight comes back within 12 steps, 14 for the side opposite the largest
   * magnitude (whose end level is 113, not 127), plus the f16 rounding of the scale and, for
   * IQ4_XS, the 6-bit rounding of its sub-block scales against the super-block's: half a step
   * of the largest sub-block scale over 32, times at most 127 levels.
   */
  @ParameterizedTest
  @EnumSource(names = {"IQ4_NL", "IQ4_XS"})
  void iq4ComesBackWithinItsWidestLevelGap(GgufTensorType type) {
    float[] x = unevenRow(17);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment data = arena.allocate(type.bytesFor(x.length));
      type.quantize(x, 0, x.length, data, 0);
      float[] y = new float[x.length];
      type.dequantize(data, 0, x.length, y, 0);
      for (int b = 0; b < x.length; b += 32) {
        float amax = 0;
        float superMax = 0;
        for (int j = 0; j < 32; j++) {
          amax = Math.max(amax, Math.abs(x[b + j]));
        }
        for (int j = 0; j < 256; j++) {
          superMax = Math.max(superMax, Math.abs(x[b / 256 * 256 + j]));
        }
        float step = amax / 127;
        float tolerance =
            14 * step
                + amax / 512
                + (type == GgufTensorType.IQ4_XS ? superMax / 127 / 64 * 127 : 0);
        for (int j = 0; j < 32; j++) {
          assertThat(y[b + j])
              .as("%s weight %d", type, b + j)
              .isCloseTo(x[b + j], within(tolerance));
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(names = {"IQ4_NL", "IQ4_XS"})
  void iq4OfAZeroBlockIsZero(GgufTensorType type) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment data = arena.allocate(type.bytesFor(256));
      type.quantize(new float[256], 0, 256, data, 0);
      float[] y = new float[256];
      type.dequantize(data, 0, 256, y, 0);
      assertThat(y).containsOnly(0f);
    }
  }

  /**
   * 512 Gaussian weights whose blocks of 32 have very different sizes (standard deviation 1 to
   * 5), as real rows have, and one weight 0.
   */
  private static float[] unevenRow(long seed) {
    Random random = new Random(seed);
    float[] x = new float[512];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) (random.nextGaussian() * (1 + (i / 32) % 5));
    }
    x[300] = 0;
    return x;
  }
}
