package io.kvtier.backend.cpu;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/** The {@code cpu} device pool: off-heap RAM for a model that runs on the CPU. */
@ProviderName("cpu")
public final class CpuDeviceMemoryProvider implements DeviceMemoryProvider {

  /** Creates the provider; does no work. */
  public CpuDeviceMemoryProvider() {}

  @Override
  public String name() {
    return "cpu";
  }

  /**
   * Always available: the pools and copies need nothing but the JVM.
   *
   * @return available, with the number of processors
   */
  @Override
  public Availability availability() {
    return Availability.available(
        "device pool in off-heap RAM, "
            + Runtime.getRuntime().availableProcessors()
            + " processors");
  }

  @Override
  public String configNamespace() {
    return CpuConfig.NAMESPACE;
  }

  @Override
  public CpuDeviceMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    return new CpuDeviceMemory(spec, CpuConfig.fromProperties(context.properties()), context);
  }
}
