package io.kvtier.simulator;

import io.kvtier.core.cache.CacheInvariantException;
import io.kvtier.core.cache.CacheInvariants;
import io.kvtier.core.rank.ModelRunner;
import io.kvtier.core.rank.RankEngineStats;
import io.kvtier.core.rank.RankGroupFailedException;
import io.kvtier.core.rank.ReplicaDivergenceException;
import io.kvtier.simulator.workload.Workload;
import io.kvtier.simulator.workload.Workloads;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;

/**
 * The deterministic multi-rank simulator (ARCHITECTURE.md §7): R ranks, each a thread with its own
 * cache replica on the {@code sim} backend, its own virtual clock and copy delays, joined by a
 * {@code local} collective and driven by the reference {@link io.kvtier.core.rank.RankEngine}.
 * Rank 0 turns a workload into arrivals and seeded aborts and broadcasts them. With a collective
 * whose ranks are separate processes ({@code mpi}, {@code hazelcast}), each process runs one rank
 * with {@link #runRank} and the ranks' results are combined over the collective.
 *
 * <p>Checked after every tick: the replica digests of all ranks are equal, every rank issued the
 * same collective sequence, every cache invariant holds; at the end, after the drain, nothing
 * leaked; throughout, every page loaded back from the host holds the KV the model wrote.
 *
 * <p>Deterministic: copy completion depends on each rank's virtual clock, which reads {@code tick
 * * 1 ms} whatever the thread scheduling, and every random draw comes from the seed; the same
 * config gives the same {@link SimulationResult} but for its wall time. A broken rule surfaces
 * as a failure of the result ({@link SimulationFailure}), with the exception in {@link
 * #failureCause()}; a collective that a rank never reaches fails at the watchdog, never hangs.
 * A rank whose step throws (an exception or an {@link Error}; {@link
 * SimulationConfig#rankFailure()} injects one) stops every rank at its next collective with
 * {@link SimulationFailure#RANK_FAILED}, long before the watchdog.
 *
 * <p>Rank 0 also records the run's {@link SimulationTimeline} (occupancy and counters over time,
 * each request's milestones) and reports each tick to a {@link SimulationProgress}.
 */
public final class MultiRankSimulator {
  /** The vocabulary of generated tokens. */
  public static final int VOCAB = 32000;

  private static final AtomicLong GROUPS = new AtomicLong();

  private final SimulationConfig config;
  private final UnaryOperator<ModelRunner> modelWrapper;
  private final AtomicReference<Failure> first = new AtomicReference<>();

  /** Rank 0's L3 counters after the last run (equal on every rank); NONE without L3. */
  private volatile io.kvtier.core.cache.L3Stats l3Stats = io.kvtier.core.cache.L3Stats.NONE;

  /** Host blocks whose checksum did not match, summed over the ranks before {@link #result}. */
  private long hostChecksumMismatches;

  private long l3CorruptPages;
  private long l3FlipsInjected;

  private record Failure(int rank, long tick, Throwable cause, SimulationFailure kind) {}

  /**
   * A simulator for one config.
   *
   * @param config the run
   */
  public MultiRankSimulator(SimulationConfig config) {
    this(config, UnaryOperator.identity());
  }

  /**
   * A simulator whose ranks' engines run {@code model} applied to the pattern model: for tests
   * that break what the engine hands the model (a wrong resume slot) and see the model's checks
   * catch it.
   *
   * @param config the run
   * @param model wraps each rank's model
   */
  MultiRankSimulator(SimulationConfig config, UnaryOperator<ModelRunner> model) {
    this.config = Objects.requireNonNull(config, "config");
    this.modelWrapper = Objects.requireNonNull(model, "model");
  }

  /**
   * Runs a config once.
   *
   * @param config the run
   * @return the result
   */
  public static SimulationResult run(SimulationConfig config) {
    return new MultiRankSimulator(config).run();
  }

  /**
   * The workload spec a config runs: a generator spec without {@code seed=} gets the config's
   * seed, so that {@code --seed} changes the requests too.
   *
   * @param config the run
   * @return the spec
   */
  public static String workloadSpec(SimulationConfig config) {
    String spec = config.workload().strip();
    String name = spec.contains(":") ? spec.substring(0, spec.indexOf(':')) : spec;
    boolean generator =
        name.equals("shared-prefix") || name.equals("multiturn") || name.equals("doc-qa");
    if (!generator || spec.contains("seed=")) {
      return spec;
    }
    return spec + (spec.contains(":") ? "," : ":") + "seed=" + config.seed();
  }

  /**
   * Runs the simulation: builds every rank, runs them to the end of the drain or the first
   * failure, and gathers the result.
   *
   * @return the result; a failure is reported in it, not thrown
   * @throws IllegalArgumentException if the config cannot be built (a bad workload spec, pools
   *     that do not fit)
   */
  public SimulationResult run() {
    return run(SimulationProgress.NONE);
  }

  /**
   * Runs the simulation as {@link #run()} does, telling {@code progress} after every tick.
   *
   * @param progress told the ticks done on rank 0's thread
   * @return the result; a failure is reported in it, not thrown
   * @throws IllegalArgumentException if the config cannot be built
   */
  public SimulationResult run(SimulationProgress progress) {
    Objects.requireNonNull(progress, "progress");
    first.set(null);
    long start = System.nanoTime();
    Workload workload = Workloads.parse(workloadSpec(config));
    String group = "kvtier-sim-" + GROUPS.incrementAndGet() + "-seed-" + config.seed();
    SimulatedRank[] ranks = new SimulatedRank[config.ranks()];
    try {
      // Built here, before any thread starts: a rank that cannot be built must not leave the
      // others waiting in the first collective until the watchdog.
      for (int r = 0; r < ranks.length; r++) {
        ranks[r] = new SimulatedRank(config, r, group, r == 0 ? workload : null, modelWrapper);
      }
      TimelineRecorder timeline = new TimelineRecorder(progress, config.ticks());
      ranks[0].record(timeline);
      Thread[] threads = new Thread[ranks.length];
      for (int r = 0; r < ranks.length; r++) {
        SimulatedRank rank = ranks[r];
        int id = r;
        threads[r] =
            Thread.ofPlatform().name("kvtier-sim-rank-" + r).unstarted(() -> runRank(id, rank));
        threads[r].start();
      }
      for (Thread t : threads) {
        t.join();
      }
      for (int r = 0; r < ranks.length; r++) {
        if (ranks[r].injectionPending()) {
          first.compareAndSet(
              null,
              new Failure(
                  r,
                  ranks[r].engine().tickNumber(),
                  new IllegalStateException(ranks[r].injectionNotFired()),
                  SimulationFailure.ERROR));
        }
      }
      return result(workload, ranks, (System.nanoTime() - start) / 1e9, timeline.timeline());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the simulated ranks", e);
    } finally {
      for (SimulatedRank rank : ranks) {
        if (rank != null) {
          rank.close();
        }
      }
    }
  }

  /**
   * Runs one rank of a config in this process, the others running in other processes (or
   * threads) that call this method with the same config and group: the entry point for
   * collectives such as {@code mpi} or {@code hazelcast}, whose ranks are separate processes. The
   * run is the same as {@link #run()}'s rank {@code rank}; rank 0 turns the workload into arrivals
   * and broadcasts them.
   *
   * <p>At the end of a run that did not fail in a collective, every rank takes part in two more
   * reductions (tag {@value #FINAL_TAG}, outside the engine's counts): a SUM of the counters that
   * {@link #run()} sums over ranks ({@code kvVerifiedPages}, {@code kvMismatches}, {@code
   * leakedPages}) and of rank 0's arrivals, and a MIN/MAX of the final replica digest, of the
   * first rank that leaked and of the rank whose injected failure never fired. So every rank
   * returns the same result as {@link #run()} would, and a digest mismatch or a leak on any rank
   * fails the result on every rank. A run that failed in a collective cannot reduce: its result
   * holds this rank's own counters and its own failure; when a rank's step failed ({@link
   * SimulationFailure#RANK_FAILED}) that failure is the same on every rank, named alike.
   *
   * @param config the run; {@code ranks} is the world size
   * @param rank this process's rank, in {@code [0, config.ranks())}
   * @param group the group name, equal in every rank's process
   * @return this rank's result; a failure is reported in it, not thrown
   * @throws IllegalArgumentException if the rank is out of range or the config cannot be built
   *     (a bad workload spec, pools that do not fit, an unknown collective or property)
   */
  public static SimulationResult runRank(SimulationConfig config, int rank, String group) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(group, "group");
    if (rank < 0 || rank >= config.ranks()) {
      throw new IllegalArgumentException(
          "rank="
              + rank
              + " must be in [0, ranks="
              + config.ranks()
              + "): every process runs one rank of the group");
    }
    return new MultiRankSimulator(config).runOne(rank, group);
  }

  /** The tag of the reductions that combine the ranks' results at the end of {@link #runRank}. */
  static final String FINAL_TAG = "sim-final";

  private SimulationResult runOne(int r, String group) {
    first.set(null);
    long start = System.nanoTime();
    // Every rank parses the workload: the result names its spec; only rank 0 reads requests.
    Workload workload = Workloads.parse(workloadSpec(config));
    try (SimulatedRank rank =
        new SimulatedRank(config, r, group, r == 0 ? workload : null, modelWrapper)) {
      // Every rank records: the timeline is replicated state, equal on every rank of a healthy
      // run, so whichever rank reports has the same one as a threaded run's rank 0.
      TimelineRecorder timeline = new TimelineRecorder(SimulationProgress.NONE, config.ticks());
      rank.record(timeline);
      boolean collectiveFailed = false;
      try {
        rank.run();
      } catch (Throwable t) {
        fail(r, rank, t, classify(t));
        collectiveFailed = true;
      }
      if (!collectiveFailed) {
        try {
          CacheInvariants.checkIdle(rank.cache());
        } catch (CacheInvariantException e) {
          // Only this rank's cache: the collective still works, so the others learn of it below.
          first.compareAndSet(
              null, new Failure(r, rank.engine().tickNumber(), e, SimulationFailure.LEAK));
        }
      }
      long sent = r == 0 ? rank.feed().sent() : 0;
      RankEngineStats own = rank.engine().stats();
      long[] sums = {
        own.kvVerifiedPages(),
        own.kvMismatches(),
        rank.leakedDevicePages(),
        sent,
        rank.model().snapshotsVerified(),
        rank.model().snapshotMismatches(),
        rank.cache().hostChecksumMismatches(),
        l3Corrupt(rank),
        rank.l3FlipsInjected()
      };
      long digest = rank.engine().replicaDigest();
      boolean digestsEqual = true;
      if (!collectiveFailed) {
        try {
          sums = rank.collective().allReduce(ReduceOp.SUM, sums, FINAL_TAG);
          Failure mine = first.get();
          long leaker = mine == null ? Long.MAX_VALUE : r;
          long notFired = rank.injectionPending() ? r : Long.MAX_VALUE;
          long[] m =
              rank.collective()
                  .allReduce(
                      ReduceOp.MIN, new long[] {digest, ~digest, leaker, notFired}, FINAL_TAG);
          if (m[0] != ~m[1]) {
            digestsEqual = false;
            first.compareAndSet(
                null,
                new Failure(
                    r,
                    rank.engine().tickNumber(),
                    new ReplicaDivergenceException(
                        r,
                        rank.engine().tickNumber(),
                        m[0],
                        ~m[1],
                        digest,
                        "found by the simulator's final check across processes"),
                    SimulationFailure.REPLICA_DIVERGENCE));
          } else if (mine == null && m[2] != Long.MAX_VALUE) {
            first.compareAndSet(
                null,
                new Failure(
                    (int) m[2],
                    rank.engine().tickNumber(),
                    new CacheInvariantException(
                        "the cache of rank "
                            + m[2]
                            + " was not idle after"
                            + " the drain; its own output says what leaked"),
                    SimulationFailure.LEAK));
          } else if (m[3] != Long.MAX_VALUE) {
            first.compareAndSet(
                null,
                new Failure(
                    (int) m[3],
                    rank.engine().tickNumber(),
                    new IllegalStateException(
                        m[3] == r
                            ? rank.injectionNotFired()
                            : "the failure injected into rank "
                                + m[3]
                                + " never fired; its own output says why"),
                    SimulationFailure.ERROR));
          }
        } catch (RuntimeException e) {
          fail(r, rank, e, classify(e));
        }
      }
      hostChecksumMismatches = sums[6];
      l3CorruptPages = sums[7];
      l3FlipsInjected = sums[8];
      return result(
          workload,
          rank,
          sums[3],
          sums[0],
          sums[1],
          sums[2],
          sums[4],
          sums[5],
          digestsEqual,
          digest,
          (System.nanoTime() - start) / 1e9,
          timeline.timeline());
    }
  }

  /**
   * The exception that stopped the last run, if any: the first one raised (later ones on other
   * ranks are usually its echo, such as a collective broken by the failed rank).
   *
   * @return the cause
   */
  public Optional<Throwable> failureCause() {
    Failure f = first.get();
    return f == null ? Optional.empty() : Optional.of(f.cause());
  }

  private void runRank(int r, SimulatedRank rank) {
    try {
      rank.run();
    } catch (Throwable t) {
      fail(r, rank, t, classify(t));
      return;
    }
    try {
      CacheInvariants.checkIdle(rank.cache());
    } catch (CacheInvariantException e) {
      fail(r, rank, e, SimulationFailure.LEAK);
    }
  }

  private void fail(int r, SimulatedRank rank, Throwable t, SimulationFailure kind) {
    Failure mine = new Failure(r, rank.engine().tickNumber(), t, kind);
    // A rank's failed step is the cause of whatever the other ranks see: it wins over an echo.
    first.updateAndGet(
        f ->
            f == null
                    || (kind == SimulationFailure.RANK_FAILED
                        && f.kind() != SimulationFailure.RANK_FAILED)
                ? mine
                : f);
    if (kind == SimulationFailure.RANK_FAILED) {
      // Every rank raises it by itself at the failed rank's failure barrier. Leaving the group
      // now could break it under a rank that has not yet read the failure from that barrier's
      // desync, which would then see "left" instead of the cause.
      return;
    }
    // The other ranks may wait for this one in a collective: leaving the group fails them now.
    rank.abandon();
  }

  private static SimulationFailure classify(Throwable t) {
    if (t instanceof RankGroupFailedException) {
      return SimulationFailure.RANK_FAILED;
    }
    if (t instanceof ReplicaDivergenceException) {
      return SimulationFailure.REPLICA_DIVERGENCE;
    }
    if (t instanceof CollectiveTimeoutException) {
      return SimulationFailure.COLLECTIVE_TIMEOUT;
    }
    if (t instanceof CollectiveDesyncException) {
      return SimulationFailure.COLLECTIVE_DESYNC;
    }
    if (t instanceof CacheInvariantException) {
      return SimulationFailure.INVARIANT;
    }
    if (t instanceof SimulatedRank.NotDrainedException) {
      return SimulationFailure.NOT_DRAINED;
    }
    return SimulationFailure.ERROR;
  }

  /**
   * The L3 tier's replicated counters after the last run (rank 0's, or this process's rank's;
   * every rank's are equal): writes, prefetches started, timed out, pages inserted and missed.
   *
   * @return the counters, {@link io.kvtier.core.cache.L3Stats#NONE} without an L3 store
   */
  public io.kvtier.core.cache.L3Stats l3Stats() {
    return l3Stats;
  }

  /** The damaged pages a rank's L3 store found, 0 without a store. */
  private static long l3Corrupt(SimulatedRank rank) {
    io.kvtier.spi.KvStoreStats stats = rank.l3StoreStats();
    return stats == null ? 0 : stats.corrupt();
  }

  /** Whether a failure stops the run before the leak check after its drain. */
  private static boolean stoppedEarly(SimulationFailure kind) {
    return switch (kind) {
      case NONE, LEAK, REPLICA_DIVERGENCE -> false;
      default -> true;
    };
  }

  private SimulationResult result(
      Workload workload, SimulatedRank[] ranks, double wallSeconds, SimulationTimeline timeline) {
    long verified = 0;
    long mismatches = 0;
    long leaked = 0;
    long snapshotsVerified = 0;
    long snapshotMismatches = 0;
    hostChecksumMismatches = 0;
    l3CorruptPages = 0;
    l3FlipsInjected = 0;
    for (SimulatedRank rank : ranks) {
      l3CorruptPages += l3Corrupt(rank);
      l3FlipsInjected += rank.l3FlipsInjected();
      RankEngineStats rs = rank.engine().stats();
      verified += rs.kvVerifiedPages();
      mismatches += rs.kvMismatches();
      leaked += rank.leakedDevicePages();
      hostChecksumMismatches += rank.cache().hostChecksumMismatches();
      snapshotsVerified += rank.model().snapshotsVerified();
      snapshotMismatches += rank.model().snapshotMismatches();
    }
    return result(
        workload,
        ranks[0],
        ranks[0].feed().sent(),
        verified,
        mismatches,
        leaked,
        snapshotsVerified,
        snapshotMismatches,
        true,
        ranks[0].engine().replicaDigest(),
        wallSeconds,
        timeline);
  }

  /**
   * The result from one rank's replicated counters and the counters combined over ranks.
   *
   * @param rank a rank whose replicated state stands for all (rank 0 in thread mode)
   * @param digestsEqual false if a check outside the failure found different digests
   */
  private SimulationResult result(
      Workload workload,
      SimulatedRank rank,
      long sent,
      long verified,
      long mismatches,
      long leaked,
      long snapshotsVerified,
      long snapshotMismatches,
      boolean digestsEqual,
      long digest,
      double wallSeconds,
      SimulationTimeline timeline) {
    RankEngineStats s = rank.engine().stats();
    l3Stats = rank.cache().l3Stats();
    Failure f = first.get();
    SimulationFailure kind = f == null ? SimulationFailure.NONE : f.kind();
    boolean desync =
        kind == SimulationFailure.COLLECTIVE_DESYNC || kind == SimulationFailure.COLLECTIVE_TIMEOUT;
    boolean rankFailed = kind == SimulationFailure.RANK_FAILED;
    long failureTick = f == null ? -1 : f.tick();
    String failureMessage = f == null ? "" : f.kind() + " on rank " + f.rank() + ": " + f.cause();
    if (rankFailed && f.cause() instanceof RankGroupFailedException g) {
      // The same text on every rank and whichever collective joined them: what failed, where.
      failureTick = g.tick();
      failureMessage =
          f.kind()
              + ": rank "
              + g.failedRank()
              + " failed at tick "
              + g.tick()
              + " in step "
              + g.step()
              + ": "
              + g.causeDescription();
    }
    return SimulationResult.builder()
        .workload(workload.spec())
        .seed(config.seed())
        .ranks(config.ranks())
        .set(SimulationCounter.REQUESTS, sent)
        .set(SimulationCounter.FINISHED, s.finished())
        .set(SimulationCounter.ABORTED, s.aborted())
        .set(SimulationCounter.REJECTED, s.rejected())
        .set(SimulationCounter.LOAD_FAILURE_ABORTS, s.loadFailureAborts())
        .set(SimulationCounter.LOAD_FAILURE_RECOMPUTES, s.loadFailureRecomputes())
        .set(SimulationCounter.LOAD_FAILURE_LOST_TOKENS, s.loadFailureLostTokens())
        .set(SimulationCounter.TICKS, s.ticks())
        .set(SimulationCounter.PROMPT_TOKENS, s.promptTokens())
        .set(SimulationCounter.COMPUTED_TOKENS, s.computedTokens())
        .set(SimulationCounter.PREFILL_TOKENS, s.prefillTokens())
        .set(SimulationCounter.UNREAD_REQUESTS, rank.feed() == null ? 0 : rank.feed().unread())
        .set(SimulationCounter.DESYNCS, desync ? 1 : 0)
        // A run that stopped before the end of its drain (a failed rank, a desync, a timeout)
        // left requests and copies in flight: not leaks, and not counted.
        .set(SimulationCounter.LEAKED_PAGES, stoppedEarly(kind) ? 0 : leaked)
        .set(SimulationCounter.KV_VERIFIED_PAGES, verified)
        .set(SimulationCounter.KV_MISMATCHES, mismatches)
        .set(SimulationCounter.HOST_CHECKSUM_MISMATCHES, hostChecksumMismatches)
        .set(SimulationCounter.L3_PAGES_MISSED, l3Stats.pagesMissed())
        .set(SimulationCounter.L3_PREFETCHES_TIMED_OUT, l3Stats.prefetchesTimedOut())
        .set(SimulationCounter.L3_CORRUPT_PAGES, l3CorruptPages)
        .set(SimulationCounter.L3_FLIPS_INJECTED, l3FlipsInjected)
        .set(SimulationCounter.SNAPSHOTS_VERIFIED, snapshotsVerified)
        .set(SimulationCounter.SNAPSHOT_MISMATCHES, snapshotMismatches)
        .hitTokens(
            new SimulationResult.HitTokens(s.deviceHitTokens(), s.hostHitTokens(), s.l3HitTokens()))
        .usableHitTokens(rank.usableHitTokens())
        .collectives(
            new SimulationResult.CollectiveCounts(
                s.collectiveCalls(),
                s.syncTicks(),
                s.digestChecks(),
                s.idleTicks(),
                s.idleTickCalls(),
                s.maxProtocolCallsPerTick(),
                s.skippedTicks()))
        .cache(rank.cache().stats())
        .replicaDigestsEqual(digestsEqual && kind != SimulationFailure.REPLICA_DIVERGENCE)
        .failure(kind, failureTick, failureMessage)
        .wallSeconds(wallSeconds)
        .timeline(timeline)
        .replicaDigest(digest)
        .build();
  }
}
