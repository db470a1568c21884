package io.kvtier.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ReplayTargetsTest {

  @Test
  void createsTheReferenceCacheByName() {
    ReplayTarget t = ReplayTargets.create("reference", 16, 1024);

    assertThat(t).isInstanceOf(ReferenceRadixCache.class);
    assertThat(t.name()).isEqualTo("reference");
  }

  @Test
  void createsKvtiersEngineByName() {
    ReplayTarget t = ReplayTargets.create("kvtier", 16, 1024);

    assertThat(t).isInstanceOf(KvtierReplayTarget.class);
    assertThat(t.name()).isEqualTo("kvtier");
    assertThat(((KvtierReplayTarget) t).cache().config().devicePages()).isEqualTo(64);
  }

  @Test
  void kvtierRejectsACapacityThatIsNotWholePages() {
    assertThatThrownBy(() -> ReplayTargets.create("kvtier", 16, 1000))
        .hasMessageContaining("capacityTokens=1000 must be a positive multiple of pageSize=16");
  }

  @Test
  void unknownTargetsListTheKnownOnes() {
    assertThatThrownBy(() -> ReplayTargets.create("sglang", 1, 1))
        .hasMessage("unknown replay target 'sglang': known targets are reference, kvtier");
  }

  @Test
  void parsesCapacities() {
    assertThat(ReplayTargets.capacity("unbounded")).isEqualTo(ReferenceRadixCache.UNBOUNDED);
    assertThat(ReplayTargets.capacity("65536")).isEqualTo(65_536);
    assertThatThrownBy(() -> ReplayTargets.capacity("0"))
        .hasMessage("capacity '0' is not valid: give 'unbounded' or a number of tokens >= 1");
    assertThatThrownBy(() -> ReplayTargets.capacity("64k"))
        .hasMessageStartingWith("capacity '64k' is not valid");
  }

  @Test
  void replayResultsRejectMoreHitsThanTokens() {
    assertThat(new ReplayTarget.ReplayResult(2, 10, 5).hitRatio()).isEqualTo(0.5);
    assertThat(new ReplayTarget.ReplayResult(0, 0, 0).hitRatio()).isZero();
    assertThatThrownBy(() -> new ReplayTarget.ReplayResult(1, 4, 5))
        .hasMessageContaining("cachedTokens=5 must be >= 0 with cachedTokens <= promptTokens");
  }
}
