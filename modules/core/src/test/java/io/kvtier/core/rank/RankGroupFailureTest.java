package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.cache.L3Setup;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.L3Config;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A step that throws on one rank (an exception or an {@link Error}, the thread alive) fails the
 * whole group at that rank's next collective: every rank raises one {@link
 * RankGroupFailedException} naming the failed rank, tick, step and cause, long before the
 * harness's 20 s watchdog, and every later step throws the same exception.
 */
@Timeout(60)
class RankGroupFailureTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withGuardCollective(false).withChunkTokens(8).withMaxRunning(2);

  /** Far below the harness's watchdog of 20 s. */
  private static final Duration BOUND = Duration.ofSeconds(5);

  /** What to throw. */
  enum Kind {
    EXCEPTION,
    STACK_OVERFLOW,
    OUT_OF_MEMORY;

    Throwable make(String what) {
      return switch (this) {
        case EXCEPTION -> new IllegalStateException(what);
        case STACK_OVERFLOW -> new StackOverflowError(what);
        case OUT_OF_MEMORY -> new OutOfMemoryError(what);
      };
    }
  }

  /** Throws once, on one rank, in one step, at the first chance at or after a tick. */
  static final class Fault {
    final int rank;
    final long tick;
    final TickStep step;
    final Kind kind;
    volatile long firedAt = -1;

    Fault(int rank, long tick, TickStep step, Kind kind) {
      this.rank = rank;
      this.tick = tick;
      this.step = step;
      this.kind = kind;
    }

    void maybeFire(int rank, long tick, TickStep step) {
      if (rank == this.rank && step == this.step && tick >= this.tick && firedAt < 0) {
        firedAt = tick;
        Throwable t = kind.make("injected " + kind + " on rank " + rank + " in " + step);
        if (t instanceof RuntimeException e) {
          throw e;
        }
        throw (Error) t;
      }
    }
  }

  /** A prompt of {@code length} tokens, a shared first page per group. */
  private static int[] prompt(int id, int length) {
    int[] p = new int[length];
    for (int i = 0; i < length; i++) {
      p[i] = i < 8 ? 100 * (id % 2) + i : 1000 + 37 * id + i;
    }
    return p;
  }

  /** Two arrivals a tick for the first 6 ticks, then nothing. */
  private static TickCommands feed(long tick) {
    if (tick >= 6) {
      return TickCommands.NONE;
    }
    List<RankRequest> list = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      long id = tick * 2 + i;
      list.add(RankRequest.of(id, prompt((int) id, 14), 2));
    }
    return TickCommands.arrive(list);
  }

  private static RankHarness harness(int ranks, Fault fault, AtomicLong[] ticks) {
    return new RankHarness(
        ranks,
        CACHE,
        ENGINE,
        Map.of(),
        (r, t) ->
            fault.step == TickStep.SYNC && r == fault.rank
                ? new FaultyCompletion(t, fault, r, ticks[r])
                : t,
        r ->
            new RankHarness.CountingModel() {
              @Override
              public void writeLayer(ModelStep step, int layer) {
                fault.maybeFire(r, ticks[r].get(), TickStep.FORWARD);
                super.writeLayer(step, layer);
              }
            });
  }

  /** Listens on each rank and fires the fault in RECEIVE, ADMIT and FINISH. */
  private static void listen(RankHarness h, Fault fault) {
    for (RankEngine e : h.engines) {
      int r = e.rank();
      e.setRequestListener(
          new RequestListener() {
            @Override
            public void arrived(long tick, long id, int promptTokens) {
              fault.maybeFire(r, tick, TickStep.RECEIVE);
            }

            @Override
            public void admitted(long tick, long id, int deviceHitTokens, int hostHitTokens) {
              fault.maybeFire(r, tick, TickStep.ADMIT);
            }

            @Override
            public void ended(long tick, long id, RequestOutcome outcome) {
              if (outcome == RequestOutcome.FINISHED) {
                fault.maybeFire(r, tick, TickStep.FINISH);
              }
            }
          });
    }
  }

  @ParameterizedTest(name = "{0} ranks, rank {1} at tick {2} in {3}: {4}")
  @CsvSource({
    "2, 1, 0, FORWARD, EXCEPTION",
    "4, 1, 0, FORWARD, EXCEPTION",
    "4, 1, 0, FORWARD, STACK_OVERFLOW",
    "4, 2, 3, FORWARD, OUT_OF_MEMORY",
    "2, 0, 2, FORWARD, STACK_OVERFLOW",
    "4, 3, 0, RECEIVE, EXCEPTION",
    "2, 0, 1, RECEIVE, EXCEPTION",
    "4, 1, 2, ADMIT, EXCEPTION",
    "2, 1, 0, ADMIT, OUT_OF_MEMORY",
    "4, 2, 1, FINISH, EXCEPTION",
    "2, 0, 1, FINISH, STACK_OVERFLOW",
    "4, 1, 1, SYNC, EXCEPTION",
    "2, 1, 1, SYNC, STACK_OVERFLOW"
  })
  void aStepThatThrowsOnOneRankFailsEveryRankTogether(
      int ranks, int failRank, long failTick, TickStep step, Kind kind) throws Exception {
    Fault fault = new Fault(failRank, failTick, step, kind);
    AtomicLong[] ticks = new AtomicLong[ranks];
    for (int r = 0; r < ranks; r++) {
      ticks[r] = new AtomicLong();
    }
    try (RankHarness h = harness(ranks, fault, ticks)) {
      listen(h, fault);
      long start = System.nanoTime();
      long[] raisedAfterNanos = new long[ranks];
      List<Object> results =
          h.onRanks(
              (rank, engine) -> {
                for (int i = 0; i < 40; i++) {
                  ticks[rank].set(engine.tickNumber());
                  h.clocks.get(rank).set(engine.tickNumber() * RankHarness.TICK_NANOS);
                  try {
                    engine.tick(rank == 0 ? feed(engine.tickNumber()) : null);
                  } catch (RuntimeException e) {
                    raisedAfterNanos[rank] = System.nanoTime() - start;
                    return e;
                  }
                }
                return "no failure in 40 ticks";
              });
      assertThat(fault.firedAt).as("the fault fired").isGreaterThanOrEqualTo(0);
      for (int r = 0; r < ranks; r++) {
        Object o = results.get(r);
        assertThat(o).as("rank %d", r).isInstanceOf(RankGroupFailedException.class);
        RankGroupFailedException e = (RankGroupFailedException) o;
        assertThat(e.rank()).isEqualTo(r);
        assertThat(e.failedRank()).as("rank %d names the failed rank", r).isEqualTo(failRank);
        assertThat(e.tick()).isEqualTo(fault.firedAt);
        assertThat(e.step()).isEqualTo(step);
        assertThat(e.causeDescription()).contains("injected " + kind + " on rank " + failRank);
        assertThat(e.getMessage())
            .contains("rank " + failRank + " failed at tick " + fault.firedAt + " in step " + step);
        assertThat(Duration.ofNanos(raisedAfterNanos[r]))
            .as("rank %d raised it in time", r)
            .isLessThan(BOUND);
        if (r == failRank) {
          assertThat(e.getCause()).isInstanceOf(kind.make("").getClass());
        }
        // Failed for good: every later step throws the same exception.
        RankEngine engine = h.engines.get(r);
        assertThatThrownBy(() -> engine.receive(TickCommands.NONE)).isSameAs(e);
        assertThatThrownBy(engine::check).isSameAs(e);
      }
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void withTheGuardOnTheFailureReachesEveryRankThroughTheGuardsHeader(int ranks) throws Exception {
    Fault fault = new Fault(1, 0, TickStep.FORWARD, Kind.EXCEPTION);
    AtomicLong[] ticks = new AtomicLong[ranks];
    for (int r = 0; r < ranks; r++) {
      ticks[r] = new AtomicLong();
    }
    try (RankHarness h =
        new RankHarness(
            ranks,
            CACHE,
            ENGINE.withGuardCollective(true),
            Map.of(),
            (r, t) -> t,
            r ->
                new RankHarness.CountingModel() {
                  @Override
                  public void writeLayer(ModelStep step, int layer) {
                    fault.maybeFire(r, ticks[r].get(), TickStep.FORWARD);
                    super.writeLayer(step, layer);
                  }
                })) {
      List<Object> results =
          h.onRanks(
              (rank, engine) -> {
                for (int i = 0; i < 10; i++) {
                  ticks[rank].set(engine.tickNumber());
                  try {
                    engine.tick(rank == 0 ? feed(engine.tickNumber()) : null);
                  } catch (RuntimeException e) {
                    return e;
                  }
                }
                return "no failure";
              });
      for (int r = 0; r < ranks; r++) {
        assertThat(results.get(r))
            .as("rank %d", r)
            .isInstanceOfSatisfying(
                RankGroupFailedException.class,
                e -> {
                  assertThat(e.failedRank()).isEqualTo(1);
                  assertThat(e.step()).isEqualTo(TickStep.FORWARD);
                  assertThat(e.tick()).isZero();
                });
      }
    }
  }

  @Test
  void rank0sCommandsRejectedBeforeTheBroadcastFailEveryRankAtThatBroadcast() throws Exception {
    try (RankHarness h = new RankHarness(4, CACHE, ENGINE)) {
      List<Object> results =
          h.onRanks(
              (rank, engine) -> {
                try {
                  engine.tick(rank == 0 ? TickCommands.NONE : null);
                  // Rank 0 forgets its commands: it throws before the broadcast the others wait in.
                  engine.tick(null);
                  return "no failure";
                } catch (RuntimeException e) {
                  return e;
                }
              });
      for (int r = 0; r < 4; r++) {
        assertThat(results.get(r))
            .as("rank %d", r)
            .isInstanceOfSatisfying(
                RankGroupFailedException.class,
                e -> {
                  assertThat(e.failedRank()).isEqualTo(0);
                  assertThat(e.tick()).isEqualTo(1);
                  assertThat(e.step()).isEqualTo(TickStep.RECEIVE);
                  assertThat(e.causeDescription()).contains("rank 0 must pass the tick's commands");
                });
      }
    }
  }

  @Test
  void twoRanksThatFailInTheSameStepEachNameThemselvesAndTheOthersAgreeOnOne() throws Exception {
    Fault one = new Fault(1, 1, TickStep.FORWARD, Kind.EXCEPTION);
    Fault three = new Fault(3, 1, TickStep.FORWARD, Kind.EXCEPTION);
    AtomicLong[] ticks = new AtomicLong[4];
    for (int r = 0; r < 4; r++) {
      ticks[r] = new AtomicLong();
    }
    try (RankHarness h =
        new RankHarness(
            4,
            CACHE,
            ENGINE,
            Map.of(),
            (r, t) -> t,
            r ->
                new RankHarness.CountingModel() {
                  @Override
                  public void writeLayer(ModelStep step, int layer) {
                    one.maybeFire(r, ticks[r].get(), TickStep.FORWARD);
                    three.maybeFire(r, ticks[r].get(), TickStep.FORWARD);
                    super.writeLayer(step, layer);
                  }
                })) {
      List<Object> results =
          h.onRanks(
              (rank, engine) -> {
                for (int i = 0; i < 10; i++) {
                  ticks[rank].set(engine.tickNumber());
                  try {
                    engine.tick(rank == 0 ? feed(engine.tickNumber()) : null);
                  } catch (RuntimeException e) {
                    return e;
                  }
                }
                return "no failure";
              });
      List<Integer> named = new ArrayList<>();
      for (int r = 0; r < 4; r++) {
        assertThat(results.get(r)).as("rank %d", r).isInstanceOf(RankGroupFailedException.class);
        named.add(((RankGroupFailedException) results.get(r)).failedRank());
      }
      // Each failed rank names itself; the healthy ones agree on one of the failed ranks.
      assertThat(named.get(1)).isEqualTo(1);
      assertThat(named.get(3)).isEqualTo(3);
      assertThat(named.get(0)).isIn(1, 3).isEqualTo(named.get(2));
    }
  }

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {2, 4})
  void anErrorThatStopsOneRanksL3WorkerFailsEveryRankAtTheNextSync(int ranks) throws Exception {
    List<L3Executor> executors = new ArrayList<>();
    try (RankHarness h =
        new RankHarness(
            ranks,
            CACHE,
            ENGINE,
            Map.of(),
            (r, t) -> t,
            r -> new RankHarness.CountingModel(),
            r -> {
              L3Executor executor = L3Executor.background("l3-rank-" + r);
              executors.add(executor);
              // Every host backup goes to L3 at its commit; rank 1's store overflows its stack.
              return new L3Setup(
                  L3Config.DEFAULTS.withBackupThreshold(0),
                  new NullStore(r == 1),
                  executor,
                  System::nanoTime,
                  r,
                  ranks);
            })) {
      List<Object> results =
          h.onRanks(
              (rank, engine) -> {
                for (int i = 0; i < 200; i++) {
                  h.clocks.get(rank).set(engine.tickNumber() * RankHarness.TICK_NANOS);
                  try {
                    engine.tick(rank == 0 ? feed(engine.tickNumber()) : null);
                  } catch (RuntimeException e) {
                    return e;
                  }
                  if (rank == 1 && engine.cache().pendingL3Writes() > 0) {
                    // Let the worker reach the store, so that the next sync asks a dead worker.
                    sleep(20);
                  }
                }
                return "no failure in 200 ticks";
              });
      for (int r = 0; r < ranks; r++) {
        assertThat(results.get(r))
            .as("rank %d", r)
            .isInstanceOfSatisfying(
                RankGroupFailedException.class,
                e -> {
                  assertThat(e.failedRank()).isEqualTo(1);
                  assertThat(e.step()).isEqualTo(TickStep.SYNC);
                  assertThat(e.causeDescription())
                      .contains("the L3 worker l3-rank-1 stopped on")
                      .contains("StackOverflowError: store recursed (test)");
                });
      }
    } finally {
      executors.forEach(L3Executor::close);
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A store that keeps nothing; on a dying rank its first put throws an Error. */
  private record NullStore(boolean dies) implements KvStore {
    @Override
    public int existsPrefix(List<PageKey> keys) {
      return 0;
    }

    @Override
    public int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
      return 0;
    }

    @Override
    public int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
      if (dies) {
        throw new StackOverflowError("store recursed (test)");
      }
      return keys.size();
    }

    @Override
    public KvStoreStats stats() {
      return new KvStoreStats(0, 0, 0, 0, 0, 0);
    }

    @Override
    public void close() {}
  }

  /** Makes every completion query of rank r's copies throw from a tick on: a SYNC failure. */
  private static final class FaultyCompletion implements TransferEngine {
    private final TransferEngine delegate;
    private final Fault fault;
    private final int rank;
    private final AtomicLong tick;

    FaultyCompletion(TransferEngine delegate, Fault fault, int rank, AtomicLong tick) {
      this.delegate = delegate;
      this.fault = fault;
      this.rank = rank;
      this.tick = tick;
    }

    @Override
    public TransferHandle submit(TransferBatch batch) {
      TransferHandle raw = delegate.submit(batch);
      return new TransferHandle() {
        @Override
        public long sequence() {
          return raw.sequence();
        }

        @Override
        public TransferBatch batch() {
          return raw.batch();
        }

        @Override
        public boolean isDone() {
          fault.maybeFire(rank, tick.get(), TickStep.SYNC);
          return raw.isDone();
        }

        @Override
        public Optional<Throwable> failure() {
          return raw.failure();
        }

        @Override
        public void await() throws InterruptedException {
          raw.await();
        }

        @Override
        public boolean await(Duration timeout) throws InterruptedException {
          return raw.await(timeout);
        }
      };
    }

    @Override
    public int inFlight() {
      return delegate.inFlight();
    }

    @Override
    public void close() {
      delegate.close();
    }
  }
}
