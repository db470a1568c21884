package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.Sampling;
import io.kvtier.core.rank.SpeculationStats;
import io.kvtier.core.rank.SpeculationStats.Tier;
import io.kvtier.core.rank.TransferRole;
import io.kvtier.gguf.GgufFile;
import io.kvtier.serving.Completion;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngine.GenerationRequest;
import io.kvtier.serving.ModelEngine;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.testkit.SharedFiles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Speculative decoding with a draft layer (docs/MODELS.md, "Speculative decoding"): over seeded
 * multi-turn chats, the tokens with speculation are those without, token for token, with the
 * cache off and on the device, host and L3 tiers, on 1 and 2 ranks; and the draft that is a copy
 * of the target's last layer proposes the target's own tokens at every step (100% acceptance)
 * after device, host and L3 hits, because its K/V block goes through every tier with the pages.
 * A broken tier that restores a prefix without the draft block shows as lost acceptance.
 *
 * <p>The models: a synthetic F32 llama (no ../shared needed) and stories260K (skipped with the
 * reason where ../shared lacks it).
 */
class SpeculativeServedTest {
  private static final long SEED = Long.getLong("kvtier.tests.seed", 42L);
  private static final int CHATS = 4;
  private static final int TURNS = 3;
  private static final int ANSWER = 10;
  private static final int K = 3;

  @TempDir static Path dir;

  private static final Map<String, Chats> CHATS_BY_MODEL = new HashMap<>();

  /** The prompts in submission order and the plain model's answers, cache on the device. */
  private record Chats(LlamaServingModel model, List<int[]> prompts, List<int[]> answers) {}

  private static synchronized Chats chats(String name) throws Exception {
    Chats chats = CHATS_BY_MODEL.get(name);
    if (chats == null) {
      GgufFile file =
          GgufFile.open(
              name.equals("stories")
                  ? SharedFiles.require(StoriesGreedyTest.STORIES)
                  : SyntheticGguf.llama().write(dir.resolve(name + ".gguf"), SEED));
      LlamaServingModel model = LlamaServingModel.of(file);
      Random random = new Random(SEED * 17 + 3);
      int vocabulary = model.vocabularySize();
      int[] system = ServedTiers.tokens(random, 24, vocabulary);
      int[][] history = new int[CHATS][];
      for (int c = 0; c < CHATS; c++) {
        history[c] = system;
      }
      List<int[]> prompts = new ArrayList<>();
      List<int[]> answers = new ArrayList<>();
      try (ModelEngine engine =
          ModelEngine.open(model, config(model, 1, "off", dir), BackendMetrics.NOOP)) {
        for (int t = 0; t < TURNS; t++) {
          for (int c = 0; c < CHATS; c++) {
            int[] prompt =
                ServedTiers.concat(
                    history[c], ServedTiers.tokens(random, 5 + random.nextInt(20), vocabulary));
            int[] answer = generate(engine, prompt, 1000 + prompts.size());
            prompts.add(prompt);
            answers.add(answer);
            history[c] = ServedTiers.concat(prompt, answer);
          }
        }
      }
      chats = new Chats(model, prompts, answers);
      CHATS_BY_MODEL.put(name, chats);
    }
    return chats;
  }

  @AfterAll
  static void close() {
    CHATS_BY_MODEL.values().forEach(c -> c.model().close());
  }

  @ParameterizedTest(name = "{0}, {1} ranks, {2}")
  @CsvSource({
    "synthetic,1,off", "synthetic,1,device", "synthetic,1,host", "synthetic,1,memory",
    "synthetic,2,off", "synthetic,2,device", "synthetic,2,host", "synthetic,2,memory",
    "stories,1,off", "stories,1,device", "stories,1,host", "stories,1,memory",
    "stories,2,device", "stories,2,host", "stories,2,memory"
  })
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void speculationGivesTheTokensWithoutItAndTheCopyDraftIsAlwaysRight(
      String name, int ranks, String tier, @TempDir Path store) throws Exception {
    Chats chats = chats(name);
    LlamaServingModel model = chats.model().withDraftLayer(true, K);
    Result r = run(model, chats, ranks, tier, store);
    System.out.printf(
        "[speculative] %s, %d ranks, %s: %s; %d pages verified, %d wrong%n",
        name, ranks, tier, r.speculation(), r.stats().kvVerifiedPages(), r.stats().kvMismatches());
    SpeculationStats s = r.speculation();
    assertThat(s.totalProposed()).isPositive();
    assertThat(s.acceptanceRate()).as("a copy of the last layer, every tier").isEqualTo(1.0);
    assertThat(r.stats().kvMismatches()).as("restored pages, the draft block's too").isZero();
    Tier expected =
        switch (tier) {
          case "off" -> Tier.NONE;
          case "device" -> Tier.DEVICE;
          case "host" -> Tier.HOST;
          default -> Tier.L3;
        };
    assertThat(s.steps(expected))
        .as("steps of requests whose prefix came from " + tier)
        .isPositive();
    assertThat(s.meanAcceptedLength(expected)).isGreaterThan(1.0);
  }

  /**
   * Requests that sample (temperature, top-p, top-k, a seed each): the answers of the plain model
   * with the cache off are the answers with the cache on in every tier, and with speculation; the
   * draft that is a copy of the last layer draws with the target's own uniform numbers, so it is
   * still always right. Compared on the same number of ranks (a sampled token depends on the
   * logits' bits, which another split of the sums moves).
   */
  @ParameterizedTest(name = "{0}, {1} ranks, {2}")
  @CsvSource({
    "synthetic,1,device",
    "synthetic,1,host",
    "synthetic,2,memory",
    "stories,1,host",
    "stories,2,device"
  })
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void sampledAnswersAreTheSameWithTheCacheAndWithSpeculation(
      String name, int ranks, String tier, @TempDir Path store) throws Exception {
    Chats chats = chats(name);
    List<int[]> reference = answers(chats.model(), chats, ranks, "off", store, true);
    int differ = 0;
    for (int i = 0; i < reference.size(); i++) {
      differ += java.util.Arrays.equals(reference.get(i), chats.answers().get(i)) ? 0 : 1;
    }
    assertThat(differ).as("sampled answers unlike the greedy ones").isPositive();
    List<int[]> cached = answers(chats.model(), chats, ranks, tier, store.resolve("c"), true);
    LlamaServingModel drafted = chats.model().withDraftLayer(true, K);
    ModelEngine speculative =
        ModelEngine.open(
            drafted, config(drafted, ranks, tier, store.resolve("s")), BackendMetrics.NOOP);
    List<int[]> speculated = new ArrayList<>();
    try (speculative) {
      for (int i = 0; i < chats.prompts().size(); i++) {
        speculated.add(generate(speculative, chats.prompts().get(i), 0, sampling(i)));
      }
      speculative.drain();
      SpeculationStats st = speculative.speculation();
      System.out.printf("[speculative] sampled, %s, %d ranks, %s: %s%n", name, ranks, tier, st);
      assertThat(st.totalProposed()).isPositive();
      assertThat(st.acceptanceRate()).as("the copy draft draws as the target").isEqualTo(1.0);
    }
    for (int i = 0; i < reference.size(); i++) {
      assertThat(cached.get(i)).as("request %d cached in %s", i, tier).isEqualTo(reference.get(i));
      assertThat(speculated.get(i)).as("request %d speculated", i).isEqualTo(reference.get(i));
    }
  }

  /** Request {@code i}'s sampling: its own seed; top-k on every other one. */
  private static Sampling sampling(int i) {
    return new Sampling(0.9f, 0.95f, i % 2 == 0 ? 0 : 20, 7_000 + i);
  }

  /** Every prompt's answer, in order; with the cache off each request its own namespace. */
  private static List<int[]> answers(
      LlamaServingModel model, Chats chats, int ranks, String tier, Path store, boolean sampled)
      throws Exception {
    List<int[]> out = new ArrayList<>();
    try (ModelEngine engine =
        ModelEngine.open(model, config(model, ranks, tier, store), BackendMetrics.NOOP)) {
      for (int i = 0; i < chats.prompts().size(); i++) {
        out.add(
            generate(
                engine,
                chats.prompts().get(i),
                tier.equals("off") ? 1000 + i : 0,
                sampled ? sampling(i) : Sampling.GREEDY));
      }
    }
    return out;
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"host", "memory"})
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void aTierThatDropsTheDraftBlockLosesAcceptanceButNotTokens(String tier, @TempDir Path store)
      throws Exception {
    Chats chats = chats("synthetic");
    LlamaServingModel model = chats.model().withDraftLayer(true, K);
    model.dropDraftBlockOnRestore = true;
    Result r = run(model, chats, 1, tier, store);
    System.out.printf("[speculative] broken %s: %s%n", tier, r.speculation());
    Tier restored = tier.equals("host") ? Tier.HOST : Tier.L3;
    SpeculationStats s = r.speculation();
    assertThat(s.steps(restored)).isPositive();
    assertThat(s.acceptanceRate(restored))
        .as("acceptance after a restore that lost the draft block")
        .isLessThan(1.0);
    assertThat(r.stats().kvMismatches()).as("the recompute check sees the block").isPositive();
  }

  /**
   * A draft layer that is a copy of layer 0: mostly wrong, so most steps roll back positions
   * whose K/V the draft (every block up to its own) and the verification wrote. The tokens are
   * the plain model's, and every restored page (the draft block too) is the bits a recompute
   * gives: no rejected position's K/V reached the tree.
   */
  @ParameterizedTest(name = "{0} ranks, {1}")
  @CsvSource({"1,off", "1,host", "2,host", "1,memory", "2,memory"})
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void aWrongDraftLayerRollsBackAndLeavesNoRejectedKvInTheTiers(
      int ranks, String tier, @TempDir Path store) throws Exception {
    Chats chats = chats("synthetic");
    LlamaServingModel model = chats.model().withDraftCopyOf(0, K);
    Result r = run(model, chats, ranks, tier, store);
    System.out.printf(
        "[speculative] draft copy of layer 0, %d ranks, %s: %s; %d pages verified, %d wrong%n",
        ranks, tier, r.speculation(), r.stats().kvVerifiedPages(), r.stats().kvMismatches());
    SpeculationStats s = r.speculation();
    assertThat(s.totalAccepted()).as("rejections").isLessThan(s.totalProposed());
    assertThat(r.stats().kvMismatches()).as("restored pages that differ").isZero();
    if (!tier.equals("off")) {
      assertThat(r.stats().kvVerifiedPages()).isPositive();
    }
  }

  /**
   * A separate draft model: the target's own file (so its proposals are the target's tokens) or a
   * model of other weights and the same vocabulary (mostly wrong). Its K/V is outside the pages,
   * recomputed over each request's prefix, so its acceptance does not depend on the tier; the
   * tokens are the plain model's either way.
   */
  @ParameterizedTest(name = "{0} draft, {1} ranks, {2}")
  @CsvSource({
    "same,1,device",
    "same,1,host",
    "same,2,memory",
    "other,1,off",
    "other,1,host",
    "other,2,memory"
  })
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void aSeparateDraftModelGivesTheTokensWithoutIt(
      String draft, int ranks, String tier, @TempDir Path store) throws Exception {
    Chats chats = chats("synthetic");
    Path draftFile =
        draft.equals("same")
            ? dir.resolve("synthetic.gguf")
            : SyntheticGguf.llama().write(store.resolve("other.gguf"), SEED + 99);
    LlamaServingModel model = chats.model().withDraftModel(GgufFile.open(draftFile), K);
    Result r = run(model, chats, ranks, tier, store);
    System.out.printf(
        "[speculative] model draft %s, %d ranks, %s: %s%n", draft, ranks, tier, r.speculation());
    SpeculationStats s = r.speculation();
    assertThat(s.totalProposed()).isPositive();
    if (draft.equals("same")) {
      assertThat(s.acceptanceRate()).isEqualTo(1.0);
    } else {
      assertThat(s.acceptanceRate()).isLessThan(1.0);
    }
    assertThat(r.stats().kvMismatches()).isZero();
  }

  @Test
  void badDraftsAndTokenCountsAreRefusedInOneLine() throws Exception {
    LlamaServingModel model = chats("synthetic").model();
    assertThatThrownBy(() -> model.withDraftLayer(false, K))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("has no draft layer")
        .hasMessageContaining("blk.2.attn_q.weight")
        .hasMessageContaining("draft-layer:copy-last");
    for (int bad : new int[] {0, -1, 65}) {
      assertThatThrownBy(() -> model.withDraftLayer(true, bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("num-speculative-tokens=" + bad + " is outside [1, 64]");
    }
    LlamaServingModel drafted = model.withDraftLayer(true, K);
    assertThatThrownBy(() -> drafted.withDraftLayer(true, K))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("has a draft already");
    assertThat(drafted.kvBlocks()).isEqualTo(model.layers() + 1);
    assertThatThrownBy(
            () ->
                drafted.rankLayout(
                    drafted.kvLayout(16), 2, io.kvtier.core.config.Parallelism.cp(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not over 2 cp ranks")
        .hasMessageContaining("--parallel tp");
    // One cp rank is one rank: allowed.
    assertThat(drafted.rankLayout(drafted.kvLayout(16), 1, io.kvtier.core.config.Parallelism.cp(1)))
        .isEqualTo(drafted.kvLayout(16));
    // A draft model of another vocabulary.
    Path wide =
        new SyntheticGguf(
                "llama",
                1,
                4,
                96,
                80,
                512,
                io.kvtier.gguf.GgufTensorType.F32,
                SyntheticGguf.HEAD,
                0)
            .write(dir.resolve("wide.gguf"), SEED);
    try (GgufFile wideFile = GgufFile.open(wide)) {
      assertThatThrownBy(() -> model.withDraftModel(wideFile, K))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("has a vocabulary of 80 tokens but")
          .hasMessageContaining("has 64: a draft must share the target's vocabulary");
    }
    // A layout without the draft block is refused, naming the layers it needs.
    assertThatThrownBy(() -> drafted.checkLayout(model.kvLayout(16), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.layers=" + (model.layers() + 1));
  }

  private record Result(SpeculationStats speculation, RankEngineStats stats) {}

  /** Runs every prompt with {@code model}, checking each answer against the plain model's. */
  private static Result run(
      LlamaServingModel model, Chats chats, int ranks, String tier, Path store) throws Exception {
    try (ModelEngine engine =
        ModelEngine.open(model, config(model, ranks, tier, store), BackendMetrics.NOOP)) {
      for (int i = 0; i < chats.prompts().size(); i++) {
        int[] answer = generate(engine, chats.prompts().get(i), tier.equals("off") ? 1000 + i : 0);
        assertThat(answer)
            .as("request %d, %d ranks, %s, seed %d", i, ranks, tier, SEED)
            .containsExactly(chats.answers().get(i));
      }
      engine.drain();
      return new Result(engine.speculation(), engine.engineStats());
    }
  }

  private static int[] generate(ModelEngine engine, int[] prompt, long namespace) throws Exception {
    return generate(engine, prompt, namespace, Sampling.GREEDY);
  }

  private static int[] generate(ModelEngine engine, int[] prompt, long namespace, Sampling sampling)
      throws Exception {
    CompletableFuture<Completion> done = new CompletableFuture<>();
    engine
        .engine()
        .submit(
            new GenerationRequest(prompt, ANSWER, namespace, TransferRole.NONE, 0, sampling),
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
    return done.get(2, TimeUnit.MINUTES).tokens();
  }

  private static KvTierConfig config(LlamaServingModel model, int ranks, String tier, Path store) {
    return switch (tier) {
      case "off", "device" ->
          ServedTiers.builder(model, ranks, Parallelism.TP, 16, 128, 128).build();
      default ->
          ServedTiers.evicting(
              model, ranks, Parallelism.TP, tier, store, "speculative-" + model.draftName());
    };
  }
}
