package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.CollectiveRankLostException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An idle group waits for work with no collective traffic (ARCHITECTURE.md §6, "Idle"): while the
 * replicated state is idle, a follower waits for rank 0's next {@code recv} broadcast with no
 * watchdog ({@link io.kvtier.spi.Collective#awaitBroadcast}), however long rank 0 stays away; the
 * group wakes when rank 0 ticks again; and rank 0's death still ends the follower, from the
 * collective's own failure detection, as a {@link RankGroupFailedException} naming rank 0.
 */
@Timeout(120)
class IdleWaitEngineTest {
  private static final CacheConfig CACHE = CacheConfig.of(4, 32, 64);

  /** Guarded, as serve runs several ranks: the guard must not bound the idle wait either. */
  private static final RankEngineConfig ENGINE =
      RankEngineConfig.DEFAULTS.withChunkTokens(8).withMaxRunning(2);

  private static final Duration WATCHDOG = Duration.ofMillis(300);

  @Test
  void anIdleFollowerOutwaitsTheWatchdogWithoutCallsAndWakesWithRankZero() throws Exception {
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE, WATCHDOG)) {
      RankEngine rank0 = h.engines.get(0);
      RankEngine rank1 = h.engines.get(1);
      h.ticks(1, tick -> TickCommands.NONE);
      assertThat(rank0.isIdle()).isTrue();
      long calls0 = rank0.stats().collectiveCalls();
      long calls1 = rank1.stats().collectiveCalls();

      CompletableFuture<Void> followerTick = new CompletableFuture<>();
      Thread follower =
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      rank1.tick(null);
                      followerTick.complete(null);
                    } catch (Throwable t) {
                      followerTick.completeExceptionally(t);
                    }
                  });
      // Rank 0 stays away for five watchdogs: a bounded recv would have failed long ago.
      Thread.sleep(5 * WATCHDOG.toMillis());
      assertThat(followerTick).as("the follower still waits for rank 0").isNotDone();
      assertThat(rank0.stats().collectiveCalls()).isEqualTo(calls0);
      // The follower entered one call, its wait, and none since.
      assertThat(rank1.collective().calls()).isEqualTo(calls1 + 1);

      // Work arrives: rank 0's tick is the broadcast the follower waits in.
      rank0.tick(TickCommands.arrive(List.of(RankRequest.of(1, new int[] {1, 2, 3, 4, 5}, 3))));
      followerTick.get(10, TimeUnit.SECONDS);
      follower.join();
      assertThat(rank1.waitingRequests() + rank1.runningRequests()).isEqualTo(1);
      assertThat(rank1.replicaDigest()).isEqualTo(rank0.replicaDigest());
      // And the group runs the request to its end as always.
      for (int i = 0; i < 50 && !rank0.isIdle(); i++) {
        h.ticks(1, tick -> TickCommands.NONE);
      }
      assertThat(rank0.stats().finished()).isEqualTo(1);
      assertThat(rank1.replicaDigest()).isEqualTo(rank0.replicaDigest());
    }
  }

  @Test
  void rankZeroDyingWhileIdleEndsTheFollowerNamingRankZero() throws Exception {
    Duration watchdog = Duration.ofSeconds(30);
    try (RankHarness h = new RankHarness(2, CACHE, ENGINE, watchdog)) {
      RankEngine rank0 = h.engines.get(0);
      RankEngine rank1 = h.engines.get(1);
      // Rank 0 ticks once, with the follower, on a thread of its own that then ends: as a rank
      // whose thread died, it never closes its handle and never calls again.
      CompletableFuture<Void> firstTick = new CompletableFuture<>();
      Thread follower =
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      rank1.tick(null);
                      firstTick.complete(null);
                      rank1.tick(null);
                    } catch (Throwable t) {
                      firstTick.completeExceptionally(t);
                    }
                  });
      Thread rank0Thread = Thread.ofPlatform().start(() -> rank0.tick(TickCommands.NONE));
      rank0Thread.join();
      firstTick.get(10, TimeUnit.SECONDS);
      long deadAt = System.nanoTime();

      follower.join(watchdog.toMillis());
      long endedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - deadAt);
      assertThat(follower.isAlive()).as("the follower ended before the watchdog").isFalse();
      assertThat(endedMillis).isLessThan(watchdog.toMillis());
      RankGroupFailedException failed = null;
      try {
        rank1.tick(null);
      } catch (RankGroupFailedException e) {
        failed = e;
      }
      assertThat(failed).as("every later step throws the group's failure").isNotNull();
      assertThat(failed.failedRank()).isZero();
      assertThat(failed.rank()).isEqualTo(1);
      assertThat(failed.step()).isEqualTo(TickStep.RECEIVE);
      assertThat(failed)
          .hasMessageStartingWith("rank 0 failed at tick 1 in step RECEIVE: rank 0 is gone: ")
          .hasMessageContaining("ended without closing its handle")
          .hasCauseInstanceOf(CollectiveRankLostException.class);
    }
  }
}
