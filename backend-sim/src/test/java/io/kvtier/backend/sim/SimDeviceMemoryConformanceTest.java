package io.kvtier.backend.sim;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.conformance.DeviceMemoryConformanceSuite;
import io.kvtier.testkit.conformance.TransferCapability;
import java.util.EnumSet;
import java.util.Set;

/**
 * The device suite on the {@code sim} pools, on the wall clock and without hooks, as an engine
 * that selects {@code sim} by name sees them; {@link SimVirtualTimeConformanceTest} runs the
 * checks that need the hooks.
 */
class SimDeviceMemoryConformanceTest extends DeviceMemoryConformanceSuite {

  @Override
  protected DeviceMemoryProvider deviceProvider() {
    return Providers.named(DeviceMemoryProvider.class, "sim");
  }

  @Override
  protected HostMemoryProvider hostProvider() {
    return Providers.named(HostMemoryProvider.class, "sim");
  }

  @Override
  protected Set<TransferCapability> capabilities() {
    return EnumSet.of(TransferCapability.FOREIGN_HOST);
  }
}
