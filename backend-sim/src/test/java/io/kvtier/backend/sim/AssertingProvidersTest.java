package io.kvtier.backend.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.asserting.AssertingDeviceMemory;
import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.asserting.AssertingHostMemory;
import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.asserting.AssertingTransferEngine;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferEngine;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The {@code asserting} providers: discovery, delegation, configuration and fault wrapping. */
class AssertingProvidersTest {

  private static final PoolSpec SPEC = new PoolSpec(SimPools.LAYOUT, 4, MemoryLayout.PAGE_FIRST);

  private static BackendContext context(Map<String, String> properties) {
    return new BackendContext(0, properties, TimeSource.SYSTEM, BackendMetrics.NOOP);
  }

  private static <P> List<String> names(Class<P> spi) {
    // The backend loads no service itself, so its module declares no `uses`; its test does.
    AssertingProvidersTest.class.getModule().addUses(spi);
    return ServiceLoader.load(spi).stream()
        .map(p -> p.type().getAnnotation(ProviderName.class).value())
        .sorted()
        .toList();
  }

  @Test
  void bothProvidersAreFoundByNameNextToSim() {
    assertThat(names(DeviceMemoryProvider.class)).containsExactly("asserting", "sim");
    assertThat(names(HostMemoryProvider.class)).containsExactly("asserting", "sim");
    assertThat(new AssertingDeviceMemoryProvider().availability().available()).isTrue();
    assertThat(new AssertingHostMemoryProvider().availability().reason())
        .startsWith("asserting over sim: ");
  }

  @Test
  void opensWrappedSimPoolsAndForwardsTheDelegatesKeys() {
    Map<String, String> props =
        Map.of("asserting.delegate", "sim", "asserting.sim.h2d-latency", "2us");
    try (DeviceMemory device = new AssertingDeviceMemoryProvider().open(SPEC, context(props));
        HostMemory host = new AssertingHostMemoryProvider().open(SPEC, context(props))) {
      assertThat(device).isInstanceOf(AssertingDeviceMemory.class);
      assertThat(((AssertingDeviceMemory) device).delegate().getClass().getName())
          .isEqualTo("io.kvtier.backend.sim.SimDeviceMemory");
      assertThat(host).isInstanceOf(AssertingHostMemory.class);
      assertThat(AssertingDeviceMemory.openPools()).contains((AssertingDeviceMemory) device);
      assertThat(AssertingHostMemory.openPools()).contains((AssertingHostMemory) host);
      try (TransferEngine engine = device.transferEngine(host)) {
        assertThat(engine).isInstanceOf(AssertingTransferEngine.class);
        assertThat(((AssertingTransferEngine) engine).delegate().getClass().getSimpleName())
            .isEqualTo("SimTransferEngine");
      }
    }
    assertThat(AssertingDeviceMemory.openPools()).isEmpty();
  }

  @Test
  void faultsWrapEveryEngineInAFaultyEngine() {
    Map<String, String> props =
        Map.of(
            "asserting.faults",
            "true",
            "asserting.fault.seed",
            "9",
            "asserting.fault.fail-probability",
            "0.5");
    try (DeviceMemory device = new AssertingDeviceMemoryProvider().open(SPEC, context(props));
        HostMemory host = new AssertingHostMemoryProvider().open(SPEC, context(props));
        TransferEngine engine = device.transferEngine(host)) {
      assertThat(((AssertingTransferEngine) engine).delegate())
          .isInstanceOf(FaultyTransferEngine.class);
    }
  }

  @Test
  void unknownKeysAndUnknownDelegatesAreRejectedWithTheFix() {
    assertThatThrownBy(
            () ->
                new AssertingDeviceMemoryProvider()
                    .open(SPEC, context(Map.of("asserting.colour", "red"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key asserting.colour=red")
        .hasMessageContaining("asserting.sim.*");
    assertThatThrownBy(
            () ->
                new AssertingHostMemoryProvider()
                    .open(SPEC, context(Map.of("asserting.delegate", "cuda"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no HostMemoryProvider named 'cuda' was found")
        .hasMessageContaining("sim (io.kvtier.backend.sim.SimHostMemoryProvider)");
    assertThatThrownBy(
            () ->
                new AssertingHostMemoryProvider()
                    .open(SPEC, context(Map.of("asserting.delegate", "asserting"))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must name another provider");
    assertThatThrownBy(
            () ->
                new AssertingDeviceMemoryProvider()
                    .open(SPEC, context(Map.of("asserting.sim.no-such-key", "1"))))
        .as("a forwarded key the delegate does not know is the delegate's error")
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sim.no-such-key");
  }
}
