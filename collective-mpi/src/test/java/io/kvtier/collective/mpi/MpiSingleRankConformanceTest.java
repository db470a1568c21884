package io.kvtier.collective.mpi;

import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.testkit.conformance.CollectiveCapability;
import io.kvtier.testkit.conformance.CollectiveConformanceSuite;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

/**
 * The thread-based collective suite on the {@code mpi} provider in this JVM, which is one MPI
 * rank (a singleton, not started by mpirun): the checks of one rank run here; the multi-rank ones
 * skip (maxRanks 1) and run per process under mpirun in {@link MpiLaunchedConformanceTest}.
 */
class MpiSingleRankConformanceTest extends CollectiveConformanceSuite {

  @Override
  protected CollectiveProvider provider() {
    return new MpiCollectiveProvider();
  }

  @Override
  protected Set<CollectiveCapability> capabilities() {
    return EnumSet.of(CollectiveCapability.LAUNCHER_ASSIGNED_RANKS);
  }

  @Override
  protected int maxRanks() {
    return 1;
  }

  /** Every check's group is MPI_COMM_WORLD, so every join uses the process's one group name. */
  @Override
  protected Collective join(String group, int size, int rank, Duration watchdog) {
    return provider()
        .join(CollectiveSpec.of(MpiTests.GROUP, size, rank, watchdog), context().withRank(rank));
  }
}
