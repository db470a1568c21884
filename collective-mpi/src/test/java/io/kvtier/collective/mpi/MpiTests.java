package io.kvtier.collective.mpi;

import io.kvtier.spi.Availability;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;

/** What the tests of this module share: the one group name of the test JVM, and the skips. */
final class MpiTests {

  /**
   * The group name of every join in the test JVM: a process has one MPI group, named by its
   * first join.
   */
  static final String GROUP = "kvtier-mpi-tests";

  /** The watchdog of in-JVM joins: one rank cannot wait for another, so it never fires. */
  static final Duration WATCHDOG = Duration.ofSeconds(30);

  private MpiTests() {}

  /** Skips the calling test, printing why, when Open MPI's library is not installed. */
  static void assumeLibrary() {
    Availability availability = new MpiCollectiveProvider().availability();
    if (!availability.available()) {
      String reason = "skipped: the mpi collective is unavailable here: " + availability.reason();
      System.out.println(reason);
      Assumptions.abort(reason);
    }
  }
}
