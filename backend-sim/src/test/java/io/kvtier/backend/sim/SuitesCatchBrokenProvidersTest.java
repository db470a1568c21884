package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.TransferEngine;
import io.kvtier.testkit.SeedExtension;
import io.kvtier.testkit.conformance.CollectiveConformanceSuite;
import io.kvtier.testkit.conformance.CollectiveFailureChecks;
import io.kvtier.testkit.conformance.DeviceMemoryConformanceSuite;
import io.kvtier.testkit.conformance.TransferCapability;
import io.kvtier.testkit.conformance.TransferControl;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The suites fail on providers with a deliberate defect: the checks can fail. Each runs one
 * check of a suite directly, on a subclass over a broken provider.
 */
@ExtendWith(SeedExtension.class)
class SuitesCatchBrokenProvidersTest {

  /** Just enough of a TestInfo for the suites' group names. */
  private record Info(String name) implements TestInfo {
    @Override
    public String getDisplayName() {
      return name;
    }

    @Override
    public Set<String> getTags() {
      return Set.of();
    }

    @Override
    public Optional<Class<?>> getTestClass() {
      return Optional.empty();
    }

    @Override
    public Optional<Method> getTestMethod() {
      return Optional.empty();
    }
  }

  private static CollectiveConformanceSuite collectiveSuite(
      boolean ignoreTags, boolean skipReduce) {
    CollectiveConformanceSuite suite =
        new CollectiveConformanceSuite() {
          @Override
          protected CollectiveProvider provider() {
            return new LocalCollectiveProvider();
          }

          @Override
          protected Collective join(String group, int size, int rank, Duration watchdog) {
            return new BrokenProviders.BrokenCollective(
                super.join(group, size, rank, watchdog), ignoreTags, skipReduce);
          }
        };
    suite.prepareGroupNames(new Info("broken"));
    return suite;
  }

  private static DeviceMemoryConformanceSuite deviceSuite(BrokenProviders.DeviceDefect defect) {
    return new DeviceMemoryConformanceSuite() {
      @Override
      protected DeviceMemoryProvider deviceProvider() {
        return new BrokenProviders.BrokenDevice(defect);
      }

      @Override
      protected HostMemoryProvider hostProvider() {
        return new SimHostMemoryProvider();
      }

      @Override
      protected BackendContext context() {
        return new BackendContext(0, Map.of(), new ManualTimeSource(), BackendMetrics.NOOP);
      }

      @Override
      protected Set<TransferCapability> capabilities() {
        return EnumSet.of(TransferCapability.VIRTUAL_TIME);
      }

      @Override
      protected TransferControl control(TransferEngine engine, BackendContext context) {
        return new TransferControl() {
          @Override
          public void advance(Duration duration) {
            ((ManualTimeSource) context.time()).advance(duration);
          }
        };
      }
    };
  }

  @Test
  void aCollectiveBlindToTagsFailsTheDesyncCheck() {
    CollectiveConformanceSuite suite = collectiveSuite(true, false);
    assertThatThrownBy(
            () -> suite.disagreeingRanksDesyncEveryRank(CollectiveFailureChecks.Mismatch.TAG, 2))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("the mismatched call (TAG)");
  }

  @Test
  void aCollectiveThatDoesNotReduceFailsTheReductionCheck(Random random) {
    CollectiveConformanceSuite suite = collectiveSuite(false, true);
    assertThatThrownBy(() -> suite.allReduceMatchesSequentialReduction(3, random))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("of 3 ranks");
  }

  @Test
  void aPoolWhoseLayersCollideFailsTheRoundTrip(Random random) {
    DeviceMemoryConformanceSuite suite = deviceSuite(BrokenProviders.DeviceDefect.LAYERS_COLLIDE);
    assertThatThrownBy(() -> suite.writeReadRoundTrip(MemoryLayout.PAGE_FIRST, random))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("read back after writing every block");
  }

  @Test
  void anEngineThatReportsLaterBatchesDoneFirstFailsTheFifoCheck(Random random) {
    DeviceMemoryConformanceSuite suite = deviceSuite(BrokenProviders.DeviceDefect.ODD_HANDLES_LIE);
    assertThatThrownBy(() -> suite.completesInSubmissionOrderPerDirection(random))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("completion must be FIFO per direction");
  }
}
