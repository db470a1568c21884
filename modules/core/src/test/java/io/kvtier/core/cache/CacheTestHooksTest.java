package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.testing.CacheTestHooks;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.core.config.EvictionPolicy;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The deliberately broken rule variants of {@link CacheTestHooks} really break the rule they
 * name (two caches given the same operations end up different), and {@link
 * CacheTestHooks#reset} restores it. The drain-timed attach predicate is shown in {@link
 * ReplicatedDecisionTest}, which needs copies of different speeds.
 */
class CacheTestHooksTest {
  private static final int[] X = {1, 2, 3, 4};
  private static final int[] Y = {5, 6, 7, 8};

  private static RankCache cache() {
    FakeKvMemory memory = new FakeKvMemory(FakeKvMemory.smallLayout(2), 8, 0);
    return RankCache.withMemory(
        CacheConfig.of(2, 8, 0).withEvictionPolicy(EvictionPolicy.LRU), memory.device);
  }

  private static void serve(RankCache cache, long id, int[] tokens) {
    cache.admit(id, tokens);
    cache.allocateTokens(id, tokens.length);
    cache.finish(id);
  }

  /** Serves X then Y, evicts one page, and tells whether X is still on the device. */
  private static boolean xSurvivesEviction(RankCache cache) {
    serve(cache, 1, X);
    serve(cache, 2, Y);
    assertThat(cache.evictDevice(1)).isEqualTo(2);
    CacheInvariants.check(cache);
    return cache.match(0, X).deviceLength() == 4;
  }

  @Test
  void wallClockEvictionOrdersDifferPerRank() {
    RankCache rising = cache();
    RankCache falling = cache();
    AtomicLong ticks = new AtomicLong();
    CacheTestHooks.useWallClockEviction(rising, () -> 1_000 + ticks.incrementAndGet());
    CacheTestHooks.useWallClockEviction(falling, () -> 1_000_000 - ticks.incrementAndGet());

    boolean risingKeepsX = xSurvivesEviction(rising);
    boolean fallingKeepsX = xSurvivesEviction(falling);

    assertThat(risingKeepsX).as("LRU on a rising clock evicts X, the older").isFalse();
    assertThat(fallingKeepsX).as("the other rank's clock runs differently").isTrue();
    assertThat(falling.replicaDigest()).isNotEqualTo(rising.replicaDigest());
  }

  @Test
  void afterResetTheLogicalClockOrdersEvictionOnEveryRank() {
    RankCache one = cache();
    RankCache two = cache();
    CacheTestHooks.useWallClockEviction(two, () -> -System.nanoTime());
    CacheTestHooks.reset(two);
    assertThat(xSurvivesEviction(one)).isFalse();
    assertThat(xSurvivesEviction(two)).isFalse();
    assertThat(two.replicaDigest()).isEqualTo(one.replicaDigest());
  }

  @Test
  void rankLocalAllocationFailuresThrowWhileOtherRanksSucceed() {
    RankCache failing = cache();
    RankCache fine = cache();
    AtomicBoolean failNow = new AtomicBoolean(true);
    CacheTestHooks.useRankLocalAllocationFailures(failing, failNow::get);
    failing.admit(1, X);
    fine.admit(1, X);

    assertThatThrownBy(() -> failing.allocateTokens(1, X.length))
        .isInstanceOf(PoolExhaustedException.class)
        .hasMessageContaining("requested 2 pages");
    assertThat(fine.allocateTokens(1, X.length)).hasSize(2);
    assertThat(failing.deviceUsage().free()).as("nothing was allocated").isEqualTo(8);
    assertThat(failing.allocate(1, 0)).as("an empty allocation asks nothing").isEmpty();
    CacheInvariants.check(failing);

    failNow.set(false);
    assertThat(failing.allocateTokens(1, X.length)).hasSize(2);
    failNow.set(true);
    CacheTestHooks.reset(failing);
    assertThat(failing.allocate(1, 1)).hasSize(1);
    failing.abort(1);
    fine.abort(1);
    CacheInvariants.checkIdle(failing);
  }

  @Test
  void hooksNameTheirMissingArguments() {
    assertThatThrownBy(() -> CacheTestHooks.reset(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("cache");
    assertThatThrownBy(() -> CacheTestHooks.useWallClockEviction(cache(), null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("clock");
    assertThatThrownBy(() -> CacheTestHooks.useRankLocalAllocationFailures(cache(), null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("failNow");
  }

  @Test
  void theAccessorIsInstalledOnceByTheCachePackage() {
    CacheTestHooks.reset(cache());
    assertThatThrownBy(() -> CacheTestHooks.install(new RuleSwitchesProbe()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("installed already");
  }

  /** A stand-in accessor that must be refused. */
  private static final class RuleSwitchesProbe implements io.kvtier.core.cache.testing.RuleAccess {
    @Override
    public void drainTimedAttach(RankCache cache, boolean on) {}

    @Override
    public void accessClock(RankCache cache, java.util.function.LongSupplier clock) {}

    @Override
    public void allocationFailure(RankCache cache, java.util.function.BooleanSupplier failNow) {}

    @Override
    public void brokenClass(RankCache cache, int failureClass) {}

    @Override
    public long fired(RankCache cache) {
      return 0;
    }

    @Override
    public void reset(RankCache cache) {}

    @Override
    public long tokenRechecks(RankCache cache) {
      return 0;
    }
  }
}
