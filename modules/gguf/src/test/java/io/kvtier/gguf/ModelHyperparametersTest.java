package io.kvtier.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The hyperparameters of llama and qwen2 files (gemma2 and gemma3 are read alike), from real metadata and from written files. */
class ModelHyperparametersTest {
  @TempDir Path dir;

  @Test
  void readsTheMetadataOfRealLlama3AndQwen2Files() throws IOException {
    try (GgufFile f = GgufFile.open(SharedFiles.require("tokenizers/ggml-vocab-llama-bpe.gguf"))) {
      ModelHyperparameters h = ModelHyperparameters.of(f);
      assertThat(h.architecture()).isEqualTo("llama");
      assertThat(h.name()).isEqualTo("llama-bpe");
      assertThat(h.headCount()).isEqualTo(32);
      assertThat(h.headCountKv()).isEqualTo(8);
      assertThat(h.ropeFreqBase()).isEqualTo(500_000f);
      assertThat(h.vocabularySize()).isEqualTo(128_256);
      assertThat(h.headSize()).isEqualTo(128);
    }
    try (GgufFile f = GgufFile.open(SharedFiles.require("tokenizers/ggml-vocab-qwen2.gguf"))) {
      ModelHyperparameters h = ModelHyperparameters.of(f);
      assertThat(h.architecture()).isEqualTo("qwen2");
      assertThat(h.contextLength()).isEqualTo(32_768);
      assertThat(h.ropeFreqBase()).isEqualTo(1_000_000f);
      assertThat(h.rmsNormEpsilon()).isEqualTo(1e-6f);
      assertThat(h.vocabularySize()).isEqualTo(151_936); // from the token list: no vocab_size key
    }
    try (GgufFile f = GgufFile.open(SharedFiles.require("tokenizers/ggml-vocab-gpt-2.gguf"))) {
      assertThatThrownBy(() -> ModelHyperparameters.of(f))
          .isInstanceOf(GgufUnsupportedException.class)
          .hasMessageEndingWith(
              "architecture 'gpt2' is not supported; supported: llama, qwen2, gemma2, gemma3");
    }
  }

  private GgufWriter llama() {
    return new GgufWriter(3)
        .put("general.architecture", GgufValue.ofString("llama"))
        .put("llama.context_length", GgufValue.ofUint32(8192))
        .put("llama.embedding_length", GgufValue.ofUint32(2048))
        .put("llama.block_count", GgufValue.ofUint32(16))
        .put("llama.feed_forward_length", GgufValue.ofUint32(8192))
        .put("llama.attention.head_count", GgufValue.ofUint32(32))
        .put("llama.attention.layer_norm_rms_epsilon", GgufValue.ofFloat32(1e-5f));
  }

  @Test
  void defaultsAndRopeScaling() throws IOException {
    Path path = dir.resolve("m.gguf");
    llama().write(path);
    try (GgufFile f = GgufFile.open(path)) {
      ModelHyperparameters h = ModelHyperparameters.of(f);
      assertThat(h.name()).isEqualTo("m.gguf");
      assertThat(h.headCountKv()).isEqualTo(32);
      assertThat(h.ropeFreqBase()).isEqualTo(10_000f);
      assertThat(h.ropeDimensionCount()).isEqualTo(64);
      assertThat(h.ropeScaling()).isEqualTo(RopeScaling.NONE);
      assertThat(h.vocabularySize()).isZero();
    }
    llama()
        .put("llama.rope.scaling.type", GgufValue.ofString("yarn"))
        .put("llama.rope.scaling.factor", GgufValue.ofFloat32(4f))
        .put("llama.rope.scaling.original_context_length", GgufValue.ofUint32(2048))
        .write(path);
    try (GgufFile f = GgufFile.open(path)) {
      assertThat(ModelHyperparameters.of(f).ropeScaling())
          .isEqualTo(new RopeScaling("yarn", 4f, 2048));
    }
    llama().put("llama.rope.scale_linear", GgufValue.ofFloat32(2f)).write(path);
    try (GgufFile f = GgufFile.open(path)) {
      assertThat(ModelHyperparameters.of(f).ropeScaling())
          .isEqualTo(new RopeScaling("linear", 2f, 0));
    }
  }

  @Test
  void aMissingKeyNamesItAndTheFile() throws IOException {
    Path path = dir.resolve("m.gguf");
    new GgufWriter(3).put("general.architecture", GgufValue.ofString("qwen2")).write(path);
    try (GgufFile f = GgufFile.open(path)) {
      assertThatThrownBy(() -> ModelHyperparameters.of(f))
          .isInstanceOf(GgufMetadataException.class)
          .hasMessage("metadata key 'qwen2.attention.head_count' is missing from " + path);
    }
  }
}
