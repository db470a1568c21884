package io.kvtier.core.rank;

import io.kvtier.core.cache.CacheSchedule;
import io.kvtier.core.cache.CacheView;
import io.kvtier.core.cache.RankCache;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveRankLostException;
import io.kvtier.spi.ReduceOp;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The reference rank loop (ARCHITECTURE.md §6): one per rank, owning the rank's {@link RankCache},
 * its {@link Collective} and the replicated request state, and running the six steps of a tick.
 *
 * <pre>
 *   1 receive  rank 0 broadcasts the tick's commands (tag "recv")            every tick;
 *              while idle awaited without the watchdog (Collective.awaitBroadcast),
 *              once the group has met in a first call
 *   2 sync     iff the replicated outstanding count is positive: one fused MIN
 *              reduction of ready counts, failure bits and L3 progress (tag "sync"),
 *              then commit
 *   3 admit    requests whose L3 prefetch is decided, then waiting requests in arrival order:
 *              start an L3 prefetch, or match + lock, load-back, allocate
 *   4 forward  the model computes new tokens; prepared backups stream layer by layer
 *   5 finish   finished requests are inserted and released
 *   6 check    every digestInterval ticks: MIN of [digest, ~digest] (tag "digest")
 * </pre>
 *
 * <p>Call {@link #tick(TickCommands)} once per scheduler tick, or drive the steps yourself with
 * {@link #receive}, {@link #sync}, {@link #admit}, {@link #forward}, {@link #finish} and {@link
 * #check} in that order; a step out of order throws {@link IllegalStateException} naming the
 * expected one. Every collective call goes through a {@link RecordingCollective} (and a {@link
 * GuardedCollective} when {@link RankEngineConfig#guardCollective()} is set), so a schedule that
 * differs between ranks fails as a {@link io.kvtier.spi.CollectiveDesyncException} instead of a
 * hang.
 *
 * <p>Failures: a step that throws, an {@link Error} included, fails the engine and the group.
 * The rank tells the others through the collective (see {@link RankGroupFailedException}), so
 * every rank raises one {@link RankGroupFailedException}, naming the failed rank, tick, step and
 * cause, at the failed rank's next collective and not at the watchdog; every later step of a
 * failed engine throws that same exception. Whether a failure reached every rank by itself is
 * decided by where it came from: a failure of the group itself (a {@link CollectiveException}
 * the group threw through the engine's handle, a desync or the watchdog) and the digest check's
 * {@link ReplicaDivergenceException} do, and are thrown as they are; a {@link
 * CollectiveException} from anywhere else (a model's own tensor-parallel collective) is this
 * rank's failure like any other.
 *
 * <p>The embedding surface: a server drives the ranks only through these steps (or {@link
 * #tick}), and reads through {@link #view()}. The engine binds the cache it is given ({@link
 * RankCache#bindSchedule}): on several ranks, from then on a replicated mutator of that cache
 * called outside a step (a match, lock, backup, eviction or commit made by the server on one
 * rank) throws {@link IllegalStateException} naming the method, and the single-rank commit forms
 * throw always.
 *
 * <p>Not thread-safe: one scheduler thread per rank.
 */
public final class RankEngine {
  /** Tag of the step-1 broadcast. */
  public static final String RECV_TAG = "recv";

  /** Tag of the step-2 reduction. */
  public static final String SYNC_TAG = CommitSync.TAG;

  /** Tag of the step-6 reduction. */
  public static final String DIGEST_TAG = "digest";

  private final RankCache cache;
  private final CacheSchedule schedule;
  private final RecordingCollective collective;
  private final RankEngineConfig config;
  private final EngineCounters counters = new EngineCounters();
  private final Scheduler scheduler;
  private final CommitSync commitSync;
  private TickStep next = TickStep.RECEIVE;
  private long tick;

  /** Set when a step failed; every later step throws it. */
  private RuntimeException failure;

  /**
   * What a failed step throws when even telling the group failed (memory exhausted twice):
   * made at construction, so that marking the rank failed needs no allocation.
   */
  private final RankGroupFailedException undescribed;

  /** The digest check's divergence, raised alike on every rank; see {@link #failTogether}. */
  private ReplicaDivergenceException agreedDivergence;

  private long callsAtTickStart;
  private long digestCallsThisTick;
  private int outstandingAtSync;

  /**
   * Creates the engine of one rank.
   *
   * @param cache the rank's cache replica
   * @param collective the rank group; every rank passes its own handle on the same group
   * @param model what step 4 runs
   * @param config the scheduling settings, equal on every rank
   */
  public RankEngine(
      RankCache cache, Collective collective, ModelRunner model, RankEngineConfig config) {
    this.cache = Objects.requireNonNull(cache, "cache");
    Objects.requireNonNull(collective, "collective");
    Objects.requireNonNull(model, "model");
    this.config = Objects.requireNonNull(config, "config");
    if (model.layers() < 1) {
      throw new IllegalArgumentException("model.layers()=" + model.layers() + " must be >= 1");
    }
    if (model.snapshotSlots() != cache.config().snapshotSlots()) {
      throw new IllegalArgumentException(
          "the model's recurrent-state snapshots take "
              + model.snapshotSlots()
              + " page slots but kvtier.snapshot-slots="
              + cache.config().snapshotSlots()
              + ": set kvtier.snapshot-slots="
              + model.snapshotSlots()
              + " (HYBRID.md §5)");
    }
    this.collective =
        new RecordingCollective(
            config.guardCollective() ? new GuardedCollective(collective) : collective);
    // From here on only this engine's steps change the cache (see CacheSchedule).
    this.schedule = cache.bindSchedule(collective.size());
    // The model runs in a callback: a cache mutator it calls is refused (Callbacks).
    this.scheduler =
        new Scheduler(cache, Callbacks.model(model, schedule), config, counters, this.collective);
    this.commitSync = new CommitSync(cache.commits(), this.collective, config.defect());
    this.undescribed =
        new RankGroupFailedException(
            collective.rank(),
            collective.rank(),
            -1,
            TickStep.RECEIVE,
            "a step failed, and describing the failure failed too (memory exhausted?); tick and"
                + " step unknown",
            "an unknown step",
            null);
  }

  /**
   * Runs one whole tick: the six steps in order.
   *
   * @param commands the tick's commands on rank 0 (required there); ignored on other ranks,
   *     which receive rank 0's
   * @throws ReplicaDivergenceException if the digest check of this tick finds ranks that differ
   * @throws io.kvtier.spi.CollectiveException if a collective fails (desync, watchdog)
   */
  public void tick(TickCommands commands) {
    receive(commands);
    sync();
    admit();
    forward();
    finish();
    check();
  }

  /**
   * Step 1: rank 0 broadcasts the tick's commands and every rank applies them.
   *
   * @param commands the commands on rank 0; ignored (may be null) on the other ranks
   * @return the commands applied, identical on every rank
   */
  public TickCommands receive(TickCommands commands) {
    return step(
        TickStep.RECEIVE,
        () -> {
          callsAtTickStart = collective.calls();
          digestCallsThisTick = 0;
          byte[] payload = null;
          if (collective.rank() == 0) {
            payload =
                Objects.requireNonNull(
                        commands,
                        "commands: rank 0 must pass the tick's commands (TickCommands.NONE for none)")
                    .encode();
          }
          // Rank 0 too applies the decoded bytes, so that every rank runs exactly the same input.
          // Idle (replicated, so every rank chooses alike): rank 0 may stay away until work
          // arrives, and the others wait with no watchdog, ended only by the collective's own
          // failure detection (Collective.awaitBroadcast). Not before the group has met once: a
          // rank that never made a call is one no failure detection knows yet.
          byte[] bytes =
              isIdle() && collective.calls() > 0
                  ? collective.awaitBroadcast(0, payload, RECV_TAG)
                  : collective.broadcast(0, payload, RECV_TAG);
          TickCommands received = TickCommands.decode(bytes);
          if (received.skippedTicks() != 0) {
            skip(received.skippedTicks());
          }
          scheduler.apply(received, tick);
          return received;
        });
  }

  /**
   * Advances the tick number over idle ticks that rank 0 left out: each would have made the recv
   * broadcast only (and the digest check where due, which compares equal state again), and
   * changed nothing but the tick and the tick counters, which are advanced as it would have.
   */
  private void skip(long ticks) {
    if (!isIdle()) {
      throw new IllegalStateException(
          "rank 0 skipped "
              + ticks
              + " ticks at tick "
              + tick
              + " but this rank is not idle (waiting="
              + scheduler.waiting.size()
              + ", running="
              + scheduler.running.size()
              + ", outstanding="
              + cache.outstandingOperations()
              + "): skip only ticks with nothing outstanding, see RankEngine.isIdle");
    }
    tick += ticks;
    counters.ticks += ticks;
    counters.idleTicks += ticks;
    counters.skippedTicks += ticks;
  }

  /** Step 2: the fused reduction and commit, iff anything is outstanding. */
  public void sync() {
    step(
        TickStep.SYNC,
        () -> {
          outstandingAtSync = cache.outstandingOperations();
          if (commitSync.run()) {
            counters.syncTicks++;
          }
          return null;
        });
  }

  /** Step 3: admits waiting requests in arrival order while they fit. */
  public void admit() {
    step(
        TickStep.ADMIT,
        () -> {
          scheduler.admit(tick);
          return null;
        });
  }

  /** Step 4: the model runs every running request whose load-backs have committed. */
  public void forward() {
    step(
        TickStep.FORWARD,
        () -> {
          scheduler.forward(tick);
          return null;
        });
  }

  /** Step 5: finished requests are inserted into the cache and released. */
  public void finish() {
    step(
        TickStep.FINISH,
        () -> {
          scheduler.finish(tick);
          return null;
        });
  }

  /**
   * Step 6: the replica digest check when due, and the end of the tick.
   *
   * @throws ReplicaDivergenceException on every rank if the digests differ
   */
  public void check() {
    step(
        TickStep.CHECK,
        () -> {
          if (config.digestInterval() > 0 && (tick + 1) % config.digestInterval() == 0) {
            long before = collective.calls();
            checkDigest("digest check of step 6");
            digestCallsThisTick = collective.calls() - before;
          }
          closeTick();
          return null;
        });
  }

  /**
   * Runs one step in order. A step that throws fails the engine for good, and the group with
   * it: see {@link #failTogether}.
   */
  private <T> T step(TickStep step, Supplier<T> body) {
    if (failure != null) {
      throw failure;
    }
    if (step != next) {
      throw new IllegalStateException(
          "step "
              + step
              + " called at tick "
              + tick
              + " but the next step is "
              + next
              + ": call receive, sync, admit, forward, finish and"
              + " check once each per tick, in this order");
    }
    schedule.enter();
    collective.forgetGroupFailure();
    try {
      T result = body.get();
      next = next.next();
      return result;
    } catch (RuntimeException | Error e) {
      // Failed for good before anything else can go wrong; then told and described.
      failure = undescribed;
      failure = failTogether(step, e);
      throw failure;
    } finally {
      schedule.exit();
    }
  }

  /**
   * What a failed step throws, on this rank, after the group has been told. Whether the failure
   * reached the other ranks already is decided by where it came from, never by its type:
   *
   * <ul>
   *   <li>The group's own failure: a {@link CollectiveException} that the group threw through the
   *       engine's handle ({@link RecordingCollective#groupFailure()}), in the engine's calls or
   *       in a model's sums through {@link #collective()}. By the {@link Collective} contract it
   *       broke the group on every rank, so nothing more is said: when it is the desync that
   *       carried another rank's failure it becomes that rank's {@link
   *       RankGroupFailedException}, when the group found a rank gone it names that rank, and
   *       otherwise (a desync, the watchdog) it is thrown as it is.
   *   <li>The digest check's {@link ReplicaDivergenceException}, raised by this engine from a
   *       reduction whose result every rank shares: every rank raises it alike.
   *   <li>Anything else failed on this rank only, whatever its type: an exception or an {@link
   *       Error} of the model, the cache, a listener, the commands, and a {@link
   *       CollectiveException} that did not come from the group through the engine's handle (a
   *       model's own tensor-parallel collective, a wrapper of its own). This rank makes the one
   *       call no healthy rank makes, a barrier tagged with the encoded failure ({@link
   *       GroupFailure}). It meets the other ranks' next call, whatever that is, at the same
   *       sequence number, and fails it on every rank as a desync whose message names the tag;
   *       each of them raises the same {@link RankGroupFailedException}. A matching flag in the
   *       engine's own calls cannot do it: after a failure in step 3 to 5 on a rank other than 0
   *       the next calls are rank 0's {@code recv} broadcasts, which carry nothing from the other
   *       ranks, and whether the next {@code sync} runs, and with what shape, depends on
   *       replicated state this rank no longer has.
   * </ul>
   *
   * <p>It does not throw, and the caller has marked the rank failed before calling it: a
   * failure whose description throws (its {@code toString}, an {@link OutOfMemoryError} while
   * the text is built) is told by its class alone; should even that fail, the rank throws an
   * exception made at construction, and the others learn of it at the watchdog.
   */
  private RuntimeException failTogether(TickStep step, Throwable e) {
    try {
      return decide(step, e);
    } catch (RuntimeException | Error handler) {
      try {
        return tellGroup(step, e, GroupFailure.fallback(e, handler));
      } catch (RuntimeException | Error again) {
        return undescribed;
      }
    }
  }

  private RuntimeException decide(TickStep step, Throwable e) {
    CollectiveException group = collective.groupFailure();
    if (group != null) {
      return groupFailed(step, e, group);
    }
    if (e == agreedDivergence) {
      return agreedDivergence;
    }
    return tellGroup(step, e, GroupFailure.describe(e));
  }

  /** The group itself failed in this step: every rank knows already, or does at its next call. */
  private RuntimeException groupFailed(TickStep step, Throwable e, CollectiveException group) {
    String seenIn = "tick " + tick + ", step " + step;
    if (e != group) {
      group.addSuppressed(e);
    }
    Optional<GroupFailure> told = GroupFailure.find(group);
    if (told.isPresent()) {
      GroupFailure f = told.get();
      return new RankGroupFailedException(
          rank(), f.rank(), f.tick(), f.step(), f.cause(), seenIn, group);
    }
    if (group instanceof CollectiveRankLostException lost) {
      // The collective's failure detection found a rank gone (its process or thread died): it
      // makes no call, so no tag carries its failure; the detection names it instead.
      return new RankGroupFailedException(
          rank(),
          lost.lostRank(),
          tick,
          step,
          "rank " + lost.lostRank() + " is gone: " + GroupFailure.describe(group),
          seenIn,
          group);
    }
    return group;
  }

  /** This rank's own failure: the barrier that tells the group, then the exception. */
  private RuntimeException tellGroup(TickStep step, Throwable e, String description) {
    GroupFailure own = GroupFailure.of(rank(), tick, step, description);
    try {
      collective.barrier(own.tag());
    } catch (RuntimeException | Error told) {
      // Expected: the others called something else, and now know.
      try {
        e.addSuppressed(told);
      } catch (RuntimeException | Error ignored) {
        // Nothing to keep it in; the barrier did its work.
      }
    }
    return new RankGroupFailedException(
        rank(), own.rank(), own.tick(), own.step(), own.cause(), "tick " + tick, e);
  }

  private void checkDigest(String detail) {
    long digest = replicaDigest();
    long[] reduced = {digest, ~digest};
    collective.allReduceInto(ReduceOp.MIN, reduced, reduced, DIGEST_TAG);
    counters.digestChecks++;
    long min = reduced[0];
    long max = ~reduced[1];
    if (min != max) {
      // Raised alike on every rank: each reduced the same values (see failTogether).
      agreedDivergence =
          new ReplicaDivergenceException(collective.rank(), tick, min, max, digest, detail);
      throw agreedDivergence;
    }
  }

  private void closeTick() {
    long calls = collective.calls() - callsAtTickStart;
    counters.maxProtocolCallsPerTick =
        Math.max(counters.maxProtocolCallsPerTick, calls - digestCallsThisTick);
    if (outstandingAtSync == 0) {
      counters.idleTicks++;
      counters.idleTickCalls += calls - 1 - digestCallsThisTick;
    }
    counters.ticks++;
    tick++;
  }

  /**
   * Checks a request before it is submitted, against the rules by which the engine rejects a
   * request (step 1: every token within the vocabulary, the prompt plus {@code maxOutputTokens}
   * within the engine's limit; step 3: its KV within the device pool). A server may call it
   * where a client's request enters, to answer the client at once; a request that fails it and
   * is submitted anyway is rejected on every rank ({@link RequestOutcome#REJECTED}, with the
   * reason told to {@link RequestListener#rejected}), and the group goes on. Reads only the
   * request and this engine's settings, so any thread may call it.
   *
   * @param request the request
   * @throws IllegalArgumentException naming what is wrong with the request
   */
  public void checkRequest(RankRequest request) {
    Objects.requireNonNull(request, "request");
    String problem = scheduler.entryProblem(request);
    if (problem == null) {
      problem = scheduler.poolProblem(request);
    }
    if (problem != null) {
      throw new IllegalArgumentException(
          "request id=" + request.id() + " would be rejected: " + problem);
    }
  }

  /**
   * Sets who is told of each request's milestones (arrival, admission, first token, end), from
   * the next step on. Call it between ticks on the scheduler thread. Without one the engine
   * reports to {@link RequestListener#NONE}, which costs a call that does nothing and no
   * allocation. The listener is called inside the engine's steps: it may read the cache through
   * {@link #view()}, and a replicated mutator of the cache it calls (a {@code match} included:
   * it touches the nodes' clocks) throws {@link IllegalStateException}, whatever the rank, which
   * fails the group like any other failure of a step if the listener lets it through. The same
   * holds for the model's calls.
   *
   * @param listener the listener, or {@link RequestListener#NONE} to stop listening
   */
  public void setRequestListener(RequestListener listener) {
    scheduler.listener =
        Callbacks.listener(
            Objects.requireNonNull(
                listener, "listener: pass RequestListener.NONE to stop listening"),
            schedule);
  }

  // ---------------------------------------------------------------- inspection

  /**
   * A 64-bit hash of every piece of replicated state: the cache's, the request queues with each
   * running request's progress, the replicated counters, the tick and the collective schedule so
   * far. Equal on every rank of a healthy group between two steps.
   *
   * @return the digest
   */
  public long replicaDigest() {
    Digest d =
        new Digest(0x7E9_1CA7EL)
            .add(tick)
            .add(next.ordinal())
            .add(cache.replicaDigest())
            .add(collective.scheduleHash())
            .add(collective.calls());
    scheduler.digest(d);
    counters.digest(d);
    return d.value();
  }

  /**
   * Whether the input has ended and everything drained: no request waiting or running, no
   * backup or load outstanding. Replicated.
   *
   * @return true when drained
   */
  public boolean isDrained() {
    return scheduler.endOfInput && scheduler.idle() && cache.outstandingOperations() == 0;
  }

  /**
   * Whether a tick now would do nothing but count: no request waiting, prefetching an L3 prefix
   * or running, and no backup, load or L3 operation outstanding. Replicated. Rank 0 may skip
   * such ticks until the next arrival ({@link TickCommands#skippedTicks()}).
   *
   * @return true when idle
   */
  public boolean isIdle() {
    return scheduler.idle() && cache.outstandingOperations() == 0;
  }

  /**
   * The ids of the live requests: waiting ones in queue order, those prefetching, running ones,
   * then finished ones whose prompt is being published. Replicated.
   *
   * @return a new array
   */
  public long[] liveRequestIds() {
    return scheduler.liveIds();
  }

  /**
   * The number of waiting requests.
   *
   * @return the count
   */
  public int waitingRequests() {
    return scheduler.waiting.size();
  }

  /**
   * The number of running requests.
   *
   * @return the count
   */
  public int runningRequests() {
    return scheduler.running.size();
  }

  /**
   * The counters.
   *
   * @return a snapshot
   */
  public RankEngineStats stats() {
    return counters.snapshot(collective.calls());
  }

  /**
   * Speculative decoding's counts so far, per tier a request's prefix came from (all zero for a
   * model without a draft: {@link ModelRunner#speculativeTokens}).
   *
   * @return a snapshot
   */
  public SpeculationStats speculation() {
    return counters.speculation();
  }

  /**
   * The counts of prompt KV transfers between replicas ({@link TransferRole}) so far.
   *
   * @return a snapshot
   */
  public TransferStats transfers() {
    return counters.transfers();
  }

  /**
   * The tick in progress, or the next one between ticks; from 0.
   *
   * @return the tick
   */
  public long tickNumber() {
    return tick;
  }

  /**
   * The step the engine expects next.
   *
   * @return the step
   */
  public TickStep nextStep() {
    return next;
  }

  /**
   * The collective as the engine calls it, with its call log.
   *
   * @return the recording wrapper
   */
  public RecordingCollective collective() {
    return collective;
  }

  /**
   * This rank's cache, read-only: counts, pool usage, statistics, the digest and match-free
   * lookups. Every change of the cache goes through this engine's steps (requests and aborts in
   * the tick's commands); the cache passed to the constructor is bound to this engine ({@link
   * RankCache#bindSchedule}), so on several ranks a change made to it outside a step throws
   * {@link IllegalStateException} naming the method.
   *
   * @return a view that cannot be cast back to the cache
   */
  public CacheView view() {
    return cache.readOnly();
  }

  /**
   * The same read-only view as {@link #view()}, under its older name.
   *
   * @return the view
   */
  public CacheView cache() {
    return view();
  }

  /**
   * The settings.
   *
   * @return the config
   */
  public RankEngineConfig config() {
    return config;
  }

  /**
   * This engine's rank.
   *
   * @return the rank
   */
  public int rank() {
    return collective.rank();
  }

  @Override
  public String toString() {
    return "RankEngine[rank="
        + rank()
        + ", tick="
        + tick
        + ", next="
        + next
        + ", waiting="
        + scheduler.waiting.size()
        + ", running="
        + scheduler.running.size()
        + "]";
  }
}
