package io.kvtier.collective.mpi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.collective.mpi.internal.MpiRuntime;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rank that never reaches a collective ends the job loudly instead of hanging it: the waiting
 * rank's watchdog prints the call and its recent calls and calls {@code MPI_Abort}.
 */
@Timeout(180)
class MpiWatchdogAbortTest {

  @TempDir Path work;

  @BeforeEach
  void requireMpirun() {
    MpiJob.assumeLauncher();
  }

  @Test
  void missingRankEndsTheJobWithTheWaitingCallNamed() throws Exception {
    MpiJob.Result job =
        MpiJob.run(
            2,
            MpiStuckRankMain.class.getName(),
            List.of("--watchdog-ms", "2000"),
            Duration.ofSeconds(120),
            work.resolve("job.log"));
    System.out.println(
        "mpirun -np 2 "
            + MpiStuckRankMain.class.getSimpleName()
            + " (exit "
            + job.exitCode()
            + "):\n"
            + job.output());
    assertThat(job.timedOut())
        .as("the job hung instead of being aborted:\n%s", job.output())
        .isFalse();
    assertThat(job.exitCode()).as("mpirun's exit code").isEqualTo(MpiRuntime.WATCHDOG_EXIT_CODE);
    assertThat(job.output())
        .contains("kvtier mpi watchdog: rank 0 of 2 in the mpi group 'stuck-rank' has waited")
        .contains("in barrier tag 'waiting-for-the-last-rank' seq 2")
        .contains("allReduce(MIN, length=1) tag 'before-the-stall' seq 1")
        .doesNotContain("passed the barrier");
  }
}
