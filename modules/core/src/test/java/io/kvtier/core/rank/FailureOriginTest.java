package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ForwardingCollective;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Supplier;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Whether a step's failure reached every rank is decided by where it came from, never by its
 * type, and the failure handler cannot throw. A tensor-parallel model sums its partial outputs
 * through the engine's collective every layer; when its own collective (a wrapper of the
 * model's) throws a {@link CollectiveException} on one rank only, or a step throws an exception
 * whose description throws, every rank ends with {@link RankGroupFailedException} naming that
 * rank, at the next collective and not at the group's watchdog.
 */
@Timeout(60)
class FailureOriginTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64);
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withChunkTokens(8).withMaxRunning(2);

  /** The group's watchdog: a failure told at the next collective ends far below it. */
  private static final Duration WATCHDOG = Duration.ofSeconds(10);

  private static final int FAILING_RANK = 1;
  private static final long FAILING_TICK = 2;

  /** What rank 1's model throws at its first layer of tick 2. */
  enum Fault {
    /** Its collective throws a CollectiveException, on rank 1 alone. */
    COLLECTIVE_EXCEPTION(
        () -> new CollectiveException("injected: the model's collective failed on rank 1", null)),
    /** Its collective throws a CollectiveTimeoutException, on rank 1 alone. */
    COLLECTIVE_TIMEOUT(
        () -> new CollectiveTimeoutException("injected: the model's collective timed out")),
    /** An exception whose toString throws. */
    TO_STRING_THROWS(
        () ->
            new UndescribableException(
                () -> new IllegalStateException("injected: toString is broken"))),
    /** An exception whose toString runs out of memory. */
    TO_STRING_OUT_OF_MEMORY(
        () -> new UndescribableException(() -> new OutOfMemoryError("injected: no room"))),
    /** A CollectiveException whose toString throws. */
    COLLECTIVE_EXCEPTION_UNDESCRIBABLE(UndescribableCollectiveException::new);

    final Supplier<RuntimeException> make;

    Fault(Supplier<RuntimeException> make) {
      this.make = make;
    }

    /** Whether the model's collective throws it, rather than the model itself. */
    boolean fromCollective() {
      return make.get() instanceof CollectiveException;
    }
  }

  /** An exception whose description throws. */
  static final class UndescribableException extends RuntimeException {
    private final transient Supplier<? extends Throwable> thrown;

    UndescribableException(Supplier<? extends Throwable> thrown) {
      super("undescribable");
      this.thrown = thrown;
    }

    @Override
    public String toString() {
      Throwable t = thrown.get();
      if (t instanceof RuntimeException e) {
        throw e;
      }
      throw (Error) t;
    }
  }

  /** A collective failure whose description throws. */
  static final class UndescribableCollectiveException extends CollectiveException {
    UndescribableCollectiveException() {
      super("undescribable collective failure", null);
    }

    @Override
    public String getMessage() {
      throw new IllegalStateException("injected: getMessage is broken");
    }
  }

  /**
   * A tensor-parallel model: it sums a partial output through its collective at every layer, as
   * a real model does. Its collective is the engine's handle, seen through the model's own
   * wrapper; on the failing rank the wrapper throws instead of summing once.
   */
  static final class SummingModel extends RankHarness.CountingModel {
    final int rank;
    final Fault fault;
    final AtomicReferenceArray<Collective> collectives;
    long tick;
    boolean fired;
    boolean failNextSum;

    SummingModel(int rank, Fault fault, AtomicReferenceArray<Collective> collectives) {
      this.rank = rank;
      this.fault = fault;
      this.collectives = collectives;
    }

    @Override
    public void writeLayer(ModelStep step, int layer) {
      if (rank == FAILING_RANK && tick >= FAILING_TICK && !fired) {
        fired = true;
        if (!fault.fromCollective()) {
          throw fault.make.get();
        }
        failNextSum = true;
      }
      long[] sum = collectives.get(rank).allReduce(ReduceOp.SUM, new long[] {layer}, "tp-sum");
      assertThat(sum[0]).isEqualTo((long) layer * collectives.get(rank).size());
      super.writeLayer(step, layer);
    }
  }

  /** The model's own view of the engine's handle, which fails once on the failing rank. */
  static final class ModelCollective extends ForwardingCollective {
    private final SummingModel model;

    ModelCollective(Collective engines, SummingModel model) {
      super(engines);
      this.model = model;
    }

    @Override
    public long[] allReduce(ReduceOp op, long[] values, String tag) {
      if (model.failNextSum) {
        model.failNextSum = false;
        throw model.fault.make.get();
      }
      return super.allReduce(op, values, tag);
    }
  }

  private static int[] prompt(int id) {
    int[] p = new int[14];
    for (int i = 0; i < p.length; i++) {
      p[i] = 1000 + 37 * id + i;
    }
    return p;
  }

  private static TickCommands feed(long tick) {
    if (tick >= 4) {
      return TickCommands.NONE;
    }
    return TickCommands.arrive(List.of(RankRequest.of(tick, prompt((int) tick), 3)));
  }

  @ParameterizedTest(name = "{0} ranks, guard {1}: {2}")
  @CsvSource({
    "2, false, COLLECTIVE_EXCEPTION",
    "2, true, COLLECTIVE_EXCEPTION",
    "4, false, COLLECTIVE_EXCEPTION",
    "4, true, COLLECTIVE_TIMEOUT",
    "2, false, COLLECTIVE_TIMEOUT",
    "2, false, TO_STRING_THROWS",
    "4, true, TO_STRING_THROWS",
    "2, false, TO_STRING_OUT_OF_MEMORY",
    "3, false, COLLECTIVE_EXCEPTION_UNDESCRIBABLE"
  })
  void aOneRankFailureEndsEveryRankWithTheGroupFailureNamingIt(
      int ranks, boolean guard, Fault fault) throws Exception {
    AtomicReferenceArray<Collective> collectives = new AtomicReferenceArray<>(ranks);
    List<SummingModel> models = new ArrayList<>();
    for (int r = 0; r < ranks; r++) {
      models.add(new SummingModel(r, fault, collectives));
    }
    try (RankHarness h =
        new RankHarness(ranks, CACHE, ENGINE.withGuardCollective(guard), models::get, WATCHDOG)) {
      for (int r = 0; r < ranks; r++) {
        collectives.set(r, new ModelCollective(h.engines.get(r).collective(), models.get(r)));
      }
      long start = System.nanoTime();
      List<Object> results =
          h.onRanks(
              (rank, engine) -> {
                for (int i = 0; i < 20; i++) {
                  models.get(rank).tick = engine.tickNumber();
                  h.clocks.get(rank).set(engine.tickNumber() * RankHarness.TICK_NANOS);
                  try {
                    engine.tick(rank == 0 ? feed(engine.tickNumber()) : null);
                  } catch (RuntimeException e) {
                    return e;
                  }
                }
                return "no failure in 20 ticks";
              });
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(models.get(FAILING_RANK).fired).as("the fault fired").isTrue();
      for (int r = 0; r < ranks; r++) {
        assertThat(results.get(r)).as("rank %d", r).isInstanceOf(RankGroupFailedException.class);
        RankGroupFailedException e = (RankGroupFailedException) results.get(r);
        assertThat(e.rank()).isEqualTo(r);
        assertThat(e.failedRank()).as("rank %d names the failed rank", r).isEqualTo(FAILING_RANK);
        assertThat(e.tick()).isEqualTo(FAILING_TICK);
        assertThat(e.step()).isEqualTo(TickStep.FORWARD);
        switch (fault) {
          case COLLECTIVE_EXCEPTION ->
              assertThat(e.causeDescription())
                  .contains("CollectiveException: injected: the model's collective failed");
          case COLLECTIVE_TIMEOUT ->
              assertThat(e.causeDescription())
                  .contains("CollectiveTimeoutException: injected: the model's collective");
          default ->
              assertThat(e.causeDescription())
                  .contains(fault.make.get().getClass().getName())
                  .contains("not described");
        }
        if (r == FAILING_RANK) {
          assertThat(e.getCause()).isInstanceOf(fault.make.get().getClass());
        }
        // Marked failed: every later step throws the same exception.
        RankEngine engine = h.engines.get(r);
        assertThatThrownBy(() -> engine.receive(TickCommands.NONE)).isSameAs(e);
      }
      assertThat(took).as("ended by the failure, not the watchdog").isLessThan(WATCHDOG);
    }
  }
}
