package io.kvtier.backend.sim;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/** The {@code sim} device pool: off-heap memory with a simulated, seedable copy engine. */
@ProviderName("sim")
public final class SimDeviceMemoryProvider implements DeviceMemoryProvider {

  /** Creates the provider; does no work. */
  public SimDeviceMemoryProvider() {}

  @Override
  public String name() {
    return "sim";
  }

  /**
   * Always available: the simulation needs nothing but the JVM.
   *
   * @return available
   */
  @Override
  public Availability availability() {
    return Availability.available("simulated device memory (off-heap)");
  }

  @Override
  public String configNamespace() {
    return SimConfig.NAMESPACE;
  }

  @Override
  public SimDeviceMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    return new SimDeviceMemory(spec, SimConfig.fromProperties(context.properties()), context);
  }
}
