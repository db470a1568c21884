package io.kvtier.examples;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.serving.Completion;
import io.kvtier.serving.GenerationEngine;
import io.kvtier.serving.GenerationEngine.GenerationRequest;
import io.kvtier.serving.ModelEngine;
import io.kvtier.spi.BackendMetrics;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

/**
 * A server's request path on the serving engine: clients on any thread {@link #submit} prompts
 * and get a future, completed when the request has finished. The engine's own thread runs the
 * rank loop with continuous batching (what a server would otherwise write itself: a queue of
 * arrivals per tick, completions after it, an idle wait); the server only hands requests over.
 * With {@code kvtier.ranks} above 1 the same code serves a rank group of threads, see {@link
 * RanksAsThreadsExample}.
 *
 * <pre>
 * java --module-path examples/target/kvtier-examples-0.1.0-SNAPSHOT.jar:modules/cli/target/lib \
 *     -m io.kvtier.examples/io.kvtier.examples.ServerLoopExample
 * </pre>
 */
public final class ServerLoopExample implements AutoCloseable {
  private final ModelEngine engine;
  private boolean stopping;

  /**
   * Starts serving {@link OwnModelExample#MODEL} on the configuration's backends, one rank.
   *
   * @param config the configuration; {@code kvtier.ranks} must be 1
   */
  public ServerLoopExample(KvTierConfig config) {
    Objects.requireNonNull(config, "config");
    if (config.ranks() != 1) {
      throw new IllegalArgumentException(
          "kvtier.ranks="
              + config.ranks()
              + ": this server runs"
              + " one rank; run RanksAsThreadsExample for several");
    }
    engine = ModelEngine.open(OwnModelExample.MODEL, config, BackendMetrics.NOOP);
  }

  /**
   * Runs the example: three clients send prompts that share a 32-token system prompt, then the
   * server stops; prints what each got and the cache's hits.
   *
   * @param args ignored
   * @throws Exception if a request failed
   */
  public static void main(String... args) throws Exception {
    Result result = run();
    result.outputs().forEach((prompt, tokens) -> System.out.println(prompt + " -> " + tokens));
    System.out.println(
        "device hit tokens "
            + result.stats().deviceHitTokens()
            + " of "
            + result.stats().promptTokens()
            + " prompt tokens");
  }

  /**
   * What {@link #run} produced.
   *
   * @param outputs the generated tokens per client prompt index
   * @param stats the engine's counters when the server stopped
   */
  public record Result(Map<Integer, List<Integer>> outputs, RankEngineStats stats) {
    /** Validates and copies the fields. */
    public Result {
      outputs = Map.copyOf(Objects.requireNonNull(outputs, "outputs"));
      Objects.requireNonNull(stats, "stats");
    }
  }

  /**
   * Serves three clients' prompts (one after the other, as a chat would) and stops.
   *
   * @return the outputs and counters
   * @throws Exception if a request failed or took over a minute
   */
  public static Result run() throws Exception {
    int[] system = IntStream.range(1, 33).toArray();
    Map<Integer, List<Integer>> outputs = new HashMap<>();
    RankEngineStats stats;
    try (ServerLoopExample server = new ServerLoopExample(RankLoop.config(Map.of()))) {
      for (int client = 0; client < 3; client++) {
        int[] prompt =
            IntStream.concat(
                    IntStream.of(system), IntStream.of(100 * (client + 1), 100 * (client + 1) + 1))
                .toArray();
        outputs.put(client, server.submit(prompt, 4).get(1, TimeUnit.MINUTES));
      }
      stats = server.stop();
    }
    return new Result(outputs, stats);
  }

  /**
   * Submits a prompt; callable from any thread.
   *
   * @param prompt the prompt's tokens
   * @param maxOutputTokens how many tokens to generate
   * @return the generated tokens, once the request has finished
   * @throws IllegalStateException if the server is stopping
   */
  public CompletableFuture<List<Integer>> submit(int[] prompt, int maxOutputTokens) {
    synchronized (this) {
      if (stopping) {
        throw new IllegalStateException("the server is stopping: submit before stop()");
      }
    }
    CompletableFuture<List<Integer>> done = new CompletableFuture<>();
    engine
        .engine()
        .submit(
            new GenerationRequest(prompt, maxOutputTokens),
            new GenerationEngine.TokenStream() {
              @Override
              public void token(int token) {}

              @Override
              public void finished(Completion completion) {
                done.complete(Arrays.stream(completion.tokens()).boxed().toList());
              }

              @Override
              public void failed(Throwable cause) {
                done.completeExceptionally(cause);
              }
            });
    return done;
  }

  /**
   * Takes no more requests, waits for the cache to be idle and returns the engine's counters.
   *
   * @return the engine's counters at the end
   * @throws Exception if the engine failed
   */
  public RankEngineStats stop() throws Exception {
    synchronized (this) {
      stopping = true;
    }
    engine.drain();
    return engine.engineStats();
  }

  @Override
  public void close() {
    synchronized (this) {
      stopping = true;
    }
    engine.close();
  }
}
