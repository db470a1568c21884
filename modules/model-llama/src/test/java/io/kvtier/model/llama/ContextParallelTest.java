package io.kvtier.model.llama;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.gguf.GgufFile;
import io.kvtier.serving.ModelEngine;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.ReduceOp;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Context parallelism ({@link Parallelism}): the stripes, the rank pools' layout (1/R of the
 * bytes per token), runners of a group driven on threads as the engine drives them (the direct
 * pass's tokens, every rank the same bits, a cached prompt recomputed from the stripes, a changed
 * page found by its rank only), and each bad setting refused, naming the option.
 */
class ContextParallelTest {
  private static final int PAGE = 8;

  @TempDir Path dir;
  private GgufFile file;
  private LlamaServingModel model;

  @BeforeEach
  void open() throws IOException {
    file = GgufFile.open(SyntheticGguf.llama().write(dir.resolve("m.gguf"), 3));
    model = LlamaServingModel.of(file);
  }

  @AfterEach
  void close() {
    file.close();
  }

  @ParameterizedTest(name = "{0} ranks, interleave {1}")
  @CsvSource({"1,1", "2,1", "3,1", "4,1", "2,3", "4,2", "8,4"})
  void aStripeCountsAndIndexesItsOwnPositions(int ranks, int interleave) {
    int length = 100;
    int[] seen = new int[length];
    for (int r = 0; r < ranks; r++) {
      Stripe stripe = new Stripe(r, ranks, interleave);
      int index = 0;
      for (int p = 0; p < length; p++) {
        assertThat(stripe.owned(p)).as("rank %d's of the first %d", r, p).isEqualTo(index);
        if (stripe.owns(p)) {
          assertThat(stripe.owner(p)).isEqualTo(r);
          assertThat(stripe.localIndex(p)).isEqualTo(index);
          assertThat(stripe.position(index)).isEqualTo(p);
          seen[p]++;
          index++;
        }
      }
    }
    assertThat(seen).as("every position, once").containsOnly(1);
  }

  @ParameterizedTest(name = "{0} ranks")
  @CsvSource({"1", "2", "4", "8", "16"})
  void aRankPageHoldsItsShareOfTheBytes(int ranks) {
    KvLayout whole = model.kvLayout(16);
    KvLayout rank = model.rankLayout(whole, ranks, Parallelism.cp(1));
    assertThat(rank.pageSize()).as("the replicated tree's page size").isEqualTo(16);
    assertThat(rank.pageBytes() * ranks).isEqualTo(whole.pageBytes());
    // Tensor parallelism stops at the 4 KV heads.
    if (ranks <= 4) {
      assertThat(model.rankLayout(whole, ranks, Parallelism.TP).pageBytes() * ranks)
          .isEqualTo(whole.pageBytes());
    }
  }

  @Test
  void badSettingsAreRefusedNamingTheOption() {
    assertThatThrownBy(() -> Parallelism.parse("sp", 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "kvtier.parallel=sp is neither tp (a share of the KV heads per rank) nor cp (a share of the"
                + " positions per rank): set --parallel (kvtier.parallel) to tp or cp");
    assertThatThrownBy(() -> Parallelism.cp(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "kvtier.cp-interleave=0 must be >= 1: the positions a rank takes per turn under"
                + " --parallel cp");
    assertThatThrownBy(() -> Parallelism.parse("tp", 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.cp-interleave=2 is for --parallel cp");
    assertThat(Parallelism.parse(" CP ", 4)).isEqualTo(Parallelism.cp(4));

    assertThatThrownBy(() -> model.rankLayout(model.kvLayout(PAGE), 4, Parallelism.cp(4)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "--parallel cp over 4 ranks with interleave 4 needs a page size that is a multiple of"
                + " ranks x interleave = 16, so that each rank holds the same share of every"
                + " page; kvtier.page-size is 8: change kvtier.page-size, kvtier.ranks or"
                + " kvtier.cp-interleave");
    // 3 ranks cannot take a third of 4 heads of 8 floats.
    assertThatThrownBy(() -> model.rankLayout(model.kvLayout(6), 3, Parallelism.cp(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("--parallel cp over 3 ranks")
        .hasMessageContaining("use a number of ranks (kvtier.ranks) that divides 4 KV heads x 8");
    // The engine checks before it opens anything.
    KvTierConfig config =
        KvTierConfig.builder()
            .properties(pools(model.kvLayout(PAGE)).toProperties())
            .set("kvtier.ranks", "4")
            .set("kvtier.collective", "local")
            .parallelism(Parallelism.cp(4))
            .build();
    assertThatThrownBy(() -> ModelEngine.open(model, config, BackendMetrics.NOOP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.cp-interleave");
    // A runner on a pool of the whole model's layout: twice a rank's bytes.
    try (KvTierBackends backends = KvTierBackends.open(pools(model.kvLayout(PAGE)))) {
      assertThatThrownBy(
              () ->
                  new LlamaModelRunner(
                      model, backends.device(), 0, 2, Parallelism.cp(1), LogitsListener.NONE))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("is not one rank's cp (interleave 1) share over 2 ranks");
    }
  }

  @Test
  void aRankWritesItsOwnPositionsOnly() {
    try (KvTierBackends backends =
        KvTierBackends.open(pools(model.rankLayout(model.kvLayout(PAGE), 2, Parallelism.cp(1))))) {
      PagedKvStore store =
          new PagedKvStore(backends.device(), model.hyperparameters(), 1, 2, Parallelism.cp(1));
      store.bind(new int[] {0}, 1);
      float[] row = new float[store.kvDim()];
      store.write(0, 3, row, row, 0);
      assertThatThrownBy(() -> store.write(0, 2, row, row, 0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage(
              "position=2 is rank 0's, not rank 1's: under cp a rank writes its own positions"
                  + " only");
    }
  }

  /**
   * Two and four runners on threads, through a collective of their own: a prompt prefilled in two
   * chunks, decode steps batched, and the prompt again fully cached, on every rank the same bits,
   * the direct pass's tokens; then one changed float in rank 1's second page, which rank 1's
   * check finds and rank 0's does not see.
   */
  @ParameterizedTest(name = "{0} ranks, interleave {1}")
  @CsvSource({"2,1", "4,1", "2,4"})
  void runnersOfAGroupGiveTheDirectTokensAndFindTheirOwnChangedPages(int ranks, int interleave)
      throws Exception {
    int[] prompt = {1, 9, 33, 2, 19, 19, 5, 38, 11, 0, 7, 3, 44, 12};
    int decoded = 6;
    int length = prompt.length + decoded;
    int[] direct = directGreedy(prompt, decoded);
    Parallelism cp = Parallelism.cp(interleave);
    KvLayout layout = model.rankLayout(model.kvLayout(PAGE), ranks, cp);
    TestGroup group = new TestGroup(ranks);
    float[][][] logits = new float[ranks][length][];
    int[] table = {5, 1, 7};
    List<KvTierBackends> pools = new ArrayList<>();
    ExecutorService threads = Executors.newFixedThreadPool(ranks);
    try {
      List<LlamaModelRunner> runners = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        int rank = r;
        pools.add(KvTierBackends.open(pools(layout)));
        LlamaModelRunner runner =
            new LlamaModelRunner(
                model,
                pools.get(r).device(),
                r,
                ranks,
                cp,
                (at, id, position, l) -> logits[rank][position] = l.clone());
        runner.combineThrough(group.member(r));
        runners.add(runner);
      }
      List<int[]> tokens =
          onEveryRank(
              threads,
              ranks,
              r -> {
                LlamaModelRunner runner = runners.get(r);
                int[] seq = java.util.Arrays.copyOf(prompt, length);
                ModelStep first = new ModelStep(1, 0, seq, 0, 5, table);
                run(runner, first);
                runner.nextToken(first);
                ModelStep second = new ModelStep(1, 0, seq, 5, prompt.length, table);
                run(runner, second);
                seq[prompt.length] = runner.nextToken(second);
                for (int p = prompt.length + 1; p < length; p++) {
                  List<ModelStep> batch = List.of(new ModelStep(1, 0, seq, p - 1, p, table));
                  for (int l = 0; l < runner.layers(); l++) {
                    runner.writeDecodeLayer(batch, l);
                  }
                  int[] next = new int[1];
                  runner.nextDecodeTokens(batch, next);
                  seq[p] = next[0];
                }
                runner.released(1);
                float[] before = logits[r][prompt.length - 1];
                ModelStep cached = new ModelStep(2, 0, seq, prompt.length, prompt.length, table);
                int again = runner.nextToken(cached);
                assertThat(again).isEqualTo(seq[prompt.length]);
                assertThat(bits(logits[r][prompt.length - 1]))
                    .as("rank %d: the cached prompt's logits", r)
                    .isEqualTo(bits(before));
                return java.util.Arrays.copyOfRange(seq, prompt.length, length);
              });
      for (int r = 0; r < ranks; r++) {
        assertThat(tokens.get(r)).as("rank %d's tokens", r).containsExactly(direct);
        for (int p = prompt.length - 1; p < length - 1; p++) {
          assertThat(bits(logits[r][p]))
              .as("rank %d position %d", r, p)
              .isEqualTo(bits(logits[0][p]));
        }
      }
      ModelStep prefix = new ModelStep(3, 0, prompt, 0, prompt.length, table);
      assertThat(onEveryRank(threads, ranks, r -> runners.get(r).verifyPrefix(prefix)))
          .containsOnly(0);
      // Rank 1's first V row of layer 1 in the second page: its own position there.
      pools
          .get(1)
          .device()
          .write(
              table[1], 1, (long) layout.valueOffset(0), MemorySegment.ofArray(new float[] {42f}));
      List<Integer> wrong = onEveryRank(threads, ranks, r -> runners.get(r).verifyPrefix(prefix));
      for (int r = 0; r < ranks; r++) {
        assertThat(wrong.get(r)).as("rank %d's wrong pages", r).isEqualTo(r == 1 ? 1 : 0);
      }
    } finally {
      threads.shutdownNow();
      pools.forEach(KvTierBackends::close);
    }
  }

  /**
   * The split prefill (each rank its own positions' rows) gives the bits of the replicated one
   * (every rank every row): prompts in chunks of 1, 5 and 300 positions (past a pass's chunk),
   * then decode steps, and a check of the prefix.
   */
  @ParameterizedTest(name = "{0} ranks, interleave {1}")
  @CsvSource({"2,1", "4,2"})
  void aPrefillSplitByPositionGivesTheBitsOfAReplicatedOne(int ranks, int interleave)
      throws Exception {
    Parallelism cp = Parallelism.cp(interleave);
    KvLayout layout = model.rankLayout(model.kvLayout(PAGE), ranks, cp);
    java.util.Random random = new java.util.Random(9);
    int[] seq = new int[320];
    for (int i = 0; i < seq.length; i++) {
      seq[i] = random.nextInt(model.vocabularySize());
    }
    int[] cuts = {0, 1, 6, 306, 316};
    int[] table = new int[seq.length / PAGE];
    for (int i = 0; i < table.length; i++) {
      table[i] = table.length - 1 - i;
    }
    List<float[][]> runs = new ArrayList<>();
    for (boolean replicated : new boolean[] {false, true}) {
      float[][] logits = new float[seq.length][];
      TestGroup group = new TestGroup(ranks);
      List<KvTierBackends> pools = new ArrayList<>();
      ExecutorService threads = Executors.newFixedThreadPool(ranks);
      try {
        List<LlamaModelRunner> runners = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
          int rank = r;
          pools.add(KvTierBackends.open(pools(layout, table.length)));
          LlamaModelRunner runner =
              new LlamaModelRunner(
                  model,
                  pools.get(r).device(),
                  r,
                  ranks,
                  cp,
                  (at, id, position, l) -> {
                    if (rank == ranks - 1) {
                      logits[position] = l.clone();
                    }
                  });
          runner.combineThrough(group.member(r));
          if (replicated) {
            runner.replicatePrefill();
          }
          runners.add(runner);
        }
        List<Integer> wrong =
            onEveryRank(
                threads,
                ranks,
                r -> {
                  LlamaModelRunner runner = runners.get(r);
                  for (int c = 0; c + 1 < cuts.length; c++) {
                    ModelStep step = new ModelStep(1, 0, seq, cuts[c], cuts[c + 1], table);
                    run(runner, step);
                    runner.nextToken(step);
                  }
                  for (int p = cuts[cuts.length - 1]; p < seq.length; p++) {
                    List<ModelStep> batch = List.of(new ModelStep(1, 0, seq, p, p + 1, table));
                    for (int l = 0; l < runner.layers(); l++) {
                      runner.writeDecodeLayer(batch, l);
                    }
                    runner.nextDecodeTokens(batch, new int[1]);
                  }
                  return runner.verifyPrefix(new ModelStep(2, 0, seq, 0, seq.length, table));
                });
        assertThat(wrong).containsOnly(0);
      } finally {
        threads.shutdownNow();
        pools.forEach(KvTierBackends::close);
      }
      runs.add(logits);
    }
    for (int p = 0; p < seq.length; p++) {
      if (runs.get(1)[p] != null) {
        assertThat(bits(runs.get(0)[p])).as("position %d", p).isEqualTo(bits(runs.get(1)[p]));
      }
    }
    assertThat(Arrays.stream(runs.get(0)).filter(java.util.Objects::nonNull).count())
        .isEqualTo(cuts.length - 1 + seq.length - cuts[cuts.length - 1]);
  }

  private int[] directGreedy(int[] prompt, int count) {
    LlamaModel m = model.model();
    KvStore kv = ArrayKvStore.forModel(m);
    float[][] logits = m.forward(prompt, 0, kv, true);
    int[] out = new int[count];
    out[0] = StoriesGreedyTest.argmax(logits[prompt.length - 1]);
    for (int i = 1; i < count; i++) {
      out[i] = StoriesGreedyTest.argmax(m.decode(out[i - 1], prompt.length + i - 1, kv));
    }
    return out;
  }

  private static <T> List<T> onEveryRank(ExecutorService threads, int ranks, IntFunction<T> work)
      throws Exception {
    List<Future<T>> futures = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      int rank = r;
      futures.add(threads.submit(() -> work.apply(rank)));
    }
    // A rank that fails leaves the others waiting at the group: report its failure, not theirs.
    List<T> results = new ArrayList<>();
    Exception first = null;
    for (Future<T> f : futures) {
      try {
        results.add(f.get(60, TimeUnit.SECONDS));
      } catch (java.util.concurrent.ExecutionException e) {
        boolean waiting = e.getCause() instanceof IllegalStateException i && i.getCause() != null;
        if (first == null || !waiting) {
          first = e;
        }
      }
    }
    if (first != null) {
      throw first;
    }
    return results;
  }

  private static void run(LlamaModelRunner runner, ModelStep step) {
    for (int l = 0; l < runner.layers(); l++) {
      runner.writeLayer(step, l);
    }
  }

  private KvTierConfig pools(KvLayout layout) {
    return pools(layout, 16);
  }

  private KvTierConfig pools(KvLayout layout, int pages) {
    return ServedTiers.pools(layout, pages, model.vocabularySize());
  }

  private static int[] bits(float[] v) {
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) {
      b[i] = Float.floatToRawIntBits(v[i]);
    }
    return b;
  }

  /** An in-process group for the test's threads: a SUM allReduce over a barrier. */
  private static final class TestGroup {
    private final int size;
    private final long[][] sent;
    private final CyclicBarrier arrived;
    private final CyclicBarrier read;
    private long[] sum;

    TestGroup(int size) {
      this.size = size;
      this.sent = new long[size][];
      this.arrived =
          new CyclicBarrier(
              size,
              () -> {
                sum = new long[sent[0].length];
                for (long[] s : sent) {
                  for (int i = 0; i < sum.length; i++) {
                    sum[i] += s[i];
                  }
                }
              });
      this.read = new CyclicBarrier(size);
    }

    Collective member(int rank) {
      return new Collective() {
        @Override
        public int rank() {
          return rank;
        }

        @Override
        public int size() {
          return size;
        }

        @Override
        public long[] allReduce(ReduceOp op, long[] values, String tag) {
          assertThat(op).isEqualTo(ReduceOp.SUM);
          try {
            sent[rank] = values.clone();
            arrived.await(30, TimeUnit.SECONDS);
            long[] out = sum.clone();
            read.await(30, TimeUnit.SECONDS);
            return out;
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
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
      };
    }
  }
}
