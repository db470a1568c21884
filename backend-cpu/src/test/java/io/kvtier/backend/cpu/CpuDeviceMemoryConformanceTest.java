package io.kvtier.backend.cpu;

import io.kvtier.asserting.Providers;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.testkit.conformance.DeviceMemoryConformanceSuite;
import io.kvtier.testkit.conformance.TransferCapability;
import java.util.EnumSet;
import java.util.Set;

/** The device suite on the {@code cpu} pools, found by name as an engine finds them. */
class CpuDeviceMemoryConformanceTest extends DeviceMemoryConformanceSuite {

  @Override
  protected DeviceMemoryProvider deviceProvider() {
    return Providers.named(DeviceMemoryProvider.class, "cpu");
  }

  @Override
  protected HostMemoryProvider hostProvider() {
    return Providers.named(HostMemoryProvider.class, "cpu");
  }

  @Override
  protected Set<TransferCapability> capabilities() {
    return EnumSet.of(TransferCapability.FOREIGN_HOST);
  }
}
