package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveDesyncException;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.TestSeeds;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SeedExtension.class)
@Timeout(30)
class LocalCollectiveTest {

  /** Longer than the test timeout: a test that passes with it did not rely on the watchdog. */
  private static final Duration NO_WATCHDOG = Duration.ofSeconds(120);

  private static final AtomicInteger GROUPS = new AtomicInteger();

  private final LocalCollectiveProvider provider = new LocalCollectiveProvider();

  /** What one rank's body did: its return value or its exception. */
  record Outcome(Object value, Throwable error) {}

  @FunctionalInterface
  interface RankBody {
    Object run(Collective collective) throws Exception;
  }

  private static String newGroup() {
    return "local-test-" + GROUPS.incrementAndGet();
  }

  private Collective join(String group, int worldSize, int rank, Duration watchdog) {
    return provider.join(
        CollectiveSpec.of(group, worldSize, rank, watchdog),
        BackendContext.defaults().withRank(rank));
  }

  /** Runs every rank on its own thread, each in a fresh handle closed afterwards. */
  private List<Outcome> runRanks(int worldSize, Duration watchdog, RankBody body)
      throws InterruptedException {
    String group = newGroup();
    List<Collective> handles = new ArrayList<>();
    for (int rank = 0; rank < worldSize; rank++) {
      handles.add(join(group, worldSize, rank, watchdog));
    }
    Outcome[] outcomes = new Outcome[worldSize];
    List<Thread> threads = new ArrayList<>();
    for (int rank = 0; rank < worldSize; rank++) {
      int r = rank;
      threads.add(
          Thread.ofPlatform()
              .name("rank-" + r)
              .start(
                  () -> {
                    try {
                      outcomes[r] = new Outcome(body.run(handles.get(r)), null);
                    } catch (Throwable t) {
                      outcomes[r] = new Outcome(null, t);
                    }
                  }));
    }
    for (Thread t : threads) {
      t.join();
    }
    handles.forEach(Collective::close);
    return Arrays.asList(outcomes);
  }

  @Test
  void allReduceForOneToEightRanks() throws Exception {
    Random random = TestSeeds.random("allReduceForOneToEightRanks");
    for (int worldSize = 1; worldSize <= 8; worldSize++) {
      int rounds = 5 * TestSeeds.multiplier();
      long[][][] inputs = new long[rounds][worldSize][];
      for (int round = 0; round < rounds; round++) {
        int length = random.nextInt(6);
        for (int rank = 0; rank < worldSize; rank++) {
          inputs[round][rank] = random.longs(length).map(v -> v >> random.nextInt(64)).toArray();
        }
      }
      ReduceOp[] ops = new ReduceOp[rounds];
      for (int round = 0; round < rounds; round++) {
        ops[round] = ReduceOp.values()[random.nextInt(3)];
      }
      List<Outcome> outcomes =
          runRanks(
              worldSize,
              NO_WATCHDOG,
              c -> {
                List<long[]> results = new ArrayList<>();
                for (int round = 0; round < rounds; round++) {
                  long[] mine = inputs[round][c.rank()].clone();
                  long[] result = c.allReduce(ops[round], mine, "round-" + round);
                  assertThat(mine)
                      .as("the input is not modified")
                      .isEqualTo(inputs[round][c.rank()]);
                  results.add(result);
                }
                return results;
              });
      for (int round = 0; round < rounds; round++) {
        long[] expected = inputs[round][0].clone();
        for (int rank = 1; rank < worldSize; rank++) {
          for (int i = 0; i < expected.length; i++) {
            expected[i] = ops[round].apply(expected[i], inputs[round][rank][i]);
          }
        }
        for (int rank = 0; rank < worldSize; rank++) {
          Outcome o = outcomes.get(rank);
          assertThat(o.error()).as("rank %d of %d", rank, worldSize).isNull();
          @SuppressWarnings("unchecked")
          List<long[]> results = (List<long[]>) o.value();
          assertThat(results.get(round))
              .as("%s round %d rank %d of %d", ops[round], round, rank, worldSize)
              .containsExactly(expected);
        }
      }
    }
  }

  @Test
  void reduceOpsAreMinMaxAndWrappingSum() throws Exception {
    List<Outcome> outcomes =
        runRanks(
            3,
            NO_WATCHDOG,
            c -> {
              long[] v = {c.rank() == 1 ? Long.MAX_VALUE : c.rank(), -c.rank()};
              return List.of(
                  c.allReduce(ReduceOp.MIN, v, "min"),
                  c.allReduce(ReduceOp.MAX, v, "max"),
                  c.allReduce(ReduceOp.SUM, v, "sum"));
            });
    for (Outcome o : outcomes) {
      @SuppressWarnings("unchecked")
      List<long[]> r = (List<long[]>) o.value();
      assertThat(r.get(0)).containsExactly(0, -2);
      assertThat(r.get(1)).containsExactly(Long.MAX_VALUE, 0);
      assertThat(r.get(2)).containsExactly(Long.MAX_VALUE + 2, -3);
    }
  }

  @Test
  void broadcastSendsTheRootsBytesToEveryRankAsACopy() throws Exception {
    Random random = TestSeeds.random("broadcast");
    int worldSize = 5;
    int root = random.nextInt(worldSize);
    byte[] payload = new byte[1 + random.nextInt(100)];
    random.nextBytes(payload);
    byte[] original = payload.clone();
    List<Outcome> outcomes =
        runRanks(
            worldSize,
            NO_WATCHDOG,
            c -> {
              byte[] got = c.broadcast(root, c.rank() == root ? payload : null, "recv");
              got[0]++; // every rank owns its copy
              return got;
            });
    for (Outcome o : outcomes) {
      assertThat(o.error()).isNull();
      byte[] got = (byte[]) o.value();
      got[0]--;
      assertThat(got).isEqualTo(original);
    }
    assertThat(payload).isEqualTo(original);
  }

  @Test
  void noRankLeavesABarrierBeforeAllHaveArrived() throws Exception {
    int worldSize = 6;
    int rounds = 20;
    AtomicInteger[] arrived = new AtomicInteger[rounds];
    Arrays.setAll(arrived, i -> new AtomicInteger());
    List<Outcome> outcomes =
        runRanks(
            worldSize,
            NO_WATCHDOG,
            c -> {
              for (int round = 0; round < rounds; round++) {
                arrived[round].incrementAndGet();
                c.barrier("b");
                assertThat(arrived[round].get()).as("round %d", round).isEqualTo(worldSize);
              }
              return c.size();
            });
    for (Outcome o : outcomes) {
      assertThat(o.error()).isNull();
      assertThat(o.value()).isEqualTo(worldSize);
    }
  }

  @Test
  void differentTagsDesyncEveryRankWithoutWaitingForTheWatchdog() throws Exception {
    List<Outcome> outcomes =
        runRanks(
            3,
            NO_WATCHDOG,
            c -> {
              c.barrier("start");
              return c.allReduce(ReduceOp.MIN, new long[] {1}, c.rank() == 2 ? "prefetch" : "sync");
            });
    for (int rank = 0; rank < 3; rank++) {
      assertThat(outcomes.get(rank).error())
          .as("rank %d", rank)
          .isInstanceOf(CollectiveDesyncException.class)
          .hasMessageContaining("tag=sync seq=1")
          .hasMessageContaining("tag=prefetch seq=1");
    }
  }

  @Test
  void anyDifferenceInTheCallIsADesync() throws Exception {
    RankBody[] differing = {
      c ->
          c.rank() == 0
              ? c.allReduce(ReduceOp.MIN, new long[2], "x")
              : c.allReduce(ReduceOp.MAX, new long[2], "x"),
      c -> c.allReduce(ReduceOp.SUM, new long[c.rank() + 1], "x"),
      c -> c.broadcast(c.rank(), new byte[1], "x"),
      c -> {
        if (c.rank() == 0) {
          c.barrier("x");
          return null;
        }
        return c.broadcast(0, null, "x");
      }
    };
    String[] expected = {"allReduce(MAX)", "length=2", "root=1", "barrier tag=x seq=0"};
    for (int i = 0; i < differing.length; i++) {
      List<Outcome> outcomes = runRanks(2, NO_WATCHDOG, differing[i]);
      for (Outcome o : outcomes) {
        assertThat(o.error())
            .as("case %d", i)
            .isInstanceOf(CollectiveDesyncException.class)
            .hasMessageContaining(expected[i]);
      }
    }
  }

  @Test
  void aMissingRankTimesOutTheOthersNamingIt() throws Exception {
    Duration watchdog = Duration.ofMillis(200);
    List<Outcome> outcomes =
        runRanks(
            3,
            watchdog,
            c -> {
              c.barrier("warmup");
              if (c.rank() == 2) {
                return "skipped"; // the bug: rank 2 takes another path and never calls
              }
              return c.allReduce(ReduceOp.MIN, new long[] {5}, "sync");
            });
    assertThat(outcomes.get(2).value()).isEqualTo("skipped");
    for (int rank = 0; rank < 2; rank++) {
      assertThat(outcomes.get(rank).error())
          .as("rank %d", rank)
          .isInstanceOf(CollectiveTimeoutException.class)
          .hasMessageContaining("ranks not arrived: [2]")
          .hasMessageContaining("rank 2: barrier tag=warmup seq=0")
          .hasMessageContaining("allReduce(MIN) tag=sync seq=1 length=1 (waiting)");
    }
  }

  @Test
  void aBrokenGroupFailsEveryLaterCallAtOnce() throws Exception {
    List<Outcome> outcomes =
        runRanks(
            2,
            NO_WATCHDOG,
            c -> {
              try {
                c.barrier(c.rank() == 0 ? "a" : "b");
              } catch (CollectiveDesyncException expected) {
                // now the group is broken
              }
              List<Throwable> later = new ArrayList<>();
              for (int i = 0; i < 3; i++) {
                try {
                  c.barrier("again");
                } catch (CollectiveException e) {
                  later.add(e);
                }
              }
              return later;
            });
    for (Outcome o : outcomes) {
      @SuppressWarnings("unchecked")
      List<Throwable> later = (List<Throwable>) o.value();
      assertThat(later)
          .hasSize(3)
          .allSatisfy(
              e ->
                  assertThat(e)
                      .isInstanceOf(CollectiveDesyncException.class)
                      .hasMessageContaining("broken group"));
    }
  }

  @Test
  void aRankThatArrivesAfterATimeoutFailsAtOnce() throws Exception {
    String group = newGroup();
    Collective r0 = join(group, 2, 0, Duration.ofMillis(100));
    Collective r1 = join(group, 2, 1, NO_WATCHDOG);
    assertThatThrownBy(() -> r0.barrier("lonely"))
        .isInstanceOf(CollectiveTimeoutException.class)
        .hasMessageContaining("ranks not arrived: [1]")
        .hasMessageContaining("rank 1: no call yet");
    assertThatThrownBy(() -> r1.barrier("lonely"))
        .isInstanceOf(CollectiveTimeoutException.class)
        .hasMessageContaining("broken group");
    r0.close();
    r1.close();
  }

  @Test
  void closingWhileOthersWaitFailsThemNamingTheRankThatLeft() throws Exception {
    String group = newGroup();
    Collective r0 = join(group, 3, 0, NO_WATCHDOG);
    Collective r1 = join(group, 3, 1, NO_WATCHDOG);
    Collective r2 = join(group, 3, 2, NO_WATCHDOG);
    Throwable[] errors = new Throwable[2];
    List<Thread> waiters = new ArrayList<>();
    for (Collective c : List.of(r0, r1)) {
      waiters.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      c.allReduce(ReduceOp.MAX, new long[] {1}, "sync");
                    } catch (Throwable t) {
                      errors[c.rank()] = t;
                    }
                  }));
    }
    for (Thread t : waiters) {
      SimTransferEngineTest.awaitParked(t);
    }
    r2.close();
    for (Thread t : waiters) {
      t.join();
    }
    for (Throwable e : errors) {
      assertThat(e)
          .isInstanceOf(CollectiveDesyncException.class)
          .hasMessageContaining("rank 2 left group");
    }
    r0.close();
    r1.close();
    assertThatThrownBy(() -> r2.barrier("after"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("after closing");
  }

  @Test
  void anInterruptedRankBreaksTheGroup() throws Exception {
    String group = newGroup();
    Collective r0 = join(group, 2, 0, NO_WATCHDOG);
    Collective r1 = join(group, 2, 1, NO_WATCHDOG);
    Throwable[] error = new Throwable[1];
    boolean[] interruptKept = new boolean[1];
    Thread waiter =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    r0.barrier("b");
                  } catch (Throwable t) {
                    error[0] = t;
                    interruptKept[0] = Thread.currentThread().isInterrupted();
                  }
                });
    SimTransferEngineTest.awaitParked(waiter);
    waiter.interrupt();
    waiter.join();
    assertThat(error[0])
        .isInstanceOf(CollectiveException.class)
        .hasMessageContaining("rank 0 was interrupted");
    assertThat(interruptKept[0]).isTrue();
    assertThatThrownBy(() -> r1.barrier("b"))
        .isInstanceOf(CollectiveException.class)
        .hasMessageContaining("broken group");
    r0.close();
    r1.close();
  }

  @Test
  void joinNeedsWorldSizeAndRank() {
    CollectiveSpec noRank =
        new CollectiveSpec("g", OptionalInt.of(2), OptionalInt.empty(), NO_WATCHDOG);
    CollectiveSpec noSize =
        new CollectiveSpec("g", OptionalInt.empty(), OptionalInt.of(0), NO_WATCHDOG);
    for (CollectiveSpec spec : List.of(noRank, noSize)) {
      assertThatThrownBy(() -> provider.join(spec, BackendContext.defaults()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("needs both worldSize and rank");
    }
  }

  @Test
  void joinRejectsAnotherWorldSizeAndARankTwice() {
    String group = newGroup();
    Collective r0 = join(group, 2, 0, NO_WATCHDOG);
    assertThatThrownBy(() -> join(group, 3, 1, NO_WATCHDOG))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("worldSize=2")
        .hasMessageContaining("worldSize=3");
    assertThatThrownBy(() -> join(group, 2, 0, NO_WATCHDOG))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rank 0 has already joined");
    assertThat(r0.rank()).isZero();
    assertThat(r0.size()).isEqualTo(2);
    r0.close();
    r0.close(); // idempotent
    // Every rank that joined has closed: the name is free for a new group of another size.
    try (Collective solo = join(group, 1, 0, NO_WATCHDOG)) {
      assertThat(solo.allReduce(ReduceOp.SUM, new long[] {4}, "t")).containsExactly(4);
      assertThat(solo.broadcast(0, new byte[] {9}, "t")).containsExactly(9);
      solo.barrier("t");
    }
  }

  @Test
  void joinRejectsUnknownSimKeysAndBadRoots() {
    BackendContext bad =
        new BackendContext(
            0,
            Map.of("sim.watchdog", "1s"),
            BackendContext.defaults().time(),
            BackendContext.defaults().metrics());
    assertThatThrownBy(() -> provider.join(CollectiveSpec.of(newGroup(), 1, 0, NO_WATCHDOG), bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.watchdog");
    try (Collective solo = join(newGroup(), 1, 0, NO_WATCHDOG)) {
      assertThatThrownBy(() -> solo.broadcast(1, new byte[1], "t"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("root=1");
    }
  }
}
