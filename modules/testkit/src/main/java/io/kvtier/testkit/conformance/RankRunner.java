package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.Collective;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Runs one body per rank of a group, each on its own thread that also joins the group, and
 * collects every rank's result or failure. Never hangs: a rank still running after the guard is
 * reported with its stack trace and interrupted.
 */
public final class RankRunner {

  /** Wall-clock bound on one group's run before it is called a hang. */
  public static final Duration HANG_GUARD = Duration.ofSeconds(45);

  /** Joins one rank of a group. */
  @FunctionalInterface
  public interface Joiner {
    /**
     * Joins rank {@code rank} of the group.
     *
     * @param group the group's name
     * @param size the group's size
     * @param rank the rank to join as
     * @param watchdog the collective watchdog
     * @return the joined collective
     */
    Collective join(String group, int size, int rank, Duration watchdog);
  }

  /** What one rank does once joined. */
  @FunctionalInterface
  public interface Body<T> {
    /**
     * Runs one rank.
     *
     * @param collective the rank's joined collective
     * @param rank the rank
     * @return the rank's value
     * @throws Exception anything the rank throws, reported as its outcome
     */
    T run(Collective collective, int rank) throws Exception;
  }

  /** One rank's outcome: its value, or what it threw (joining included). */
  public record Outcome<T>(int rank, T value, Throwable error) {
    /**
     * The value, or an {@link AssertionError} carrying what the rank threw.
     *
     * @return the rank's value
     */
    public T valueOrThrow() {
      if (error != null) {
        throw new AssertionError("rank " + rank + " failed: " + error, error);
      }
      return value;
    }
  }

  private RankRunner() {}

  /**
   * Runs {@code body} on every rank of a new group of {@code size}, each on its own thread.
   *
   * @param joiner joins one rank
   * @param group the group's name
   * @param size the group's size
   * @param watchdog the collective watchdog
   * @param body what each rank does
   * @param <T> the value type
   * @return every rank's outcome, in rank order
   * @throws InterruptedException if interrupted while waiting for the ranks
   */
  public static <T> List<Outcome<T>> run(
      Joiner joiner, String group, int size, Duration watchdog, Body<T> body)
      throws InterruptedException {
    AtomicReferenceArray<Outcome<T>> outcomes = new AtomicReferenceArray<>(size);
    // Every rank finishes its body before any closes: an early close would break the others'
    // still-running calls, which is not what a check of those calls is about.
    CountDownLatch bodiesDone = new CountDownLatch(size);
    Thread[] threads = new Thread[size];
    for (int r = 0; r < size; r++) {
      int rank = r;
      threads[r] =
          Thread.ofPlatform()
              .name(group + "-rank-" + rank)
              .daemon()
              .unstarted(
                  () -> {
                    Collective c = null;
                    try {
                      c = joiner.join(group, size, rank, watchdog);
                      assertThat(c.rank())
                          .as("rank() of the handle joined as rank %d", rank)
                          .isEqualTo(rank);
                      assertThat(c.size()).as("size() of rank %d", rank).isEqualTo(size);
                      outcomes.set(rank, new Outcome<>(rank, body.run(c, rank), null));
                    } catch (Throwable t) {
                      outcomes.set(rank, new Outcome<>(rank, null, t));
                    } finally {
                      bodiesDone.countDown();
                      try {
                        bodiesDone.await(HANG_GUARD.toMillis(), TimeUnit.MILLISECONDS);
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                      if (c != null) {
                        c.close();
                      }
                    }
                  });
    }
    for (Thread t : threads) {
      t.start();
    }
    long deadline = System.nanoTime() + HANG_GUARD.toNanos();
    List<String> stuck = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
      threads[r].join(left);
      if (threads[r].isAlive()) {
        stuck.add("rank " + r + " at " + Arrays.toString(threads[r].getStackTrace()));
      }
    }
    if (!stuck.isEmpty()) {
      for (Thread t : threads) {
        t.interrupt();
      }
      throw new AssertionError(
          "group "
              + group
              + " of "
              + size
              + " ranks did not finish within "
              + HANG_GUARD
              + " (watchdog "
              + watchdog
              + "): a collective hangs instead of failing; "
              + String.join("; ", stuck));
    }
    List<Outcome<T>> result = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      result.add(outcomes.get(r));
    }
    return result;
  }

  /**
   * Every rank's value, or the first rank's failure as an {@link AssertionError}.
   *
   * @param outcomes the outcomes of {@link #run}
   * @param <T> the value type
   * @return the values in rank order
   */
  public static <T> List<T> values(List<Outcome<T>> outcomes) {
    List<T> values = new ArrayList<>();
    for (Outcome<T> o : outcomes) {
      values.add(o.valueOrThrow());
    }
    return values;
  }
}
