package io.kvtier.simulator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.LayerMix;
import io.kvtier.core.config.WritePolicy;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The run settings: defaults, validation messages, the copy delay mapping, workload seeding. */
class SimulationConfigTest {

  @Test
  void theDefaultsAreTheCommandLineDefaults() {
    SimulationConfig c = SimulationConfig.builder().build();
    assertThat(c.ranks()).isEqualTo(4);
    assertThat(c.workload()).startsWith("multiturn:");
    assertThat(c.hostPages()).isEqualTo(2 * c.devicePages());
    assertThat(c.digestInterval()).isEqualTo(1);
    assertThat(c.fullCheckInterval()).isEqualTo(SimulationConfig.DEFAULT_FULL_CHECK_INTERVAL);
    assertThat(SimulationConfig.DEFAULT_FULL_CHECK_INTERVAL).isEqualTo(1000);
    assertThat(c.skipIdleTicks()).isTrue();
    assertThat(c.toBuilder().build()).isEqualTo(c);
    assertThat(c.toBuilder().fullCheckInterval(1).skipIdleTicks(false).build())
        .satisfies(d -> assertThat(d.fullCheckInterval()).isEqualTo(1))
        .satisfies(d -> assertThat(d.skipIdleTicks()).isFalse());
  }

  @Test
  void aLayerMixSetsTheSnapshotsAndEntersTheL3ModelIdUnlessAllFull() {
    SimulationConfig c = SimulationConfig.builder().build();
    assertThat(c.layerMix()).isEmpty();
    assertThat(c.snapshots()).isFalse();
    assertThat(c.snapshotIntervalPages())
        .isEqualTo(SimulationConfig.DEFAULT_SNAPSHOT_INTERVAL_PAGES);
    // All-full runs keep their L3 keys; any other mix gets keys of its own.
    assertThat(c.l3ModelId()).isEqualTo("kvtier-sim");
    SimulationConfig hybrid =
        c.toBuilder()
            .layerMix(LayerMix.parse("full,swa:64,recurrent", "test"))
            .snapshots(1, 4)
            .build();
    assertThat(hybrid.l3ModelId()).isEqualTo("kvtier-sim-layers-full,swa:64,recurrent");
    assertThat(hybrid.snapshots()).isTrue();
    assertThat(hybrid.toBuilder().build()).isEqualTo(hybrid);
    assertThat(c.toBuilder().layerMix(LayerMix.parse("full,swa:64", "test")).build().l3ModelId())
        .isEqualTo("kvtier-sim-layers-full,swa:64");
    assertThatThrownBy(() -> c.toBuilder().snapshots(-1, 8).build())
        .hasMessage("snapshotSlots=-1 must be >= 0");
    assertThatThrownBy(() -> c.toBuilder().snapshots(1, 0).build())
        .hasMessage("snapshotIntervalPages=0 must be >= 1");
    assertThatThrownBy(() -> c.toBuilder().devicePages(1).snapshots(1, 8).build())
        .hasMessageContaining("snapshotSlots=1 must be below devicePages=1");
    // A mix of full layers only is no mix: the keys stay those of all-full runs.
    assertThat(c.toBuilder().layerMix(LayerMix.full(3)).build()).isEqualTo(c);
  }

  @Test
  void badSettingsNameTheFieldAndTheValue() {
    assertThatThrownBy(() -> SimulationConfig.builder().ranks(9).build())
        .hasMessage("ranks=9 must be between 1 and 8");
    assertThatThrownBy(() -> SimulationConfig.builder().hostRatio(1).build())
        .hasMessage("hostRatio=1.0 must be above 1, or 0 for no host tier");
    assertThatThrownBy(() -> SimulationConfig.builder().abortProbability(2).build())
        .hasMessage("abortProbability=2.0 must be between 0 and 1");
    assertThatThrownBy(() -> SimulationConfig.builder().fullCheckInterval(0).build())
        .hasMessage("fullCheckInterval=0 must be >= 1");
    assertThatThrownBy(
            () ->
                SimulationConfig.builder().hostRatio(0).writePolicy(WritePolicy.WRITE_BACK).build())
        .hasMessageContaining("write_back needs a host tier");
    assertThatThrownBy(() -> AckDelay.parse("slow"))
        .hasMessage("unknown ack delay 'slow': use one of [uniform, skewed, heavy-tail, stall]");
  }

  @Test
  void ackDelaysMapToSimProperties() {
    assertThat(AckDelay.parse("heavy_tail")).isEqualTo(AckDelay.HEAVY_TAIL);
    Map<String, String> skewed = AckDelay.SKEWED.simProperties(8, 7, 0, 0);
    assertThat(skewed)
        .containsEntry("sim.slow-rank", "7")
        .containsEntry("sim.seed", "7")
        .containsEntry("sim.slow-factor", "6");
    assertThat(AckDelay.HEAVY_TAIL.simProperties(2, 1, 0, 0))
        .containsEntry("sim.stall-probability", "0.03");
    assertThat(AckDelay.STALL.injectsStalls()).isTrue();
    assertThat(AckDelay.UNIFORM.injectsStalls()).isFalse();
  }

  @Test
  void aGeneratorWithoutASeedRunsWithTheRunsSeed() {
    SimulationConfig c = SimulationConfig.builder().seed(42).workload("multiturn").build();
    assertThat(MultiRankSimulator.workloadSpec(c)).isEqualTo("multiturn:seed=42");
    assertThat(MultiRankSimulator.workloadSpec(c.toBuilder().workload("doc-qa:asks=3").build()))
        .isEqualTo("doc-qa:asks=3,seed=42");
    assertThat(MultiRankSimulator.workloadSpec(c.toBuilder().workload("multiturn:seed=5").build()))
        .isEqualTo("multiturn:seed=5");
    assertThat(MultiRankSimulator.workloadSpec(c.toBuilder().workload("fixed:multiturn").build()))
        .isEqualTo("fixed:multiturn");
  }

  @Test
  void theCollectiveIsLocalUnlessNamedAndItsPropertiesAreFullKeys() {
    SimulationConfig c = SimulationConfig.builder().build();
    assertThat(c.collective()).isEqualTo("local");
    assertThat(c.collectiveProperties()).isEmpty();
    assertThat(c.threadRanks()).isTrue();

    SimulationConfig hz =
        c.toBuilder()
            .collective("hazelcast")
            .collectiveProperties(Map.of("hazelcast.port", "5801", "hazelcast.cluster-name", "sim"))
            .build();
    assertThat(hz.threadRanks()).isFalse();
    assertThat(hz.collectiveProperties().keySet())
        .containsExactly("hazelcast.cluster-name", "hazelcast.port");
    assertThat(hz.toBuilder().build()).isEqualTo(hz);

    assertThatThrownBy(() -> c.toBuilder().collective(" ").build())
        .hasMessage("collective is blank: give a provider name such as local, mpi or hazelcast");
    assertThatThrownBy(() -> c.toBuilder().collectiveProperties(Map.of("port", "1")).build())
        .hasMessage(
            "collective property 'port' is not NAMESPACE.KEY: write a full key such as"
                + " hazelcast.port or mpi.inline-longs");
    assertThatThrownBy(() -> c.toBuilder().collectiveProperties(Map.of("sim.seed", "1")).build())
        .hasMessageStartingWith("collective property 'sim.seed' is in the sim namespace");
  }
}
