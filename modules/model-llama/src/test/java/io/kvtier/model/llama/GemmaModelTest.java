package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.serving.ModelProvider;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a Gemma file adds that llama.cpp's greedy tokens cannot show ({@link LlamaCppOracleTest}
 * checks the rest): the logits' soft cap, which changes no argmax, the family read from the
 * metadata, and each way of giving a Gemma file that the runner would not run as its model
 * refused in one line naming the key or tensor.
 */
class GemmaModelTest {
  @TempDir Path dir;

  private Path gemma(String arch, int window) throws IOException {
    return SyntheticGguf.gemma(arch, window).write(dir.resolve(arch + "-" + window + ".gguf"), 3);
  }

  private Path rewritten(Path from, String name, Consumer<GgufWriter> change) throws IOException {
    Path out = dir.resolve(name);
    try (GgufFile file = GgufFile.open(from)) {
      GgufWriter w = GgufWriter.copyOf(file, 3);
      change.accept(w);
      w.write(out);
    }
    return out;
  }

  /** {@code path} rewritten as architecture {@code to}: its {@code from.*} keys renamed. */
  private Path renamed(Path path, String from, String to) throws IOException {
    Map<String, GgufValue> keys = new java.util.HashMap<>();
    try (GgufFile file = GgufFile.open(path)) {
      file.metadata()
          .forEach(
              (key, value) -> {
                if (key.startsWith(from + ".")) {
                  keys.put(to + key.substring(from.length()), value);
                }
              });
    }
    return rewritten(
        path,
        from + "-as-" + to + ".gguf",
        w -> {
          w.put("general.architecture", GgufValue.ofString(to));
          keys.forEach(w::put);
        });
  }

  private static float[] logits(Path path, int[] tokens) throws IOException {
    try (GgufFile file = GgufFile.open(path)) {
      LlamaModel model = LlamaModel.of(file);
      return model.forward(tokens, 0, ArrayKvStore.forModel(model), false)[0];
    }
  }

  @Test
  void theLogitsAreSoftCappedAsTheFileSays() throws IOException {
    Path plain = gemma("gemma2", 8);
    Path wide =
        rewritten(
            plain,
            "wide.gguf",
            w -> w.put("gemma2.final_logit_softcapping", GgufValue.ofFloat32(1e6f)));
    Path capped =
        rewritten(
            plain,
            "capped.gguf",
            w -> w.put("gemma2.final_logit_softcapping", GgufValue.ofFloat32(0.5f)));
    int[] tokens = {1, 9, 33, 4, 60, 12, 7, 7, 21, 40, 2, 5};
    float[] raw = logits(wide, tokens);
    float[] got = logits(capped, tokens);
    float largest = 0f;
    for (int i = 0; i < raw.length; i++) {
      largest = Math.max(largest, Math.abs(raw[i]));
      assertThat(got[i]).isBetween(-0.5f, 0.5f);
      assertThat(got[i]).isCloseTo((float) Math.tanh(raw[i] / 0.5f) * 0.5f, within(1e-5f));
    }
    assertThat(largest).as("logits the cap changes").isGreaterThan(0.5f);
    // gemma2's default cap is 30: the plain file's logits are the wide one's capped at 30
    float[] thirty = logits(plain, tokens);
    for (int i = 0; i < raw.length; i++) {
      assertThat(thirty[i]).isCloseTo((float) Math.tanh(raw[i] / 30f) * 30f, within(1e-4f));
    }
  }

  private static org.assertj.core.data.Offset<Float> within(float v) {
    return org.assertj.core.data.Offset.offset(v);
  }

  @Test
  void theFamilyIsReadFromTheMetadata() throws IOException {
    try (GgufFile file = GgufFile.open(gemma("gemma3", 12))) {
      Family family = LlamaModel.of(file).family();
      assertThat(family.neox()).isTrue();
      assertThat(family.headNorms()).isTrue();
      assertThat(family.attentionSoftcap()).isZero();
      assertThat(family.finalSoftcap()).isZero();
      assertThat(family.embeddingScale()).isEqualTo((float) Math.sqrt(64));
      assertThat(family.queryScale()).isEqualTo(1f / (float) Math.sqrt(8));
      for (int l = 0; l < 5; l++) {
        assertThat(family.window(l)).isEqualTo(12);
        assertThat(family.ropeBase(l)).isEqualTo(10_000f);
        assertThat(family.ropeScale(l)).isEqualTo(1f);
      }
      assertThat(family.window(5)).isZero();
      assertThat(family.ropeBase(5)).isEqualTo(1_000_000f);
      assertThat(family.ropeScale(5)).isEqualTo(8f);
      assertThat(family.window(6)).as("a draft layer: the last layer's").isZero();
    }
    try (GgufFile file = GgufFile.open(gemma("gemma3", 12))) {
      assertThat(LlamaServingModel.of(file).slidingWindows())
          .isEqualTo("sliding window 12 in 5 of 6 layers");
    }
    try (GgufFile file = GgufFile.open(gemma("gemma2", 0))) {
      Family family = LlamaModel.of(file).family();
      assertThat(family.window(0)).as("gemma2's default window").isEqualTo(4096);
      assertThat(family.window(1)).isZero();
      assertThat(family.attentionSoftcap()).isEqualTo(50f);
      assertThat(family.finalSoftcap()).isEqualTo(30f);
      assertThat(family.headNorms()).isFalse();
      assertThat(family.ropeBase(0)).isEqualTo(10_000f);
    }
    try (GgufFile file = GgufFile.open(SyntheticGguf.llama().write(dir.resolve("l.gguf"), 3))) {
      Family family = LlamaModel.of(file).family();
      assertThat(family.gemma()).isFalse();
      assertThat(family.neox()).isFalse();
      assertThat(family.window(0)).isZero();
      assertThat(family.embeddingScale()).isZero();
      assertThat(family.queryScale()).isZero();
    }
    try (GgufFile file = GgufFile.open(dir.resolve("l.gguf"))) {
      assertThat(LlamaServingModel.of(file).slidingWindows()).isEmpty();
    }
  }

  private static void refusedNaming(Path path, String... parts) {
    var thrown =
        assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", path.toString())))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith("model gguf: file=" + path)
            .hasMessageNotContaining("\n");
    for (String part : parts) {
      thrown.hasMessageContaining(part);
    }
  }

  @Test
  void aGemma3FileWithoutItsSlidingWindowIsRefusedNamingTheKey() throws IOException {
    refusedNaming(gemma("gemma3", 0), "gemma3.attention.sliding_window", "is missing");
  }

  @Test
  void aWindowOrCapThatIsNotPositiveIsRefusedNamingTheKey() throws IOException {
    Path plain = gemma("gemma2", 8);
    refusedNaming(
        rewritten(
            plain,
            "no-window.gguf",
            w -> w.put("gemma2.attention.sliding_window", GgufValue.ofUint32(0))),
        "gemma2.attention.sliding_window=0.0 must be positive");
    refusedNaming(
        rewritten(
            plain,
            "no-cap.gguf",
            w -> w.put("gemma2.attn_logit_softcapping", GgufValue.ofFloat32(-1f))),
        "gemma2.attn_logit_softcapping=-1.0 must be positive");
    refusedNaming(
        rewritten(
            plain,
            "no-final-cap.gguf",
            w -> w.put("gemma2.final_logit_softcapping", GgufValue.ofFloat32(0f))),
        "gemma2.final_logit_softcapping=0.0 must be positive");
  }

  @Test
  void gemmaTensorsAreRequiredWhereTheArchitectureHasThemAndRefusedWhereNot() throws IOException {
    // a gemma2 file's tensors under gemma3: no per-head norms
    Path asGemma3 = renamed(gemma("gemma2", 8), "gemma2", "gemma3");
    refusedNaming(asGemma3, "blk.0.attn_q_norm.weight");
    // a gemma3 file read as llama: the Gemma norms are tensors llama does not compute with
    Path asLlama = renamed(gemma("gemma3", 8), "gemma3", "llama");
    refusedNaming(asLlama, "llama runner does not compute with", "attn_q_norm.weight");
  }
}
