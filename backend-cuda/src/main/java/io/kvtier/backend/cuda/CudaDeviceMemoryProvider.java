package io.kvtier.backend.cuda;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/**
 * The {@code cuda} device pool: KV pages in GPU memory allocated through the CUDA driver API
 * (JCuda), copied to and from a pinned {@code cuda} host pool on one stream per direction.
 *
 * <p>This class references no JCuda type: {@link #availability()} probes the driver through
 * {@code java.lang.foreign}, and JCuda's native code loads only in {@link #open}.
 */
@ProviderName(CudaDeviceMemoryProvider.NAME)
public final class CudaDeviceMemoryProvider implements DeviceMemoryProvider {

  /** The provider's name. */
  public static final String NAME = "cuda";

  /** Creates the provider; does no work. */
  public CudaDeviceMemoryProvider() {}

  @Override
  public String name() {
    return NAME;
  }

  /**
   * Whether a usable NVIDIA GPU and driver are present, and JCuda's native library can be found.
   * Probed once per JVM without loading JCuda.
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
   * Allocates a zero-filled device pool on the GPU of {@code cuda.device}.
   *
   * @throws IllegalArgumentException for a bad {@code cuda.*} key or value, or a pool larger than
   *     the GPU's free memory
   * @throws IllegalStateException if the provider is unavailable, with the reason
   */
  @Override
  public DeviceMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    CudaConfig config = CudaConfig.fromProperties(context.properties());
    CudaDriverProbe.requireAvailable("device", availability());
    return CudaDeviceMemory.open(spec, config, context);
  }
}
