package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufTensorType;
import io.kvtier.serving.ModelEngine;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.ReduceOp;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LlamaModelRunner} over a sim device pool, driven the way the engine drives it: a step
 * over the pages equals the direct forward pass bit for bit, a cached prompt's token is recomputed
 * from the pages, {@link LlamaModelRunner#verifyPrefix} finds a changed page; and each misuse or
 * wrong setup fails saying what to do.
 */
class LlamaRunnerTest {
  private static final int PAGE = 4;

  @TempDir Path dir;
  private GgufFile file;
  private LlamaServingModel model;

  @BeforeEach
  void open() throws IOException {
    file = GgufFile.open(SyntheticGguf.llama().write(dir.resolve("m.gguf"), 11));
    model = LlamaServingModel.of(file);
  }

  @AfterEach
  void close() {
    file.close();
  }

  private KvTierConfig pools(int kvHeads, int headDim, int dtypeBytes) {
    return KvTierConfig.builder()
        .device("sim")
        .host("sim")
        .layout(model.layers(), kvHeads, headDim, dtypeBytes, PAGE)
        .devicePages(32)
        .hostPages(32)
        .vocabSize(model.vocabularySize())
        .build();
  }

  private static int[] pages(int count) {
    int[] table = new int[count];
    for (int i = 0; i < count; i++) {
      table[i] = 3 + 2 * i;
    }
    return table;
  }

  private static void run(LlamaModelRunner runner, ModelStep step) {
    for (int l = 0; l < runner.layers(); l++) {
      runner.writeLayer(step, l);
    }
  }

  @Test
  void stepsOverThePagesEqualTheDirectPassAndACachedPromptIsRecomputedFromThem() {
    int[] tokens = {1, 9, 33, 2, 19, 19, 5, 38, 11, 0, 7};
    float[][] direct = model.model().forward(tokens, 0, ArrayKvStore.forModel(model.model()), true);
    float[][] seen = new float[tokens.length][];
    LogitsListener listener = (rank, id, position, logits) -> seen[position] = logits.clone();
    try (KvTierBackends backends = KvTierBackends.open(pools(4, 8, 4))) {
      LlamaModelRunner runner = new LlamaModelRunner(model, backends.device(), 0, 1, listener);
      int[] table = pages(3);
      // A prefill in two chunks, then a fully cached prompt of the same tokens.
      ModelStep first = new ModelStep(1, 0, tokens, 0, 6, table);
      run(runner, first);
      int a = runner.nextToken(first);
      ModelStep second = new ModelStep(1, 0, tokens, 6, 11, table);
      run(runner, second);
      int b = runner.nextToken(second);
      assertThat(bits(seen[5])).isEqualTo(bits(direct[5]));
      assertThat(bits(seen[10])).isEqualTo(bits(direct[10]));
      assertThat(a).isEqualTo(StoriesGreedyTest.argmax(direct[5]));
      assertThat(b).isEqualTo(StoriesGreedyTest.argmax(direct[10]));
      runner.released(1);

      seen[10] = null;
      ModelStep cached = new ModelStep(2, 0, tokens, 11, 11, table);
      assertThat(runner.nextToken(cached)).isEqualTo(b);
      assertThat(bits(seen[10])).as("the cached prompt's logits").isEqualTo(bits(direct[10]));

      ModelStep prefix = new ModelStep(3, 0, tokens, 0, 8, table);
      assertThat(runner.verifyPrefix(prefix)).isZero();
      // One float of layer 1's V in the second page changed: that page, and only it, is wrong.
      long at = backends.device().spec().layout().valueOffset(2);
      backends
          .device()
          .write(table[1], 1, at, java.lang.foreign.MemorySegment.ofArray(new float[] {42f}));
      assertThat(runner.verifyPrefix(prefix)).isEqualTo(1);
    }
  }

  @Test
  void layersOutOfOrderAndATokenBeforeTheLastLayerAreRefused() {
    int[] tokens = {1, 2, 3};
    try (KvTierBackends backends = KvTierBackends.open(pools(4, 8, 4))) {
      LlamaModelRunner runner =
          new LlamaModelRunner(model, backends.device(), 0, 1, LogitsListener.NONE);
      ModelStep step = new ModelStep(5, 0, tokens, 0, 3, pages(1));
      runner.writeLayer(step, 0);
      assertThatThrownBy(() -> runner.nextToken(step))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(
              "request id=5: nextToken after position 2 before every layer of the step was"
                  + " written");
      assertThatThrownBy(() -> runner.writeLayer(new ModelStep(5, 0, tokens, 0, 2, pages(1)), 1))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(
              "request id=5: layer 1 of positions [0, 2) but the step in progress is [0, 3) at"
                  + " layer 1: call writeLayer for layers 0..1 in order");
      assertThatThrownBy(() -> runner.writeLayer(new ModelStep(6, 0, tokens, 0, 3, new int[0]), 0))
          .isInstanceOf(IndexOutOfBoundsException.class)
          .hasMessageContaining("allocate the request's pages before running the model");
    }
  }

  /**
   * Three requests' decode steps in one batch give each position the logits and token that the
   * same step alone gives (the prompts prefilled alike in pages of their own).
   */
  @Test
  void aDecodeBatchGivesEachStepTheBitsOfItsOwnStep() {
    int[][] prompts = {{1, 9, 33, 2, 19}, {1, 4, 4}, {1, 30, 31, 32, 33, 34, 35}};
    java.util.Map<Long, float[]> seen = new java.util.HashMap<>();
    LogitsListener listener = (rank, id, position, logits) -> seen.put(id, logits.clone());
    try (KvTierBackends backends = KvTierBackends.open(pools(4, 8, 4))) {
      LlamaModelRunner runner = new LlamaModelRunner(model, backends.device(), 0, 1, listener);
      List<ModelStep> batch = new java.util.ArrayList<>();
      List<ModelStep> alone = new java.util.ArrayList<>();
      for (int r = 0; r < prompts.length; r++) {
        int[] tokens = java.util.Arrays.copyOf(prompts[r], prompts[r].length + 1);
        // the same prompt twice, in pages of its own: once for the batch, once alone
        int[] batchPages = {2 * r, 10 + 2 * r};
        int[] alonePages = {2 * r + 1, 11 + 2 * r};
        for (int[] table : new int[][] {batchPages, alonePages}) {
          ModelStep prefill = new ModelStep(table[0], 0, tokens, 0, prompts[r].length, table);
          run(runner, prefill);
          tokens[prompts[r].length] = runner.nextToken(prefill);
        }
        int n = prompts[r].length;
        batch.add(new ModelStep(100 + r, 0, tokens, n, n + 1, batchPages));
        alone.add(new ModelStep(200 + r, 0, tokens, n, n + 1, alonePages));
      }
      for (int l = 0; l < runner.layers(); l++) {
        runner.writeDecodeLayer(batch, l);
      }
      int[] tokens = new int[3];
      runner.nextDecodeTokens(batch, tokens);
      for (int r = 0; r < prompts.length; r++) {
        run(runner, alone.get(r));
        assertThat(tokens[r]).as("request %d's token", r).isEqualTo(runner.nextToken(alone.get(r)));
        assertThat(bits(seen.get(100L + r)))
            .as("request %d's logits", r)
            .isEqualTo(bits(seen.get(200L + r)));
      }
    }
  }

  @Test
  void aDecodeBatchOutOfOrderIsRefused() {
    int[] tokens = {1, 2, 3, 4};
    try (KvTierBackends backends = KvTierBackends.open(pools(4, 8, 4))) {
      LlamaModelRunner runner =
          new LlamaModelRunner(model, backends.device(), 0, 1, LogitsListener.NONE);
      assertThat(runner.batchesDecode()).isTrue();
      List<ModelStep> two = List.of(new ModelStep(5, 0, tokens, 1, 3, pages(1)));
      assertThatThrownBy(() -> runner.writeDecodeLayer(two, 0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("request id=5: a decode step computes one position, not [1, 3)");
      List<ModelStep> one = List.of(new ModelStep(6, 0, tokens, 3, 4, pages(1)));
      assertThatThrownBy(() -> runner.nextDecodeTokens(one, new int[1]))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(
              "nextDecodeTokens of 1 steps before every layer of the decode batch was written");
      runner.writeDecodeLayer(one, 0);
      List<ModelStep> other = List.of(one.get(0), new ModelStep(7, 0, tokens, 3, 4, new int[] {2}));
      assertThatThrownBy(() -> runner.writeDecodeLayer(other, 1))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(
              "a decode batch of 2 steps at layer 1 but the batch in progress has 1 steps at"
                  + " layer 1: call writeDecodeLayer for layers 0..1 in order with the same"
                  + " steps");
      assertThatThrownBy(() -> runner.nextDecodeTokens(one, new int[1]))
          .isInstanceOf(IllegalStateException.class);
    }
  }

  @Test
  void aPoolOfAnotherLayoutNamesTheKeysToSet() {
    try (KvTierBackends backends = KvTierBackends.open(pools(4, 8, 2))) {
      assertThatThrownBy(
              () -> new LlamaModelRunner(model, backends.device(), 0, 1, LogitsListener.NONE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage(
              "the KV layout KvLayout[layers=2, kvHeads=4, headDim=8, dtypeBytes=2, pageSize=4]"
                  + " is not one rank's share over 1 ranks of synthetic-llama's"
                  + " KvLayout[layers=2, kvHeads=4, headDim=8, dtypeBytes=4, pageSize=4]: set"
                  + " kvtier.layers=2, kvtier.kv-heads=4, kvtier.head-dim=8,"
                  + " kvtier.dtype-bytes=4 (F32 KV, model option kv-type=f32; kvtier.page-size"
                  + " is free)");
    }
    assertThatThrownBy(() -> model.checkLayout(new KvLayout(2, 2, 8, 4, 16), 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("is not synthetic-llama's")
        .hasMessageContaining("set kvtier.layers=2, kvtier.kv-heads=4, kvtier.head-dim=8");
    // The engine checks the config's layout before it opens anything.
    KvTierConfig wrong = pools(4, 16, 4);
    assertThatThrownBy(() -> ModelEngine.open(model, wrong, BackendMetrics.NOOP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.head-dim=8");
  }

  @Test
  void ranksThatDoNotDivideTheKvHeadsAreRefused() {
    assertThatThrownBy(() -> model.checkLayout(model.kvLayout(PAGE), 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "ranks=3 does not divide synthetic-llama's 4 KV heads: each rank holds an equal share"
                + " of the KV heads; use a divisor of 4 (kvtier.ranks)");
    KvTierConfig three =
        KvTierConfig.builder()
            .properties(pools(4, 8, 4).toProperties())
            .set("kvtier.ranks", "3")
            .set("kvtier.collective", "local")
            .build();
    assertThatThrownBy(() -> ModelEngine.open(model, three, BackendMetrics.NOOP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ranks=3 does not divide synthetic-llama's 4 KV heads");
  }

  @Test
  void quantizedMatricesSplitOnlyOnBlockBoundaries() throws IOException {
    SyntheticGguf q8 = SyntheticGguf.llama().withType(GgufTensorType.Q8_0);
    try (GgufFile f = GgufFile.open(q8.write(dir.resolve("q8.gguf"), 5))) {
      LlamaServingModel m = LlamaServingModel.of(f);
      m.checkLayout(m.kvLayout(PAGE), 2);
      // 96 feed-forward rows are 3 blocks of 32.
      assertThatThrownBy(() -> m.checkLayout(m.kvLayout(PAGE), 4))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage(
              "the feed-forward's 96 rows (3 blocks of 32 weights of blk.0.ffn_down.weight Q8_0"
                  + " 64x96) cannot split over 4 ranks: use at most 3 ranks");
    }
    SyntheticGguf wide =
        new SyntheticGguf("llama", 1, 4, 128, 64, 64, GgufTensorType.Q8_0, SyntheticGguf.HEAD, 0);
    try (GgufFile f = GgufFile.open(wide.write(dir.resolve("wide.gguf"), 5))) {
      LlamaServingModel m = LlamaServingModel.of(f);
      // 4 ranks give each 2 heads of 8: 16 columns of the output projection, half a block.
      assertThatThrownBy(() -> m.checkLayout(m.kvLayout(PAGE), 4))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage(
              "blk.0.attn_output.weight is Q8_0 with blocks of 32 weights: columns [0, 16) do"
                  + " not start and end on block boundaries, so the rows cannot be split there"
                  + " across ranks; use fewer ranks or a file whose head size is a multiple of"
                  + " 32");
    }
  }

  @Test
  void aRankWithoutItsCollectiveOrWithAnotherRanksIsRefused() {
    try (KvTierBackends backends = KvTierBackends.open(pools(2, 8, 4))) {
      LlamaModelRunner runner =
          new LlamaModelRunner(model, backends.device(), 1, 2, LogitsListener.NONE);
      assertThatThrownBy(() -> runner.combineThrough(new FakeCollective(0, 2)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage(
              "the collective is rank 0 of 2 but this runner is rank 1 of 2: give each rank's"
                  + " runner its own handle on the group");
      assertThatThrownBy(
              () -> {
                ModelStep step = new ModelStep(1, 0, new int[] {1, 2}, 0, 2, pages(1));
                runner.writeLayer(step, 0);
              })
          .isInstanceOf(IllegalStateException.class)
          .hasMessage(
              "rank 1 of 2 has no collective to sum its partial outputs: call combineThrough"
                  + " before the first step");
    }
  }

  @Test
  void multiplyBlockRefusesABlockOutsideTheMatrix() {
    LlamaWeight wq = new LlamaWeight(file.tensor("blk.0.attn_q.weight"));
    float[] in = new float[64];
    float[] out = new float[64];
    assertThatThrownBy(() -> wq.multiplyBlock(in, 1, out, 60, 8, 0, 64))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "blk.0.attn_q.weight: rows [60, 68) columns [0, 64) are outside the 64x64 matrix");
    assertThatThrownBy(() -> wq.multiplyBlock(in, 2, out, 0, 8, 0, 64))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("blk.0.attn_q.weight: positions=2 need in=128 out=16 but got in=64 out=64");
    float[] whole = new float[64];
    wq.multiply(in, 1, whole);
    float[] block = new float[64];
    wq.multiplyBlock(in, 1, block, 0, 64, 0, 64);
    assertThat(bits(block)).as("the whole matrix as one block").isEqualTo(bits(whole));
  }

  private static int[] bits(float[] v) {
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) {
      b[i] = Float.floatToRawIntBits(v[i]);
    }
    return b;
  }

  /** A group handle that only knows its place; any collective call is a test failure. */
  private record FakeCollective(int rank, int size) implements Collective {
    @Override
    public long[] allReduce(ReduceOp op, long[] values, String tag) {
      throw new AssertionError("allReduce " + Arrays.toString(values));
    }

    @Override
    public byte[] broadcast(int root, byte[] payload, String tag) {
      throw new AssertionError("broadcast");
    }

    @Override
    public void barrier(String tag) {
      throw new AssertionError("barrier");
    }

    @Override
    public void close() {}
  }
}
