package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.hazelcast.client.HazelcastClient;
import com.hazelcast.core.DistributedObject;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.cp.ICountDownLatch;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveException;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * What the conformance suite does not see: the messages of failures, fast failure through the
 * group watch, bounded cluster state, group incarnations, and the two cluster faults (a rank's
 * member dies, the CP group loses its majority). The faults kill members, so they run last.
 *
 * <p>The cluster has 4 members, 3 of them CP members; "long" watchdogs are far longer than the
 * test may take, so a failure that arrives is the watch's, never the watchdog's, which the
 * messages tell apart.
 */
@Timeout(120)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HazelcastCollectiveFailureTest {

  private static final Duration LONG = Duration.ofSeconds(90);
  private static HazelcastTestCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = HazelcastTestCluster.start(4, Map.of());
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Test
  @Order(1)
  void timeoutNamesTheMissingRankAndItsLastCall() throws Exception {
    CountDownLatch othersFailed = new CountDownLatch(2);
    List<Object> outcomes =
        runGroup(
            "timeout",
            3,
            Duration.ofSeconds(2),
            c -> {
              c.barrier("first");
              if (c.rank() == 2) {
                await(othersFailed);
                return null;
              }
              Throwable t = failureOf(() -> c.allReduce(ReduceOp.MIN, new long[] {1}, "second"));
              othersFailed.countDown();
              return t;
            });
    for (int r = 0; r < 2; r++) {
      assertThat((Throwable) outcomes.get(r))
          .isInstanceOf(CollectiveTimeoutException.class)
          .hasMessageContaining("allReduce(MIN, length=1) tag 'second' seq 1")
          .hasMessageContaining("missing ranks: 2 (last published: barrier tag 'first' seq 0)")
          .hasMessageContaining("arrived: 0 (");
    }
  }

  @Test
  @Order(2)
  void aPeerThatClosesFailsTheWaitingRankAtOnce() throws Exception {
    List<Object> outcomes =
        runGroup(
            "closing",
            2,
            LONG,
            c -> {
              c.barrier("together");
              if (c.rank() == 1) {
                c.close();
                return null;
              }
              return failureOf(() -> c.barrier("alone"));
            });
    assertThat((Throwable) outcomes.get(0))
        .isInstanceOf(CollectiveException.class)
        .isNotInstanceOf(CollectiveTimeoutException.class)
        .hasMessageContaining("rank 1")
        .hasMessageContaining("closed its handle after 1 calls (last: barrier tag 'together'");
  }

  @Test
  @Order(3)
  void roundsReuseAFixedSetOfObjectsAndTheLastCloserRemovesThem() throws Exception {
    String group = "bounded";
    List<Object> sizes =
        runGroup(
            group,
            2,
            LONG,
            c -> {
              for (int round = 0; round < 60; round++) {
                c.allReduce(ReduceOp.SUM, new long[] {round}, "round");
                c.broadcast(round % 2, new byte[1024], "payload");
              }
              c.barrier("end");
              return cluster.member(0).getMap("kvtier.collective." + group + ".0.data").size();
            });
    for (Object size : sizes) {
      assertThat((Integer) size)
          .as("data map entries after 121 rounds of 2 ranks")
          .isLessThanOrEqualTo(HazelcastGroup.RING * 2);
    }
    assertThat(cluster.member(0).getDistributedObjects())
        .extracting(DistributedObject::getName)
        .as("maps of the group after every rank closed")
        .noneMatch(name -> name.startsWith("kvtier.collective." + group + "."));
  }

  @Test
  @Order(4)
  void aGroupNameServesOneRunAfterAnother() throws Exception {
    for (int run = 0; run < 2; run++) {
      long expected = run;
      List<Object> sums =
          runGroup(
              "again", 2, LONG, c -> c.allReduce(ReduceOp.SUM, new long[] {expected}, "run")[0]);
      assertThat(sums).containsExactly(2 * expected, 2 * expected);
    }
  }

  @Test
  @Order(4)
  void aMemberCountsDownInTheKnownRoundInOneCall() {
    HazelcastInstance member = cluster.member(0);
    HazelcastLatchArrival arrival = HazelcastLatchArrival.of(member);
    assertThat(arrival.direct())
        .as("direct count-down on a member (Hazelcast internals as in 5.4.0)")
        .isTrue();
    ICountDownLatch latch = member.getCPSubsystem().getCountDownLatch("arrival-test");
    try {
      for (int round = 1; round <= 2; round++) {
        assertThat(latch.trySetCount(2)).isTrue();
        arrival.countDown(latch, round);
        arrival.countDown(latch, round);
        assertThat(latch.getCount()).as("after two count-downs of round %d", round).isZero();
      }
      assertThat(latch.trySetCount(1)).isTrue();
      assertThatThrownBy(() -> arrival.countDown(latch, 4))
          .as("a round the latch has not reached")
          .isInstanceOf(IllegalStateException.class);
    } finally {
      latch.destroy();
    }
  }

  @Test
  @Order(4)
  void aRankOnAClientAgreesWithRanksOnMembers() throws Exception {
    List<String> addresses = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      addresses.add(
          "127.0.0.1:" + cluster.member(i).getCluster().getLocalMember().getAddress().getPort());
    }
    HazelcastInstance client =
        HazelcastClient.newHazelcastClient(
            HazelcastSetup.client(
                cluster.config().with(HazelcastConfig.MEMBERS, String.join(",", addresses)),
                "failure-test-client"));
    try {
      assertThat(HazelcastLatchArrival.of(client).direct()).as("count-down on a client").isFalse();
      HazelcastInstance[] hosts = {cluster.member(0), cluster.member(1), client};
      List<CompletableFuture<Object>> ranks = new ArrayList<>();
      for (int r = 0; r < 3; r++) {
        int rank = r;
        ranks.add(
            HazelcastTestCluster.inThread(
                () -> {
                  try (Collective c =
                      HazelcastCollectives.join(
                          hosts[rank], CollectiveSpec.of("mixed", 3, rank, LONG))) {
                    long sum = 0;
                    for (int round = 0; round < 8; round++) {
                      sum += c.allReduce(ReduceOp.MAX, new long[] {rank + round}, "mixed")[0];
                      sum +=
                          c.broadcast(
                                  2, rank == 2 ? new byte[] {(byte) round} : null, "from-client")[
                              0];
                    }
                    return sum;
                  }
                }));
      }
      // MAX over the ranks is 2 + round, and the client broadcasts round: 44 + 28 on every rank
      for (CompletableFuture<Object> rank : ranks) {
        assertThat(rank.get(100, TimeUnit.SECONDS)).isEqualTo(72L);
      }
    } finally {
      client.getLifecycleService().terminate();
    }
  }

  @Test
  @Order(5)
  void ranksOfOneGroupMustAgreeOnItsSize() {
    Collective first =
        HazelcastCollectives.join(cluster.member(0), CollectiveSpec.of("sizes", 2, 0, LONG));
    try {
      assertThatThrownBy(
              () ->
                  HazelcastCollectives.join(
                      cluster.member(1), CollectiveSpec.of("sizes", 3, 1, LONG)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("has 2 ranks but rank 1 joins with worldSize=3");
    } finally {
      first.close();
    }
  }

  @Test
  @Order(6)
  void aRankWhoseMemberDiesIsNamedBeforeTheWatchdog() throws Exception {
    int plain = plainMember();
    List<Integer> cpMembers = cpMembers();
    HazelcastInstance[] hosts = {
      cluster.member(cpMembers.get(0)), cluster.member(cpMembers.get(1)), cluster.member(plain)
    };
    CountDownLatch joined = new CountDownLatch(3);
    CountDownLatch dead = new CountDownLatch(1);
    List<CompletableFuture<Throwable>> ranks = new ArrayList<>();
    for (int r = 0; r < 3; r++) {
      int rank = r;
      ranks.add(
          HazelcastTestCluster.inThread(
              () -> {
                try (Collective c =
                    HazelcastCollectives.join(
                        hosts[rank], CollectiveSpec.of("dies", 3, rank, LONG))) {
                  c.barrier("alive");
                  joined.countDown();
                  if (rank == 2) {
                    await(dead); // its member dies meanwhile; it never calls again
                    return null;
                  }
                  return failureOf(() -> c.barrier("after-death"));
                }
              }));
    }
    await(joined);
    hosts[2].getLifecycleService().terminate();
    dead.countDown();
    for (int r = 0; r < 2; r++) {
      assertThat(ranks.get(r).get(100, TimeUnit.SECONDS))
          .as("rank %d waiting for the rank whose member died", r)
          .isInstanceOf(CollectiveException.class)
          .isNotInstanceOf(CollectiveTimeoutException.class)
          .hasMessageContaining("rank 2 of group 'dies' is gone")
          .hasMessageContaining("left the cluster");
    }
  }

  @Test
  @Order(7)
  void aCpGroupWithoutMajorityTimesOutInsteadOfHanging() {
    List<Integer> cpMembers = cpMembers();
    HazelcastInstance survivor = cluster.member(cpMembers.get(0));
    Collective alone =
        HazelcastCollectives.join(
            survivor, CollectiveSpec.of("majority", 1, 0, Duration.ofSeconds(3)));
    try {
      alone.barrier("before");
      cluster.member(cpMembers.get(1)).getLifecycleService().terminate();
      cluster.member(cpMembers.get(2)).getLifecycleService().terminate();
      assertThatThrownBy(() -> alone.barrier("after"))
          .isInstanceOf(CollectiveTimeoutException.class)
          .hasMessageContaining("barrier tag 'after' seq 1");
    } finally {
      alone.close();
    }
  }

  /** Runs one body per rank, each on its own thread and member, and returns their results. */
  private static List<Object> runGroup(
      String group, int size, Duration watchdog, Function<Collective, Object> body)
      throws Exception {
    List<CompletableFuture<Object>> ranks = new ArrayList<>();
    for (int r = 0; r < size; r++) {
      int rank = r;
      ranks.add(
          HazelcastTestCluster.inThread(
              () -> {
                try (Collective c =
                    HazelcastCollectives.join(
                        cluster.member(rank % 2), CollectiveSpec.of(group, size, rank, watchdog))) {
                  return body.apply(c);
                }
              }));
    }
    List<Object> out = new ArrayList<>();
    for (CompletableFuture<Object> rank : ranks) {
      out.add(rank.get(100, TimeUnit.SECONDS));
    }
    return out;
  }

  private static int plainMember() {
    for (int i = 0; i < 4; i++) {
      if (cluster.member(i).getCPSubsystem().getLocalCPMember() == null) {
        return i;
      }
    }
    throw new AssertionError("every one of 4 members is a CP member; expected 3");
  }

  private static List<Integer> cpMembers() {
    List<Integer> out = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      HazelcastInstance m = cluster.member(i);
      if (m.getLifecycleService().isRunning() && m.getCPSubsystem().getLocalCPMember() != null) {
        out.add(i);
      }
    }
    return out;
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(100, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static Throwable failureOf(Runnable call) {
    try {
      call.run();
      return null;
    } catch (Throwable t) {
      return t;
    }
  }
}
