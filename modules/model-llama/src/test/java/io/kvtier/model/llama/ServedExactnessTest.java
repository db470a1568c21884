package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.serving.Completion;
import io.kvtier.serving.EngineSettings;
import io.kvtier.serving.EngineStats;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngine.GenerationRequest;
import io.kvtier.serving.GenerationEngines;
import io.kvtier.serving.ModelEngine;
import io.kvtier.spi.BackendMetrics;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The exactness rule (docs/MODELS.md) for model {@code gguf} served by the engine: over seeded
 * multi-turn chats (each turn's prompt is the previous prompt, its answer and new tokens, the
 * chats sharing a system prefix), the logits of every generated token with the prefix cache on
 * are bit for bit those with it off, on 1, 2 and 4 ranks, with the cache on the device only,
 * with a device pool too small for the working set (evictions to the host and load-backs, which
 * the runner verifies bit for bit), and with a {@code memory}
 * and a {@code file} L3 store under a host tier that is too small too. Every rank computes the
 * same logits, and the greedy tokens on 2 and 4 ranks are those of 1 rank, with the model split
 * by heads (tensor parallelism) or by positions (context parallelism, {@link Parallelism}: each
 * rank holds its positions' KV and the ranks' partial attention merges through its log-sum-exp).
 *
 * <p>And the batch does not matter: the same chats submitted a turn at a time, four requests
 * running together and prompts prefilled 16 tokens per tick, give the sequential run's bits.
 *
 * <p>The models are synthetic files (8 query, 4 KV heads) written with the GGUF writer, so the
 * test runs without ../shared: an F32 {@code llama} on every tier, and on the host tier or L3 a
 * {@code qwen2} (QKV biases, split with the heads; NeoX RoPE; tied output), a Q8_0 {@code llama}
 * and a Q4_0 {@code qwen2} (quantized rows split on block boundaries). {@code
 * -Dkvtier.tests.seed} picks the weights and the chats.
 */
class ServedExactnessTest {
  private static final long SEED = Long.getLong("kvtier.tests.seed", 42L);
  private static final int CHATS = 6;
  private static final int TURNS = 3;
  private static final int ANSWER = 6;

  @TempDir static Path dir;

  /** The chats of each model variant, built on first use. */
  private static final Map<String, Chats> CHATS_BY_VARIANT = new HashMap<>();

  /**
   * A model and its chats: the prompts in the order they are submitted, the 1-rank cache-off
   * answers, and the cache-off logits per rank count.
   */
  private record Chats(
      String name,
      GgufFile file,
      LlamaServingModel model,
      List<int[]> prompts,
      List<int[]> answers,
      Map<String, Run> references) {}

  /**
   * The synthetic files the test runs: F32 llama, qwen2's biases, quantized types, heads of their
   * own size, and F16 K/V.
   */
  private static SyntheticGguf variant(String name) {
    return switch (name) {
      case "llama-f32" -> SyntheticGguf.llama();
      case "qwen2-f32" -> SyntheticGguf.llama().withArch("qwen2");
      case "llama-q8_0" -> SyntheticGguf.llama().withType(GgufTensorType.Q8_0);
      case "qwen2-q4_0" -> SyntheticGguf.llama().withArch("qwen2").withType(GgufTensorType.Q4_0);
      // heads of 16 where the width over the head count is 8 (attention.key_length)
      case "llama-heads16" -> SyntheticGguf.llama().withHeadSize(16);
      // the F32 file, its K/V stored as F16 (kv-type=f16)
      case "llama-kv-f16" -> SyntheticGguf.llama();
      // sliding windows of 8 positions, far shorter than the prompts: gemma3's per-head norms
      // and two RoPE bases, gemma2's soft caps
      case "gemma3-f32" -> SyntheticGguf.gemma("gemma3", 8);
      case "gemma2-f32" -> SyntheticGguf.gemma("gemma2", 8);
      default -> throw new IllegalArgumentException(name);
    };
  }

  private static synchronized Chats chats(String name) throws Exception {
    Chats chats = CHATS_BY_VARIANT.get(name);
    if (chats == null) {
      chats = buildTheChats(name);
      CHATS_BY_VARIANT.put(name, chats);
    }
    return chats;
  }

  private static Chats buildTheChats(String name) throws Exception {
    GgufFile file = GgufFile.open(variant(name).write(dir.resolve(name + ".gguf"), SEED));
    LlamaServingModel model =
        LlamaServingModel.of(file).withKvType(name.endsWith("-kv-f16") ? KvType.F16 : KvType.F32);
    Random random = new Random(SEED * 31 + 7);
    int vocabulary = model.vocabularySize();
    int[] system = ServedTiers.tokens(random, 24, vocabulary);
    int[][] history = new int[CHATS][];
    for (int c = 0; c < CHATS; c++) {
      history[c] = system;
    }
    List<int[]> prompts = new ArrayList<>();
    List<int[]> answers = new ArrayList<>();
    // Turn t of every chat, then turn t+1: a chat comes back after the others pushed it out.
    try (GenerationEngine engine =
        open(
            model,
            1,
            deviceOnly(model, 1, Parallelism.TP),
            new Recorder(),
            EngineSettings.DEFAULTS)) {
      for (int t = 0; t < TURNS; t++) {
        for (int c = 0; c < CHATS; c++) {
          int[] prompt =
              ServedTiers.concat(
                  history[c], ServedTiers.tokens(random, 5 + random.nextInt(25), vocabulary));
          int[] answer = generate(engine, prompt).tokens();
          prompts.add(prompt);
          answers.add(answer);
          history[c] = ServedTiers.concat(prompt, answer);
        }
      }
    }
    return new Chats(name, file, model, prompts, answers, new HashMap<>());
  }

  @AfterAll
  static void close() {
    CHATS_BY_VARIANT.values().forEach(c -> c.file().close());
  }

  static Stream<Arguments> cases() {
    List<Arguments> cases = new ArrayList<>();
    for (int ranks : new int[] {1, 2, 4}) {
      for (String tier : new String[] {"device", "host", "memory", "file"}) {
        cases.add(Arguments.of("llama-f32", "tp", ranks, tier));
      }
      cases.add(Arguments.of("qwen2-f32", "tp", ranks, "host"));
    }
    // 96 feed-forward rows are 3 blocks of 32: at most 3 ranks, so 1 and 2.
    for (int ranks : new int[] {1, 2}) {
      cases.add(Arguments.of("llama-q8_0", "tp", ranks, "host"));
      cases.add(Arguments.of("qwen2-q4_0", "tp", ranks, "memory"));
    }
    // Context parallelism: positions striped one at a time (cp1) or in pairs (cp2); pages of 4,
    // 8 and 16 tokens hold a whole turn of 2 and 4 ranks. It splits no matrix, so a Q8_0 model
    // runs on 4 ranks too.
    for (int ranks : new int[] {2, 4}) {
      for (String tier : new String[] {"device", "host", "memory"}) {
        cases.add(Arguments.of("llama-f32", "cp1", ranks, tier));
      }
      cases.add(Arguments.of("qwen2-f32", "cp1", ranks, "host"));
      cases.add(Arguments.of("llama-q8_0", "cp1", ranks, "host"));
    }
    cases.add(Arguments.of("llama-f32", "cp2", 2, "memory"));
    cases.add(Arguments.of("llama-f32", "cp1", 2, "file"));
    cases.add(Arguments.of("llama-f32", "cp2", 4, "host"));
    cases.add(Arguments.of("llama-heads16", "tp", 2, "host"));
    cases.add(Arguments.of("llama-heads16", "cp1", 2, "memory"));
    for (String tier : new String[] {"host", "file"}) {
      cases.add(Arguments.of("llama-kv-f16", "tp", 2, tier));
    }
    cases.add(Arguments.of("llama-kv-f16", "cp1", 2, "host"));
    cases.add(Arguments.of("gemma3-f32", "tp", 2, "host"));
    cases.add(Arguments.of("gemma3-f32", "cp1", 2, "memory"));
    cases.add(Arguments.of("gemma3-f32", "cp2", 4, "host"));
    cases.add(Arguments.of("gemma2-f32", "tp", 2, "file"));
    return cases.stream();
  }

  /**
   * F16 K/V is rounded once, when written: the cache-on runs above equal the cache-off run of the
   * same type to the bit, and here the F16 run's logits differ from the F32 run's (the option does
   * something) by a little (it is the same model).
   */
  @Test
  void f16KvChangesTheLogitsByALittle() throws Exception {
    Chats f32 = chats("llama-f32");
    Chats f16 = chats("llama-kv-f16");
    assertThat(f16.prompts().getFirst()).containsExactly(f32.prompts().getFirst());
    Map<Integer, int[]> a = reference(f32, "tp", 1).logits().getFirst();
    Map<Integer, int[]> b = reference(f16, "tp", 1).logits().getFirst();
    assertThat(b.keySet()).isEqualTo(a.keySet());
    int differ = 0;
    float worst = 0f;
    for (int position : a.keySet()) {
      for (int i = 0; i < a.get(position).length; i++) {
        float x = Float.intBitsToFloat(a.get(position)[i]);
        float y = Float.intBitsToFloat(b.get(position)[i]);
        differ += x != y ? 1 : 0;
        worst = Math.max(worst, Math.abs(x - y));
      }
    }
    System.out.printf(
        "[gguf-exact] F16 against F32 K/V, first request: %d logits differ, by at most %.6f%n",
        differ, worst);
    assertThat(differ).as("logits that F16 K/V changes").isPositive();
    assertThat(worst).as("the largest change").isLessThan(0.05f);
  }

  /** {@code tp}, or {@code cp} and its interleave ({@code cp2}: two positions per turn). */
  static Parallelism parallelism(String name) {
    return name.equals("tp") ? Parallelism.TP : Parallelism.cp(Integer.parseInt(name.substring(2)));
  }

  @ParameterizedTest(name = "{0}, {1}, {2} ranks, {3}")
  @MethodSource("cases")
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void logitsWithTheCacheAreThoseWithout(
      String variant, String parallel, int ranks, String tier, @TempDir Path store)
      throws Exception {
    Chats chats = chats(variant);
    LlamaServingModel model = chats.model();
    List<int[]> prompts = chats.prompts();
    List<int[]> answers = chats.answers();
    Run reference = reference(chats, parallel, ranks);
    Recorder recorder = new Recorder();
    long device = 0;
    long host = 0;
    long l3 = 0;
    RankEngineStats stats;
    try (ModelEngine engine =
        ModelEngine.open(
            model.withLogitsListener(recorder),
            config(model, ranks, parallelism(parallel), tier, store),
            BackendMetrics.NOOP)) {
      for (int i = 0; i < prompts.size(); i++) {
        Completion c = engine.generate(prompts.get(i), ANSWER);
        assertThat(c.tokens())
            .as(
                "%s request %d on %d ranks %s, %s, seed %d",
                variant, i, ranks, parallel, tier, SEED)
            .containsExactly(answers.get(i));
        device += c.deviceHitTokens();
        host += c.hostHitTokens();
        l3 += c.l3HitTokens();
      }
      engine.drain();
      stats = engine.engineStats();
    }
    Run cached = recorder.run(ranks);
    assertThat(cached.logits()).hasSameSizeAs(reference.logits());
    for (int i = 0; i < prompts.size(); i++) {
      Map<Integer, int[]> want = reference.logits().get(i);
      Map<Integer, int[]> got = cached.logits().get(i);
      assertThat(got.keySet()).as("positions of request %d", i).isEqualTo(want.keySet());
      for (int position : want.keySet()) {
        assertThat(got.get(position))
            .as(
                "%s logit bits of request %d position %d, %d ranks %s, %s",
                variant, i, position, ranks, parallel, tier)
            .containsExactly(want.get(position));
      }
    }
    System.out.printf(
        "[gguf-exact] %s, %s, %d ranks, %s: %d device, %d host, %d L3 hit tokens; %d pages"
            + " verified, %d wrong%n",
        variant,
        parallel,
        ranks,
        tier,
        device,
        host,
        l3,
        stats.kvVerifiedPages(),
        stats.kvMismatches());
    assertThat(stats.kvMismatches()).as("loaded-back pages whose KV differs").isZero();
    switch (tier) {
      case "device" -> assertThat(device).as("tokens reused on the device").isPositive();
      case "host" -> {
        assertThat(host).as("tokens loaded back from the host").isPositive();
        assertThat(stats.kvVerifiedPages()).as("loaded-back pages verified").isPositive();
      }
      default -> assertThat(l3).as("tokens fetched from L3").isPositive();
    }
  }

  @ParameterizedTest(name = "{0}, {1} ranks")
  @CsvSource({"tp,1", "tp,2", "tp,4", "cp1,2", "cp2,4"})
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void concurrentChunkedRequestsGiveTheLogitsOfSequentialWholeOnes(String parallel, int ranks)
      throws Exception {
    Chats chats = chats("llama-f32");
    LlamaServingModel model = chats.model();
    Run reference = reference(chats, parallel, ranks);
    Recorder recorder = new Recorder();
    // Each turn of every chat at once, four running together, prompts prefilled 16 tokens per
    // tick: the steps' ranges and batches differ from the reference's, the bits must not.
    EngineSettings settings = EngineSettings.DEFAULTS.withBatching(4, 16);
    EngineStats stats;
    try (GenerationEngine engine =
        open(
            model,
            ranks,
            config(model, ranks, parallelism(parallel), "host", null),
            recorder,
            settings)) {
      List<CompletableFuture<Completion>> wave = new ArrayList<>();
      for (int i = 0; i < chats.prompts().size(); i++) {
        wave.add(submit(engine, chats.prompts().get(i)));
        if (wave.size() == CHATS) {
          for (CompletableFuture<Completion> c : wave) {
            c.get(2, TimeUnit.MINUTES);
          }
          wave.clear();
        }
      }
      stats = engine.stats();
    }
    Run run = recorder.run(ranks);
    for (int i = 0; i < chats.prompts().size(); i++) {
      Map<Integer, int[]> want = reference.logits().get(i);
      Map<Integer, int[]> got = run.logits().get(i);
      assertThat(got.keySet()).as("positions of request %d", i).isEqualTo(want.keySet());
      for (int position : want.keySet()) {
        assertThat(got.get(position))
            .as(
                "logit bits of request %d position %d, %d ranks %s, seed %d",
                i, position, ranks, parallel, SEED)
            .containsExactly(want.get(position));
      }
    }
    System.out.printf(
        "[gguf-exact] waves on %d ranks: up to %d requests per tick, %d host hit tokens%n",
        ranks, stats.maxBatch(), stats.hostHitTokens());
    assertThat(stats.maxBatch()).as("requests advanced in one tick").isGreaterThan(1);
    assertThat(stats.hostHitTokens()).as("tokens loaded back from the host").isPositive();
  }

  /** The cache-off run on {@code ranks} ranks split as {@code parallel} says, once each. */
  private static synchronized Run reference(Chats chats, String parallel, int ranks)
      throws Exception {
    String key = ranks == 1 ? "1" : parallel + "-" + ranks;
    Run run = chats.references().get(key);
    if (run == null) {
      Recorder recorder = new Recorder();
      LlamaServingModel model = chats.model();
      try (GenerationEngine engine =
          open(
              model,
              ranks,
              deviceOnly(model, ranks, parallelism(parallel)),
              recorder,
              EngineSettings.DEFAULTS.withPrefixCaching(false))) {
        for (int i = 0; i < chats.prompts().size(); i++) {
          assertThat(generate(engine, chats.prompts().get(i)).tokens())
              .as(
                  "cache-off request %d on %d ranks %s: the tokens of 1 rank, seed %d",
                  i, ranks, parallel, SEED)
              .containsExactly(chats.answers().get(i));
        }
      }
      run = recorder.run(ranks);
      chats.references().put(key, run);
      if (ranks > 1) {
        assertCloseToOneRank(chats.name() + " " + parallel, run, reference(chats, "tp", 1), ranks);
      }
    }
    return run;
  }

  /**
   * Tensor parallelism sums in another order than one rank, so the bits may differ, but only by
   * rounding: a wrong share of a matrix would move logits by far more.
   */
  private static void assertCloseToOneRank(String variant, Run run, Run one, int ranks) {
    double worst = 0;
    for (int i = 0; i < one.logits().size(); i++) {
      for (Map.Entry<Integer, int[]> e : one.logits().get(i).entrySet()) {
        int[] other = run.logits().get(i).get(e.getKey());
        for (int v = 0; v < other.length; v++) {
          float a = Float.intBitsToFloat(e.getValue()[v]);
          float b = Float.intBitsToFloat(other[v]);
          worst = Math.max(worst, Math.abs(a - b));
        }
      }
    }
    System.out.printf(
        "[gguf-exact] %s, %d ranks: largest logit difference to 1 rank %.3g%n",
        variant, ranks, worst);
    assertThat(worst)
        .as("%s: largest logit difference of %d ranks to 1", variant, ranks)
        .isLessThan(1e-3);
  }

  private static GenerationEngine open(
      LlamaServingModel model,
      int ranks,
      KvTierConfig config,
      Recorder recorder,
      EngineSettings s) {
    return GenerationEngines.open(
        model.withLogitsListener(recorder),
        config,
        s.withGroup("gguf-exact-" + ranks),
        BackendMetrics.NOOP,
        UnaryOperator.identity());
  }

  private static Completion generate(GenerationEngine engine, int[] prompt) throws Exception {
    return submit(engine, prompt).get(2, TimeUnit.MINUTES);
  }

  private static CompletableFuture<Completion> submit(GenerationEngine engine, int[] prompt) {
    CompletableFuture<Completion> done = new CompletableFuture<>();
    engine.submit(
        new GenerationRequest(prompt, ANSWER),
        new GenerationEngine.TokenStream() {
          @Override
          public void token(int token) {}

          @Override
          public void finished(Completion completion) {
            done.complete(completion);
          }

          @Override
          public void failed(Throwable cause) {
            done.completeExceptionally(cause);
          }
        });
    return done;
  }

  /** A device pool that holds every chat: nothing is evicted. */
  private static KvTierConfig deviceOnly(LlamaServingModel model, int ranks, Parallelism parallel) {
    return ServedTiers.builder(model, ranks, parallel, 16, 128, 128).build();
  }

  private static KvTierConfig config(
      LlamaServingModel model, int ranks, Parallelism parallel, String tier, Path store) {
    return tier.equals("device")
        ? deviceOnly(model, ranks, parallel)
        : ServedTiers.evicting(model, ranks, parallel, tier, store, "synthetic-llama");
  }

  /**
   * Logit bits per request (in submission order), then per position.
   *
   * @param logits by request index
   */
  record Run(List<Map<Integer, int[]>> logits) {}

  /** Keeps every rank's logits by request id and position. */
  static final class Recorder implements LogitsListener {
    private final Map<Integer, Map<Long, Map<Integer, int[]>>> byRank = new ConcurrentHashMap<>();

    @Override
    public void logits(int rank, long requestId, int position, float[] logits) {
      int[] bits = new int[logits.length];
      for (int i = 0; i < bits.length; i++) {
        bits[i] = Float.floatToRawIntBits(logits[i]);
      }
      byRank
          .computeIfAbsent(rank, r -> new ConcurrentHashMap<>())
          .computeIfAbsent(requestId, id -> new ConcurrentHashMap<>())
          .put(position, bits);
    }

    /** Rank 0's logits, after checking that every rank had the same. */
    Run run(int ranks) {
      assertThat(byRank.keySet()).as("ranks that reported logits").hasSize(ranks);
      Map<Long, Map<Integer, int[]>> first = new TreeMap<>(byRank.get(0));
      for (int r = 1; r < ranks; r++) {
        Map<Long, Map<Integer, int[]>> other = byRank.get(r);
        assertThat(other.keySet()).isEqualTo(first.keySet());
        for (long id : first.keySet()) {
          for (int position : first.get(id).keySet()) {
            assertThat(other.get(id).get(position))
                .as("rank %d's logits of request %d position %d", r, id, position)
                .containsExactly(first.get(id).get(position));
          }
        }
      }
      List<Map<Integer, int[]>> logits = new ArrayList<>();
      first.values().forEach(m -> logits.add(new TreeMap<>(m)));
      return new Run(logits);
    }
  }
}
