package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveRankLostException;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ReduceOp;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link Collective#awaitBroadcast} on the {@code local} group: no watchdog bounds it, and the
 * group's own failure detection (the thread of a rank's latest call ended without closing its
 * handle) ends it, naming the rank.
 */
@Timeout(60)
class LocalCollectiveIdleWaitTest {
  private static final Duration WATCHDOG = Duration.ofMillis(200);
  private static final AtomicInteger GROUPS = new AtomicInteger();

  private final LocalCollectiveProvider provider = new LocalCollectiveProvider();

  private Collective join(String group, int rank) {
    return provider.join(
        CollectiveSpec.of(group, 2, rank, WATCHDOG), BackendContext.defaults().withRank(rank));
  }

  @Test
  void anAwaitedBroadcastOutwaitsTheWatchdogUntilTheRootSends() throws Exception {
    String group = "local-idle-" + GROUPS.incrementAndGet();
    try (Collective root = join(group, 0);
        Collective follower = join(group, 1)) {
      CompletableFuture<byte[]> received = new CompletableFuture<>();
      Thread waiter =
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      received.complete(follower.awaitBroadcast(0, null, "recv"));
                    } catch (Throwable t) {
                      received.completeExceptionally(t);
                    }
                  });
      // Five watchdogs of idleness: a bounded broadcast would have failed long ago.
      Thread.sleep(5 * WATCHDOG.toMillis());
      assertThat(received).isNotDone();
      assertThat(root.broadcast(0, new byte[] {4, 2}, "recv")).containsExactly(4, 2);
      assertThat(received.get(10, TimeUnit.SECONDS)).containsExactly(4, 2);
      waiter.join();
      // The group goes on, bounded calls included.
      CompletableFuture<long[]> sum = new CompletableFuture<>();
      Thread.ofPlatform()
          .start(() -> sum.complete(follower.allReduce(ReduceOp.SUM, new long[] {1}, "sync")));
      assertThat(root.allReduce(ReduceOp.SUM, new long[] {2}, "sync")).containsExactly(3);
      assertThat(sum.get(10, TimeUnit.SECONDS)).containsExactly(3);
    }
  }

  @Test
  void aRankWhoseThreadDiedWithoutClosingEndsTheWaitNamingIt() throws Exception {
    String group = "local-idle-" + GROUPS.incrementAndGet();
    Collective root = join(group, 0);
    try (Collective follower = join(group, 1)) {
      // Rank 0 makes one call with rank 1 on a thread that then ends, its handle left open.
      CompletableFuture<Void> first = new CompletableFuture<>();
      Thread.ofPlatform()
          .start(
              () -> {
                follower.barrier("first");
                first.complete(null);
              });
      Thread rank0 = Thread.ofPlatform().name("rank-0-dies").start(() -> root.barrier("first"));
      rank0.join();
      first.get(10, TimeUnit.SECONDS);

      long start = System.nanoTime();
      CollectiveRankLostException lost = null;
      try {
        follower.awaitBroadcast(0, null, "recv");
      } catch (CollectiveRankLostException e) {
        lost = e;
      }
      long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertThat(lost).isNotNull();
      assertThat(lost.lostRank()).isZero();
      assertThat(lost)
          .hasMessageContaining("rank 0 of group '" + group + "' is gone: its thread rank-0-dies")
          .hasMessageContaining("ended without closing its handle while rank 1 waited in");
      assertThat(waitedMillis).as("found by the liveness poll, not a watchdog").isLessThan(10_000);
    } finally {
      root.close();
    }
  }
}
