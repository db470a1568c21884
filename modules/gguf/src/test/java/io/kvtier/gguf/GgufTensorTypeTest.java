package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Each block layout is packed here from per-weight values and read back by the dequantizer. */
class GgufTensorTypeTest {
  private static final ValueLayout.OfShort SHORT =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private final Random random = new Random(42);

  private static float[] dequantize(GgufTensorType type, MemorySegment data, int n) {
    float[] out = new float[n];
    type.dequantize(data, 0, n, out, 0);
    return out;
  }

  @Test
  void floatTypes() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment f16 = arena.allocate(4);
      f16.set(SHORT, 0, Float.floatToFloat16(1.5f));
      f16.set(SHORT, 2, Float.floatToFloat16(-0.25f));
      assertThat(dequantize(GgufTensorType.F16, f16, 2)).containsExactly(1.5f, -0.25f);
      MemorySegment bf16 = arena.allocate(2);
      bf16.set(SHORT, 0, (short) (Float.floatToIntBits(-3.5f) >>> 16));
      assertThat(dequantize(GgufTensorType.BF16, bf16, 1)).containsExactly(-3.5f);
    }
  }

  @Test
  void q8_0() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(34);
      block.set(SHORT, 0, Float.floatToFloat16(0.5f));
      float[] expected = new float[32];
      for (int i = 0; i < 32; i++) {
        int q = random.nextInt(256) - 128;
        block.set(ValueLayout.JAVA_BYTE, 2 + i, (byte) q);
        expected[i] = q * 0.5f;
      }
      assertThat(dequantize(GgufTensorType.Q8_0, block, 32)).containsExactly(expected);
    }
  }

  @Test
  void q4_0LowNibblesAreTheFirstHalf() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(18);
      block.set(SHORT, 0, Float.floatToFloat16(2f));
      int[] q = new int[32];
      for (int i = 0; i < 32; i++) {
        q[i] = random.nextInt(16);
      }
      for (int i = 0; i < 16; i++) {
        block.set(ValueLayout.JAVA_BYTE, 2 + i, (byte) (q[i] | q[i + 16] << 4));
      }
      float[] out = dequantize(GgufTensorType.Q4_0, block, 32);
      for (int i = 0; i < 32; i++) {
        assertThat(out[i]).isEqualTo((q[i] - 8) * 2f);
      }
    }
  }

  @Test
  void q4_1AddsTheMinToEachStep() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(20);
      block.set(SHORT, 0, Float.floatToFloat16(0.5f));
      block.set(SHORT, 2, Float.floatToFloat16(-3f));
      int[] q = new int[32];
      for (int i = 0; i < 32; i++) {
        q[i] = random.nextInt(16);
      }
      for (int i = 0; i < 16; i++) {
        block.set(ValueLayout.JAVA_BYTE, 4 + i, (byte) (q[i] | q[i + 16] << 4));
      }
      float[] out = dequantize(GgufTensorType.Q4_1, block, 32);
      for (int i = 0; i < 32; i++) {
        assertThat(out[i]).as("weight %d", i).isEqualTo(q[i] * 0.5f - 3f);
      }
    }
  }

  /**
   * Q5_0 and Q5_1: bit j of the little-endian u32 after the scale (and min) is weight j's fifth
   * bit; weights 0-15 are the low nibbles of the 16 bytes that follow, 16-31 the high ones. Every
   * bit of qh is exercised: a weight whose fifth bit were read from the wrong place would be 16
   * steps off.
   */
  @Test
  void q5_0AndQ5_1TakeTheFifthBitFromQh() {
    for (GgufTensorType type : new GgufTensorType[] {GgufTensorType.Q5_0, GgufTensorType.Q5_1}) {
      boolean withMin = type == GgufTensorType.Q5_1;
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment block = arena.allocate(type.blockBytes());
        block.set(SHORT, 0, Float.floatToFloat16(0.25f));
        if (withMin) {
          block.set(SHORT, 2, Float.floatToFloat16(1.5f));
        }
        int[] q = new int[32];
        int qh = 0;
        for (int i = 0; i < 32; i++) {
          q[i] = random.nextInt(32);
          qh |= (q[i] >> 4) << i;
        }
        long at = withMin ? 4 : 2;
        block.set(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), at, qh);
        for (int i = 0; i < 16; i++) {
          block.set(
              ValueLayout.JAVA_BYTE, at + 4 + i, (byte) ((q[i] & 0xF) | (q[i + 16] & 0xF) << 4));
        }
        float[] out = dequantize(type, block, 32);
        for (int i = 0; i < 32; i++) {
          float expected = withMin ? q[i] * 0.25f + 1.5f : (q[i] - 16) * 0.25f;
          assertThat(out[i]).as("%s weight %d", type, i).isEqualTo(expected);
        }
      }
    }
  }

  /**
   * Q4_K's and Q5_K's 12 scale bytes: bytes 0-3 hold scales 0-3 (low 6 bits) with the top 2 bits
   * of scales 4-7, bytes 4-7 the mins 0-3 with the top bits of mins 4-7, bytes 8-11 the low 4
   * bits of scales 4-7 (low nibble) and mins 4-7 (high nibble).
   */
  private static byte[] packedK4Scales(int[] scale, int[] min) {
    byte[] packed = new byte[12];
    for (int j = 0; j < 4; j++) {
      packed[j] = (byte) (scale[j] | (scale[j + 4] >> 4) << 6);
      packed[j + 4] = (byte) (min[j] | (min[j + 4] >> 4) << 6);
      packed[j + 8] = (byte) ((scale[j + 4] & 0xF) | (min[j + 4] & 0xF) << 4);
    }
    return packed;
  }

  /**
   * Q4_K: per 64 weights, 32 bytes, weight i (i < 32) in the low nibble and weight 32 + i in the
   * high. Q5_K: the same nibbles after 32 bytes qh, whose byte l holds in bit 2g the fifth bit of
   * weight 64g + l and in bit 2g + 1 that of weight 64g + 32 + l.
   */
  @ParameterizedTest
  @EnumSource(names = {"Q4_K", "Q5_K"})
  void kQuantsWithMins(GgufTensorType type) {
    boolean five = type == GgufTensorType.Q5_K;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(type.blockBytes());
      float d = 0.125f;
      float dmin = 0.5f;
      block.set(SHORT, 0, Float.floatToFloat16(d));
      block.set(SHORT, 2, Float.floatToFloat16(dmin));
      int[] scale = new int[8];
      int[] min = new int[8];
      for (int j = 0; j < 8; j++) {
        scale[j] = random.nextInt(64);
        min[j] = random.nextInt(64);
      }
      MemorySegment.copy(packedK4Scales(scale, min), 0, block, ValueLayout.JAVA_BYTE, 4, 12);
      int[] q = new int[256];
      for (int i = 0; i < 256; i++) {
        q[i] = random.nextInt(five ? 32 : 16);
      }
      int nibbles = five ? 48 : 16;
      for (int g = 0; g < 4; g++) {
        for (int l = 0; l < 32; l++) {
          block.set(
              ValueLayout.JAVA_BYTE,
              nibbles + g * 32 + l,
              (byte) ((q[g * 64 + l] & 0xF) | (q[g * 64 + 32 + l] & 0xF) << 4));
        }
      }
      for (int l = 0; five && l < 32; l++) {
        int h = 0;
        for (int g = 0; g < 4; g++) {
          h |= (q[64 * g + l] >> 4) << (2 * g) | (q[64 * g + 32 + l] >> 4) << (2 * g + 1);
        }
        block.set(ValueLayout.JAVA_BYTE, 16 + l, (byte) h);
      }
      float[] out = dequantize(type, block, 256);
      for (int i = 0; i < 256; i++) {
        int sub = i / 32;
        assertThat(out[i])
            .as("%s weight %d", type, i)
            .isEqualTo(d * scale[sub] * q[i] - dmin * min[sub]);
      }
    }
  }

  /**
   * Q2_K: sixteen scale-and-min bytes (sub-block s of 16 weights: byte s, scale low, min high),
   * then weight 128n + 32j + l in bits 2j of q byte 32n + l, then d and dmin.
   */
  @Test
  void q2_K() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(84);
      float d = 0.25f;
      float dmin = 0.125f;
      block.set(SHORT, 80, Float.floatToFloat16(d));
      block.set(SHORT, 82, Float.floatToFloat16(dmin));
      int[] scale = new int[16];
      int[] min = new int[16];
      for (int s = 0; s < 16; s++) {
        scale[s] = random.nextInt(16);
        min[s] = random.nextInt(16);
        block.set(ValueLayout.JAVA_BYTE, s, (byte) (scale[s] | min[s] << 4));
      }
      int[] q = new int[256];
      for (int w = 0; w < 256; w++) {
        q[w] = random.nextInt(4);
        long at = 16 + 32 * (w / 128) + w % 32;
        int shift = 2 * ((w % 128) / 32);
        block.set(
            ValueLayout.JAVA_BYTE,
            at,
            (byte) (block.get(ValueLayout.JAVA_BYTE, at) | q[w] << shift));
      }
      float[] out = dequantize(GgufTensorType.Q2_K, block, 256);
      for (int w = 0; w < 256; w++) {
        int s = w / 16;
        assertThat(out[w]).as("weight %d", w).isEqualTo(d * scale[s] * q[w] - dmin * min[s]);
      }
    }
  }

  /**
   * Q3_K: hmask (weight w's third bit at bit w / 32 of byte w % 32), the low 2 bits laid out as
   * Q2_K's, sixteen 6-bit scales (low 4 bits: the low nibble of byte k for k < 8, else the high
   * nibble of byte k - 8; top 2 bits: bits 2(k / 4) of byte 8 + k % 4), then d.
   */
  @Test
  void q3_K() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(110);
      float d = 0.5f;
      block.set(SHORT, 108, Float.floatToFloat16(d));
      int[] scale = new int[16];
      for (int k = 0; k < 16; k++) {
        scale[k] = random.nextInt(64);
        long low = 96 + k % 8;
        long top = 96 + 8 + k % 4;
        block.set(
            ValueLayout.JAVA_BYTE,
            low,
            (byte) (block.get(ValueLayout.JAVA_BYTE, low) | (scale[k] & 0xF) << (k < 8 ? 0 : 4)));
        block.set(
            ValueLayout.JAVA_BYTE,
            top,
            (byte) (block.get(ValueLayout.JAVA_BYTE, top) | (scale[k] >> 4) << (2 * (k / 4))));
      }
      int[] q = new int[256];
      for (int w = 0; w < 256; w++) {
        q[w] = random.nextInt(8);
        long at = 32 + 32 * (w / 128) + w % 32;
        int shift = 2 * ((w % 128) / 32);
        block.set(
            ValueLayout.JAVA_BYTE,
            at,
            (byte) (block.get(ValueLayout.JAVA_BYTE, at) | (q[w] & 3) << shift));
        long hm = w % 32;
        block.set(
            ValueLayout.JAVA_BYTE,
            hm,
            (byte) (block.get(ValueLayout.JAVA_BYTE, hm) | (q[w] >> 2) << (w / 32)));
      }
      float[] out = dequantize(GgufTensorType.Q3_K, block, 256);
      for (int w = 0; w < 256; w++) {
        assertThat(out[w]).as("weight %d", w).isEqualTo(d * (scale[w / 16] - 32) * (q[w] - 4));
      }
    }
  }

  @Test
  void q6_K() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(210);
      float d = 0.25f;
      block.set(SHORT, 208, Float.floatToFloat16(d));
      int[] scale = new int[16];
      for (int j = 0; j < 16; j++) {
        scale[j] = random.nextInt(256) - 128;
        block.set(ValueLayout.JAVA_BYTE, 192 + j, (byte) scale[j]);
      }
      int[] q = new int[256];
      for (int i = 0; i < 256; i++) {
        q[i] = random.nextInt(64);
      }
      // per 128 weights: 64 bytes of low nibbles (weights l and l+64 share byte l, weights l+32
      // and l+96 share byte l+32), 32 bytes of high 2-bit pairs (weights l, l+32, l+64, l+96)
      for (int h = 0; h < 2; h++) {
        int base = h * 128;
        for (int l = 0; l < 32; l++) {
          block.set(
              ValueLayout.JAVA_BYTE,
              h * 64 + l,
              (byte) ((q[base + l] & 0xF) | (q[base + l + 64] & 0xF) << 4));
          block.set(
              ValueLayout.JAVA_BYTE,
              h * 64 + l + 32,
              (byte) ((q[base + l + 32] & 0xF) | (q[base + l + 96] & 0xF) << 4));
          block.set(
              ValueLayout.JAVA_BYTE,
              128 + h * 32 + l,
              (byte)
                  ((q[base + l] >> 4)
                      | (q[base + l + 32] >> 4) << 2
                      | (q[base + l + 64] >> 4) << 4
                      | (q[base + l + 96] >> 4) << 6));
        }
      }
      float[] out = dequantize(GgufTensorType.Q6_K, block, 256);
      for (int i = 0; i < 256; i++) {
        assertThat(out[i]).as("weight %d", i).isEqualTo(d * scale[i / 16] * (q[i] - 32));
      }
    }
  }

  /** ggml's kvalues_iq4nl, written out here so that a wrong level in the reader shows. */
  private static final int[] IQ4_LEVELS = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
  };

  /** IQ4_NL: the f16 scale, then indices laid out as Q4_0's nibbles, each naming a level. */
  @Test
  void iq4_nlLooksEachIndexUpInTheLevels() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(18);
      block.set(SHORT, 0, Float.floatToFloat16(0.5f));
      int[] q = new int[32];
      for (int i = 0; i < 32; i++) {
        q[i] = i % 16; // every level, in both halves
      }
      for (int i = 0; i < 16; i++) {
        block.set(ValueLayout.JAVA_BYTE, 2 + i, (byte) (q[i] | q[(i + 5) % 16 + 16] << 4));
      }
      float[] out = dequantize(GgufTensorType.IQ4_NL, block, 32);
      for (int i = 0; i < 16; i++) {
        assertThat(out[i]).as("weight %d", i).isEqualTo(IQ4_LEVELS[q[i]] * 0.5f);
        assertThat(out[i + 16])
            .as("weight %d", i + 16)
            .isEqualTo(IQ4_LEVELS[q[(i + 5) % 16 + 16]] * 0.5f);
      }
    }
  }

  /**
   * IQ4_XS: f16 d, a little-endian u16 whose bits 2j hold the top 2 bits of sub-block j's 6-bit
   * scale, 4 bytes of its low nibbles (sub-block j in nibble j % 2 of byte j / 2), then 16 index
   * bytes per sub-block of 32 as IQ4_NL's; weight = d * (scale - 32) * level. Every scale bit is
   * exercised (scales 0 to 63 across the blocks).
   */
  @Test
  void iq4_xsScalesEachSubBlockBySixPackedBits() {
    try (Arena arena = Arena.ofConfined()) {
      for (int round = 0; round < 8; round++) {
        MemorySegment block = arena.allocate(136);
        float d = 0.25f;
        block.set(SHORT, 0, Float.floatToFloat16(d));
        int[] scale = new int[8];
        int high = 0;
        for (int j = 0; j < 8; j++) {
          scale[j] = 8 * round + j;
          int low = block.get(ValueLayout.JAVA_BYTE, 4 + j / 2) | (scale[j] & 0xF) << (4 * (j % 2));
          block.set(ValueLayout.JAVA_BYTE, 4 + j / 2, (byte) low);
          high |= (scale[j] >> 4) << (2 * j);
        }
        block.set(SHORT, 2, (short) high);
        int[] q = new int[256];
        for (int i = 0; i < 256; i++) {
          q[i] = random.nextInt(16);
        }
        for (int j = 0; j < 8; j++) {
          for (int l = 0; l < 16; l++) {
            block.set(
                ValueLayout.JAVA_BYTE,
                8 + 16 * j + l,
                (byte) (q[32 * j + l] | q[32 * j + 16 + l] << 4));
          }
        }
        float[] out = dequantize(GgufTensorType.IQ4_XS, block, 256);
        for (int i = 0; i < 256; i++) {
          float dl = d * (scale[i / 32] - 32);
          assertThat(out[i]).as("round %d weight %d", round, i).isEqualTo(dl * IQ4_LEVELS[q[i]]);
        }
        for (int j = 0; j < 8; j++) {
          assertThat(GgufTensorType.scaleIq4Xs(block, 0, j)).isEqualTo(scale[j]);
        }
      }
    }
  }
}
