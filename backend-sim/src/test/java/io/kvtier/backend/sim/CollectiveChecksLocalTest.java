package io.kvtier.backend.sim;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.conformance.CollectiveChecks;
import io.kvtier.testkit.conformance.RankRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The per-rank {@link CollectiveChecks} on the {@code local} collective (ranks as threads): the
 * checks that process-based providers run under their launcher must pass on the reference
 * provider, with either way of recording barrier arrivals.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
class CollectiveChecksLocalTest {

  private static final AtomicLong GROUPS = new AtomicLong();

  @TempDir Path arrivalsRoot;

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4})
  void everyCheckPassesOnTheLocalCollective(int size, Random random) throws Exception {
    long seed = random.nextLong();
    CollectiveProvider local = Providers.named(CollectiveProvider.class, "local");
    for (CollectiveChecks.Check check : CollectiveChecks.Check.values()) {
      if (size < check.minRanks()) {
        continue;
      }
      // Files for even sizes, memory for odd: both kinds of record meet real barriers.
      CollectiveChecks.Arrivals arrivals =
          size % 2 == 0
              ? CollectiveChecks.inDirectory(
                  Files.createDirectories(arrivalsRoot.resolve(size + "-" + check)))
              : CollectiveChecks.inMemory();
      String group = "checks-" + check + "-" + GROUPS.incrementAndGet();
      RankRunner.values(
          RankRunner.run(
              (g, n, rank, watchdog) ->
                  local.join(
                      CollectiveSpec.of(g, n, rank, watchdog),
                      BackendContext.defaults().withRank(rank)),
              group,
              size,
              Duration.ofSeconds(20),
              (c, rank) -> {
                CollectiveChecks.run(check, c, seed, arrivals);
                return null;
              }));
    }
  }
}
