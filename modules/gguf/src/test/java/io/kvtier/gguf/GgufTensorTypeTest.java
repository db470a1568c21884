package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

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
  void q4_K() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment block = arena.allocate(144);
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
      // 12 bytes: bytes 0-3 hold scales 0-3 (low 6 bits) with the top 2 bits of scales 4-7,
      // bytes 4-7 the mins 0-3 with the top bits of mins 4-7, bytes 8-11 the low 4 bits of
      // scales 4-7 (low nibble) and mins 4-7 (high nibble).
      byte[] packed = new byte[12];
      for (int j = 0; j < 4; j++) {
        packed[j] = (byte) (scale[j] | (scale[j + 4] >> 4) << 6);
        packed[j + 4] = (byte) (min[j] | (min[j + 4] >> 4) << 6);
        packed[j + 8] = (byte) ((scale[j + 4] & 0xF) | (min[j + 4] & 0xF) << 4);
      }
      MemorySegment.copy(packed, 0, block, ValueLayout.JAVA_BYTE, 4, 12);
      int[] q = new int[256];
      for (int i = 0; i < 256; i++) {
        q[i] = random.nextInt(16);
      }
      // per 64 weights, 32 bytes: weight i (i < 32) in the low nibble, weight 32 + i in the high
      for (int g = 0; g < 4; g++) {
        for (int l = 0; l < 32; l++) {
          block.set(
              ValueLayout.JAVA_BYTE,
              16 + g * 32 + l,
              (byte) (q[g * 64 + l] | q[g * 64 + 32 + l] << 4));
        }
      }
      float[] out = dequantize(GgufTensorType.Q4_K, block, 256);
      for (int i = 0; i < 256; i++) {
        int sub = i / 32;
        assertThat(out[i]).as("weight %d", i).isEqualTo(d * scale[sub] * q[i] - dmin * min[sub]);
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
}
