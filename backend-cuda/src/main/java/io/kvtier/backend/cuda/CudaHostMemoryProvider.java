package io.kvtier.backend.cuda;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/**
 * The {@code cuda} host pool: page-locked host memory ({@code cuMemHostAlloc}) that the {@code
 * cuda} device copies asynchronously, and that L3 stores read and fill through {@link
 * HostMemory#block}. The {@code cuda} device accepts host pools of this provider only.
 *
 * <p>This class references no JCuda type: {@link #availability()} probes the driver through
 * {@code java.lang.foreign}, and JCuda's native code loads only in {@link #open}.
 */
@ProviderName(CudaHostMemoryProvider.NAME)
public final class CudaHostMemoryProvider implements HostMemoryProvider {

  /** The provider's name. */
  public static final String NAME = "cuda";

  /** Creates the provider; does no work. */
  public CudaHostMemoryProvider() {}

  @Override
  public String name() {
    return NAME;
  }

  /**
   * The same answer as {@link CudaDeviceMemoryProvider#availability()}: pinning needs the driver.
   *
   * @return available with the GPU's name, or unavailable with the reason and the fix
   */
  @Override
  public Availability availability() {
    return CudaDriverProbe.cached();
  }

  @Override
  public String configNamespace() {
    return CudaConfig.NAMESPACE;
  }

  /**
   * Allocates a zero-filled pinned host pool with the context of the GPU of {@code cuda.device}.
   *
   * @throws IllegalArgumentException for a bad {@code cuda.*} key or value, or memory that cannot
   *     be pinned
   * @throws IllegalStateException if the provider is unavailable, with the reason
   */
  @Override
  public HostMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    CudaConfig config = CudaConfig.fromProperties(context.properties());
    CudaDriverProbe.requireAvailable("host", availability());
    return CudaHostMemory.open(spec, config);
  }
}
