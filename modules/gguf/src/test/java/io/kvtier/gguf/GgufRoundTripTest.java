package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GgufRoundTripTest {
  @TempDir Path dir;

  private static GgufWriter sample(int version, Arena arena, long seed) {
    GgufWriter w = new GgufWriter(version);
    w.put("general.architecture", GgufValue.ofString("llama"));
    w.put("general.name", GgufValue.ofString("round trip ✓"));
    w.put("u8", new GgufValue(GgufValueType.UINT8, 255L));
    w.put("i8", new GgufValue(GgufValueType.INT8, -128L));
    w.put("u16", new GgufValue(GgufValueType.UINT16, 65535L));
    w.put("i16", new GgufValue(GgufValueType.INT16, -3L));
    w.put("u32", GgufValue.ofUint32(0xFFFF_FFFFL));
    w.put("i32", GgufValue.ofInt32(-7));
    w.put("u64", GgufValue.ofUint64(-1L));
    w.put("i64", new GgufValue(GgufValueType.INT64, Long.MIN_VALUE));
    w.put("f32", GgufValue.ofFloat32(1.5f));
    w.put("f64", new GgufValue(GgufValueType.FLOAT64, Math.PI));
    w.put("bool", GgufValue.ofBool(true));
    w.put("strings", GgufValue.ofArray(GgufArray.ofStrings("a", "", "ß▁<0x0A>")));
    w.put("floats", GgufValue.ofArray(GgufArray.ofFloats(1f, -2f, Float.NaN)));
    w.put("ints", GgufValue.ofArray(GgufArray.ofInts(1, 2, 3)));
    w.put(
        "bytes", GgufValue.ofArray(new GgufArray(GgufValueType.UINT8, new byte[] {1, (byte) 200})));
    w.put("shorts", GgufValue.ofArray(new GgufArray(GgufValueType.INT16, new short[] {-1, 7})));
    w.put("longs", GgufValue.ofArray(new GgufArray(GgufValueType.UINT64, new long[] {-1L, 9})));
    w.put("doubles", GgufValue.ofArray(new GgufArray(GgufValueType.FLOAT64, new double[] {0.25})));
    w.put(
        "bools", GgufValue.ofArray(new GgufArray(GgufValueType.BOOL, new boolean[] {true, false})));
    w.put(
        "nested",
        GgufValue.ofArray(
            new GgufArray(
                GgufValueType.ARRAY,
                new GgufArray[] {GgufArray.ofInts(4), GgufArray.ofStrings("x", "y")})));
    Random random = new Random(seed);
    for (GgufTensorType type : GgufTensorType.values()) {
      long[] dims = {256, 3};
      long bytes = type.bytesFor(256 * 3);
      MemorySegment data = arena.allocate(bytes);
      for (long i = 0; i < bytes; i++) {
        data.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt());
      }
      w.addTensor("t." + type, type, dims, data);
    }
    return w;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3})
  void writesAndReadsBackEveryValueTypeAndTensorType(int version) throws IOException {
    Path path = dir.resolve("v" + version + ".gguf");
    try (Arena arena = Arena.ofConfined()) {
      GgufWriter w = sample(version, arena, version);
      w.write(path);
      try (GgufFile f = GgufFile.open(path)) {
        assertThat(f.version()).isEqualTo(version);
        assertThat(f.dataStart() % 32).isZero();
        assertThat(f.getString("general.name")).isEqualTo("round trip ✓");
        assertThat(f.getLong("u64")).isEqualTo(-1L);
        assertThat(f.getLong("u32")).isEqualTo(0xFFFF_FFFFL);
        assertThat(f.getInt("i32")).isEqualTo(-7);
        assertThat(f.getFloat("f64")).isEqualTo((float) Math.PI);
        assertThat(f.getArray("nested").elements()).isInstanceOf(GgufArray[].class);
        assertThat(f.tensorInfos()).hasSize(GgufTensorType.values().length);
        // a second write of what was read gives the same file, so reading lost nothing
        Path again = dir.resolve("again.gguf");
        GgufWriter.copyOf(f, version).write(again);
        assertThat(Files.readAllBytes(again)).isEqualTo(Files.readAllBytes(path));
        for (GgufTensorInfo info : f.tensorInfos()) {
          GgufTensor t = f.tensor(info.name());
          assertThat(t.dims()).containsExactly(256, 3);
          assertThat((f.dataStart() + t.info().offset()) % 32).as("aligned").isZero();
        }
      }
      try (GgufFile f = GgufFile.open(path);
          Arena other = Arena.ofConfined()) {
        GgufWriter expected = sample(version, other, version);
        Path expectedPath = dir.resolve("expected.gguf");
        expected.write(expectedPath);
        try (GgufFile e = GgufFile.open(expectedPath)) {
          assertThat(f.metadata()).isEqualTo(e.metadata());
          for (GgufTensorInfo info : e.tensorInfos()) {
            assertThat(f.tensor(info.name()).data().mismatch(e.tensor(info.name()).data()))
                .isEqualTo(-1L);
          }
        }
      }
    }
  }

  @Test
  void rowSourcesAreQuantizedRowByRowAtWriteTime() throws IOException {
    Path path = dir.resolve("rows.gguf");
    GgufWriter.RowSource ramp =
        (row, values) -> {
          for (int i = 0; i < values.length; i++) {
            values[i] = (row + 1) * (i - 16) / 16f;
          }
        };
    GgufWriter w = new GgufWriter(3);
    for (GgufTensorType type :
        new GgufTensorType[] {
          GgufTensorType.F32,
          GgufTensorType.F16,
          GgufTensorType.BF16,
          GgufTensorType.Q8_0,
          GgufTensorType.Q4_0
        }) {
      w.addTensor("t." + type, type, new long[] {64, 3}, ramp);
    }
    w.write(path);
    try (GgufFile f = GgufFile.open(path);
        Arena arena = Arena.ofConfined()) {
      float[] expected = new float[64];
      for (GgufTensorInfo info : f.tensorInfos()) {
        GgufTensor t = f.tensor(info.name());
        MemorySegment quantized = arena.allocate(info.type().bytesFor(64));
        for (int r = 0; r < 3; r++) {
          ramp.fill(r, expected);
          info.type().quantize(expected, 0, 64, quantized, 0);
          assertThat(t.row(r).mismatch(quantized)).as("%s row %d", info.name(), r).isEqualTo(-1L);
        }
      }
      float[] row2 = f.tensor("t.F32").dequantizeRow(2);
      assertThat(row2[0]).isEqualTo(-3f);
      assertThat(row2[32]).isEqualTo(3f);
    }
  }

  @Test
  void honoursACustomAlignment() throws IOException {
    Path path = dir.resolve("a.gguf");
    try (Arena arena = Arena.ofConfined()) {
      GgufWriter w = new GgufWriter(3);
      w.put(GgufFile.ALIGNMENT_KEY, GgufValue.ofUint32(64));
      w.addTensor("a", GgufTensorType.F32, new long[] {3}, arena.allocate(12));
      w.addTensor("b", GgufTensorType.F32, new long[] {5}, arena.allocate(20));
      w.write(path);
    }
    try (GgufFile f = GgufFile.open(path)) {
      assertThat(f.alignment()).isEqualTo(64);
      assertThat(f.dataStart() % 64).isZero();
      assertThat(f.tensorInfos().get(1).offset()).isEqualTo(64);
    }
  }

  @Test
  void typedGettersNameTheKeyAndTheFile() throws IOException {
    Path path = dir.resolve("keys.gguf");
    new GgufWriter(3)
        .put("general.architecture", GgufValue.ofString("mamba"))
        .put("big", GgufValue.ofUint64(1L << 40))
        .write(path);
    try (GgufFile f = GgufFile.open(path)) {
      assertThatThrownBy(() -> f.getString("llama.context_length"))
          .isInstanceOf(GgufMetadataException.class)
          .hasMessage("metadata key 'llama.context_length' is missing from " + path);
      assertThatThrownBy(() -> f.getInt("general.architecture"))
          .isInstanceOf(GgufMetadataException.class)
          .hasMessage(
              "metadata key 'general.architecture' in " + path + " is STRING, expected an integer");
      assertThatThrownBy(() -> f.getInt("big")).hasMessageContaining("does not fit an int");
      assertThat(f.getInt("absent", 5)).isEqualTo(5);
      assertThatThrownBy(() -> ModelHyperparameters.of(f))
          .isInstanceOf(GgufUnsupportedException.class)
          .hasMessage(
              path
                  + ": architecture 'mamba' is not supported; supported: llama, qwen2, gemma2, gemma3");
      assertThatThrownBy(() -> f.tensor("nope")).hasMessageContaining("tensor 'nope' is not in");
    }
  }

  @Test
  void anUnsupportedTensorTypeIsOneLineNamingItAndTheSupportedOnes() throws IOException {
    Path path = dir.resolve("q5.gguf");
    try (Arena arena = Arena.ofConfined()) {
      new GgufWriter(3)
          .addTensor("w", GgufTensorType.F32, new long[] {8}, arena.allocate(32))
          .write(path);
    }
    byte[] bytes = Files.readAllBytes(path);
    // header 24 bytes, name (8 + 1), dims count 4, one dim 8, then the type code
    int typeAt = 24 + 9 + 4 + 8;
    assertThat(bytes[typeAt]).isEqualTo((byte) 0);
    bytes[typeAt] = 16; // IQ2_XXS
    Files.write(path, bytes);
    assertThatThrownBy(() -> GgufFile.open(path))
        .isInstanceOf(GgufUnsupportedException.class)
        .hasMessage(
            path
                + ": tensor w: tensor type 16 (IQ2_XXS) is not supported; supported: F32=0,"
                + " F16=1, Q4_0=2, Q4_1=3, Q5_0=6, Q5_1=7, Q8_0=8, Q2_K=10, Q3_K=11, Q4_K=12,"
                + " Q5_K=13, Q6_K=14, IQ4_NL=20, IQ4_XS=23, BF16=30");
  }

  @Test
  void refusesWhatIsNotGgufOrTruncated() throws IOException {
    Path junk = dir.resolve("junk.gguf");
    Files.write(junk, new byte[] {'G', 'G', 'M', 'L', 1, 0, 0, 0});
    assertThatThrownBy(() -> GgufFile.open(junk)).hasMessageContaining("is not a GGUF file");
    Path v9 = dir.resolve("v9.gguf");
    Files.write(v9, new byte[] {'G', 'G', 'U', 'F', 9, 0, 0, 0, 0, 0, 0, 0});
    assertThatThrownBy(() -> GgufFile.open(v9))
        .isInstanceOf(GgufUnsupportedException.class)
        .hasMessageContaining("GGUF version 9; supported: 1, 2, 3");
    Path path = dir.resolve("t.gguf");
    try (Arena arena = Arena.ofConfined()) {
      new GgufWriter(3)
          .addTensor("w", GgufTensorType.F32, new long[] {64}, arena.allocate(256))
          .write(path);
    }
    byte[] bytes = Files.readAllBytes(path);
    Files.write(path, java.util.Arrays.copyOf(bytes, bytes.length - 4));
    assertThatThrownBy(() -> GgufFile.open(path)).hasMessageContaining("is truncated: tensor w");
  }
}
