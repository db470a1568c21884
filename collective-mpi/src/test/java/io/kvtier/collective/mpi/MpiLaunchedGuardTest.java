package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.collective.mpi.internal.MpiGuardMain;
import io.kvtier.testkit.TestSeeds;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The guard frame's checks ({@link MpiGuardMain}) under {@code mpirun -np 2} and {@code -np 4}:
 * learnt, too small and too large frames give the right values, and every kind of mismatched
 * call fails every rank with a desync instead of hanging. Skips, saying why, without mpirun or
 * Open MPI's library.
 */
@Timeout(300)
class MpiLaunchedGuardTest {

  @TempDir Path work;

  @BeforeEach
  void requireMpirun() {
    MpiJob.assumeLauncher();
  }

  @ParameterizedTest(name = "mpirun -np {0}")
  @ValueSource(ints = {2, 4})
  void everyRankPassesEveryCheck(int ranks) throws Exception {
    long seed = TestSeeds.seedFor(getClass().getName() + ranks);
    MpiJob.Result job =
        MpiJob.run(
            ranks,
            MpiGuardMain.class.getName(),
            List.of("--seed", Long.toString(seed)),
            Duration.ofSeconds(240),
            work.resolve("job.log"));
    System.out.println(
        "mpirun -np "
            + ranks
            + " "
            + MpiGuardMain.class.getSimpleName()
            + " (exit "
            + job.exitCode()
            + "):\n"
            + job.output());
    String reproduce =
        "reproduce with -Dkvtier.tests.seed="
            + TestSeeds.masterSeed()
            + " -Dtest="
            + getClass().getSimpleName()
            + "; job output:\n"
            + job.output();
    assertThat(job.timedOut()).as("the job hung; %s", reproduce).isFalse();
    List<String> expected = new ArrayList<>();
    for (int rank = 0; rank < ranks; rank++) {
      String prefix = "mpi-guard rank=" + rank + " size=" + ranks + " ";
      for (String check : MpiGuardMain.CHECKS) {
        expected.add(prefix + "check=" + check + " PASS");
      }
      expected.add(prefix + "DONE failed=0");
    }
    assertThat(job.output().lines().map(String::strip).toList())
        .as("every rank's lines; %s", reproduce)
        .containsAll(expected);
    assertThat(job.exitCode()).as("mpirun's exit code; %s", reproduce).isZero();
  }
}
