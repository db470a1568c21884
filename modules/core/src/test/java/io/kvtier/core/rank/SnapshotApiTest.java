package io.kvtier.core.rank;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.cache.RankCache;
import io.kvtier.core.cache.SnapshotRule;
import io.kvtier.core.config.CacheConfig;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The failure paths of the recurrent-state snapshot surface (HYBRID.md §5). */
@Timeout(30)
class SnapshotApiTest {

  private static Collective single(String group) {
    return RankHarness.provider(CollectiveProvider.class, "local")
        .join(CollectiveSpec.of(group, 1, 0, Duration.ofSeconds(10)), BackendContext.defaults());
  }

  @Test
  void anEngineRefusesAModelWhoseSnapshotSlotsDifferFromTheConfigNamingTheKey() {
    RankCache cache = RankCache.withoutMemory(CacheConfig.of(4, 32, 0));
    ModelRunner recurrent =
        new RankHarness.CountingModel() {
          @Override
          public int snapshotSlots() {
            return 1;
          }
        };
    try (Collective c = single("snapshot-mismatch")) {
      assertThatThrownBy(() -> new RankEngine(cache, c, recurrent, RankEngineConfig.DEFAULTS))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("take 1 page slots but kvtier.snapshot-slots=0")
          .hasMessageContaining("set kvtier.snapshot-slots=1");
    }
    RankCache matching = RankCache.withoutMemory(CacheConfig.of(4, 32, 0).withSnapshots(1, 8));
    try (Collective c = single("snapshot-match")) {
      assertThat(new RankEngine(matching, c, recurrent, RankEngineConfig.DEFAULTS)).isNotNull();
    }
  }

  @Test
  void aStepRefusesASnapshotOutsideItsRange() {
    int[] tokens = new int[16];
    ModelStep ok =
        new ModelStep(
            1,
            0,
            tokens,
            4,
            12,
            new int[4],
            new int[0],
            List.of(new ModelStep.Snapshot(8, new int[] {3})));
    assertThat(ok.snapshots()).hasSize(1);
    assertThat(new ModelStep(1, 0, tokens, 4, 12, new int[4]).snapshots()).isEmpty();
    assertThatThrownBy(
            () ->
                new ModelStep(
                    1,
                    0,
                    tokens,
                    4,
                    12,
                    new int[4],
                    new int[0],
                    List.of(new ModelStep.Snapshot(4, new int[] {3}))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("snapshot at 4 is not within (4, 12]");
    assertThatThrownBy(() -> new ModelStep.Snapshot(8, new int[0]))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theRuleRefusesANonPositivePageSizeOrInterval() {
    assertThatThrownBy(() -> new SnapshotRule(0, 8)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new SnapshotRule(16, 0)).isInstanceOf(IllegalArgumentException.class);
    SnapshotRule rule = new SnapshotRule(4, 2);
    assertThat(rule.isInterval(8)).isTrue();
    assertThat(rule.isInterval(0)).isFalse();
    assertThat(rule.nextInterval(8)).isEqualTo(16);
    assertThat(rule.tailInStep(10, 15)).isEqualTo(12);
    assertThat(rule.tailInStep(10, 17)).as("16 is an interval position").isEqualTo(-1);
    assertThat(rule.tailInStep(12, 15)).isEqualTo(-1);
  }
}
