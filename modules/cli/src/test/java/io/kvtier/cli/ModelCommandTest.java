package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.model.llama.ArrayKvStore;
import io.kvtier.model.llama.LlamaModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvtier model synth}: a test-tiny file that reads back and runs; bad options exit 2. */
class ModelCommandTest {
  @TempDir Path dir;
  private Path vocabulary;

  @BeforeEach
  void writeVocabulary() throws IOException {
    vocabulary = TestVocabulary.write(dir.resolve("vocab.gguf"));
  }

  /** {@code kvtier model synth --shape test-tiny} of {@code type} to {@code out}, more options. */
  private CliRun synthTestTiny(String type, Path out, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "model",
                "synth",
                "--shape",
                "test-tiny",
                "--vocab",
                vocabulary.toString(),
                "--type",
                type,
                "--out",
                out.toString()));
    args.addAll(List.of(more));
    return CliRun.run(args.toArray(String[]::new));
  }

  @Test
  void synthWritesATestTinyFileThatRuns() throws IOException {
    Path out = dir.resolve("tiny.gguf");
    CliRun run = synthTestTiny("q4_0", out, "--seed", "5");
    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out()).startsWith("wrote " + out + ": test-tiny (random weights), 2 layers");
    try (GgufFile file = GgufFile.open(out)) {
      assertThat(file.getString("general.name")).contains("random weights");
      assertThat(file.getBoolean("kvtier.random_weights")).isTrue();
      assertThat(file.getLong("kvtier.random_seed")).isEqualTo(5);
      assertThat(file.getInt("tokenizer.ggml.eos_token_id")).isEqualTo(2);
      assertThat(file.tensor("blk.0.attn_q.weight").type()).isEqualTo(GgufTensorType.Q4_0);
      LlamaModel model = LlamaModel.of(file);
      float[] logits = model.decode(1, 0, ArrayKvStore.forModel(model));
      assertThat(logits).hasSize(32);
      for (float logit : logits) {
        assertThat(Float.isFinite(logit)).as("logit %s", logit).isTrue();
      }
    }
  }

  /**
   * {@code model check}: a file serve runs is described (exit 0), one with a tensor the runner
   * would ignore is refused naming it (exit 1, the other files still checked), none is a usage
   * error (exit 2).
   */
  @Test
  void checkSaysWhetherServeRunsEachFile() throws IOException {
    Path good = dir.resolve("good.gguf");
    CliRun synth = synthTestTiny("f32", good);
    assertThat(synth.status()).as(synth.err()).isZero();
    CliRun run = CliRun.run("model", "check", good.toString());
    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out())
        .startsWith(good + ": kvtier runs it: llama good.gguf, random weights: 2 layers, dim 64")
        .contains("; L3 model id gguf-");
    Path bad = dir.resolve("bad.gguf");
    try (GgufFile file = GgufFile.open(good)) {
      GgufWriter.copyOf(file, 3)
          .addTensor("blk.0.ffn_down.bias", GgufTensorType.F32, new long[] {64}, (r, v) -> {})
          .write(bad);
    }
    CliRun both = CliRun.run("model", "check", bad.toString(), good.toString());
    assertThat(both.status()).as(both.err()).isEqualTo(1);
    assertThat(both.out().lines())
        .hasSize(2)
        .satisfiesExactly(
            line ->
                assertThat(line)
                    .startsWith(bad + ": kvtier does not run it: model gguf: file=" + bad)
                    .contains("first blk.0.ffn_down.bias"),
            line -> assertThat(line).startsWith(good + ": kvtier runs it: "));
    assertThat(run.out()).doesNotContain("default device pool");
    Path longContext = dir.resolve("long.gguf");
    try (GgufFile file = GgufFile.open(good)) {
      GgufWriter.copyOf(file, 3)
          .put("llama.context_length", GgufValue.ofUint32(20_000))
          .write(longContext);
    }
    CliRun hint = CliRun.run("model", "check", longContext.toString());
    assertThat(hint.status()).as(hint.err()).isZero();
    // test-tiny: 2 layers x 2 KV heads x 16 x K and V x 4 bytes = 512 bytes a token
    assertThat(hint.out())
        .contains(
            "; its context of 20000 tokens is more than serve's default device pool holds (1024"
                + " pages of 16 tokens: 16384 tokens, 8 MiB of K and V): serve it with"
                + " --max-context 16384 or less, or --device-pages 1250 or more (10 MiB)");
    // with F16 K/V a page is half the bytes: the same pages, half the memory
    CliRun half = CliRun.run("model", "check", "--kv-type", "f16", longContext.toString());
    assertThat(half.status()).as(half.err()).isZero();
    assertThat(half.out())
        .contains("F16 K/V")
        .contains("-kv-f16")
        .contains(
            "(1024 pages of 16 tokens: 16384 tokens, 4 MiB of K and V): serve it with"
                + " --max-context 16384 or less, or --device-pages 1250 or more (5 MiB)");
    CliRun badType = CliRun.run("model", "check", "--kv-type", "q4", longContext.toString());
    assertThat(badType.status()).isEqualTo(2);
    assertThat(badType.err())
        .contains("--kv-type: kv-type=q4 is not a K/V type kvtier stores; use one of [f32, f16]");
    CliRun none = CliRun.run("model", "check");
    assertThat(none.status()).isEqualTo(2);
    assertThat(none.err()).contains("Missing required parameter");
  }

  /**
   * A k-quant at a width that is not whole 256-weight super-blocks (test-tiny: rows of 64 and 96)
   * takes llama-quantize's fallback, as a downloaded Q4_K_M file of such a model does, and says
   * so.
   */
  @Test
  void synthWritesAKQuantsFallbackWhereRowsAreNotWholeSuperBlocks() throws IOException {
    Path out = dir.resolve("tiny-q5_k.gguf");
    CliRun run = synthTestTiny("q5_k", out);
    assertThat(run.status()).as(run.err()).isZero();
    assertThat(run.out())
        .contains(", q5_k (q5_1 where rows are not whole 256-weight blocks), seed 1:");
    try (GgufFile file = GgufFile.open(out)) {
      assertThat(file.tensor("blk.0.attn_q.weight").type()).isEqualTo(GgufTensorType.Q5_1);
      assertThat(file.tensor("blk.0.ffn_down.weight").type()).isEqualTo(GgufTensorType.Q5_1);
      LlamaModel model = LlamaModel.of(file);
      float[] logits = model.decode(1, 0, ArrayKvStore.forModel(model));
      for (float logit : logits) {
        assertThat(Float.isFinite(logit)).as("logit %s", logit).isTrue();
      }
    }
  }

  @Test
  void badOptionsFailWithOneLineNamingTheOption() throws IOException {
    String out = dir.resolve("x.gguf").toString();
    String vocab = vocabulary.toString();
    assertUsage(
        "kvtier model synth: --shape: unknown shape 'llama-70b'; known: smollm-135m, llama-1b,"
            + " qwen2.5-0.5b, gemma3-1b, test-tiny",
        "--shape",
        "llama-70b",
        "--vocab",
        vocab,
        "--out",
        out);
    assertUsage(
        "kvtier model synth: --type: 'iq2_xxs' cannot be written; give one of bf16, f16, f32,"
            + " iq4_nl, iq4_xs, q2_k, q3_k, q4_0, q4_1, q4_k, q5_0, q5_1, q5_k, q6_k, q8_0",
        "--shape",
        "test-tiny",
        "--type",
        "iq2_xxs",
        "--vocab",
        vocab,
        "--out",
        out);
    assertUsage(
        "kvtier model synth: --vocab " + dir.resolve("none.gguf") + ": no such file",
        "--shape",
        "test-tiny",
        "--vocab",
        dir.resolve("none.gguf").toString(),
        "--out",
        out);
    Path notVocabulary = dir.resolve("empty.gguf");
    new GgufWriter(3).put("general.name", GgufValue.ofString("empty")).write(notVocabulary);
    assertUsage(
        "kvtier model synth: --vocab "
            + notVocabulary
            + ": has no tokenizer.ggml.tokens; give a vocabulary GGUF file such as"
            + " ggml-vocab-llama-bpe.gguf",
        "--shape",
        "test-tiny",
        "--vocab",
        notVocabulary.toString(),
        "--out",
        out);
    Path text = dir.resolve("text.gguf");
    Files.writeString(text, "not a gguf file");
    CliRun run =
        CliRun.run(
            "model", "synth", "--shape", "test-tiny", "--vocab", text.toString(), "--out", out);
    assertThat(run.status()).isEqualTo(KvTierCli.EXIT_USAGE);
    assertThat(run.firstErrLine()).startsWith("kvtier model synth: --vocab " + text + ": ");
    assertUsage(
        "kvtier model synth: --out "
            + dir.resolve("no/x.gguf")
            + ": the directory "
            + dir.resolve("no")
            + " does not exist; create it first",
        "--shape",
        "test-tiny",
        "--vocab",
        vocab,
        "--out",
        dir.resolve("no/x.gguf").toString());
    CliRun missing = CliRun.run("model", "synth", "--shape", "test-tiny");
    assertThat(missing.status()).isEqualTo(KvTierCli.EXIT_USAGE);
    assertThat(missing.firstErrLine()).contains("Missing required options").contains("--vocab");
  }

  private static void assertUsage(String line, String... options) {
    String[] args = new String[options.length + 2];
    args[0] = "model";
    args[1] = "synth";
    System.arraycopy(options, 0, args, 2, options.length);
    CliRun run = CliRun.run(args);
    assertThat(run.status()).as(run.err()).isEqualTo(KvTierCli.EXIT_USAGE);
    assertThat(run.firstErrLine()).isEqualTo(line);
  }
}
