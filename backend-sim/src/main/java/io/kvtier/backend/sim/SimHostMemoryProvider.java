package io.kvtier.backend.sim;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/** The {@code sim} host pool: ordinary off-heap memory, not pinned. */
@ProviderName("sim")
public final class SimHostMemoryProvider implements HostMemoryProvider {

  /** Creates the provider; does no work. */
  public SimHostMemoryProvider() {}

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
    return Availability.available("simulated host memory (off-heap, not pinned)");
  }

  @Override
  public String configNamespace() {
    return SimConfig.NAMESPACE;
  }

  /**
   * Opens a host pool. The {@code sim.*} properties are parsed only to reject bad keys: the host
   * pool has no timing of its own (the device's transfer engine times copies).
   */
  @Override
  public SimHostMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    SimConfig.fromProperties(context.properties());
    return new SimHostMemory(spec);
  }
}
