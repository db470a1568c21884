package io.kvtier.testkit.conformance;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.testkit.SeedExtension;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The hooks of {@link CollectiveConformanceSuite}: what a provider module supplies. Split from
 * the checks only to keep each class readable; subclass {@link CollectiveConformanceSuite}.
 */
@ExtendWith(SeedExtension.class)
@Timeout(120)
public abstract class CollectiveSuiteBase {

  // Group names must never collide, not even with a group a previous run left in a shared
  // cluster, hence a per-JVM random part besides the test name and a counter.
  private static final String RUN_ID = Long.toHexString(ThreadLocalRandom.current().nextLong());
  private static final AtomicLong GROUPS = new AtomicLong();

  private String testName = "test";

  /** For subclasses. */
  protected CollectiveSuiteBase() {}

  /**
   * The provider under test.
   *
   * @return the provider
   */
  protected abstract CollectiveProvider provider();

  /**
   * The context of rank 0; {@link #join} hands each rank {@code context().withRank(rank)}.
   *
   * @return {@link BackendContext#defaults()} unless overridden
   */
  protected BackendContext context() {
    return BackendContext.defaults();
  }

  /**
   * What the provider supports beyond the common contract.
   *
   * @return none unless overridden
   */
  protected Set<CollectiveCapability> capabilities() {
    return EnumSet.noneOf(CollectiveCapability.class);
  }

  /**
   * Joins one rank of a group. The suite calls it on the rank's own thread, once per rank, all
   * ranks concurrently; override it for providers that join differently.
   *
   * @param group a group name unique to the calling check
   * @param size the number of ranks
   * @param rank the rank joining
   * @param watchdog the watchdog timeout of the group
   * @return the rank's handle
   */
  protected Collective join(String group, int size, int rank, Duration watchdog) {
    return provider()
        .join(CollectiveSpec.of(group, size, rank, watchdog), context().withRank(rank));
  }

  /**
   * The most ranks the provider can run in one JVM; sizes above it are skipped.
   *
   * @return 8 unless overridden
   */
  protected int maxRanks() {
    return 8;
  }

  /**
   * The watchdog of groups in checks that expect no timeout; long, so that a slow machine does
   * not turn a correct run into a failure.
   *
   * @return 20 seconds unless overridden
   */
  protected Duration watchdog() {
    return Duration.ofSeconds(20);
  }

  /**
   * The watchdog of groups in checks that expect a timeout.
   *
   * @return 500 milliseconds unless overridden
   */
  protected Duration shortWatchdog() {
    return Duration.ofMillis(500);
  }

  /**
   * Remembers the running check's name for its group names; skips when the provider cannot run.
   *
   * @param info the running check
   */
  @BeforeEach
  public void prepareGroupNames(TestInfo info) {
    testName = info.getTestMethod().map(m -> m.getName()).orElse("test");
    Availability a = provider().availability();
    DeviceSuiteBase.skipUnless(
        a.available(),
        "collective provider '" + provider().name() + "' is unavailable: " + a.reason());
  }

  /** A group name no other check of any run uses. */
  String newGroup() {
    return "conformance-" + RUN_ID + "-" + testName + "-" + GROUPS.incrementAndGet();
  }

  void requireRanks(int size) {
    DeviceSuiteBase.skipUnless(
        size <= maxRanks(),
        size + " ranks exceed maxRanks()=" + maxRanks() + " of provider " + provider().name());
  }

  <T> List<RankRunner.Outcome<T>> runGroup(int size, Duration watchdog, RankRunner.Body<T> body)
      throws InterruptedException {
    return RankRunner.run(this::join, newGroup(), size, watchdog, body);
  }

  <T> List<T> runGroupExpectingSuccess(int size, RankRunner.Body<T> body)
      throws InterruptedException {
    return RankRunner.values(runGroup(size, watchdog(), body));
  }
}
