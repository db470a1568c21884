package io.kvtier.examples;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.TimeSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;

/**
 * One rank driven from a server's loop: clients on any thread {@link #submit} prompts and get a
 * future; the loop, on a thread of its own that alone touches the engine, hands each tick the
 * prompts that arrived since the last one and completes the futures of the requests that
 * finished. The same loop serves a multi-rank group when every rank runs it (only rank 0's
 * arrivals count, see {@link RanksAsThreadsExample}).
 *
 * <pre>
 * java --module-path examples/target/kvtier-examples-0.1.0-SNAPSHOT.jar:modules/cli/target/lib \
 *     -m io.kvtier.examples/io.kvtier.examples.ServerLoopExample
 * </pre>
 */
public final class ServerLoopExample implements AutoCloseable {

  // The requests submitted since the last tick; its lock also guards stopping and ended.
  private final List<RankRequest> queue = new ArrayList<>();
  private final Map<Long, CompletableFuture<List<Integer>>> pending = new HashMap<>();
  private final AtomicLong ids = new AtomicLong();
  private boolean stopping;
  private boolean ended;
  private final CompletableFuture<RankEngineStats> stopped = new CompletableFuture<>();
  private final Thread loop;

  /**
   * Starts the server's loop on the configuration's backends, one rank.
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
    loop = Thread.ofPlatform().name("kvtier-server-loop").start(() -> serve(config));
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
    try (ServerLoopExample server = new ServerLoopExample(RanksAsThreadsExample.config(Map.of()))) {
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
   * Queues a prompt for the next tick; callable from any thread.
   *
   * @param prompt the prompt's tokens
   * @param maxOutputTokens how many tokens to generate
   * @return the generated tokens, once the request has finished
   * @throws IllegalStateException if the server is stopping
   */
  public CompletableFuture<List<Integer>> submit(int[] prompt, int maxOutputTokens) {
    RankRequest request = RankRequest.of(ids.incrementAndGet(), prompt, maxOutputTokens);
    CompletableFuture<List<Integer>> done = new CompletableFuture<>();
    synchronized (queue) {
      // Under the queue's lock: the loop ends the input under it too, so no request slips in
      // after the end.
      if (stopping) {
        throw new IllegalStateException("the server is stopping: submit before stop()");
      }
      pending.put(request.id(), done);
      queue.add(request);
    }
    return done;
  }

  /**
   * Serves what was submitted, then stops the loop.
   *
   * @return the engine's counters at the end
   * @throws Exception if the loop failed
   */
  public RankEngineStats stop() throws Exception {
    synchronized (queue) {
      stopping = true;
    }
    return stopped.get(1, TimeUnit.MINUTES);
  }

  @Override
  public void close() throws InterruptedException {
    synchronized (queue) {
      stopping = true;
    }
    loop.join(TimeUnit.MINUTES.toMillis(1));
  }

  // The server's loop: the only code that touches the backends, the cache and the engine.
  private void serve(KvTierConfig config) {
    try (KvTierBackends backends = KvTierBackends.open(config)) {
      RankCache cache =
          RankCache.withMemory(
              config.cache(), backends.device(), backends.host(), backends.transfers());
      CollectiveProvider local = backends.providers().collective();
      CollectiveSpec spec =
          CollectiveSpec.of(
              "server-loop-" + System.identityHashCode(this), 1, 0, config.collectiveTimeout());
      try (Collective group =
          local.join(
              spec,
              backends.providers().context(local, 0, TimeSource.SYSTEM, BackendMetrics.NOOP))) {
        EmbeddingExample.ToyModel model = new EmbeddingExample.ToyModel(backends.device());
        RankEngine engine = new RankEngine(cache, group, model, RankEngineConfig.DEFAULTS);
        while (!engine.isDrained()) {
          List<RankRequest> arrivals;
          boolean end;
          synchronized (queue) {
            arrivals = List.copyOf(queue);
            queue.clear();
            // Once the input has ended the engine accepts no arrival, so end it once.
            end = stopping && !ended;
            ended |= end;
          }
          engine.tick(new TickCommands(arrivals, new long[0], end));
          complete(model);
          if (arrivals.isEmpty() && engine.waitingRequests() + engine.runningRequests() == 0) {
            // Idle: nothing arrived and nothing runs. A real server would block on its queue
            // here; the example naps so that an idle tick does not spin a core.
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
          }
        }
        stopped.complete(engine.stats());
      }
    } catch (RuntimeException | Error e) {
      stopped.completeExceptionally(e);
      synchronized (pending) {
        pending.values().forEach(f -> f.completeExceptionally(e));
      }
    }
  }

  private void complete(EmbeddingExample.ToyModel model) {
    synchronized (pending) {
      for (var it = model.outputs.entrySet().iterator(); it.hasNext(); ) {
        var done = it.next();
        CompletableFuture<List<Integer>> future = pending.remove(done.getKey());
        if (future != null) {
          future.complete(done.getValue());
        }
        it.remove();
      }
    }
  }
}
