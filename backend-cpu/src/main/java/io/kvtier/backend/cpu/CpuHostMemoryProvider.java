package io.kvtier.backend.cpu;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/** The {@code cpu} host pool: off-heap RAM, not pinned. */
@ProviderName("cpu")
public final class CpuHostMemoryProvider implements HostMemoryProvider {

  /** Creates the provider; does no work. */
  public CpuHostMemoryProvider() {}

  @Override
  public String name() {
    return "cpu";
  }

  /**
   * Always available: the pool needs nothing but the JVM.
   *
   * @return available
   */
  @Override
  public Availability availability() {
    return Availability.available("host pool in off-heap RAM (not pinned)");
  }

  @Override
  public String configNamespace() {
    return CpuConfig.NAMESPACE;
  }

  /**
   * Opens a host pool. The {@code cpu.*} properties are parsed only to reject bad keys and
   * values: the host pool has no setting of its own (the device's transfer engine copies).
   */
  @Override
  public CpuHostMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    CpuConfig.fromProperties(context.properties());
    return new CpuHostMemory(spec);
  }
}
