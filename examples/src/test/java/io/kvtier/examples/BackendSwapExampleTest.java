package io.kvtier.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.core.discovery.ProviderRegistry;
import io.kvtier.core.discovery.ProviderReport;
import io.kvtier.examples.RankLoop.RankResult;
import io.kvtier.spi.DeviceMemoryProvider;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One program on several backends, chosen by configuration only. The runs that need a GPU or a
 * launcher skip with the reason when it is absent; examples/README.md shows the mpi and
 * hazelcast command lines.
 */
@Timeout(180)
class BackendSwapExampleTest {

  @TempDir Path dir;

  @Test
  void theDefaultsRunOneRankOnSimAndLocal() {
    List<RankResult> ranks = BackendSwapExample.run(List.of());

    assertThat(ranks)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.rank()).isZero();
              assertThat(r.stats().finished()).isEqualTo(RankLoop.REQUESTS);
            });
  }

  @Test
  void theSameProgramRunsOverEachL3StoreAndWithout() {
    List<RankResult> memory =
        BackendSwapExample.run(List.of("kvtier.ranks=2", "kvtier.store=memory"));
    // One rank: the file store is a directory of this machine, not shared between ranks.
    List<RankResult> file =
        BackendSwapExample.run(List.of("kvtier.store=file", "file.directory=" + dir));
    List<RankResult> none = BackendSwapExample.run(List.of("kvtier.ranks=2"));

    assertThat(memory).hasSize(2).allSatisfy(r -> assertThat(r.l3()).isTrue());
    assertThat(memory.get(1).replicaDigest()).isEqualTo(memory.get(0).replicaDigest());
    assertThat(file).singleElement().satisfies(r -> assertThat(r.l3()).isTrue());
    assertThat(none).allSatisfy(r -> assertThat(r.l3()).isFalse());
    for (List<RankResult> ranks : List.of(memory, file, none)) {
      assertThat(ranks.get(0).stats().finished()).isEqualTo(RankLoop.REQUESTS);
    }
    // The store holds backups only: the decisions and the outputs stay those of the run.
    assertThat(file.get(0).outputs()).isEqualTo(memory.get(0).outputs());
  }

  @Test
  void theSameProgramRunsOnTheGpu() {
    Optional<ProviderReport> cuda =
        ProviderRegistry.load(DeviceMemoryProvider.class).reports().stream()
            .filter(r -> r.name().equals("cuda"))
            .findFirst();
    Assumptions.assumeTrue(
        cuda.isPresent(),
        "no cuda provider on the module path: kvtier-backend-cuda is not a dependency here");
    Assumptions.assumeTrue(cuda.get().available(), "cuda is unavailable: " + cuda.get().reason());

    List<RankResult> gpu =
        BackendSwapExample.run(List.of("kvtier.device=cuda", "kvtier.host=cuda"));
    List<RankResult> sim = BackendSwapExample.run(List.of());

    assertThat(gpu)
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.stats().finished()).isEqualTo(RankLoop.REQUESTS);
              assertThat(r.stats().kvMismatches()).isZero();
              // The toy model's tokens depend on the prompt only, whatever memory holds its KV.
              assertThat(r.outputs()).isEqualTo(sim.get(0).outputs());
            });
  }

  @Test
  void argumentsThatAreNotSettingsOrDoNotFitTheCollectiveAreRefused() {
    assertThatThrownBy(() -> BackendSwapExample.run(List.of("cuda")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'cuda' is not key=value or --rank=N");
    assertThatThrownBy(() -> BackendSwapExample.run(List.of("--rank=1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("with local every rank is a thread: drop it");
    assertThatThrownBy(() -> BackendSwapExample.run(List.of("kvtier.collective=mpi", "--rank=5")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rank 5 is outside kvtier.ranks=1");
    assertThatThrownBy(() -> BackendSwapExample.run(List.of("kvtier.no-such-key=1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.no-such-key");
  }
}
