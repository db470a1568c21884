package io.kvtier.cli.model;

import io.kvtier.core.KvTierBackends;
import io.kvtier.core.cache.Admission;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.cache.LoadBack;
import io.kvtier.core.cache.PoolExhaustedException;
import io.kvtier.core.cache.PrefetchOutcome;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.RequestOptions;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderRegistries;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferFailedException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Serves the {@link TinyTransformer} on one rank with kvtier's cache: the single-rank driver of
 * the HTTP server and of the end-to-end tests.
 *
 * <p>Per request: with an L3 tier, first start a prefetch of the prompt's pages that only the
 * store has and sync until it is decided (the fetched pages become host-only tree nodes); admit
 * the prompt (all but its last token, so that at least one token is computed and gives the first
 * logits), which locks the cached prefix and may start a load-back from the host; allocate
 * device pages for the prompt; prefill the uncached tokens layer by layer, waiting for each layer
 * of the pending load-backs before reading it; decode greedily, allocating pages as the sequence
 * grows; finish with every token whose KV the pages hold, which inserts them into the tree; sync
 * to commit the copies that have finished (and the L3 writes of nodes committed to the host,
 * which a background thread puts into the store).
 *
 * <p>Not thread-safe, like the {@link RankCache} it drives: one thread calls it.
 */
public final class ModelEngine implements AutoCloseable {
  /**
   * Attempts of a request whose load-backs failed to copy, before giving up; attempts after the
   * first load no pages back.
   */
  static final int MAX_ATTEMPTS = 3;
  private static final System.Logger LOG = System.getLogger(ModelEngine.class.getName());
  /** The longest wait for write-back copies that would free device pages. */
  private static final long WRITE_BACK_WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);
  private static final long POLL_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
  /**
   * The longest wait for an L3 prefetch beyond its own timeout cap: the policy decides it
   * (timeout, or the store's answer), so this only bounds a store that never answers.
   */
  private static final long PREFETCH_GUARD_NANOS = TimeUnit.SECONDS.toNanos(30);

  private final TinyTransformer model;
  private final RankCache cache;
  private final TransferEngine transfers;
  private final Optional<KvTierBackends> owned;
  private final Optional<L3Executor> ownedL3;
  private final ForwardPass pass;
  private final PagedKv kv;
  private final int pageSize;
  private final int contextLimit;
  private final int[] table;
  private final EngineStats stats;
  private long nextRequestId;
  private boolean closed;

  /**
   * Creates an engine over a cache whose memory the caller opened and closes.
   *
   * @param model the model, whose KV layout the device pool must have
   * @param cache the rank's cache, over {@code device}
   * @param device the device pool the cache's slots index
   * @param transfers the transfer engine of the cache, polled while waiting for write-backs
   */
  public ModelEngine(TinyTransformer model, RankCache cache, DeviceMemory device,
      TransferEngine transfers) {
    this(model, cache, device, transfers, Optional.empty(), Optional.empty(), Optional.empty());
  }

  private ModelEngine(TinyTransformer model, RankCache cache, DeviceMemory device,
      TransferEngine transfers, Optional<KvTierBackends> owned, Optional<L3Executor> ownedL3,
      Optional<KvStore> store) {
    this.model = Objects.requireNonNull(model, "model");
    this.cache = Objects.requireNonNull(cache, "cache");
    this.transfers = Objects.requireNonNull(transfers, "transfers");
    this.owned = owned;
    this.ownedL3 = ownedL3;
    this.kv = new PagedKv(Objects.requireNonNull(device, "device"), model.config());
    this.pass = model.newForwardPass();
    this.pageSize = cache.config().pageSize();
    // One request holds at most every device page; a longer one could never be served.
    this.contextLimit = (int) Math.min(model.config().maxContext(),
        (long) cache.config().devicePages() * pageSize);
    this.table = new int[(contextLimit + pageSize - 1) / pageSize];
    this.stats = new EngineStats(cache.deviceUsage(), cache.hostUsage(), cache.stats(),
        cache.l3Stats(), store);
  }

  /**
   * Opens the backends of rank 0 from a config and an engine over them, which closes them. With
   * {@code kvtier.store} set, the cache gets an L3 tier on that store, its calls on a background
   * thread.
   *
   * @param model the model; the config's KV layout must be the model's
   * @param config the configuration, {@code kvtier.ranks=1}
   * @param metrics where the backends report transfers
   * @return the engine
   * @throws IllegalArgumentException if the layout is not the model's, naming the keys to set
   */
  public static ModelEngine open(TinyTransformer model, KvTierConfig config,
      BackendMetrics metrics) {
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
  public static ModelEngine open(TinyTransformer model, KvTierConfig config,
      BackendMetrics metrics, UnaryOperator<KvStore> wrapStore) {
    return open(model, config, metrics, wrapStore, () -> L3Executor.background("kvtier-l3"));
  }

  /** As above, with the L3 executor chosen: tests run the store calls inline for determinism. */
  static ModelEngine open(TinyTransformer model, KvTierConfig config, BackendMetrics metrics,
      UnaryOperator<KvStore> wrapStore, Supplier<L3Executor> l3Executor) {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(wrapStore, "wrapStore");
    model.config().checkLayout(config.layout());
    if (config.ranks() != 1) {
      throw new IllegalArgumentException("kvtier.ranks=" + config.ranks()
          + ": the model engine serves one rank; set kvtier.ranks=1");
    }
    KvTierBackends backends = KvTierBackends.open(config, ProviderRegistries.discover(), 0,
        TimeSource.SYSTEM, Objects.requireNonNull(metrics, "metrics"));
    L3Executor executor = null;
    try {
      Optional<KvStore> store = backends.store().map(wrapStore);
      RankCache cache;
      if (store.isPresent()) {
        executor = l3Executor.get();
        L3Setup opened = backends.l3Setup(executor).orElseThrow();
        cache = RankCache.withMemory(config.cache(), backends.device(), backends.host(),
            backends.transfers(), new L3Setup(opened.config(), store.get(), executor,
                opened.time(), opened.rank(), opened.worldSize()));
      } else {
        cache = RankCache.withMemory(config.cache(), backends.device(), backends.host(),
            backends.transfers());
      }
      return new ModelEngine(model, cache, backends.device(), backends.transfers(),
          Optional.of(backends), Optional.ofNullable(executor), store);
    } catch (RuntimeException | Error e) {
      if (executor != null) {
        executor.close();
      }
      backends.close();
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
   * The running totals, readable from any thread.
   *
   * @return the stats
   */
  public EngineStats stats() {
    return stats;
  }

  /**
   * Greedily generates {@code maxTokens} tokens after {@code prompt}, reusing cached KV.
   *
   * @param prompt the prompt's token ids, not empty, each in the vocabulary
   * @param maxTokens tokens to generate, at least 1
   * @return the tokens and where the prompt's KV came from
   * @throws IllegalArgumentException if the request does not fit the model or the context limit
   * @throws PoolExhaustedException if the device pool cannot hold the request even after
   *     eviction and after waiting for write-back copies
   * @throws InterruptedException if interrupted while waiting for a copy
   */
  public Completion generate(int[] prompt, int maxTokens) throws InterruptedException {
    checkOpen();
    model.checkRequest(prompt, maxTokens, contextLimit);
    RequestOptions options = RequestOptions.DEFAULT;
    for (int attempt = 1; ; attempt++) {
      cache.sync();
      long id = nextRequestId++;
      // Admitting all but the last token keeps at least one token to compute: the first logits
      // come from the last prompt token's hidden state, which no cache holds.
      int[] matchable = Arrays.copyOf(prompt, prompt.length - 1);
      // A retry loads nothing back from the host, so pages fetched from L3 would go unused.
      if (attempt == 1 && cache.startPrefetch(id, matchable, options)) {
        awaitPrefetch(id);
      }
      Admission admission = cache.admit(id, matchable, options);
      Optional<PrefetchOutcome> prefetched = cache.admittedPrefetch(id);      try {
        Completion completion = run(id, admission, prefetched, prompt, maxTokens);
        stats.recordCompletion(prompt.length, completion);
        return completion;
      } catch (TransferFailedException e) {
        abortQuietly(id, e);
        settle(admission.pendingLoads());
        stats.recordLoadFailure();
        // A failed load leaves its pages on the host, where the next admission would find them
        // and try again: compute them instead, so that a flaky link cannot fail the request.
        options = options.withLoadBackQuota(0);
        if (attempt >= MAX_ATTEMPTS) {
          throw new IllegalStateException("request failed " + attempt + " times because a"
              + " load-back from the host tier failed to copy: " + e.getMessage(), e);
        }
      } catch (PoolExhaustedException e) {
        abortQuietly(id, e);
        stats.recordPoolExhausted();
        throw e;
      } catch (RuntimeException | Error | InterruptedException e) {
        abortQuietly(id, e);
        throw e;
      } finally {
        cache.sync();
        recordUsage();
      }
    }
  }

  /**
   * Syncs until the request's L3 prefetch is decided: its pages are then host-only tree nodes
   * that the admission loads back like any host hit. The policy ends the wait (at once, when
   * every fetch is done, or at the timeout); a store that never answers is given up after a
   * long guard, and the request computes what the prefetch would have brought.
   */
  private void awaitPrefetch(long id) throws InterruptedException {
    long guard = PREFETCH_GUARD_NANOS
        + cache.l3Config().map(c -> c.timeoutCap().toNanos()).orElse(0L);
    long deadline = System.nanoTime() + guard;
    try {
      while (true) {
        cache.sync();
        if (cache.prefetchState(id) != RankCache.PrefetchState.RUNNING) {
          return;
        }
        if (System.nanoTime() - deadline > 0) {
          LOG.log(System.Logger.Level.WARNING, "L3 prefetch of request " + id + " undecided"
              + " after " + TimeUnit.NANOSECONDS.toSeconds(guard) + " s: cancelled, the"
              + " request computes its prompt instead");
          cache.cancelPrefetch(id);
          return;
        }
        // The store works on its own thread; its progress reaches the tree only at a sync.
        LockSupport.parkNanos(POLL_NANOS);
        if (Thread.interrupted()) {
          throw new InterruptedException("interrupted while waiting for an L3 prefetch");
        }
      }
    } catch (RuntimeException | Error | InterruptedException e) {
      try {
        cache.cancelPrefetch(id);
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  private void recordUsage() {
    stats.recordUsage(cache.deviceUsage(), cache.hostUsage(), cache.stats(), cache.l3Stats());
  }

  private Completion run(long id, Admission admission, Optional<PrefetchOutcome> prefetched,
      int[] prompt, int maxTokens) throws InterruptedException {
    int cached = admission.devicePrefixLength();
    int[] sequence = Arrays.copyOf(prompt, prompt.length + maxTokens);
    allocate(id, prompt.length);
    List<LoadBack> loads = admission.pendingLoads();
    LayerGate gate = loads.isEmpty() ? LayerGate.OPEN : layer -> {
      for (LoadBack load : loads) {
        cache.awaitLoadLayer(load, layer);
      }
    };
    int next = pass.forward(sequence, cached, prompt.length, kv, gate);
    for (int i = 0; i < maxTokens; i++) {
      int position = prompt.length + i;
      sequence[position] = next;
      if (i + 1 < maxTokens) {
        allocate(id, position + 1);
        next = pass.forward(sequence, position, position + 1, kv, LayerGate.OPEN);
      }
    }
    // The last generated token was never fed back, so its KV was never computed: insert the
    // tokens before it. A fresh array, since the tree keeps the array it is given.
    cache.finish(id, Arrays.copyOf(sequence, sequence.length - 1));
    int loaded = admission.loadedLength();
    // Pages a prefetch fetched reach the device as a load-back from the host: the part of the
    // load-back inside the prefetched range is the L3 hit.
    int l3 = prefetched.map(o -> o.overlap(cached - loaded, cached)).orElse(0);
    return new Completion(Arrays.copyOfRange(sequence, prompt.length, sequence.length), cached,
        cached - loaded, loaded - l3, l3);
  }

  /** Makes the request's pages cover {@code tokens} tokens and binds the KV view to them. */
  private void allocate(long id, int tokens) throws InterruptedException {
    long deadline = 0;
    while (true) {
      try {
        cache.allocateTokens(id, tokens);
        kv.bind(table, cache.copyPageTable(id, table, 0));
        return;
      } catch (PoolExhaustedException e) {
        if (e.awaitingWriteBack() == 0) {
          throw e;
        }
        // Write-back victims free their device pages at their backup's commit: wait for the
        // copies to finish and commit them, then retry.
        if (deadline == 0) {
          deadline = System.nanoTime() + WRITE_BACK_WAIT_NANOS;
        }
        if (cache.sync() == 0) {
          if (transfers.inFlight() == 0 && cache.sync() == 0
              || System.nanoTime() - deadline > 0) {
            throw e;
          }
          LockSupport.parkNanos(POLL_NANOS);
          if (Thread.interrupted()) {
            throw new InterruptedException("interrupted while waiting for write-back copies");
          }
        }
      }
    }
  }

  /** Waits until every layer of the loads has finished copying or failed, so a sync commits. */
  private void settle(List<LoadBack> loads) throws InterruptedException {
    for (LoadBack load : loads) {
      for (int layer = 0; layer < load.layers(); layer++) {
        try {
          cache.awaitLoadLayer(load, layer);
        } catch (TransferFailedException e) {
          // Expected for the failed load: it is committed as failed by the next sync.
        }
      }
    }
  }

  private void abortQuietly(long id, Throwable cause) {
    if (cache.isActive(id)) {
      try {
        cache.abort(id);
      } catch (RuntimeException e) {
        cause.addSuppressed(e);
      }
    }
  }

  /**
   * Commits the copies that have finished; a server calls it when idle so that backups become
   * visible and occupancy metrics stay current.
   *
   * @return acks committed
   */
  public int sync() {
    checkOpen();
    int committed = cache.sync();
    recordUsage();
    return committed;
  }

  /**
   * Waits until every backup and load-back has finished copying and is committed: the cache is
   * then idle, for a graceful shutdown or a test's final checks.
   *
   * @throws InterruptedException if interrupted while waiting
   * @throws IllegalStateException if copies are still outstanding after a long wait
   */
  public void drain() throws InterruptedException {
    checkOpen();
    long deadline = System.nanoTime() + WRITE_BACK_WAIT_NANOS;
    while (cache.outstandingOperations() > 0) {
      if (cache.sync() == 0) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException(cache.outstandingOperations() + " copies still"
              + " outstanding after " + TimeUnit.NANOSECONDS.toSeconds(WRITE_BACK_WAIT_NANOS)
              + " s: a transfer is stuck");
        }
        LockSupport.parkNanos(POLL_NANOS);
        if (Thread.interrupted()) {
          throw new InterruptedException("interrupted while draining copies");
        }
      }
    }
    recordUsage();
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("the model engine is closed");
    }
  }

  /**
   * Closes the L3 thread and the backends if this engine opened them (the thread first: it may be
   * in a store call). Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      ownedL3.ifPresent(L3Executor::close);
    } finally {
      owned.ifPresent(KvTierBackends::close);
    }
  }
}
