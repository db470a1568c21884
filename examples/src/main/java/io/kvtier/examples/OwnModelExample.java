package io.kvtier.examples;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.ModelStep;
import io.kvtier.serving.Completion;
import io.kvtier.serving.ModelEngine;
import io.kvtier.serving.RankShard;
import io.kvtier.serving.ServingModel;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageMemory;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * Serves a model of one's own: {@link ToyModel} implements {@link ServingModel} (its sizes, its
 * layout check and a runner per rank), and the serving engine does the rest: batching, the
 * cache's tiers, the rank group. Only {@code io.kvtier.serving} and a backend on the module path.
 *
 * <pre>
 * java --module-path examples/target/kvtier-examples-0.1.0-SNAPSHOT.jar:modules/cli/target/lib \
 *     -m io.kvtier.examples/io.kvtier.examples.OwnModelExample
 * </pre>
 */
public final class OwnModelExample {
  private OwnModelExample() {}

  /**
   * A model whose next token is a function of the last one, and whose "KV" is a byte pattern of
   * each token: enough for the cache to find, keep and load back prefixes.
   *
   * @param vocabularySize the tokens are {@code [0, vocabularySize)}
   * @param maxContext the most tokens of a sequence
   */
  public record ToyModel(int vocabularySize, int maxContext) implements ServingModel {
    @Override
    public void checkLayout(KvLayout layout, int ranks) {
      if (layout.kvHeads() % ranks != 0) {
        throw new IllegalArgumentException(
            "kvtier.kv-heads=" + layout.kvHeads() + " does not split over " + ranks + " ranks");
      }
    }

    @Override
    public ModelRunner openRunner(RankShard shard) {
      return new Runner(shard.device());
    }
  }

  /** One rank's runner: writes each position's KV, then picks the next token. */
  static final class Runner implements ModelRunner {
    private final PageMemory device;
    private final KvLayout layout;
    private final byte[] vector;

    Runner(PageMemory device) {
      this.device = device;
      this.layout = device.spec().layout();
      this.vector = new byte[(int) layout.vectorBytes()];
    }

    @Override
    public int layers() {
      return layout.layers();
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      for (int pos = step.from(); pos < step.to(); pos++) {
        int page = step.pageTable()[pos / layout.pageSize()];
        int inPage = pos % layout.pageSize();
        Arrays.fill(vector, (byte) (step.tokens()[pos] * 7 + pos + layer));
        device.write(page, layer, layout.keyOffset(inPage), MemorySegment.ofArray(vector));
        device.write(page, layer, layout.valueOffset(inPage), MemorySegment.ofArray(vector));
      }
    }

    @Override
    public int nextToken(ModelStep step) {
      return (step.tokens()[step.to() - 1] * 31 + 7) % 32000;
    }
  }

  /** The examples' model: 32,000 tokens, 1,024 of context. */
  static final ToyModel MODEL = new ToyModel(32_000, 1024);

  /**
   * Serves three prompts that share a 32-token system prompt, one after the other.
   *
   * @param config the pools and the rank group ({@link RankLoop#config})
   * @return each prompt's completion: its tokens and where its prefix came from
   * @throws InterruptedException if interrupted while waiting
   */
  public static List<Completion> run(KvTierConfig config) throws InterruptedException {
    List<Completion> completions = new ArrayList<>();
    try (ModelEngine engine = ModelEngine.open(MODEL, config, BackendMetrics.NOOP)) {
      for (int client = 1; client <= 3; client++) {
        int[] prompt =
            IntStream.concat(IntStream.range(1, 33), IntStream.of(100 * client)).toArray();
        completions.add(engine.generate(prompt, 4));
      }
    }
    return completions;
  }

  /**
   * Runs the example and prints each completion.
   *
   * @param args ignored
   * @throws InterruptedException if interrupted
   */
  public static void main(String... args) throws InterruptedException {
    for (Completion c : run(RankLoop.config(Map.of()))) {
      System.out.println(
          Arrays.toString(c.tokens()) + ", " + c.cachedTokens() + " prompt tokens from the cache");
    }
  }
}
