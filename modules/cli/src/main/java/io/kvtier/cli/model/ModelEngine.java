package io.kvtier.cli.model;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.core.rank.RankEngine;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankRequest;
import io.kvtier.core.rank.RequestListener;
import io.kvtier.core.rank.RequestOutcome;
import io.kvtier.core.rank.TickCommands;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.TimeSource;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Serves the {@link TinyTransformer} on one rank with kvtier's cache: a thin adapter that turns
 * one {@link #generate} call into one request of a single-rank {@link RankEngine} running a
 * {@link TinyModelRunner}, the same rank loop the simulator and the multi-rank tests run.
 *
 * <p>Per request: submit it as the tick's arrival, tick the engine until its {@link
 * RequestListener} reports the end, and build the {@link Completion} from the tokens the runner
 * generated and the hits the engine counted at admission. Admission, L3 prefetch waits, waits
 * for write-backs, load-backs and their failure, finish and sync are the engine's (ARCHITECTURE.md
 * §6): a load-back that fails to copy ends the request with {@link RequestOutcome#LOAD_FAILED},
 * which {@link #generate} reports as a {@link RequestFailedException}.
 *
 * <p>Not thread-safe, like the {@link RankEngine} it drives: one thread calls it.
 */
public final class ModelEngine implements AutoCloseable {
  /**
   * One rank: the digest check compares ranks, so it has nothing to compare, and the collective
   * guard checks a schedule no other rank shares.
   */
  static final RankEngineConfig ENGINE_CONFIG =
      RankEngineConfig.DEFAULTS.withDigestInterval(0).withGuardCollective(false);

  private static final AtomicLong GROUPS = new AtomicLong();

  /**
   * The longest time a request or a drain may go without progress (no admission, token, end or
   * change in the outstanding copies): only a stuck copy or a store that never answers takes
   * this long, and the request is then aborted rather than left to hang its client.
   */
  private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(30);

  private static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);

  private final TinyTransformer model;
  private final RankCache cache;
  private final RankEngine engine;
  private final Optional<Collective> ownedCollective;
  private final Optional<KvTierBackends> owned;
  private final Optional<L3Executor> ownedL3;
  private final int contextLimit;
  private long stallNanos;
  private final EngineStats stats;
  private final Tracker tracker = new Tracker();
  private long nextRequestId;
  private boolean closed;

  /**
   * Creates an engine over a cache and a one-rank collective that the caller opened and closes.
   *
   * @param model the model, whose KV layout the device pool must have
   * @param cache the rank's cache, over {@code device}
   * @param device the device pool the cache's slots index
   * @param collective a group of one rank
   * @throws IllegalArgumentException if the collective has more than one rank
   */
  public ModelEngine(
      TinyTransformer model, RankCache cache, DeviceMemory device, Collective collective) {
    this(
        model,
        cache,
        device,
        collective,
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty());
  }

  private ModelEngine(
      TinyTransformer model,
      RankCache cache,
      DeviceMemory device,
      Collective collective,
      Optional<Collective> ownedCollective,
      Optional<KvTierBackends> owned,
      Optional<L3Executor> ownedL3,
      Optional<KvStore> store) {
    this.model = Objects.requireNonNull(model, "model");
    this.cache = Objects.requireNonNull(cache, "cache");
    Objects.requireNonNull(device, "device");
    if (Objects.requireNonNull(collective, "collective").size() != 1) {
      throw new IllegalArgumentException(
          "collective of "
              + collective.size()
              + " ranks: the model engine serves one rank; give it a group of one");
    }
    this.ownedCollective = ownedCollective;
    this.owned = owned;
    this.ownedL3 = ownedL3;
    this.engine =
        new RankEngine(
            cache, collective, new TinyModelRunner(model, device, tracker), ENGINE_CONFIG);
    engine.setRequestListener(tracker);
    // One request holds at most every device page; a longer one could never be served.
    this.contextLimit =
        (int)
            Math.min(
                model.config().maxContext(),
                (long) cache.config().devicePages() * cache.config().pageSize());
    // A prefetch is decided by its policy within the timeout cap: the bound comes on top.
    this.stallNanos = STALL_NANOS + cache.l3Config().map(c -> c.timeoutCap().toNanos()).orElse(0L);
    this.stats =
        new EngineStats(
            cache.deviceUsage(), cache.hostUsage(), cache.stats(), cache.l3Stats(), store, 1);
  }

  /**
   * Opens the backends of rank 0 from a config, a one-rank group of its collective, and an engine
   * over them, which closes them. With {@code kvtier.store} set, the cache gets an L3 tier on that
   * store, its calls on a background thread.
   *
   * @param model the model; the config's KV layout must be the model's
   * @param config the configuration, {@code kvtier.ranks=1}
   * @param metrics where the backends report transfers
   * @return the engine
   * @throws IllegalArgumentException if the layout is not the model's, naming the keys to set
   */
  public static ModelEngine open(
      TinyTransformer model, KvTierConfig config, BackendMetrics metrics) {
    return open(model, config, metrics, UnaryOperator.identity());
  }

  /**
   * Like {@link #open(TinyTransformer, KvTierConfig, BackendMetrics)}, with the L3 store wrapped
   * before the cache sees it: to inject faults, or to instrument the store.
   *
   * @param model the model; the config's KV layout must be the model's
   * @param config the configuration, {@code kvtier.ranks=1}
   * @param metrics where the backends report transfers
   * @param wrapStore applied to the opened store, if {@code kvtier.store} names one; the backends
   *     close the store itself, not the wrapper
   * @return the engine
   * @throws IllegalArgumentException if the layout is not the model's, naming the keys to set
   */
  public static ModelEngine open(
      TinyTransformer model,
      KvTierConfig config,
      BackendMetrics metrics,
      UnaryOperator<KvStore> wrapStore) {
    return open(model, config, metrics, wrapStore, () -> L3Executor.background("kvtier-l3"));
  }

  /** As above, with the L3 executor chosen: tests run the store calls inline for determinism. */
  static ModelEngine open(
      TinyTransformer model,
      KvTierConfig config,
      BackendMetrics metrics,
      UnaryOperator<KvStore> wrapStore,
      Supplier<L3Executor> l3Executor) {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(wrapStore, "wrapStore");
    model.config().checkLayout(config.layout());
    if (config.ranks() != 1) {
      throw new IllegalArgumentException(
          "kvtier.ranks="
              + config.ranks()
              + ": the model engine serves one rank; set kvtier.ranks=1");
    }
    KvTierBackends backends =
        KvTierBackends.open(
            config,
            ProviderRegistries.discover(),
            0,
            TimeSource.SYSTEM,
            Objects.requireNonNull(metrics, "metrics"));
    L3Executor executor = null;
    Collective collective = null;
    try {
      CollectiveProvider provider = backends.providers().collective();
      // Its own group name: several engines may live in one JVM (tests), each a group of one.
      collective =
          provider.join(
              CollectiveSpec.of(
                  "kvtier-model-engine-" + GROUPS.incrementAndGet(),
                  1,
                  0,
                  config.collectiveTimeout()),
              backends.providers().context(provider, 0, TimeSource.SYSTEM, metrics));
      Optional<KvStore> store = backends.store().map(wrapStore);
      RankCache cache;
      if (store.isPresent()) {
        executor = l3Executor.get();
        L3Setup opened = backends.l3Setup(executor).orElseThrow();
        cache =
            RankCache.withMemory(
                config.cache(),
                backends.device(),
                backends.host(),
                backends.transfers(),
                new L3Setup(
                    opened.config(),
                    store.get(),
                    executor,
                    opened.time(),
                    opened.rank(),
                    opened.worldSize()));
      } else {
        cache =
            RankCache.withMemory(
                config.cache(), backends.device(), backends.host(), backends.transfers());
      }
      return new ModelEngine(
          model,
          cache,
          backends.device(),
          collective,
          Optional.of(collective),
          Optional.of(backends),
          Optional.ofNullable(executor),
          store);
    } catch (RuntimeException | Error e) {
      try {
        if (collective != null) {
          collective.close();
        }
        if (executor != null) {
          executor.close();
        }
      } finally {
        backends.close();
      }
      throw e;
    }
  }

  /**
   * The most tokens (prompt plus output) of one request: the model's context, or the device
   * pool if smaller.
   *
   * @return the limit
   */
  public int contextLimit() {
    return contextLimit;
  }

  /**
   * The model.
   *
   * @return the model
   */
  public TinyTransformer model() {
    return model;
  }

  /**
   * The cache, for inspection on the engine's thread.
   *
   * @return the cache
   */
  public RankCache cache() {
    return cache;
  }

  /**
   * The rank engine's replicated counters, for inspection on the engine's thread.
   *
   * @return the counters
   */
  public RankEngineStats engineStats() {
    return engine.stats();
  }

  /** Shortens the no-progress bound, for tests of a stuck copy. */
  void stallTimeout(java.time.Duration timeout) {
    this.stallNanos = timeout.toNanos();
  }

  /**
   * The running totals, readable from any thread.
   *
   * @return the stats
   */
  public EngineStats stats() {
    return stats;
  }

  /**
   * Greedily generates {@code maxTokens} tokens after {@code prompt}, reusing cached KV: one
   * request of the rank engine, ticked until it ends.
   *
   * @param prompt the prompt's token ids, not empty, each in the vocabulary
   * @param maxTokens tokens to generate, at least 1
   * @return the tokens and where the prompt's KV came from
   * @throws IllegalArgumentException if the request does not fit the model or the context limit
   * @throws RequestFailedException if the engine rejected the request (its pages cannot be
   *     allocated even with nothing else running) or a load-back it needed failed to copy
   * @throws IllegalStateException if the request made no progress for a long time (a stuck
   *     copy); it was aborted
   * @throws io.kvtier.core.rank.RankGroupFailedException if a step of the engine failed; every
   *     later call throws it too
   * @throws InterruptedException if interrupted while waiting for a copy; the request was aborted
   */
  public Completion generate(int[] prompt, int maxTokens) throws InterruptedException {
    checkOpen();
    model.checkRequest(prompt, maxTokens, contextLimit);
    RankRequest request = RankRequest.of(nextRequestId++, prompt, maxTokens);
    engine.checkRequest(request);
    tracker.start(request.id(), maxTokens);
    try {
      tickUntil(TickCommands.arrive(List.of(request)), () -> tracker.outcome != null, request.id());
    } finally {
      recordUsage();
    }
    return switch (tracker.outcome) {
      case FINISHED -> {
        if (tracker.generated != maxTokens) {
          throw new IllegalStateException(
              "request id="
                  + request.id()
                  + " finished with "
                  + tracker.generated
                  + " tokens, not max_tokens="
                  + maxTokens);
        }
        Completion c =
            new Completion(
                tracker.tokens.clone(),
                tracker.deviceHits + tracker.hostHits + tracker.l3Hits,
                tracker.deviceHits,
                tracker.hostHits,
                tracker.l3Hits);
        stats.recordCompletion(prompt.length, c);
        yield c;
      }
      case LOAD_FAILED -> {
        stats.recordLoadFailure();
        throw new RequestFailedException(
            RequestOutcome.LOAD_FAILED,
            "request id="
                + request.id()
                + " was aborted because a load-back of its cached prefix from the"
                + " host tier failed to copy: send it again");
      }
      case REJECTED -> {
        stats.recordPoolExhausted();
        throw new RequestFailedException(
            RequestOutcome.REJECTED,
            "request id=" + request.id() + " was rejected: " + tracker.rejection);
      }
      case ABORTED ->
          throw new RequestFailedException(
              RequestOutcome.ABORTED, "request id=" + request.id() + " was aborted");
    };
  }

  /**
   * Ticks, starting with {@code first}, until {@code done}; parks briefly after a tick without
   * progress (the copies finish by the wall clock). Aborts request {@code id} (if not negative)
   * when interrupted or stalled.
   */
  private void tickUntil(TickCommands first, BooleanSupplier done, long id)
      throws InterruptedException {
    TickCommands commands = first;
    Progress progress = progress();
    long progressAt = System.nanoTime();
    while (true) {
      engine.tick(commands);
      commands = TickCommands.NONE;
      if (done.getAsBoolean()) {
        return;
      }
      Progress now = progress();
      if (!now.equals(progress)) {
        progress = now;
        progressAt = System.nanoTime();
        continue;
      }
      if (System.nanoTime() - progressAt > stallNanos) {
        String what = id < 0 ? "the cache" : "request id=" + id;
        IllegalStateException stalled =
            new IllegalStateException(
                what
                    + " made no progress"
                    + " for "
                    + TimeUnit.NANOSECONDS.toSeconds(stallNanos)
                    + " s ("
                    + engine
                    + ", "
                    + cache.outstandingOperations()
                    + " copies outstanding): a transfer or the L3"
                    + " store is stuck"
                    + (id < 0 ? "" : "; the request was aborted"));
        abortQuietly(id, stalled);
        throw stalled;
      }
      LockSupport.parkNanos(POLL_NANOS);
      if (Thread.interrupted()) {
        InterruptedException e = new InterruptedException("interrupted while waiting for copies");
        abortQuietly(id, e);
        throw e;
      }
    }
  }

  private Progress progress() {
    RankEngineStats s = engine.stats();
    return new Progress(
        s.admitted(),
        s.finished() + s.aborted() + s.rejected() + s.loadFailureAborts(),
        s.computedTokens(),
        s.generatedTokens(),
        cache.outstandingOperations());
  }

  /** What a tick that makes progress changes. */
  private record Progress(
      long admitted, long ended, long computed, long generated, int outstanding) {}

  private void abortQuietly(long id, Throwable cause) {
    if (id < 0 || tracker.outcome != null) {
      return;
    }
    try {
      engine.tick(new TickCommands(List.of(), new long[] {id}, false));
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  private void recordUsage() {
    stats.recordUsage(cache.deviceUsage(), cache.hostUsage(), cache.stats(), cache.l3Stats());
  }

  /**
   * Runs one tick without arrivals, which commits the copies that have finished; a server calls
   * it when idle so that backups become visible and occupancy metrics stay current.
   */
  public void sync() {
    checkOpen();
    try {
      engine.tick(TickCommands.NONE);
    } finally {
      recordUsage();
    }
  }

  /**
   * Ticks until every backup and load-back has finished copying and is committed: the cache is
   * then idle, for a graceful shutdown or a test's final checks.
   *
   * @throws InterruptedException if interrupted while waiting
   * @throws IllegalStateException if copies make no progress for a long wait
   */
  public void drain() throws InterruptedException {
    checkOpen();
    try {
      if (cache.outstandingOperations() > 0) {
        tickUntil(TickCommands.NONE, () -> cache.outstandingOperations() == 0, -1);
      }
    } finally {
      recordUsage();
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("the model engine is closed");
    }
  }

  /**
   * Closes the collective, the L3 thread and the backends if this engine opened them (the thread
   * before the backends: it may be in a store call). Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      ownedCollective.ifPresent(Collective::close);
    } finally {
      try {
        ownedL3.ifPresent(L3Executor::close);
      } finally {
        owned.ifPresent(KvTierBackends::close);
      }
    }
  }

  /**
   * The request in flight: the engine's milestones and the runner's tokens for it, on the
   * engine's thread. Other ids cannot occur (one request at a time) and are ignored.
   */
  private static final class Tracker implements RequestListener, TinyModelRunner.TokenListener {
    long id = -1;
    int[] tokens = new int[0];
    int generated;
    int deviceHits;
    int hostHits;
    int l3Hits;
    String rejection;
    RequestOutcome outcome;

    void start(long requestId, int maxTokens) {
      id = requestId;
      tokens = new int[maxTokens];
      generated = 0;
      deviceHits = 0;
      hostHits = 0;
      l3Hits = 0;
      rejection = null;
      outcome = null;
    }

    @Override
    public void generated(long requestId, int token) {
      if (requestId == id && generated < tokens.length) {
        tokens[generated] = token;
      }
      if (requestId == id) {
        generated++;
      }
    }

    @Override
    public void admitted(
        long tick, long requestId, int deviceHitTokens, int hostHitTokens, int l3HitTokens) {
      if (requestId == id) {
        deviceHits = deviceHitTokens;
        hostHits = hostHitTokens;
        l3Hits = l3HitTokens;
      }
    }

    @Override
    public void rejected(long tick, long requestId, String reason) {
      if (requestId == id) {
        rejection = reason;
      }
    }

    @Override
    public void ended(long tick, long requestId, RequestOutcome how) {
      if (requestId == id) {
        outcome = how;
      }
    }
  }
}
