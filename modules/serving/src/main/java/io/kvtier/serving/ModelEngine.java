package io.kvtier.serving;

import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.Sampling;
import io.kvtier.core.rank.TransferRole;
import io.kvtier.serving.GenerationEngine.GenerationRequest;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.TransferEngine;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * One blocking call per request on the serving engine: {@link #generate} submits the request to
 * a {@link GenerationEngine} opened by {@link GenerationEngines} and waits for its end. It has no
 * rank loop of its own; the engine's thread drives the rank group, and several threads may call
 * {@link #generate} at once (their requests are batched together).
 *
 * <p>For callers that want a completion rather than a token stream: the tests, and the server
 * until it streams.
 */
public final class ModelEngine implements AutoCloseable {
  private final ServingModel model;
  private final RankGroupEngine engine;

  private ModelEngine(ServingModel model, RankGroupEngine engine) {
    this.model = model;
    this.engine = engine;
  }

  /**
   * Opens the rank group of a config ({@code kvtier.ranks} ranks as threads) and an engine over
   * it, which closes it. With {@code kvtier.store} set, each rank's cache gets an L3 tier on that
   * store, its calls on a background thread.
   *
   * @param model the model; the config's KV layout must be the model's
   * @param config the configuration
   * @param metrics where rank 0's backends report transfers
   * @return the engine
   * @throws IllegalArgumentException if the layout is not the model's, naming the keys to set
   */
  public static ModelEngine open(ServingModel model, KvTierConfig config, BackendMetrics metrics) {
    return open(model, config, metrics, RankSlot.Hooks.NONE);
  }

  /**
   * As {@link #open(ServingModel, KvTierConfig, BackendMetrics)}, with the L3 store wrapped
   * before the cache sees it: to inject faults, or to instrument the store.
   *
   * @param model the model; the config's KV layout must be the model's
   * @param config the configuration
   * @param metrics where rank 0's backends report transfers
   * @param wrapStore applied to the opened store, if {@code kvtier.store} names one; the backends
   *     close the store itself, not the wrapper
   * @return the engine
   */
  public static ModelEngine open(
      ServingModel model,
      KvTierConfig config,
      BackendMetrics metrics,
      UnaryOperator<KvStore> wrapStore) {
    return open(
        model,
        config,
        metrics,
        RankSlot.Hooks.NONE.withStore(wrapStore, RankSlot.Hooks.NONE.l3Executor()));
  }

  /**
   * As {@link #open(ServingModel, KvTierConfig, BackendMetrics)}, with each rank's transfer
   * engine wrapped before its cache sees it: to inject failed or stuck copies.
   *
   * @param model the model; the config's KV layout must be the model's
   * @param config the configuration
   * @param metrics where rank 0's backends report transfers
   * @param wrapStore applied to the opened store, if any
   * @param wrapTransfers applied to each rank's transfer engine
   * @return the engine
   */
  public static ModelEngine open(
      ServingModel model,
      KvTierConfig config,
      BackendMetrics metrics,
      UnaryOperator<KvStore> wrapStore,
      UnaryOperator<TransferEngine> wrapTransfers) {
    return open(
        model,
        config,
        metrics,
        RankSlot.Hooks.NONE
            .withStore(wrapStore, RankSlot.Hooks.NONE.l3Executor())
            .withTransfers(wrapTransfers));
  }

  /** As above, with the L3 executor chosen: tests run the store calls inline for determinism. */
  static ModelEngine open(
      ServingModel model,
      KvTierConfig config,
      BackendMetrics metrics,
      UnaryOperator<KvStore> wrapStore,
      Supplier<L3Executor> l3Executor) {
    return open(
        model, config, metrics, RankSlot.Hooks.NONE.withStore(wrapStore, rank -> l3Executor.get()));
  }

  static ModelEngine open(
      ServingModel model, KvTierConfig config, BackendMetrics metrics, RankSlot.Hooks hooks) {
    Objects.requireNonNull(model, "model");
    // One request at a time per caller, so the engine's defaults batch what callers overlap.
    return new ModelEngine(
        model,
        GenerationEngines.open(
            model,
            config,
            // Restored prefixes are recomputed and compared too: this engine is the one tests
            // and examples check the cache with (a server leaves it to the CRC32C check).
            EngineSettings.DEFAULTS
                .withGroup("kvtier-model-engine-" + System.nanoTime())
                .withVerifyByRecompute(true),
            metrics,
            hooks));
  }

  /**
   * The engine underneath, for a caller that streams tokens or submits without waiting.
   *
   * @return the engine; closing this closes it
   */
  public GenerationEngine engine() {
    return engine;
  }

  /**
   * The most tokens (prompt plus output) of one request: the model's context, or the device
   * pool if smaller.
   *
   * @return the limit
   */
  public int contextLimit() {
    return engine.contextLimit();
  }

  /**
   * The model.
   *
   * @return the model
   */
  public ServingModel model() {
    return model;
  }

  /**
   * The running totals, readable from any thread.
   *
   * @return the stats
   */
  public EngineStats stats() {
    return engine.stats();
  }

  /**
   * Rank 0's replicated counters, read on rank 0's thread.
   *
   * @return the counters
   * @throws InterruptedException if interrupted while waiting for that thread
   */
  public RankEngineStats engineStats() throws InterruptedException {
    return engine.onEngineThread(s -> s.engine.stats());
  }

  /**
   * Rank 0's speculative decoding counts, per tier a request's prefix came from (all zero for a
   * model without a draft), read on rank 0's thread.
   *
   * @return the counts
   * @throws InterruptedException if interrupted while waiting for that thread
   */
  public io.kvtier.core.rank.SpeculationStats speculation() throws InterruptedException {
    return engine.onEngineThread(s -> s.engine.speculation());
  }

  /** Shortens the no-progress bound, for tests of a stuck copy. */
  void stallTimeout(Duration timeout) {
    engine.stallTimeout(timeout);
  }

  /** Runs {@code action} on rank 0's thread between ticks; for tests that look at its cache. */
  <T> T onEngineThread(Function<RankSlot, T> action) throws InterruptedException {
    return engine.onEngineThread(action);
  }

  /**
   * Greedily generates {@code maxTokens} tokens after {@code prompt}, reusing cached KV: one
   * request of the serving engine, waited for.
   *
   * @param prompt the prompt's token ids, not empty, each in the vocabulary
   * @param maxTokens tokens to generate, at least 1
   * @return the tokens and where the prompt's KV came from
   * @throws IllegalArgumentException if the request does not fit the model or the context limit
   * @throws RequestFailedException if the engine rejected the request (a load-back that fails
   *     sends the request back to be recomputed: it costs time, never the answer)
   * @throws IllegalStateException if the request made no progress for a long time (a stuck copy)
   *     and was aborted, or the engine is closed
   * @throws io.kvtier.core.rank.RankGroupFailedException if the rank group failed; every later
   *     call throws it too
   * @throws GenerationEngine.EngineBusyException if too many requests wait
   * @throws InterruptedException if interrupted while waiting; the request was cancelled and has
   *     ended
   */
  public Completion generate(int[] prompt, int maxTokens) throws InterruptedException {
    return generate(prompt, maxTokens, Sampling.GREEDY);
  }

  /**
   * Generates up to {@code maxTokens} tokens after {@code prompt}, chosen as {@code sampling}
   * says (the same seed gives the same tokens, with or without the cache), and waits for them.
   *
   * @param prompt the prompt's token ids, not empty, each in the vocabulary
   * @param maxTokens tokens to generate, at least 1
   * @param sampling how tokens are chosen; other than {@link Sampling#GREEDY} only for a model
   *     that samples
   * @return the tokens and where the prompt's KV came from
   * @throws IllegalArgumentException if the request does not fit the model or the context limit,
   *     or it samples and the model decodes greedily only
   * @throws RequestFailedException if the engine rejected the request
   * @throws IllegalStateException if the request made no progress for a long time, or the engine
   *     is closed
   * @throws io.kvtier.core.rank.RankGroupFailedException if the rank group failed
   * @throws GenerationEngine.EngineBusyException if too many requests wait
   * @throws InterruptedException if interrupted while waiting; the request was cancelled
   */
  public Completion generate(int[] prompt, int maxTokens, Sampling sampling)
      throws InterruptedException {
    CompletableFuture<Completion> result = new CompletableFuture<>();
    GenerationEngine.Generation generation =
        engine.submit(
            new GenerationRequest(prompt, maxTokens, 0, TransferRole.NONE, 0, sampling),
            new GenerationEngine.TokenStream() {
              @Override
              public void token(int token) {}

              @Override
              public void finished(Completion completion) {
                result.complete(completion);
              }

              @Override
              public void failed(Throwable cause) {
                result.completeExceptionally(cause);
              }
            });
    try {
      return unwrap(result);
    } catch (InterruptedException e) {
      generation.cancel();
      // Wait for the end (uninterruptibly), so that the request holds nothing once this throws.
      try {
        result.join();
      } catch (RuntimeException ended) {
        // Ended either way.
      }
      throw e;
    }
  }

  private static Completion unwrap(CompletableFuture<Completion> result)
      throws InterruptedException {
    try {
      return result.get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  /**
   * Does nothing: the engine's thread ticks by itself when idle, so backups commit and the
   * occupancy stays current without a caller's tick.
   */
  public void sync() {}

  /**
   * Waits until every backup and load-back has finished copying and is committed: the cache is
   * then idle, for a graceful shutdown or a test's final checks.
   *
   * @throws InterruptedException if interrupted while waiting
   * @throws IllegalStateException if copies make no progress for a long wait
   */
  public void drain() throws InterruptedException {
    engine.drain();
  }

  /** Stops the rank group and closes every rank's backends. Idempotent. */
  @Override
  public void close() {
    engine.close();
  }
}
