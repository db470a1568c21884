package io.kvtier.asserting;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.ProviderName;
import io.kvtier.spi.TestingProvider;
import java.util.Objects;

/**
 * The {@code asserting} host provider: opens a pool of the provider named by {@code
 * asserting.delegate} (default {@code sim}) and wraps it in an {@link AssertingHostMemory}. See
 * {@link AssertingConfig} for the keys; the fault keys are accepted and apply to device engines.
 */
@ProviderName(AssertingHostMemoryProvider.NAME)
@TestingProvider
public final class AssertingHostMemoryProvider implements HostMemoryProvider {

  /** The provider's name. */
  public static final String NAME = "asserting";

  /** Creates the provider; does no work. */
  public AssertingHostMemoryProvider() {}

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public String configNamespace() {
    return AssertingConfig.NAMESPACE;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Reports the availability of the default delegate: the provider named by the system
   * property {@code asserting.delegate}, else {@code sim}.
   */
  @Override
  public Availability availability() {
    return AssertingDeviceMemoryProvider.delegateAvailability(HostMemoryProvider.class);
  }

  @Override
  public HostMemory open(PoolSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    AssertingConfig config =
        AssertingConfig.parse(
            context.properties(),
            name -> DelegateProviders.namespaceOf(HostMemoryProvider.class, name));
    HostMemoryProvider delegate =
        DelegateProviders.find(HostMemoryProvider.class, config.delegate());
    return new AssertingHostMemory(
        delegate.open(spec, AssertingDeviceMemoryProvider.delegateContext(context, config)));
  }
}
