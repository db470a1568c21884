package io.kvtier.examples;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.serving.Completion;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngine.GenerationRequest;
import io.kvtier.serving.ModelEngine;
import io.kvtier.spi.BackendMetrics;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * Several ranks of one group as threads of one JVM, joined by the {@code local} collective, on
 * the serving engine: {@code kvtier.ranks=N} makes {@link ModelEngine#open} start N rank threads,
 * each with its own backends, cache and rank loop; rank 0 takes the requests and the engine
 * broadcasts each tick's arrivals, so every rank runs the same requests and takes the same
 * decisions. The model's KV heads are split over the ranks (tensor parallelism).
 *
 * <pre>
 * java --module-path examples/target/kvtier-examples-0.1.0-SNAPSHOT.jar:modules/cli/target/lib \
 *     -m io.kvtier.examples/io.kvtier.examples.RanksAsThreadsExample 4
 * </pre>
 */
public final class RanksAsThreadsExample {
  /** Requests served: three conversations of two turns, each second turn extending the first. */
  static final int REQUESTS = 6;

  private RanksAsThreadsExample() {}

  /**
   * What the group served.
   *
   * @param ranks the ranks of the group
   * @param outputs the tokens generated per request, in submission order
   * @param stats rank 0's engine counters after the drain (the same on every rank)
   */
  public record Result(int ranks, List<List<Integer>> outputs, RankEngineStats stats) {
    /** Validates and copies the fields. */
    public Result {
      outputs = List.copyOf(Objects.requireNonNull(outputs, "outputs"));
      Objects.requireNonNull(stats, "stats");
    }
  }

  /**
   * Runs the example with {@code args[0]} ranks (default 2) and prints what it served.
   *
   * @param args the number of ranks, optional
   * @throws Exception if a request failed
   */
  public static void main(String... args) throws Exception {
    Result r = run(args.length > 0 ? Integer.parseInt(args[0]) : 2);
    System.out.println(
        r.ranks()
            + " ranks: "
            + r.stats().finished()
            + " finished, device hits "
            + r.stats().deviceHitTokens()
            + ", host hits "
            + r.stats().hostHitTokens()
            + " of "
            + r.stats().promptTokens()
            + " prompt tokens");
  }

  /**
   * Serves the six requests on {@code ranks} rank threads of the {@code sim} backend: each turn's
   * three requests are submitted together, so the engine batches them.
   *
   * @param ranks ranks in the group, at least 1
   * @return what was served
   * @throws Exception if a request failed or took over a minute
   */
  public static Result run(int ranks) throws Exception {
    KvTierConfig config =
        RankLoop.config(
            Map.of(
                KvTierKeys.RANKS,
                Integer.toString(ranks),
                KvTierKeys.KV_HEADS,
                Integer.toString(ranks)));
    Map<Integer, List<Integer>> outputs = new LinkedHashMap<>();
    try (ModelEngine engine =
        ModelEngine.open(OwnModelExample.MODEL, config, BackendMetrics.NOOP)) {
      for (int turn = 0; turn < 2; turn++) {
        List<CompletableFuture<Completion>> turns = new ArrayList<>();
        for (int conversation = 0; conversation < 3; conversation++) {
          int base = 1000 * (conversation + 1);
          int[] prompt = IntStream.range(base, base + 24 + 8 * turn).toArray();
          turns.add(submit(engine.engine(), prompt, 4));
        }
        for (int c = 0; c < turns.size(); c++) {
          int[] tokens = turns.get(c).get(1, TimeUnit.MINUTES).tokens();
          outputs.put(3 * turn + c, Arrays.stream(tokens).boxed().toList());
        }
      }
      engine.drain();
      return new Result(ranks, List.copyOf(outputs.values()), engine.engineStats());
    }
  }

  private static CompletableFuture<Completion> submit(
      GenerationEngine engine, int[] prompt, int maxTokens) {
    CompletableFuture<Completion> done = new CompletableFuture<>();
    engine.submit(
        new GenerationRequest(prompt, maxTokens),
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
}
