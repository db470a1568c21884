package io.kvtier.simulator.replay;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.WritePolicy;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A what-if replay of one trace through the engine's cache over a sweep of configurations, each
 * on a cache of its own, in parallel on {@code threads} threads (a configuration is one thread's
 * work: the engine is single-threaded per rank, as in a server). Each page size of the sweep
 * also gets the two baselines: an unbounded device (every prefix ever seen stays cached, the
 * upper bound on hits) and no cache (the lower bound).
 *
 * <p>Requests run one after another in arrival order, each finished before the next is
 * admitted: a server that overlaps requests caches a prompt only once it finishes, so it can
 * hit less than this. Arrival times matter only as order.
 */
public final class Replay {
  private Replay() {}

  /**
   * Replays a trace through each configuration and the baselines.
   *
   * @param trace the prompts
   * @param configurations the sweep
   * @param threads threads to run configurations on, at least 1
   * @param progress told of the progress, one call at a time
   * @return the results: the configurations in order, then the baselines per page size
   */
  public static ReplaySummary run(
      ReplayTrace trace,
      List<ReplayConfiguration> configurations,
      int threads,
      ReplayProgress progress) {
    Objects.requireNonNull(trace, "trace");
    Objects.requireNonNull(configurations, "configurations");
    Objects.requireNonNull(progress, "progress");
    if (threads < 1) {
      throw new IllegalArgumentException("threads=" + threads + " must be >= 1");
    }
    if (configurations.isEmpty()) {
      throw new IllegalArgumentException("no configuration to replay: give at least one");
    }
    List<Run> runs = new ArrayList<>();
    for (ReplayConfiguration c : configurations) {
      runs.add(new Run(Objects.requireNonNull(c, "configuration"), ReplayResult.Kind.SWEEP));
    }
    // Per page size, in the order of the configurations: the unbounded baseline per snapshot
    // setting (its usable hits depend on where snapshots are taken), then the no-cache one.
    Set<List<Integer>> unbounded = new LinkedHashSet<>();
    Set<Integer> pageSizes = new LinkedHashSet<>();
    for (ReplayConfiguration c : configurations) {
      unbounded.add(
          List.of(
              c.pageSize(),
              c.snapshotSlots(),
              c.snapshots()
                  ? c.snapshotIntervalPages()
                  : ReplayConfiguration.DEFAULT_SNAPSHOT_INTERVAL_PAGES));
      pageSizes.add(c.pageSize());
    }
    for (int page : pageSizes) {
      for (List<Integer> b : unbounded) {
        if (b.get(0) == page) {
          runs.add(
              new Run(
                  unbounded(trace, page, b.get(1)).withSnapshots(b.get(1), b.get(2)),
                  ReplayResult.Kind.UNBOUNDED));
        }
      }
      runs.add(
          new Run(
              new ReplayConfiguration(page, 0, 0, 0, EvictionPolicy.LRU, WritePolicy.WRITE_THROUGH),
              ReplayResult.Kind.NO_CACHE));
    }
    long total = (long) trace.size() * runs.size();
    Counter counter = new Counter(progress, total);
    long start = System.nanoTime();
    List<ReplayResult> results = new ArrayList<>();
    int pool = Math.min(threads, runs.size());
    if (pool == 1) {
      for (Run r : runs) {
        results.add(ConfigurationReplay.run(trace, r.configuration, r.kind, counter::add));
      }
    } else {
      ExecutorService executor =
          Executors.newFixedThreadPool(
              pool, Thread.ofPlatform().name("kvtier-replay-", 0).daemon().factory());
      try {
        List<Future<ReplayResult>> futures = new ArrayList<>();
        for (Run r : runs) {
          futures.add(
              executor.submit(
                  () -> ConfigurationReplay.run(trace, r.configuration, r.kind, counter::add)));
        }
        for (Future<ReplayResult> f : futures) {
          results.add(f.get());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("the replay was interrupted", e);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof RuntimeException r) {
          throw r;
        }
        if (e.getCause() instanceof Error err) {
          throw err;
        }
        throw new IllegalStateException(e.getCause());
      } finally {
        executor.shutdownNow();
      }
    }
    return new ReplaySummary(
        trace.spec(), trace.size(), trace.promptTokens(), pool, System.nanoTime() - start, results);
  }

  /**
   * Replays a trace through one configuration on the calling thread, without baselines: the unit
   * of a sweep, and what the benchmark measures.
   *
   * @param trace the prompts
   * @param configuration the configuration
   * @return its result, of kind {@link ReplayResult.Kind#SWEEP}
   */
  public static ReplayResult runOne(ReplayTrace trace, ReplayConfiguration configuration) {
    Objects.requireNonNull(trace, "trace");
    Objects.requireNonNull(configuration, "configuration");
    return ConfigurationReplay.run(trace, configuration, ReplayResult.Kind.SWEEP, n -> {});
  }

  /** A device that holds every token of the trace: nothing is ever evicted. */
  static ReplayConfiguration unbounded(ReplayTrace trace, int pageSize) {
    return unbounded(trace, pageSize, 0);
  }

  /**
   * A device that holds every token of the trace and every snapshot of {@code snapshotSlots}
   * slots its requests take: nothing is ever evicted. A request takes at most one snapshot per
   * page of its prompt plus one at its end, so {@code 1 + snapshotSlots} times the pages of the
   * prompts (and one per request) are enough for any interval.
   */
  static ReplayConfiguration unbounded(ReplayTrace trace, int pageSize, int snapshotSlots) {
    long pages =
        Math.max(1, (trace.promptTokens() + pageSize - 1) / pageSize + trace.size())
            * (1 + (long) snapshotSlots);
    if (pages > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "the unbounded baseline needs "
              + pages
              + " pages of "
              + pageSize
              + " tokens, more than a pool holds ("
              + Integer.MAX_VALUE
              + "): use a larger page size or a shorter trace");
    }
    return new ReplayConfiguration(
        pageSize, pages * pageSize, 0, 0, EvictionPolicy.LRU, WritePolicy.WRITE_THROUGH);
  }

  private record Run(ReplayConfiguration configuration, ReplayResult.Kind kind) {}

  /** Sums the threads' reports and passes them on one at a time. */
  private static final class Counter {
    private final ReplayProgress progress;
    private final long total;
    private long done;

    Counter(ReplayProgress progress, long total) {
      this.progress = progress;
      this.total = total;
    }

    synchronized void add(long requests) {
      done += requests;
      progress.replayed(done, total);
    }
  }
}
