package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.core.rank.RankEngineConfig;
import io.kvtier.serving.EngineSettings;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** The serve engine's options: what they set in the config and which rank this process runs. */
class EngineOptionsTest {

  @Command(name = "probe")
  static final class Probe {
    @Mixin EngineOptions options = new EngineOptions();
  }

  private static EngineOptions parse(String... args) {
    Probe probe = new Probe();
    new CommandLine(probe).parseArgs(args);
    return probe.options;
  }

  private static KvTierConfig config(EngineOptions options, Map<String, String> environment) {
    KvTierConfigBuilder builder =
        KvTierConfig.builder().device("sim").host("sim").layout(2, 4, 16, 4, 4);
    options.applyTo(builder, environment);
    return builder.build();
  }

  @Test
  void localRanksAreThreadsOfThisProcessWithTheBatchingGiven() {
    EngineOptions options =
        parse("--ranks", "4", "--max-running", "8", "--chunk", "32", "--device-pages", "40");
    KvTierConfig config = config(options, Map.of());
    assertThat(config.ranks()).isEqualTo(4);
    assertThat(config.provider(ProviderKind.COLLECTIVE)).isEqualTo("local");
    assertThat(config.cache().devicePages()).isEqualTo(40);
    EngineSettings settings = options.settings(config, 7, Map.of());
    assertThat(settings.rank()).isEqualTo(EngineSettings.ALL_RANKS);
    assertThat(settings.isServingRank()).isTrue();
    assertThat(settings.maxRunning()).isEqualTo(8);
    assertThat(settings.chunkTokens()).isEqualTo(32);
    assertThat(settings.maxPrefillTokens()).isEqualTo(RankEngineConfig.NO_PREFILL_BUDGET);
    assertThat(parse("--max-prefill-tokens", "96").settings(config, 1, Map.of()).maxPrefillTokens())
        .isEqualTo(96);
    assertThat(settings.queueCapacity()).isEqualTo(7);
    assertThat(settings.prefixCaching()).isTrue();
    assertThat(parse("--no-prefix-cache").settings(config, 1, Map.of()).prefixCaching()).isFalse();
  }

  @Test
  void parallelAndInterleaveSetTheirKeys() {
    KvTierConfig cp =
        config(parse("--ranks", "8", "--parallel", "cp", "--cp-interleave", "2"), Map.of());
    assertThat(cp.ranks()).isEqualTo(8);
    assertThat(cp.parallelism()).isEqualTo(Parallelism.cp(2));
    assertThat(config(parse(), Map.of()).parallelism()).isEqualTo(Parallelism.TP);
  }

  @Test
  void underMpirunTheWorldAndTheRankAreMpirunsAndOnlyRankZeroServes() {
    Map<String, String> env = Map.of("OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_RANK", "1");
    EngineOptions options = parse("--collective", "mpi");
    KvTierConfig config = config(options, env);
    assertThat(config.ranks()).isEqualTo(2);
    EngineSettings settings = options.settings(config, 1, env);
    assertThat(settings.rank()).isEqualTo(1);
    assertThat(settings.isServingRank()).isFalse();
  }

  @Test
  void hazelcastNeedsEachProcessesRankAndLocalRefusesOne() {
    EngineOptions hazelcast = parse("--collective", "hazelcast", "--ranks", "2", "--rank", "0");
    KvTierConfig config = config(hazelcast, Map.of());
    assertThat(hazelcast.settings(config, 1, Map.of()).rank()).isZero();

    EngineOptions noRank = parse("--collective", "hazelcast", "--ranks", "2");
    assertThatThrownBy(() -> noRank.settings(config(noRank, Map.of()), 1, Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("give each process its --rank");

    EngineOptions local = parse("--ranks", "2", "--rank", "1");
    assertThatThrownBy(() -> local.settings(config(local, Map.of()), 1, Map.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("drop --rank");
  }
}
