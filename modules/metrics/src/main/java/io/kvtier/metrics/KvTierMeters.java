package io.kvtier.metrics;

import io.kvtier.core.cache.PoolUsage;
import io.kvtier.serving.EngineStats;
import io.kvtier.spi.KvStoreStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * Binds a model engine's {@link EngineStats} to a Micrometer registry. Every meter reads the
 * stats when scraped (function counters and gauges), so the request path pays nothing.
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>kvtier.cache.hits</td><td>counter</td><td>tier=device|host|l3</td>
 *       <td>prompt tokens whose KV a tier supplied (l3: fetched from the store by a prefetch for
 *       the request, then loaded back through the host tier)</td></tr>
 *   <tr><td>kvtier.cache.misses</td><td>counter</td><td>tier=device|host|l3</td>
 *       <td>prompt tokens a tier did not supply, counted down the tiers: device misses are
 *       looked up in the host, host misses in L3 (with an L3 store), and the last tier's misses
 *       are computed by the model</td></tr>
 *   <tr><td>kvtier.cache.evictions</td><td>counter</td><td>tier</td>
 *       <td>pages freed by eviction</td></tr>
 *   <tr><td>kvtier.cache.backups, kvtier.cache.loads</td><td>counter</td>
 *       <td>outcome=committed|failed</td><td>device-to-host backups and load-backs</td></tr>
 *   <tr><td>kvtier.cache.restore.checks</td><td>counter</td><td>outcome=checked|mismatch</td>
 *       <td>host blocks (page, layer) whose CRC32C the serving rank checked before a load-back or
 *       an L3 write read them, and those whose bytes had changed (docs/CACHE.md, "Verified
 *       restores"); rank 0's own</td></tr>
 *   <tr><td>kvtier.cache.load.recomputes</td><td>counter</td><td></td>
 *       <td>requests whose load-back failed (a copy error or a checksum mismatch) and that went
 *       back to the queue to be recomputed ({@code --on-load-failure recompute}, the default);
 *       {@code kvtier.tokens{kind=recomputed_after_load_failure}} counts the prompt tokens those
 *       load-backs were to bring back</td></tr>
 *   <tr><td>kvtier.pool.pages</td><td>gauge</td><td>tier, state=free|evictable|protected</td>
 *       <td>tier occupancy</td></tr>
 *   <tr><td>kvtier.pool.capacity</td><td>gauge</td><td>tier</td><td>pages of the pool</td></tr>
 *   <tr><td>kvtier.requests</td><td>counter</td><td></td><td>completed requests</td></tr>
 *   <tr><td>kvtier.requests.failed</td><td>counter</td><td>reason</td>
 *       <td>pool_exhausted, load_failed</td></tr>
 *   <tr><td>kvtier.tokens</td><td>counter</td><td>kind=prompt|computed|generated|recomputed_after_load_failure</td>
 *       <td>tokens processed</td></tr>
 * </table>
 *
 * <p>With an L3 store, also:
 *
 * <table>
 *   <caption>L3 meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>kvtier.l3.writes</td><td>counter</td><td>outcome=committed|failed</td>
 *       <td>background writes of host-committed nodes to the store</td></tr>
 *   <tr><td>kvtier.l3.prefetches</td><td>counter</td>
 *       <td>outcome=done|skipped|timed_out|aborted</td><td>prefetches by how they ended
 *       (skipped: the hit was below the threshold or the host had no room)</td></tr>
 *   <tr><td>kvtier.l3.pages</td><td>counter</td><td>kind=written|inserted|missed</td>
 *       <td>pages written to the store, fetched into the host tier, and reserved but not
 *       fetched in time</td></tr>
 *   <tr><td>kvtier.l3.store.reads</td><td>counter</td><td>outcome=hit|miss|corrupt</td>
 *       <td>the store's own count of pages read: miss is every page not returned, corrupt the
 *       ones among them that failed the store's CRC32C (damaged at rest; docs/CACHE.md,
 *       "Verified restores"); with {@code kvtier.l3.pages{kind=missed}} and {@code
 *       kvtier.l3.prefetches{outcome=timed_out}} they say why L3 gave less than it had</td></tr>
 *   <tr><td>kvtier.l3.store.puts, kvtier.l3.store.evictions</td><td>counter</td><td></td>
 *       <td>pages the store stored and dropped for its capacity</td></tr>
 *   <tr><td>kvtier.l3.store.bytes</td><td>gauge</td><td></td>
 *       <td>page bytes the store holds</td></tr>
 * </table>
 *
 * <p>Under the ecosystem's names (vLLM, SGLang), also: {@code kvtier.prefix.cache.queries} and
 * {@code kvtier.prefix.cache.hits} (prompt tokens looked up and found), {@code
 * kvtier.cached.tokens{cache_source=device|host|storage}}, {@code
 * kvtier.kv.cache.usage.perc{tier}} (fraction of pages in use); and the rank loop's {@code
 * kvtier.engine.ticks}, {@code kvtier.engine.batched.ticks}, {@code kvtier.engine.request.steps}
 * {@code kvtier.engine.ranks} and {@code kvtier.engine.idle}. The request meters (TTFT, latency, running and waiting) are
 * {@link ServeMeters}'.
 *
 * <p>Transfer bytes and latency come from the backends through {@link
 * MicrometerBackendMetrics}, collective calls and latency through {@link TimedCollective}.
 */
public final class KvTierMeters {
  private KvTierMeters() {}

  /**
   * Registers the meters of one engine.
   *
   * @param registry where to register
   * @param engineStats the engine's stats, read at each scrape
   */
  public static void bind(MeterRegistry registry, Supplier<EngineStats> engineStats) {
    Objects.requireNonNull(registry, "registry");
    Objects.requireNonNull(engineStats, "engineStats");
    // One holder per engine; each meter reads the stats through it when scraped.
    StatsSource stats = new StatsSource(engineStats);
    prefixCache(registry, stats);
    counter(
        registry,
        stats,
        "kvtier.cache.hits",
        "prompt tokens whose KV the tier supplied",
        EngineStats::deviceHitTokens,
        "tier",
        "device");
    counter(
        registry,
        stats,
        "kvtier.cache.hits",
        "prompt tokens whose KV the tier supplied",
        EngineStats::hostHitTokens,
        "tier",
        "host");
    counter(
        registry,
        stats,
        "kvtier.cache.misses",
        "prompt tokens the tier did not supply",
        s -> s.promptTokens() - s.deviceHitTokens(),
        "tier",
        "device");
    // Without L3 the host's misses are the computed tokens; with it, L3 hits are host misses.
    counter(
        registry,
        stats,
        "kvtier.cache.misses",
        "prompt tokens the tier did not supply",
        s -> s.promptTokens() - s.deviceHitTokens() - s.hostHitTokens(),
        "tier",
        "host");
    counter(
        registry,
        stats,
        "kvtier.cache.evictions",
        "pages freed by eviction",
        s -> s.cacheStats().deviceEvictions(),
        "tier",
        "device");
    counter(
        registry,
        stats,
        "kvtier.cache.evictions",
        "pages freed by eviction",
        s -> s.cacheStats().hostEvictions(),
        "tier",
        "host");
    counter(
        registry,
        stats,
        "kvtier.cache.backups",
        "device-to-host backups",
        s -> s.cacheStats().backupsCommitted(),
        "outcome",
        "committed");
    counter(
        registry,
        stats,
        "kvtier.cache.backups",
        "device-to-host backups",
        s -> s.cacheStats().backupsFailed(),
        "outcome",
        "failed");
    counter(
        registry,
        stats,
        "kvtier.cache.loads",
        "host-to-device load-backs",
        s -> s.cacheStats().loadsCommitted(),
        "outcome",
        "committed");
    counter(
        registry,
        stats,
        "kvtier.cache.loads",
        "host-to-device load-backs",
        s -> s.cacheStats().loadsFailed(),
        "outcome",
        "failed");
    counter(
        registry,
        stats,
        "kvtier.cache.restore.checks",
        "host blocks (page, layer) checked by CRC32C before a load-back or L3 write read them",
        EngineStats::checkedHostBlocks,
        "outcome",
        "checked");
    counter(
        registry,
        stats,
        "kvtier.cache.restore.checks",
        "host blocks (page, layer) checked by CRC32C before a load-back or L3 write read them",
        EngineStats::hostChecksumMismatches,
        "outcome",
        "mismatch");
    counter(
        registry,
        stats,
        "kvtier.cache.load.recomputes",
        "requests whose load-back failed and that were recomputed instead",
        EngineStats::loadFailureRecomputes);
    counter(
        registry,
        stats,
        "kvtier.tokens",
        "tokens processed",
        EngineStats::loadFailureLostTokens,
        "kind",
        "recomputed_after_load_failure");
    counter(registry, stats, "kvtier.requests", "completed requests", EngineStats::requests);
    counter(
        registry,
        stats,
        "kvtier.requests.failed",
        "requests that failed",
        EngineStats::poolExhausted,
        "reason",
        "pool_exhausted");
    counter(
        registry,
        stats,
        "kvtier.requests.failed",
        "requests that failed",
        EngineStats::loadFailures,
        "reason",
        "load_failed");
    counter(
        registry,
        stats,
        "kvtier.tokens",
        "tokens processed",
        EngineStats::promptTokens,
        "kind",
        "prompt");
    counter(
        registry,
        stats,
        "kvtier.tokens",
        "tokens processed",
        EngineStats::computedTokens,
        "kind",
        "computed");
    counter(
        registry,
        stats,
        "kvtier.tokens",
        "tokens processed",
        EngineStats::generatedTokens,
        "kind",
        "generated");
    pool(registry, stats, "device", EngineStats::deviceUsage);
    pool(registry, stats, "host", EngineStats::hostUsage);
    if (stats.get().hasL3()) {
      bindL3(registry, stats);
    }
    if (stats.get().speculative()) {
      bindSpeculation(registry, stats);
    }
  }

  /**
   * Speculative decoding's meters, each per tier a request's prefix came from ({@code none},
   * {@code device}, {@code host}, {@code l3}), so that a tier that loses the draft's state shows
   * as a lower acceptance there (docs/SERVE.md).
   */
  private static void bindSpeculation(MeterRegistry registry, StatsSource stats) {
    for (io.kvtier.core.rank.SpeculationStats.Tier tier :
        io.kvtier.core.rank.SpeculationStats.Tier.values()) {
      String label = tier.label();
      counter(
          registry,
          stats,
          "kvtier.speculative.tokens",
          "draft tokens proposed, and those the target accepted",
          s -> s.speculation().proposed(tier),
          "kind",
          "proposed",
          "tier",
          label);
      counter(
          registry,
          stats,
          "kvtier.speculative.tokens",
          "draft tokens proposed, and those the target accepted",
          s -> s.speculation().accepted(tier),
          "kind",
          "accepted",
          "tier",
          label);
      counter(
          registry,
          stats,
          "kvtier.speculative.steps",
          "verification passes (one per speculative decode step)",
          s -> s.speculation().steps(tier),
          "tier",
          label);
      Gauge.builder(
              "kvtier.speculative.acceptance.rate",
              stats,
              s -> s.get().speculation().acceptanceRate(tier))
          .description("accepted over proposed draft tokens (0 before any)")
          .tags("tier", label)
          .strongReference(true)
          .register(registry);
      Gauge.builder(
              "kvtier.speculative.accepted.length",
              stats,
              s -> s.get().speculation().meanAcceptedLength(tier))
          .description("mean draft tokens accepted per verification step (0 before any)")
          .tags("tier", label)
          .strongReference(true)
          .register(registry);
    }
  }

  private static void bindL3(MeterRegistry registry, StatsSource stats) {
    counter(
        registry,
        stats,
        "kvtier.cache.hits",
        "prompt tokens whose KV the tier supplied",
        EngineStats::l3HitTokens,
        "tier",
        "l3");
    counter(
        registry,
        stats,
        "kvtier.cache.misses",
        "prompt tokens the tier did not supply",
        EngineStats::computedTokens,
        "tier",
        "l3");
    counter(
        registry,
        stats,
        "kvtier.l3.writes",
        "writes of host-committed nodes to the store",
        s -> s.l3Stats().writesCommitted(),
        "outcome",
        "committed");
    counter(
        registry,
        stats,
        "kvtier.l3.writes",
        "writes of host-committed nodes to the store",
        s -> s.l3Stats().writesFailed(),
        "outcome",
        "failed");
    counter(
        registry,
        stats,
        "kvtier.l3.prefetches",
        "L3 prefetches by how they ended",
        s -> s.l3Stats().prefetchesDone(),
        "outcome",
        "done");
    counter(
        registry,
        stats,
        "kvtier.l3.prefetches",
        "L3 prefetches by how they ended",
        s -> s.l3Stats().prefetchesSkipped(),
        "outcome",
        "skipped");
    counter(
        registry,
        stats,
        "kvtier.l3.prefetches",
        "L3 prefetches by how they ended",
        s -> s.l3Stats().prefetchesTimedOut(),
        "outcome",
        "timed_out");
    counter(
        registry,
        stats,
        "kvtier.l3.prefetches",
        "L3 prefetches by how they ended",
        s -> s.l3Stats().prefetchesAborted(),
        "outcome",
        "aborted");
    counter(
        registry,
        stats,
        "kvtier.l3.pages",
        "L3 pages by what happened to them",
        s -> s.l3Stats().pagesWritten(),
        "kind",
        "written");
    counter(
        registry,
        stats,
        "kvtier.l3.pages",
        "L3 pages by what happened to them",
        s -> s.l3Stats().pagesInserted(),
        "kind",
        "inserted");
    counter(
        registry,
        stats,
        "kvtier.l3.pages",
        "L3 pages by what happened to them",
        s -> s.l3Stats().pagesMissed(),
        "kind",
        "missed");
    counter(
        registry,
        stats,
        "kvtier.l3.pages",
        "L3 pages by what happened to them",
        s -> s.l3Stats().pagesNoHostRoom(),
        "kind",
        "no_host_room");
    counter(
        registry,
        stats,
        "kvtier.l3.store.reads",
        "pages the store was asked to read",
        s -> store(s).hits(),
        "outcome",
        "hit");
    counter(
        registry,
        stats,
        "kvtier.l3.store.reads",
        "pages the store was asked to read",
        s -> store(s).misses(),
        "outcome",
        "miss");
    counter(
        registry,
        stats,
        "kvtier.l3.store.reads",
        "pages the store was asked to read",
        s -> store(s).corrupt(),
        "outcome",
        "corrupt");
    counter(
        registry, stats, "kvtier.l3.store.puts", "pages the store stored", s -> store(s).puts());
    counter(
        registry,
        stats,
        "kvtier.l3.store.evictions",
        "pages the store dropped for room",
        s -> store(s).evictions());
    Gauge.builder("kvtier.l3.store.bytes", stats, s -> store(s.get()).bytesStored())
        .description("page bytes the store holds")
        .strongReference(true)
        .register(registry);
  }

  private static KvStoreStats store(EngineStats stats) {
    return stats.storeStats().orElseThrow();
  }

  /**
   * The engine's stats as a meter reads them: the engine's current object at each scrape.
   *
   * <p>Micrometer holds a meter's state object weakly, and a {@code FunctionCounter} has no
   * option to hold it strongly: with nothing else holding this source, the first GC left every
   * counter reading NaN (0 once cast). Every gauge over it is built with {@code
   * strongReference(true)}, and {@link #bind} always registers some, so the registry keeps the
   * source, and so every counter, alive as long as it keeps the meters.
   */
  private record StatsSource(Supplier<EngineStats> supplier) {
    EngineStats get() {
      return supplier.get();
    }
  }

  /**
   * The cache's reuse under the ecosystem's names: vLLM's {@code prefix_cache_queries} and
   * {@code prefix_cache_hits} (in tokens), SGLang's {@code cached_tokens{cache_source}} and vLLM's
   * {@code kv_cache_usage_perc} (a fraction, per tier here).
   */
  private static void prefixCache(MeterRegistry registry, StatsSource stats) {
    counter(
        registry,
        stats,
        "kvtier.prefix.cache.queries",
        "Prompt tokens looked up in the KV cache (every prompt token of a finished request)",
        EngineStats::promptTokens);
    counter(
        registry,
        stats,
        "kvtier.prefix.cache.hits",
        "Prompt tokens whose KV the cache supplied from any tier, so the model did not compute"
            + " them (the usable part of the match)",
        EngineStats::usableTokens);
    // A hybrid model may match a prefix it cannot resume from (recurrent layers without a state
    // in the cache): the match beside the hits keeps a 0% usable hit rate visible.
    counter(
        registry,
        stats,
        "kvtier.prefix.cache.matched",
        "Prompt tokens the cache matched in any tier, whether or not the model could resume from"
            + " them (more than the hits only for layer mixes with recurrent layers)",
        EngineStats::matchedTokens);
    counter(
        registry,
        stats,
        "kvtier.cached.tokens",
        "Prompt tokens the cache supplied, by where their KV was: device (GPU memory), host"
            + " (loaded back from CPU memory) or storage (fetched from the L3 store)",
        EngineStats::deviceHitTokens,
        "cache_source",
        "device");
    counter(
        registry,
        stats,
        "kvtier.cached.tokens",
        "Prompt tokens the cache supplied, by where their KV was: device (GPU memory), host"
            + " (loaded back from CPU memory) or storage (fetched from the L3 store)",
        EngineStats::hostHitTokens,
        "cache_source",
        "host");
    counter(
        registry,
        stats,
        "kvtier.cached.tokens",
        "Prompt tokens the cache supplied, by where their KV was: device (GPU memory), host"
            + " (loaded back from CPU memory) or storage (fetched from the L3 store)",
        EngineStats::l3HitTokens,
        "cache_source",
        "storage");
    usage(registry, stats, "device", EngineStats::deviceUsage);
    usage(registry, stats, "host", EngineStats::hostUsage);
    counter(
        registry,
        stats,
        "kvtier.engine.ticks",
        "Steps of the rank loop: each admits waiting requests and advances every running one by"
            + " a prefill chunk or a decode token (idle steps included)",
        EngineStats::ticks);
    counter(
        registry,
        stats,
        "kvtier.engine.batched.ticks",
        "Steps of the rank loop that advanced more than one request (continuous batching)",
        EngineStats::batchedTicks);
    counter(
        registry,
        stats,
        "kvtier.engine.request.steps",
        "Request steps the model ran: prefill chunks and decode tokens, over all requests",
        EngineStats::advancedSteps);
    Gauge.builder("kvtier.engine.ranks", stats, s -> s.get().ranks())
        .description("Ranks of the tensor-parallel group that serves, each with its KV heads")
        .strongReference(true)
        .register(registry);
    Gauge.builder("kvtier.engine.idle", stats, s -> s.get().idle() ? 1 : 0)
        .description(
            "1 while the group is idle: rank 0 waits for work and no rank makes a collective call")
        .strongReference(true)
        .register(registry);
  }

  private static void usage(
      MeterRegistry registry,
      StatsSource stats,
      String tier,
      Function<EngineStats, PoolUsage> usage) {
    Gauge.builder(
            "kvtier.kv.cache.usage.perc",
            stats,
            s -> {
              PoolUsage u = usage.apply(s.get());
              return u.capacity() == 0 ? 0 : 1.0 - (double) u.free() / u.capacity();
            })
        .description(
            "Fraction of the tier's KV pages in use (1 = full), cached pages that could be"
                + " evicted included")
        .tags("tier", tier)
        .strongReference(true)
        .register(registry);
  }

  private static void counter(
      MeterRegistry registry,
      StatsSource stats,
      String name,
      String description,
      ToDoubleFunction<EngineStats> value,
      String... tags) {
    FunctionCounter.builder(name, stats, s -> value.applyAsDouble(s.get()))
        .description(description)
        .tags(tags)
        .register(registry);
  }

  private static void pool(
      MeterRegistry registry,
      StatsSource stats,
      String tier,
      Function<EngineStats, PoolUsage> usage) {
    gauge(registry, stats, tier, "free", s -> usage.apply(s).free());
    gauge(registry, stats, tier, "evictable", s -> usage.apply(s).evictable());
    gauge(registry, stats, tier, "protected", s -> usage.apply(s).protectedPages());
    Gauge.builder("kvtier.pool.capacity", stats, s -> usage.apply(s.get()).capacity())
        .description("pages of the tier's pool")
        .tags("tier", tier)
        .strongReference(true)
        .register(registry);
  }

  private static void gauge(
      MeterRegistry registry,
      StatsSource stats,
      String tier,
      String state,
      ToDoubleFunction<EngineStats> value) {
    Gauge.builder("kvtier.pool.pages", stats, s -> value.applyAsDouble(s.get()))
        .description("pages of the tier's pool by state")
        .tags("tier", tier, "state", state)
        .strongReference(true)
        .register(registry);
  }
}
