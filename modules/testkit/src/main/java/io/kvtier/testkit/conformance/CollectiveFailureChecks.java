package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The failure checks of {@link CollectiveConformanceSuite}: desync, watchdog timeouts, a rank that
 * leaves, a group that never forms, and that a broken group stays broken. Subclass {@link
 * CollectiveConformanceSuite}, not this class.
 */
public abstract class CollectiveFailureChecks extends CollectiveSuiteBase {

  /** For subclasses. */
  protected CollectiveFailureChecks() {}

  /** How rank 0's call differs from the other ranks' calls in a desync check. */
  public enum Mismatch {
    /** Same operation, different tag. */
    TAG,
    /** All-reduce on rank 0, barrier on the others, same tag. */
    OPERATION,
    /** All-reduce of 1 element on rank 0, of 2 on the others. */
    ARRAY_LENGTH,
    /** Broadcast from root 0 on rank 0, from root 1 on the others. */
    ROOT
  }

  /** What a rank saw: the mismatched call's failure, and the failure of a call after it. */
  record Failures(Throwable first, Throwable later) {}

  /**
   * Ranks that disagree on the call fail with {@link CollectiveDesyncException} on every rank,
   * and every later call on the group throws.
   *
   * @param mismatch how rank 0 disagrees
   * @param size number of ranks
   * @throws Exception on failure
   */
  @ParameterizedTest(name = "{0} with {1} ranks")
  @CsvSource({
    "TAG, 2",
    "TAG, 4",
    "OPERATION, 2",
    "OPERATION, 3",
    "ARRAY_LENGTH, 3",
    "ROOT, 2",
    "ROOT, 4"
  })
  public void disagreeingRanksDesyncEveryRank(Mismatch mismatch, int size) throws Exception {
    requireRanks(size);
    List<RankRunner.Outcome<Failures>> outcomes =
        runGroup(
            size,
            watchdog(),
            (c, rank) -> {
              Throwable first = failureOf(() -> mismatchedCall(c, mismatch, rank == 0));
              Throwable later = failureOf(() -> c.barrier("conformance-after-failure"));
              return new Failures(first, later);
            });
    for (Failures f : RankRunner.values(outcomes)) {
      assertThat(f.first())
          .as("the mismatched call (%s)", mismatch)
          .isInstanceOf(CollectiveDesyncException.class);
      if (mismatch == Mismatch.TAG) {
        assertThat(f.first())
            .as("a desync names each rank's tag")
            .hasMessageContaining("conformance-left")
            .hasMessageContaining("conformance-right");
      }
      assertThat(f.later())
          .as("a call on the group after a desync")
          .isInstanceOf(CollectiveException.class);
    }
  }

  /**
   * A rank that calls, late, a barrier with a tag of its own where the others broadcast or
   * all-reduce fails every rank with a {@link CollectiveDesyncException} whose message names
   * that tag ({@link CollectiveChecks#ODD_TAG}): the way a failed engine rank tells the others
   * what failed.
   *
   * @param check which calls the others make
   * @param size number of ranks
   * @throws Exception on failure
   */
  @ParameterizedTest(name = "{0} with {1} ranks")
  @CsvSource({
    "DESYNC_ODD_BARRIER_AMONG_BROADCASTS, 2",
    "DESYNC_ODD_BARRIER_AMONG_BROADCASTS, 4",
    "DESYNC_ODD_BARRIER_AMONG_REDUCTIONS, 2",
    "DESYNC_ODD_BARRIER_AMONG_REDUCTIONS, 3"
  })
  public void anOddRanksTagIsNamedOnEveryRank(CollectiveChecks.Check check, int size)
      throws Exception {
    requireRanks(size);
    CollectiveChecks.Arrivals arrivals = CollectiveChecks.inMemory();
    List<RankRunner.Outcome<Boolean>> outcomes =
        runGroup(
            size,
            watchdog(),
            (c, rank) -> {
              CollectiveChecks.run(check, c, 1, arrivals);
              return true;
            });
    assertThat(RankRunner.values(outcomes)).as("every rank passed").containsOnly(true);
  }

  private static void mismatchedCall(Collective c, Mismatch mismatch, boolean left) {
    switch (mismatch) {
      case TAG -> c.barrier(left ? "conformance-left" : "conformance-right");
      case OPERATION -> {
        if (left) {
          c.allReduce(ReduceOp.SUM, new long[] {1}, "conformance-op");
        } else {
          c.barrier("conformance-op");
        }
      }
      case ARRAY_LENGTH -> c.allReduce(ReduceOp.MAX, new long[left ? 1 : 2], "conformance-len");
      case ROOT -> c.broadcast(left ? 0 : 1, new byte[] {7}, "conformance-root");
    }
  }

  /**
   * A rank that never reaches a collective makes it fail with {@link CollectiveTimeoutException}
   * on the waiting ranks, naming the call; afterwards every call on the group throws, on the late
   * rank too.
   *
   * @throws Exception on failure
   */
  @Test
  public void missingRankTimesOutTheOthers() throws Exception {
    int size = Math.min(3, maxRanks());
    requireRanks(2);
    CountDownLatch waitersDone = new CountDownLatch(size - 1);
    List<RankRunner.Outcome<Failures>> outcomes =
        runGroup(
            size,
            shortWatchdog(),
            (c, rank) -> {
              Throwable first;
              if (rank == size - 1) {
                // Stays in the group without calling until the others gave up waiting for it.
                waitersDone.await(RankRunner.HANG_GUARD.toMillis(), TimeUnit.MILLISECONDS);
                first = failureOf(() -> c.barrier("conformance-late"));
              } else {
                first = failureOf(() -> c.barrier("conformance-wait"));
                waitersDone.countDown();
              }
              Throwable later = failureOf(() -> c.allReduce(ReduceOp.MIN, new long[] {1}, "after"));
              return new Failures(first, later);
            });
    List<Failures> failures = RankRunner.values(outcomes);
    for (int r = 0; r < size; r++) {
      Failures f = failures.get(r);
      if (r == size - 1) {
        assertThat(f.first())
            .as("the late rank's call on a timed-out group")
            .isInstanceOf(CollectiveException.class);
      } else {
        assertThat(f.first())
            .as("rank %d waiting for a rank that never comes", r)
            .isInstanceOf(CollectiveTimeoutException.class)
            .hasMessageContaining("conformance-wait");
      }
      assertThat(f.later())
          .as("rank %d: a call after the timeout", r)
          .isInstanceOf(CollectiveException.class);
    }
  }

  /**
   * A rank that closes instead of calling makes the waiting rank fail (desync or timeout),
   * never hang.
   *
   * @throws Exception on failure
   */
  @Test
  public void closingRankFailsTheWaitingRank() throws Exception {
    requireRanks(2);
    List<RankRunner.Outcome<Throwable>> outcomes =
        runGroup(
            2,
            shortWatchdog(),
            (c, rank) -> {
              if (rank == 1) {
                c.close();
                return null;
              }
              return failureOf(() -> c.barrier("conformance-alone"));
            });
    assertThat(outcomes.get(0).valueOrThrow())
        .as("rank 0 waiting in a barrier that rank 1 left")
        .isInstanceOf(CollectiveException.class);
    outcomes.get(1).valueOrThrow();
  }

  /**
   * A group whose other ranks never join fails with {@link CollectiveTimeoutException}, from
   * {@code join} (as documented) or at the latest from the first collective.
   *
   * @throws Exception on failure
   */
  @Test
  public void groupThatNeverFormsTimesOut() throws Exception {
    requireRanks(2);
    String group = newGroup();
    CompletableFuture<Throwable> result = new CompletableFuture<>();
    Thread.ofPlatform()
        .name(group + "-rank-0")
        .daemon()
        .start(
            () -> {
              try (Collective c = join(group, 2, 0, shortWatchdog())) {
                result.complete(failureOf(() -> c.barrier("conformance-alone")));
              } catch (Throwable t) {
                result.complete(t);
              }
            });
    Throwable failure = result.get(RankRunner.HANG_GUARD.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(failure)
        .as("joining a group of 2 that no other rank joins")
        .isInstanceOf(CollectiveTimeoutException.class);
  }

  /** Runs {@code call} and returns what it threw, or null. */
  static Throwable failureOf(ThrowingRunnable call) {
    try {
      call.run();
      return null;
    } catch (Throwable t) {
      return t;
    }
  }

  /** A call that may throw anything. */
  @FunctionalInterface
  interface ThrowingRunnable {
    void run() throws Exception;
  }
}
