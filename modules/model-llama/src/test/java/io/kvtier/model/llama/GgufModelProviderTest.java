package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.serving.ModelProvider;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.KvLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Model {@code gguf} found by name: its options, what it tells a server about the file, and each
 * way of giving it a wrong file or option failing in one line that names the path or option and
 * what is supported.
 */
class GgufModelProviderTest {
  @TempDir Path dir;

  private Path synthetic() throws IOException {
    return SyntheticGguf.llama().write(dir.resolve("model.gguf"), 7);
  }

  @Test
  void theEngineFindsTheModelByNameAndItDescribesTheFile() throws IOException {
    Path path = synthetic();
    ServingModel opened =
        ModelProvider.open("gguf", Map.of("file", path.toString(), "max-context", "100"));
    try (LlamaServingModel model = (LlamaServingModel) opened) {
      assertThat(model.name()).isEqualTo("synthetic-llama");
      assertThat(model.architecture()).isEqualTo("llama");
      assertThat(model.layers()).isEqualTo(2);
      assertThat(model.dim()).isEqualTo(64);
      assertThat(model.heads()).isEqualTo(8);
      assertThat(model.kvHeads()).isEqualTo(4);
      assertThat(model.headSize()).isEqualTo(8);
      assertThat(model.feedForwardLength()).isEqualTo(96);
      assertThat(model.tensorType()).isEqualTo(GgufTensorType.F32);
      assertThat(model.contextLength()).isEqualTo(512);
      assertThat(model.maxContext()).isEqualTo(100);
      assertThat(model.vocabularySize()).isEqualTo(64);
      assertThat(model.file().path()).isEqualTo(path);
      assertThat(model.kvLayout(16)).isEqualTo(new KvLayout(2, 4, 8, Float.BYTES, 16));
    }
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      assertThat(model.maxContext()).as("the file's context by default").isEqualTo(512);
    }
  }

  @Test
  void aQuantizedFileReportsItsTensorType() throws IOException {
    Path path =
        SyntheticGguf.llama().withType(GgufTensorType.Q8_0).write(dir.resolve("q8.gguf"), 7);
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path.toString()))) {
      assertThat(model.tensorType()).isEqualTo(GgufTensorType.Q8_0);
    }
  }

  @Test
  void anUnknownOptionIsRefusedByName() throws IOException {
    String path = synthetic().toString();
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", path, "heads", "8")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("model gguf has no option(s) [heads]: drop them");
  }

  @Test
  void noFileOptionSaysWhatToGive() {
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "model gguf needs option file=PATH, the .gguf file of a llama, qwen2, gemma2 or gemma3 model");
  }

  @Test
  void aMissingFileIsNamed() {
    String missing = dir.resolve("absent.gguf").toString();
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", missing)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "model gguf: file="
                + missing
                + " does not exist or is not a file: give a .gguf file's path");
  }

  @Test
  void aFileThatIsNotGgufSaysWhatIsSupported() throws IOException {
    Path text = Files.writeString(dir.resolve("notes.gguf"), "not a model, just some text");
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", text.toString())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("model gguf: file=" + text + " is not a GGUF file this model runs")
        .hasMessageContaining("supported: GGUF versions 1 to 3, architectures llama, qwen2")
        .hasMessageNotContaining("\n");
  }

  @Test
  void anUnsupportedArchitectureSaysWhatIsSupported() throws IOException {
    Path gpt2 = SyntheticGguf.llama().withArch("gpt2").write(dir.resolve("gpt2.gguf"), 7);
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", gpt2.toString())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("model gguf: file=" + gpt2 + " holds no model kvtier runs")
        .hasMessageContaining("architecture 'gpt2' is not supported")
        .hasMessageContaining("architectures llama, qwen2")
        .hasMessageNotContaining("\n");
  }

  /** The synthetic llama file rewritten by {@code change}, as {@code name}. */
  private Path rewritten(String name, Consumer<GgufWriter> change) throws IOException {
    Path out = dir.resolve(name);
    try (GgufFile file = GgufFile.open(synthetic())) {
      GgufWriter w = GgufWriter.copyOf(file, 3);
      change.accept(w);
      w.write(out);
    }
    return out;
  }

  private static void addVector(GgufWriter w, String name, float... values) {
    w.addTensor(
        name,
        GgufTensorType.F32,
        new long[] {values.length},
        (row, into) -> System.arraycopy(values, 0, into, 0, values.length));
  }

  private static float[] filled(int n, float value) {
    float[] v = new float[n];
    Arrays.fill(v, value);
    return v;
  }

  private static void refusedNaming(Path path, String... parts) {
    var thrown =
        assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", path.toString())))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith("model gguf: file=" + path + " holds no model kvtier runs")
            .hasMessageNotContaining("\n");
    for (String part : parts) {
      thrown.hasMessageContaining(part);
    }
  }

  @Test
  void aTensorTheRunnerWouldNotReadIsRefusedByName() throws IOException {
    Path bias =
        rewritten(
            "output-bias.gguf",
            w -> addVector(w, "blk.1.attn_output.bias", filled(SyntheticGguf.llama().dim(), 0.1f)));
    refusedNaming(
        bias,
        "has 1 tensor(s) kvtier's llama runner does not compute with, first blk.1.attn_output.bias",
        "ignoring them would answer differently from the model",
        "supported tensors: rope_freqs.weight, token_embd.weight, output_norm.weight,"
            + " output.weight, and per block attn_norm.weight, attn_q.weight, attn_k.weight,"
            + " attn_v.weight, attn_q.bias, attn_k.bias, attn_v.bias, attn_output.weight,"
            + " ffn_norm.weight, ffn_gate.weight, ffn_up.weight, ffn_down.weight");
    // The block after the last may be a draft layer shaped as the others; the one after it not.
    int layers = SyntheticGguf.llama().layers();
    int dim = SyntheticGguf.llama().dim();
    Path draftNorm =
        rewritten(
            "draft-norm.gguf",
            w -> addVector(w, "blk." + layers + ".attn_norm.weight", filled(dim, 1f)));
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", draftNorm.toString()))) {
      assertThat(model.model().blockCount()).isEqualTo(layers);
    }
    Path pastDraft =
        rewritten(
            "past-draft.gguf",
            w -> addVector(w, "blk." + (layers + 1) + ".attn_norm.weight", filled(dim, 1f)));
    refusedNaming(pastDraft, "does not compute with, first blk." + (layers + 1) + ".attn_norm");
    Path unknownInDraft =
        rewritten(
            "draft-experts.gguf",
            w -> addVector(w, "blk." + layers + ".ffn_gate_inp.weight", filled(dim, 1f)));
    refusedNaming(unknownInDraft, "first blk." + layers + ".ffn_gate_inp.weight");
  }

  @Test
  void ropeFrequencyFactorsAreReadAndBadOnesRefused() throws IOException {
    int pairs = SyntheticGguf.HEAD / 2;
    Path good =
        rewritten("rope-freqs.gguf", w -> addVector(w, "rope_freqs.weight", filled(pairs, 8f)));
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", good.toString()))) {
      assertThat(model.model().ropeFactors()).containsExactly(filled(pairs, 8f));
    }
    Path shortOne =
        rewritten(
            "rope-freqs-short.gguf", w -> addVector(w, "rope_freqs.weight", filled(pairs - 1, 8f)));
    refusedNaming(
        shortOne,
        "tensor rope_freqs.weight has shape ["
            + (pairs - 1)
            + "] but RoPE rotates "
            + pairs
            + " pairs");
    float[] zero = filled(pairs, 8f);
    zero[2] = 0f;
    Path zeroOne = rewritten("rope-freqs-zero.gguf", w -> addVector(w, "rope_freqs.weight", zero));
    refusedNaming(zeroOne, "rope_freqs.weight holds 0.0 for pair 2", "positive and finite");
    Path qwen = SyntheticGguf.llama().withArch("qwen2").write(dir.resolve("qwen2.gguf"), 7);
    Path qwenFactors = dir.resolve("qwen2-rope-freqs.gguf");
    try (GgufFile file = GgufFile.open(qwen)) {
      GgufWriter w = GgufWriter.copyOf(file, 3);
      addVector(w, "rope_freqs.weight", filled(pairs, 8f));
      w.write(qwenFactors);
    }
    refusedNaming(
        qwenFactors, "kvtier's qwen2 runner does not compute with, first rope_freqs.weight");
  }

  @Test
  void expertsAndShapesTheTensorsDoNotHaveAreRefused() throws IOException {
    Path experts = rewritten("moe.gguf", w -> w.put("llama.expert_count", GgufValue.ofUint32(8)));
    refusedNaming(experts, "llama.expert_count=8: mixture-of-experts layers are not supported");
    int head = SyntheticGguf.HEAD;
    int dim = SyntheticGguf.llama().dim();
    // Heads of their own size are read (LlamaCppOracleTest runs such a file), but this file's
    // query matrix is still dim wide: its tensors do not match the size its metadata says.
    Path keys =
        rewritten(
            "key-length.gguf",
            w -> w.put("llama.attention.key_length", GgufValue.ofUint32(2 * head)));
    refusedNaming(
        keys,
        "tensor blk.0.attn_q.weight has shape ["
            + dim
            + ", "
            + dim
            + "] where the file's llama.* sizes",
        "heads of " + 2 * head,
        "ask for [" + dim + ", " + 2 * dim + "]: the file is damaged");
    Path values =
        rewritten(
            "value-length.gguf",
            w -> w.put("llama.attention.value_length", GgufValue.ofUint32(2 * head)));
    refusedNaming(
        values,
        "llama.attention.value_length=" + 2 * head + " is not the key heads' size of " + head);
    Path rotated =
        rewritten(
            "rope-dimensions.gguf",
            w -> w.put("llama.rope.dimension_count", GgufValue.ofUint32(head / 2)));
    refusedNaming(
        rotated,
        "llama.rope.dimension_count=" + head / 2 + " is not the head size of " + head,
        "RoPE over part of a head is not supported");
    Path same =
        rewritten(
            "key-length-same.gguf",
            w -> w.put("llama.attention.value_length", GgufValue.ofUint32(head)));
    try (LlamaServingModel model =
        (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", same.toString()))) {
      assertThat(model.model().hyperparameters().headSize()).isEqualTo(head);
    }
    // A tensor of another shape than the sizes say, and an embedding of another vocabulary
    Path ffn =
        rewritten(
            "ffn-length.gguf", w -> w.put("llama.feed_forward_length", GgufValue.ofUint32(8)));
    refusedNaming(ffn, "tensor blk.0.ffn_gate.weight has shape", "feed_forward_length 8");
    Path vocabulary =
        rewritten("vocab-size.gguf", w -> w.put("llama.vocab_size", GgufValue.ofUint32(7)));
    refusedNaming(vocabulary, "tensor token_embd.weight has shape", "ask for [" + dim + ", 7]");
  }

  @Test
  void kvTypeF16HalvesThePagesAndOtherTypesAreRefused() throws IOException {
    String path = synthetic().toString();
    try (LlamaServingModel f32 =
            (LlamaServingModel) ModelProvider.open("gguf", Map.of("file", path));
        LlamaServingModel f16 =
            (LlamaServingModel)
                ModelProvider.open("gguf", Map.of("file", path, "kv-type", "F16"))) {
      assertThat(f32.kvType()).isEqualTo(KvType.F32);
      assertThat(f16.kvType()).isEqualTo(KvType.F16);
      assertThat(f16.kvLayout(16).dtypeBytes()).isEqualTo(2);
      assertThat(2 * f16.kvLayout(16).pageBytes()).isEqualTo(f32.kvLayout(16).pageBytes());
      // pools laid out for the other type are refused, naming the key and the option
      assertThatThrownBy(() -> f16.checkLayout(f32.kvLayout(16), 1))
          .hasMessageContaining("kvtier.dtype-bytes=2 (F16 KV, model option kv-type=f16");
      assertThatThrownBy(() -> f32.checkLayout(f16.kvLayout(16), 1))
          .hasMessageContaining("kvtier.dtype-bytes=4 (F32 KV, model option kv-type=f32");
    }
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", path, "kv-type", "q8_0")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("kv-type=q8_0 is not a K/V type kvtier stores; use one of [f32, f16]");
  }

  @Test
  void aMaxContextOutsideTheFilesContextIsRefused() throws IOException {
    String path = synthetic().toString();
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", path, "max-context", "513")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "model gguf: file="
                + path
                + ": max-context=513 is outside [1, 512], the context length of "
                + path);
    assertThatThrownBy(() -> ModelProvider.open("gguf", Map.of("file", path, "max-context", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("model option max-context=x is not an integer: give a whole number");
  }

  @Test
  void speculativeOptionsMakeADraftAndBadValuesAreRefused() throws IOException {
    Path path = synthetic();
    String file = path.toString();
    try (LlamaServingModel model =
        (LlamaServingModel)
            ModelProvider.open(
                "gguf",
                Map.of(
                    "file", file,
                    "speculative", "draft-layer:copy-last",
                    "num-speculative-tokens", "5"))) {
      assertThat(model.speculativeTokens()).isEqualTo(5);
      assertThat(model.draftName()).isEqualTo("draft-copy-last");
      assertThat(model.kvBlocks()).isEqualTo(model.layers() + 1);
      assertThat(model.kvLayout(16).layers()).isEqualTo(model.layers() + 1);
    }
    try (LlamaServingModel model =
        (LlamaServingModel)
            ModelProvider.open(
                "gguf",
                Map.of(
                    "file", file, "speculative", "model:" + file, "num-speculative-tokens", "2"))) {
      assertThat(model.speculativeTokens()).isEqualTo(2);
      assertThat(model.kvBlocks()).as("its K/V is not in the pages").isEqualTo(model.layers());
      assertThat(model.draftName()).isEmpty();
      assertThat(model.draftDescription()).contains("K/V outside the tiers");
    }
    try (LlamaServingModel model =
        (LlamaServingModel)
            ModelProvider.open(
                "gguf", Map.of("file", file, "speculative", "draft-layer:copy-last"))) {
      assertThat(model.speculativeTokens()).isEqualTo(GgufModelProvider.DEFAULT_SPECULATIVE_TOKENS);
    }
    record Bad(Map<String, String> options, String message) {}
    for (Bad bad :
        java.util.List.of(
            new Bad(Map.of("speculative", "eagle"), "speculative=eagle is not a draft"),
            new Bad(
                Map.of("speculative", "model:" + dir.resolve("none.gguf")),
                "the draft model's file does not exist or is not a file"),
            new Bad(Map.of("speculative", "model"), "speculative=model needs the draft's file"),
            new Bad(Map.of("speculative", "model:pom.xml"), "is not a GGUF file this model runs"),
            new Bad(Map.of("speculative", "draft-layer"), "has no draft layer"),
            new Bad(
                Map.of("speculative", "draft-layer:copy-last", "num-speculative-tokens", "0"),
                "num-speculative-tokens=0 is outside [1, 64]"),
            new Bad(
                Map.of("speculative", "draft-layer:copy-last", "num-speculative-tokens", "65"),
                "num-speculative-tokens=65 is outside [1, 64]"),
            new Bad(
                Map.of("speculative", "draft-layer:copy-last", "num-speculative-tokens", "two"),
                "num-speculative-tokens=two is not an integer"),
            new Bad(Map.of("num-speculative-tokens", "3"), "without speculative"))) {
      Map<String, String> options = new java.util.HashMap<>(bad.options());
      options.put("file", file);
      assertThatThrownBy(() -> ModelProvider.open("gguf", options))
          .as("%s", bad.options())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(bad.message());
    }
  }
}
