package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.testkit.TestSeeds;
import io.kvtier.testkit.conformance.CollectiveChecks;
import java.nio.file.Files;
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
 * The collective conformance checks under {@code mpirun -np 2} and {@code -np 4}, one rank per
 * process ({@link MpiConformanceMain}); every rank must report every check passed. Skips, saying
 * why, without mpirun or Open MPI's library.
 */
@Timeout(300)
class MpiLaunchedConformanceTest {

  @TempDir Path work;

  @BeforeEach
  void requireMpirun() {
    MpiJob.assumeLauncher();
  }

  @ParameterizedTest(name = "mpirun -np {0}")
  @ValueSource(ints = {2, 4})
  void everyRankPassesEveryCheck(int ranks) throws Exception {
    long seed = TestSeeds.seedFor(getClass().getName() + ranks);
    Path arrivals = Files.createDirectory(work.resolve("arrivals"));
    MpiJob.Result job =
        MpiJob.run(
            ranks,
            MpiConformanceMain.class.getName(),
            List.of("--seed", Long.toString(seed), "--arrivals", arrivals.toString()),
            Duration.ofSeconds(240),
            work.resolve("job.log"));
    System.out.println(
        "mpirun -np "
            + ranks
            + " "
            + MpiConformanceMain.class.getSimpleName()
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
      String prefix = "mpi-conformance rank=" + rank + " size=" + ranks + " ";
      for (CollectiveChecks.Check check : CollectiveChecks.Check.values()) {
        expected.add(prefix + "check=" + check.name() + " PASS");
      }
      for (String check :
          List.of(
              "JOIN_SPEC_WORLD_SIZE_CONTRADICTS_MPIRUN",
              "JOIN_SPEC_RANK_ON_ONE_RANK_FAILS_EVERY_RANK",
              "JOIN_OTHER_GROUP_REFUSED",
              "JOIN_AGAIN_AFTER_FAILURES")) {
        expected.add(prefix + "check=" + check + " PASS");
      }
      expected.add(
          prefix + "DONE passed=" + (CollectiveChecks.Check.values().length + 4) + " failed=0");
    }
    assertThat(job.output().lines().map(String::strip).toList())
        .as("every rank's lines; %s", reproduce)
        .containsAll(expected);
    assertThat(job.exitCode()).as("mpirun's exit code; %s", reproduce).isZero();
  }
}
