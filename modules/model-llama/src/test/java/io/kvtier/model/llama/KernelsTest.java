package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.kvtier.gguf.GgufTensorType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The kernels against plain scalar reference code. */
class KernelsTest {
  /**
   * Attention's weighted sum of values built row by row with {@link Kernels#addScaled} is the
   * scalar loop's bits, value by value (a fused multiply-add, or lanes summed in another order,
   * would differ): so a position's attention output did not change when the loop was vectorized.
   */
  @Test
  void weightedSumsByAddScaledAreTheScalarLoopsBits() {
    Random random = new Random(5);
    int rows = 300;
    int width = 37; // a vector's lanes and a tail
    float[] values = new float[rows * width];
    float[] weights = new float[rows];
    for (int i = 0; i < values.length; i++) {
      values[i] = (float) random.nextGaussian();
    }
    for (int t = 0; t < rows; t++) {
      weights[t] = random.nextFloat() / rows;
    }
    float[] vector = new float[width + 3];
    for (int t = 0; t < rows; t++) {
      Kernels.addScaled(vector, 3, values, t * width, width, weights[t]);
    }
    for (int i = 0; i < width; i++) {
      float sum = 0f;
      for (int t = 0; t < rows; t++) {
        sum += weights[t] * values[t * width + i];
      }
      assertThat(Float.floatToRawIntBits(vector[3 + i]))
          .as("value %d", i)
          .isEqualTo(Float.floatToRawIntBits(sum));
    }
    assertThat(vector[0]).isZero();
  }

  /** llama.cpp's GELU: its table of binary16 values, 0 and the identity outside (-10, 10). */
  @Test
  void geluIsLlamaCppsTableOfHalves() {
    assertThat(Kernels.gelu(-10f)).isZero();
    assertThat(Kernels.gelu(-50f)).isZero();
    assertThat(Kernels.gelu(10f)).isEqualTo(10f);
    assertThat(Kernels.gelu(123.5f)).isEqualTo(123.5f);
    Random random = new Random(9);
    for (int i = 0; i < 1000; i++) {
      float x = (float) (random.nextGaussian() * 3);
      if (x <= -10f || x >= 10f) {
        continue;
      }
      float half = Float.float16ToFloat(Float.floatToFloat16(x));
      float expected = Float.float16ToFloat(Float.floatToFloat16(Kernels.geluTanh(half)));
      assertThat(Kernels.gelu(x)).as("gelu(%s)", x).isEqualTo(expected);
      assertThat(Kernels.gelu(x)).isCloseTo(Kernels.geluTanh(x), within(0.01f + Math.abs(x) / 256));
    }
  }

  private static final long SEED = Long.getLong("kvtier.tests.seed", 42L);

  private static float[] randoms(Random random, int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = (float) random.nextGaussian();
    }
    return v;
  }

  private static MemorySegment quantized(Arena arena, GgufTensorType type, float[] w) {
    MemorySegment seg = arena.allocate(type.bytesFor(w.length));
    type.quantize(w, 0, w.length, seg, 0);
    return seg;
  }

  @ParameterizedTest
  @EnumSource(
      names = {
        "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K",
        "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"
      })
  void dotEqualsScalarDotOfTheDequantizedRow(GgufTensorType type) {
    Random random = new Random(SEED);
    int[] lengths =
        type.blockSize() == 256 ? new int[] {256, 512, 1536} : new int[] {32, 64, 96, 256, 544};
    for (int n : lengths) {
      float[] x = randoms(random, n + 3);
      float[] w = randoms(random, n);
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment seg = quantized(arena, type, w);
        float[] deq = new float[n];
        type.dequantize(seg, 0, n, deq, 0);
        double expected = 0;
        double magnitude = 0;
        for (int i = 0; i < n; i++) {
          expected += (double) x[3 + i] * deq[i];
          magnitude += Math.abs((double) x[3 + i] * deq[i]);
        }
        float got = Kernels.dot(x, 3, seg, 0, type, n);
        assertThat((double) got)
            .as("%s n=%d seed=%d (-Dkvtier.tests.seed=%d)", type, n, SEED, SEED)
            .isCloseTo(expected, within(1e-5 * magnitude + 1e-6));
      }
    }
  }

  @Test
  void f32DotHandlesATailShorterThanTheVectorWidth() {
    Random random = new Random(SEED);
    int n = 172;
    float[] x = randoms(random, n);
    float[] w = randoms(random, n);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment seg = quantized(arena, GgufTensorType.F32, w);
      double expected = 0;
      for (int i = 0; i < n; i++) {
        expected += (double) x[i] * w[i];
      }
      assertThat((double) Kernels.dot(x, 0, seg, 0, GgufTensorType.F32, n))
          .isCloseTo(expected, within(1e-4));
      assertThat(Kernels.dot(x, 0, w, 0, n))
          .isEqualTo(Kernels.dot(x, 0, seg, 0, GgufTensorType.F32, n));
    }
  }

  @Test
  void everyTypeTheReaderKnowsHasADotKernel() {
    assertThat(Kernels.SUPPORTED_TYPES).containsExactlyInAnyOrder(GgufTensorType.values());
  }

  @Test
  void rmsNormMatchesTheFormula() {
    float[] x = {1f, -2f, 3f, 0.5f};
    float[] w = {1f, 2f, 0.5f, -1f};
    float[] out = new float[4];
    Kernels.rmsNorm(x, 0, w, 1e-5f, out, 0, 4);
    double ms = (1 + 4 + 9 + 0.25) / 4.0;
    for (int i = 0; i < 4; i++) {
      assertThat((double) out[i]).isCloseTo(x[i] / Math.sqrt(ms + 1e-5) * w[i], within(1e-6));
    }
  }

  @Test
  void ropeRotatesAdjacentPairsOrHalves() {
    float[] normal = {1, 2, 3, 4, 5, 6, 7, 8};
    float[] neox = normal.clone();
    float pos = 3;
    Kernels.rope(normal, 0, 8, pos, 10_000f, false);
    Kernels.rope(neox, 0, 8, pos, 10_000f, true);
    float[] in = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 4; i++) {
      double theta = pos * Math.pow(10_000, -2.0 * i / 8);
      double c = Math.cos(theta);
      double s = Math.sin(theta);
      assertThat((double) normal[2 * i]).isCloseTo(in[2 * i] * c - in[2 * i + 1] * s, within(1e-5));
      assertThat((double) normal[2 * i + 1])
          .isCloseTo(in[2 * i] * s + in[2 * i + 1] * c, within(1e-5));
      assertThat((double) neox[i]).isCloseTo(in[i] * c - in[i + 4] * s, within(1e-5));
      assertThat((double) neox[i + 4]).isCloseTo(in[i] * s + in[i + 4] * c, within(1e-5));
    }
  }

  @Test
  void ropeDividesEachPairsAngleByItsFrequencyFactor() {
    float[] factors = {1f, 0.5f, 4f, 32f};
    float pos = 7;
    for (boolean neox : new boolean[] {false, true}) {
      float[] in = {1, 2, 3, 4, 5, 6, 7, 8};
      float[] scaled = in.clone();
      Kernels.rope(scaled, 0, 8, pos, 10_000f, neox, factors);
      for (int i = 0; i < 4; i++) {
        double theta = pos * Math.pow(10_000, -2.0 * i / 8) / factors[i];
        int a = neox ? i : 2 * i;
        int b = neox ? i + 4 : 2 * i + 1;
        assertThat((double) scaled[a])
            .as("pair %d, neox %s", i, neox)
            .isCloseTo(in[a] * Math.cos(theta) - in[b] * Math.sin(theta), within(1e-5));
        assertThat((double) scaled[b])
            .isCloseTo(in[a] * Math.sin(theta) + in[b] * Math.cos(theta), within(1e-5));
      }
      // factors of 1 are no factors, to the bit
      float[] ones = in.clone();
      float[] none = in.clone();
      Kernels.rope(ones, 0, 8, pos, 10_000f, neox, new float[] {1, 1, 1, 1});
      Kernels.rope(none, 0, 8, pos, 10_000f, neox);
      assertThat(ones).containsExactly(none);
    }
  }

  @Test
  void softmaxAndSwiglu() {
    float[] v = {1f, 2f, 3f};
    Kernels.softmax(v, 0, 3);
    double z = Math.exp(1) + Math.exp(2) + Math.exp(3);
    assertThat((double) v[0]).isCloseTo(Math.exp(1) / z, within(1e-6));
    assertThat((double) v[2]).isCloseTo(Math.exp(3) / z, within(1e-6));
    float[] gate = {-1f, 0f, 2f};
    float[] up = {2f, 3f, 0.5f};
    Kernels.swiglu(gate, 0, up, 0, 3);
    assertThat((double) gate[0]).isCloseTo(-1 / (1 + Math.exp(1)) * 2, within(1e-6));
    assertThat(gate[1]).isZero();
    assertThat((double) gate[2]).isCloseTo(2 / (1 + Math.exp(-2)) * 0.5, within(1e-6));
  }

  @Test
  void productIsBitIdenticalWhateverTheBatchSizeAndTheSplit() {
    Random random = new Random(SEED);
    int rows = 512;
    int cols = 256;
    int positions = 7;
    float[] w = randoms(random, rows * cols);
    float[] in = randoms(random, positions * cols);
    for (GgufTensorType type :
        new GgufTensorType[] {
          GgufTensorType.F32,
          GgufTensorType.F16,
          GgufTensorType.BF16,
          GgufTensorType.Q8_0,
          GgufTensorType.Q4_0
        }) {
      try (Arena arena = Arena.ofShared()) { // read by the pool's threads
        MemorySegment seg = quantized(arena, type, w);
        LlamaWeight weight =
            new LlamaWeight(
                new io.kvtier.gguf.GgufTensor(
                    new io.kvtier.gguf.GgufTensorInfo("w", new long[] {cols, rows}, type, 0), seg));
        float[] batch = new float[positions * rows];
        weight.multiply(in, positions, batch); // large enough to run on the pool
        for (int p = 0; p < positions; p++) {
          float[] one = new float[cols];
          System.arraycopy(in, p * cols, one, 0, cols);
          float[] single = new float[rows];
          weight.multiply(one, 1, single);
          for (int r = 0; r < rows; r++) {
            assertThat(Float.floatToRawIntBits(batch[p * rows + r]))
                .as("%s position %d row %d", type, p, r)
                .isEqualTo(Float.floatToRawIntBits(single[r]));
          }
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(
      names = {
        "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K",
        "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"
      })
  void dot4IsFourDotsBitForBit(GgufTensorType type) {
    Random random = new Random(SEED);
    int[] lengths =
        switch (type.blockSize()) {
          case 1 -> new int[] {8, 172, 576};
          case 32 -> new int[] {32, 576, 1536};
          default -> new int[] {256, 1536};
        };
    for (int n : lengths) {
      int stride = n + 5;
      float[] x = randoms(random, 3 + 4 * stride);
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment seg = quantized(arena, type, randoms(random, n));
        float[] out = new float[1 + 4 * 3];
        Kernels.dot4(x, 3, stride, seg, 0, type, n, out, 1, 3);
        for (int k = 0; k < 4; k++) {
          assertThat(Float.floatToRawIntBits(out[1 + 3 * k]))
              .as("%s n=%d position %d seed=%d", type, n, k, SEED)
              .isEqualTo(Float.floatToRawIntBits(Kernels.dot(x, 3 + k * stride, seg, 0, type, n)));
        }
      }
    }
  }

  @Test
  void pairedQ8DotIsEightDotsBitForBit() {
    Random random = new Random(SEED);
    // 1, 3, 7 and 18 blocks: odd block counts and smollm-135m's 576
    for (int n : new int[] {32, 96, 224, 576}) {
      int positions = 16;
      float[] in = randoms(random, positions * n);
      float[] pairs = PairedQ8Dot.interleave(in, positions, n);
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment seg = quantized(arena, GgufTensorType.Q8_0, randoms(random, 2 * n));
        long secondRow = GgufTensorType.Q8_0.bytesFor(n);
        for (int first = 0; first < positions; first += PairedQ8Dot.POSITIONS) {
          float[] out = new float[2 + 8 * 3];
          PairedQ8Dot.dot8(pairs, first * n, seg, secondRow, n, out, 2, 3);
          for (int k = 0; k < PairedQ8Dot.POSITIONS; k++) {
            float expected =
                Kernels.dot(in, (first + k) * n, seg, secondRow, GgufTensorType.Q8_0, n);
            assertThat(Float.floatToRawIntBits(out[2 + 3 * k]))
                .as("n=%d position %d seed=%d", n, first + k, SEED)
                .isEqualTo(Float.floatToRawIntBits(expected));
          }
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(
      names = {
        "Q8_0", "Q4_0", "F32", "Q4_K", "Q6_K", "Q5_0", "Q5_1", "Q5_K", "Q2_K", "Q3_K", "IQ4_NL",
        "IQ4_XS"
      })
  void everyBatchSizeGivesEachPositionTheBitsOfItsOwnDot(GgufTensorType type) {
    Random random = new Random(SEED);
    int[] widths = type.blockSize() == 256 ? new int[] {256, 512} : new int[] {96, 224};
    for (int cols : widths) {
      int rows = 37;
      float[] w = randoms(random, rows * cols);
      try (Arena arena = Arena.ofShared()) {
        LlamaWeight weight =
            new LlamaWeight(
                new io.kvtier.gguf.GgufTensor(
                    new io.kvtier.gguf.GgufTensorInfo("w", new long[] {cols, rows}, type, 0),
                    quantized(arena, type, w)));
        for (int positions = 1; positions <= 17; positions++) {
          float[] in = randoms(random, positions * cols);
          float[] out = new float[positions * rows];
          weight.multiply(in, positions, out);
          for (int p = 0; p < positions; p++) {
            for (int r = 0; r < rows; r++) {
              assertThat(Float.floatToRawIntBits(out[p * rows + r]))
                  .as(
                      "%s cols=%d batch=%d position %d row %d seed=%d",
                      type, cols, positions, p, r, SEED)
                  .isEqualTo(Float.floatToRawIntBits(weight.dotRow(r, in, p * cols)));
            }
          }
        }
      }
    }
  }
}
