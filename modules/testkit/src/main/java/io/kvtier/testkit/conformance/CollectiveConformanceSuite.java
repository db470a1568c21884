package io.kvtier.testkit.conformance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import io.kvtier.testkit.TestSeeds;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The conformance suite of a {@link io.kvtier.spi.CollectiveProvider}. Every rank runs on its own
 * thread and joins there. A provider module runs it with a subclass:
 *
 * <pre>{@code
 * class LocalCollectiveConformanceTest extends CollectiveConformanceSuite {
 *   protected CollectiveProvider provider() { return new LocalCollectiveProvider(); }
 * }
 * }</pre>
 *
 * <p>The operation checks are here, the failure checks in {@link CollectiveFailureChecks}, the
 * hooks in {@link CollectiveSuiteBase}. Every check has a timeout and a hang guard, so a broken
 * provider fails instead of hanging.
 */
public abstract class CollectiveConformanceSuite extends CollectiveFailureChecks {

  /** For subclasses. */
  protected CollectiveConformanceSuite() {}

  /** The provider's {@code name()} equals its {@link io.kvtier.spi.ProviderName}. */
  @Test
  public void providerNamesItselfAsAnnotated() {
    ProviderChecks.assertNamedAsAnnotated(provider());
  }

  /**
   * All-reduce MIN, MAX and SUM of random multi-element arrays equal a sequential reduction, on
   * every rank, round after round.
   *
   * @param size number of ranks
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4, 5, 6, 7, 8})
  public void allReduceMatchesSequentialReduction(int size, Random random) throws Exception {
    requireRanks(size);
    Reductions rounds = Reductions.random(size, 16, random);
    List<List<long[]>> results =
        runGroupExpectingSuccess(
            size,
            (c, rank) -> {
              List<long[]> out = new ArrayList<>();
              for (int round = 0; round < rounds.count(); round++) {
                long[] mine = rounds.input(round, rank);
                long[] reduced = c.allReduce(rounds.ops()[round], mine, "conformance-reduce");
                assertThat(reduced).as("allReduce returns a new array").isNotSameAs(mine);
                assertThat(mine)
                    .as("allReduce leaves its input alone")
                    .isEqualTo(rounds.input()[round][rank]);
                out.add(reduced);
              }
              return out;
            });
    rounds.assertResults(results);
  }

  /**
   * {@code allReduceInto} gives what {@code allReduce} gives, into a separate array (leaving the
   * input alone) and in place, on every rank; a result of another length is refused on every rank
   * and leaves the group usable.
   *
   * @param size number of ranks
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4})
  public void allReduceIntoMatchesSequentialReduction(int size, Random random) throws Exception {
    requireRanks(size);
    Reductions rounds = Reductions.random(size, 100, random);
    List<List<long[]>> results =
        runGroupExpectingSuccess(
            size,
            (c, rank) -> {
              List<long[]> out = new ArrayList<>();
              for (int round = 0; round < rounds.count(); round++) {
                long[] mine = rounds.input(round, rank);
                boolean inPlace = round % 2 == 1;
                long[] result = inPlace ? mine : new long[mine.length];
                c.allReduceInto(rounds.ops()[round], mine, result, "conformance-reduce-into");
                if (!inPlace) {
                  assertThat(mine)
                      .as("allReduceInto leaves its input alone")
                      .isEqualTo(rounds.input()[round][rank]);
                }
                out.add(result);
              }
              assertThatThrownBy(
                      () ->
                          c.allReduceInto(
                              ReduceOp.SUM,
                              new long[2],
                              new long[3],
                              "conformance-reduce-into-length"))
                  .as("a result of another length")
                  .isInstanceOf(IllegalArgumentException.class);
              c.barrier("conformance-reduce-into-after");
              return out;
            });
    rounds.assertResults(results);
  }

  /**
   * Rounds of random reductions for a group: per round an op, each rank's input and the result a
   * sequential reduction gives.
   */
  private record Reductions(int size, ReduceOp[] ops, long[][][] input, long[][] expected) {
    static Reductions random(int size, int maxLength, Random random) {
      int rounds = TestSeeds.scaled(12);
      ReduceOp[] ops = new ReduceOp[rounds];
      long[][][] input = new long[rounds][size][];
      long[][] expected = new long[rounds][];
      for (int round = 0; round < rounds; round++) {
        ops[round] = ReduceOp.values()[random.nextInt(ReduceOp.values().length)];
        int length = 1 + random.nextInt(maxLength);
        for (int r = 0; r < size; r++) {
          input[round][r] = randomValues(length, random);
        }
        expected[round] = input[round][0].clone();
        for (int r = 1; r < size; r++) {
          for (int i = 0; i < length; i++) {
            expected[round][i] = ops[round].apply(expected[round][i], input[round][r][i]);
          }
        }
      }
      return new Reductions(size, ops, input, expected);
    }

    int count() {
      return ops.length;
    }

    /** A copy of rank {@code rank}'s input of a round, for the call to change if it would. */
    long[] input(int round, int rank) {
      return input[round][rank].clone();
    }

    /** Every rank got the sequential result in every round. */
    void assertResults(List<List<long[]>> results) {
      for (int r = 0; r < size; r++) {
        for (int round = 0; round < ops.length; round++) {
          assertThat(results.get(r).get(round))
              .as("rank %d round %d: %s of %d ranks", r, round, ops[round], size)
              .isEqualTo(expected[round]);
        }
      }
    }
  }

  /** Mostly small values, with the extremes that catch overflow and sign mistakes. */
  private static long[] randomValues(int length, Random random) {
    long[] v = new long[length];
    for (int i = 0; i < length; i++) {
      v[i] =
          switch (random.nextInt(8)) {
            case 0 -> Long.MAX_VALUE;
            case 1 -> Long.MIN_VALUE;
            case 2 -> random.nextLong();
            default -> random.nextInt(2001) - 1000;
          };
    }
    return v;
  }

  /**
   * Broadcast from every root delivers the root's bytes, empty and 64 KiB payloads included, as a
   * separate copy on every rank.
   *
   * @param size number of ranks
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 5, 8})
  public void broadcastDeliversTheRootsBytes(int size, Random random) throws Exception {
    requireRanks(size);
    int[] lengths = {0, 1 + random.nextInt(100), 64 * 1024};
    byte[][][] payloads = new byte[size][lengths.length][];
    for (int root = 0; root < size; root++) {
      for (int k = 0; k < lengths.length; k++) {
        payloads[root][k] = new byte[lengths[k]];
        random.nextBytes(payloads[root][k]);
      }
    }
    List<List<byte[]>> results =
        runGroupExpectingSuccess(
            size,
            (c, rank) -> {
              List<byte[]> out = new ArrayList<>();
              for (int root = 0; root < size; root++) {
                for (int k = 0; k < lengths.length; k++) {
                  byte[] mine = rank == root ? payloads[root][k].clone() : null;
                  byte[] got = c.broadcast(root, mine, "conformance-bcast");
                  if (mine != null && mine.length > 0) {
                    assertThat(got).as("the root gets a copy, not its own array").isNotSameAs(mine);
                  }
                  out.add(got);
                }
              }
              return out;
            });
    for (int r = 0; r < size; r++) {
      int i = 0;
      for (int root = 0; root < size; root++) {
        for (int k = 0; k < lengths.length; k++, i++) {
          byte[] got = results.get(r).get(i);
          assertThat(got)
              .as("rank %d, root %d, %d bytes", r, root, lengths[k])
              .isEqualTo(payloads[root][k]);
          if (r > 0 && got.length > 0) {
            assertThat(got).as("each rank gets its own copy").isNotSameAs(results.get(0).get(i));
          }
        }
      }
    }
  }

  /**
   * No rank leaves a barrier before every rank has arrived.
   *
   * @param size number of ranks
   * @throws Exception on failure
   */
  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 4, 8})
  public void barrierHoldsEveryRankUntilAllArrive(int size) throws Exception {
    requireRanks(size);
    int rounds = TestSeeds.scaled(20);
    AtomicInteger arrived = new AtomicInteger();
    runGroupExpectingSuccess(
        size,
        (c, rank) -> {
          for (int round = 0; round < rounds; round++) {
            arrived.incrementAndGet();
            c.barrier("conformance-barrier");
            assertThat(arrived.get())
                .as("arrivals seen by rank %d leaving barrier %d", rank, round)
                .isGreaterThanOrEqualTo(size * (round + 1));
          }
          return null;
        });
  }

  /**
   * A random script of all-reduces, broadcasts and barriers with varying tags runs identically
   * on every rank.
   *
   * @param random seeded by the test's seed
   * @throws Exception on failure
   */
  @Test
  public void mixedSequenceAgreesOnEveryRank(Random random) throws Exception {
    int size = Math.min(maxRanks(), 2 + random.nextInt(3));
    List<CollectiveScript.Step> script =
        CollectiveScript.random(size, TestSeeds.scaled(40), random);
    List<List<Object>> results =
        runGroupExpectingSuccess(size, (c, rank) -> CollectiveScript.play(script, c, rank));
    for (int r = 0; r < size; r++) {
      CollectiveScript.verify(script, results.get(r), r);
    }
  }

  /**
   * Closing is idempotent and a closed handle cannot be used.
   *
   * @throws Exception on failure
   */
  @Test
  public void closeIsIdempotentAndEndsUse() throws Exception {
    int size = Math.min(2, maxRanks());
    // Closes only once every rank has left the barrier: a close while another rank is still in
    // a call may legitimately fail that call, which is not what this check is about.
    CountDownLatch passed = new CountDownLatch(size);
    List<Throwable> failures =
        runGroupExpectingSuccess(
            size,
            (c, rank) -> {
              c.barrier("conformance-before-close");
              passed.countDown();
              passed.await(RankRunner.HANG_GUARD.toMillis(), TimeUnit.MILLISECONDS);
              c.close();
              c.close();
              return CollectiveFailureChecks.failureOf(() -> c.barrier("conformance-after-close"));
            });
    for (Throwable t : failures) {
      assertThat(t)
          .as("a call on a closed handle")
          .isInstanceOfAny(IllegalStateException.class, CollectiveException.class);
    }
  }

  /**
   * A spec without world size and rank is rejected unless the provider declares {@link
   * CollectiveCapability#LAUNCHER_ASSIGNED_RANKS}.
   */
  @Test
  public void launcherAssignedRanksAreRejectedUnlessDeclared() {
    DeviceSuiteBase.skipUnless(
        !capabilities().contains(CollectiveCapability.LAUNCHER_ASSIGNED_RANKS),
        "the provider declares LAUNCHER_ASSIGNED_RANKS, which needs its launcher to check");
    CollectiveSpec spec =
        new CollectiveSpec(newGroup(), OptionalInt.empty(), OptionalInt.empty(), watchdog());
    assertThatThrownBy(() -> provider().join(spec, context()).close())
        .isInstanceOf(IllegalArgumentException.class);
  }

  /** A property of the provider's namespace that it does not know is rejected, naming the key. */
  @Test
  public void unknownPropertyIsRejected() {
    String key = provider().configNamespace() + ".conformance-no-such-key";
    BackendContext base = context();
    BackendContext bad =
        new BackendContext(base.rank(), Map.of(key, "1"), base.time(), base.metrics());
    Collective[] joined = new Collective[1];
    assertThatThrownBy(
            () -> joined[0] = provider().join(CollectiveSpec.of(newGroup(), 1, 0, watchdog()), bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key);
    if (joined[0] != null) {
      joined[0].close();
    }
  }
}
