package io.kvtier.simulator.replay;

import io.kvtier.core.cache.Admission;
import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.cache.CacheStats;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.cache.PoolExhaustedException;
import io.kvtier.core.cache.PrefetchOutcome;
import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.RequestOptions;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.L3Config;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Optional;
import java.util.function.LongConsumer;

/**
 * One configuration's replay: the engine's {@link RankCache}, one rank, no collective, pools
 * without bytes ({@link NoBytesPool}: copies finish when submitted), each request admitted,
 * grown to its prompt, finished and synced before the next one arrives. So it answers what the
 * cache would hold if requests never overlapped: arrival times are order only.
 *
 * <p>Design note (hot path): per request the loop makes the engine's own calls and no others;
 * the prompts are the trace's arrays (the engine keeps them by reference while a request is
 * active, and copies only what it inserts), so the loop allocates nothing per token. Without a
 * host tier the cache is in allocator-only mode, as the radix replay benchmark runs it; with one,
 * the single-rank {@link RankCache#sync} commits the copies, which is skipped when nothing is
 * outstanding. Figures in docs/PERFORMANCE.md, "kvtier replay".
 */
final class ConfigurationReplay {
  /** Requests between two progress reports. */
  static final int PROGRESS_EVERY = 64;

  /**
   * Syncs after which every copy and L3 prefetch must be committed: each finished when it was
   * submitted, so a commit can only start another (a write-back victim's write, the next step of
   * a prefetch), never wait.
   */
  private static final int MAX_SYNCS = 64;

  private ConfigurationReplay() {}

  /**
   * Replays a trace through one configuration.
   *
   * @param trace the prompts
   * @param c the configuration
   * @param kind what the row is
   * @param progress told how many more requests were replayed, every {@link #PROGRESS_EVERY}
   *     and at the end
   * @return the result
   */
  static ReplayResult run(
      ReplayTrace trace, ReplayConfiguration c, ReplayResult.Kind kind, LongConsumer progress) {
    long start = System.nanoTime();
    long cpuStart = cpuTime();
    if (c.deviceTokens() == 0) {
      progress.accept(trace.size());
      return ReplayResult.builder(kind, c)
          .set(ReplayCounter.REQUESTS, trace.size())
          .set(ReplayCounter.PROMPT_TOKENS, trace.promptTokens())
          .build();
    }
    CacheConfig config =
        new CacheConfig(
            c.pageSize(),
            c.devicePages(),
            c.hostPages(),
            c.writePolicy(),
            CacheConfig.DEFAULT_WRITE_THROUGH_THRESHOLD,
            c.eviction(),
            CacheConfig.DEFAULT_LOAD_BACK_THRESHOLD,
            CacheConfig.DEFAULT_VOCAB_SIZE);
    if (c.snapshots()) {
      config = config.withSnapshots(c.snapshotSlots(), c.snapshotIntervalPages());
    }
    RankCache cache = open(config, c);
    boolean l3 = cache.hasL3();
    int pageSize = c.pageSize();
    long devicePages = c.devicePages();
    long deviceHit = 0;
    long hostHit = 0;
    long l3Hit = 0;
    long usableDevice = 0;
    long usableHost = 0;
    long usableL3 = 0;
    long deviceRequests = 0;
    long hostRequests = 0;
    long l3Requests = 0;
    long hitRequests = 0;
    long rejected = 0;
    int reported = 0;
    long id = 0;
    for (int i = 0; i < trace.size(); i++) {
      if (i - reported == PROGRESS_EVERY) {
        progress.accept(PROGRESS_EVERY);
        reported = i;
      }
      int[] prompt = trace.prompt(i);
      if ((prompt.length + (long) pageSize - 1) / pageSize > devicePages) {
        rejected++;
        continue;
      }
      id++;
      if (l3 && cache.startPrefetch(id, prompt, RequestOptions.DEFAULT)) {
        awaitPrefetch(cache, id);
      }
      Admission a = admit(cache, id, prompt);
      if (a == null) {
        rejected++;
        continue;
      }
      // The hits per tier as the engine's scheduler counts them: without snapshots the prefix
      // the request resumes from (device, then the host hit it loads back); with them
      // (HYBRID.md §5) the match, of which the request resumes from the usable part only.
      boolean snapshots = c.snapshots();
      int prefix = a.devicePrefixLength();
      int hostFrom = snapshots ? a.matchedLength() - a.hostHitLength() : prefix - a.loadedLength();
      int hostTo = snapshots ? a.matchedLength() : prefix;
      int fromL3 = 0;
      if (l3 && hostTo > hostFrom) {
        Optional<PrefetchOutcome> o = cache.admittedPrefetch(id);
        fromL3 = o.isPresent() ? o.get().overlap(hostFrom, hostTo) : 0;
      }
      int fromHost = hostTo - hostFrom - fromL3;
      deviceHit += hostFrom;
      hostHit += fromHost;
      l3Hit += fromL3;
      deviceRequests += hostFrom > 0 ? 1 : 0;
      hostRequests += fromHost > 0 ? 1 : 0;
      l3Requests += fromL3 > 0 ? 1 : 0;
      hitRequests += hostTo > 0 ? 1 : 0;
      // The usable part, cut in match order: device prefix, host, L3.
      int usable = snapshots ? a.usableLength() : prefix;
      int usableOnDevice = Math.min(usable, hostFrom);
      int usableFromHost = Math.min(usable - usableOnDevice, fromHost);
      usableDevice += usableOnDevice;
      usableHost += usableFromHost;
      usableL3 += Math.min(usable - usableOnDevice - usableFromHost, fromL3);
      cache.finish(id);
      drain(cache);
    }
    progress.accept(trace.size() - reported);
    // Once per configuration, so cheap: the replay ran the real engine, and it is consistent.
    CacheInvariants.checkIdle(cache);
    long nanos = System.nanoTime() - start;
    long cpuNanos = cpuStart < 0 ? 0 : Math.max(0, cpuTime() - cpuStart);
    CacheStats stats = cache.stats();
    return ReplayResult.builder(kind, c)
        .set(ReplayCounter.REQUESTS, trace.size())
        .set(ReplayCounter.PROMPT_TOKENS, trace.promptTokens())
        .set(ReplayCounter.DEVICE_HIT_TOKENS, deviceHit)
        .set(ReplayCounter.HOST_HIT_TOKENS, hostHit)
        .set(ReplayCounter.L3_HIT_TOKENS, l3Hit)
        .set(ReplayCounter.DEVICE_HIT_REQUESTS, deviceRequests)
        .set(ReplayCounter.HOST_HIT_REQUESTS, hostRequests)
        .set(ReplayCounter.L3_HIT_REQUESTS, l3Requests)
        .set(ReplayCounter.HIT_REQUESTS, hitRequests)
        .set(ReplayCounter.LOAD_BACKS, stats.loadsCommitted())
        .set(ReplayCounter.DEVICE_EVICTION_PAGES, stats.deviceEvictions())
        .set(ReplayCounter.HOST_EVICTION_PAGES, stats.hostEvictions())
        .set(ReplayCounter.BACKUPS, stats.backupsCommitted())
        .set(ReplayCounter.L3_PAGES_WRITTEN, cache.l3Stats().pagesWritten())
        .set(ReplayCounter.REJECTED_REQUESTS, rejected)
        .set(ReplayCounter.NANOS, nanos)
        .set(ReplayCounter.CPU_NANOS, cpuNanos)
        .set(ReplayCounter.USABLE_DEVICE_HIT_TOKENS, usableDevice)
        .set(ReplayCounter.USABLE_HOST_HIT_TOKENS, usableHost)
        .set(ReplayCounter.USABLE_L3_HIT_TOKENS, usableL3)
        .build();
  }

  /** This thread's CPU time in nanoseconds, or -1 where the JVM does not measure it. */
  private static long cpuTime() {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    return threads.isCurrentThreadCpuTimeSupported() ? threads.getCurrentThreadCpuTime() : -1;
  }

  private static RankCache open(CacheConfig config, ReplayConfiguration c) {
    if (c.hostPages() == 0) {
      return RankCache.withoutMemory(config);
    }
    NoBytesPool device = new NoBytesPool(c.pageSize(), c.devicePages());
    NoBytesPool host = new NoBytesPool(c.pageSize(), c.hostPages());
    if (c.l3Tokens() == 0) {
      return RankCache.withMemory(config, device, host, device.transferEngine(host));
    }
    L3Config l3 =
        new L3Config(
            // One byte per token in the pools' layout: the store counts keys, not bytes.
            c.l3Tokens(),
            L3Config.DEFAULT_BACKUP_THRESHOLD,
            L3Config.DEFAULT_PREFETCH_THRESHOLD,
            L3Config.DEFAULT_PREFETCH_POLICY,
            L3Config.DEFAULT_TIMEOUT_BASE,
            L3Config.DEFAULT_TIMEOUT_PER_KI_TOKEN,
            L3Config.DEFAULT_TIMEOUT_CAP,
            L3Config.DEFAULT_MODEL_ID,
            false);
    // The clock stands still: store calls run inline and finish at once, so no prefetch waits
    // and none times out.
    L3Setup setup =
        new L3Setup(l3, new KeyOnlyStore(c.l3Pages()), L3Executor.inline(), () -> 0L, 0, 1);
    return RankCache.withMemory(config, device, host, device.transferEngine(host), setup);
  }

  /**
   * Admits a request and gives it the pages of its prompt, or returns null if the device cannot
   * hold it. Under write-back an eviction frees its pages only at the commit of its write, so a
   * shortfall is retried once the copies are committed, as the scheduler retries at its next
   * tick.
   */
  private static Admission admit(RankCache cache, long id, int[] prompt) {
    for (int attempt = 0; ; attempt++) {
      Admission a = cache.admit(id, prompt);
      if (!a.pendingLoads().isEmpty()) {
        drain(cache);
      }
      try {
        cache.growTo(id, prompt.length);
        return a;
      } catch (PoolExhaustedException e) {
        cache.abort(id);
        if (cache.outstandingOperations() == 0 || attempt == MAX_SYNCS) {
          // Nothing left to commit: what is short is locked, which no finished request holds.
          return null;
        }
        drain(cache);
      }
    }
  }

  /** Commits copies until nothing is outstanding; each finished when it was submitted. */
  private static void drain(RankCache cache) {
    for (int round = 0; cache.outstandingOperations() > 0; round++) {
      if (round == MAX_SYNCS) {
        throw new IllegalStateException(
            cache.outstandingOperations()
                + " operations are still outstanding after "
                + MAX_SYNCS
                + " syncs although every copy finished when it was submitted: a bug of the"
                + " replay or the engine");
      }
      cache.sync();
    }
  }

  private static void awaitPrefetch(RankCache cache, long id) {
    for (int round = 0; cache.prefetchState(id) == RankCache.PrefetchState.RUNNING; round++) {
      if (round == MAX_SYNCS) {
        throw new IllegalStateException(
            "the L3 prefetch of request "
                + id
                + " is still running after "
                + MAX_SYNCS
                + " syncs although every store call ran inline: a bug of the replay or the"
                + " engine");
      }
      cache.sync();
    }
  }
}
